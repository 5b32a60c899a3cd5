"""The audit's time window: what Cost Explorer can answer for, decided before any paid request."""

from __future__ import annotations

import datetime as dt

from topogate.audit.errors import InvocationError

# Cost Explorer data lags up to 48 hours: the default window ends (exclusive) two days ago.
LAG_DAYS = 2
WINDOW_DAYS = 3


def default_window(today: dt.date) -> tuple[dt.date, dt.date]:
    """Three days ending two days ago: [today-5, today-2), end exclusive as in the API."""
    end = today - dt.timedelta(days=LAG_DAYS)
    return end - dt.timedelta(days=WINDOW_DAYS), end


def resolve_window(start: dt.date | None, end: dt.date | None,
                   today: dt.date) -> tuple[dt.date, dt.date]:
    """Fill in whichever bound is missing (three days from the other); reject empty windows
    and windows that end after today.

    Cost Explorer has no data for days that have not happened, and every request costs $0.01,
    so an --end after today is refused rather than sent. A missing --end is three days after
    --start but never after today.
    """
    if start is None and end is None:
        return default_window(today)
    if end is not None and end > today:
        raise InvocationError(
            f"--end {end} is after today ({today}): Cost Explorer has no data for days that have "
            f"not happened yet and each request costs $0.01; use --end {today} or earlier "
            f"(--end is exclusive; data lags up to 48 h, the default window ends {today - dt.timedelta(days=LAG_DAYS)})")
    if start is None:
        assert end is not None
        start = end - dt.timedelta(days=WINDOW_DAYS)
    if end is None:
        end = min(start + dt.timedelta(days=WINDOW_DAYS), today)
        if end <= start:
            raise InvocationError(f"--start {start} is not before today ({today}): Cost Explorer "
                                  "has no data for it yet")
    if end <= start:
        raise InvocationError(f"--end {end} must be after --start {start} (--end is exclusive)")
    return start, end


def days_of(start: dt.date, end: dt.date) -> tuple[dt.date, ...]:
    return tuple(start + dt.timedelta(days=i) for i in range((end - start).days))
