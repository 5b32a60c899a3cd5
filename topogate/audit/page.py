"""Read one Cost Explorer answer, trusting nothing in it.

The audit pages people at night and its exit 0 says "within budget": an answer that is not a
well-formed GetCostAndUsage page (an HTML error page from a proxy, truncated JSON, a field of
the wrong type, a day outside the window, a negative or absurd amount) must never read as "no
spend". Every check here raises `MalformedAnswer` (exit 75, one line), naming the first thing
that is wrong and where, so the scheduler retries and a person can see what came back.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from topogate.audit.errors import TemporaryError

# An amount string longer than this is not a Cost Explorer amount (they are short decimals);
# the cap also keeps Decimal from parsing a megabyte of digits.
MAX_AMOUNT_CHARS = 64
# One row is one tag value, one usage type, one day. Inter-AZ transfer costs about $0.01/GB, so
# a billion dollars (or a trillion GB) in one row is not a bill but a broken answer. The bounds
# also keep every sum far inside Decimal's 28 digits, so the renderers can always round.
MAX_ROW_USD = Decimal("1e9")
MAX_ROW_QUANTITY = Decimal("1e12")
MAX_TOKEN_CHARS = 8192
MAX_KEY_CHARS = 1024
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# Tag values AWS accepts are letters, digits, spaces and _.:/=+-@ in any script; a control
# character in a group key never came from Cost Explorer (and must not reach a CI log).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class MalformedAnswer(TemporaryError):
    """The endpoint answered, but not with a well-formed Cost Explorer page (exit 75)."""

    def __init__(self, operation: str, what: str, *, requests: int = 0) -> None:
        super().__init__(f"{operation} answer is not a well-formed Cost Explorer page ({what}); "
                         "not judged (an unreadable answer is never read as no spend); if it "
                         "persists, check AWS_ENDPOINT_URL_COST_EXPLORER / proxies between "
                         "here and Cost Explorer, else run again later", requests=requests)


@dataclass(frozen=True)
class Row:
    """One group of one day of one page, as Cost Explorer returned it (amounts unrounded)."""

    page: int  # 1-based page number within the query chain
    tag_key: str
    group_key: str  # the raw "key$value" Cost Explorer sent
    tag_value: str  # "" when the resource had no value for the key (group "key$")
    usage_type: str
    day: dt.date
    estimated: bool
    usd: Decimal
    quantity: Decimal
    quantity_unit: str


def _bad(what: str) -> MalformedAnswer:
    return MalformedAnswer("GetCostAndUsage", what)


def _short(raw: Any) -> str:
    return repr(raw)[:40]


def _mapping(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(f"{where} is {type(value).__name__}, not an object")
    return value


def _list(value: Any, where: str) -> Sequence[Any]:
    if not isinstance(value, list):
        raise _bad(f"{where} is {'missing' if value is None else type(value).__name__}, "
                   "not a list")
    return value


def _text(value: Any, where: str, limit: int = MAX_KEY_CHARS) -> str:
    if not isinstance(value, str):
        raise _bad(f"{where} is {'missing' if value is None else type(value).__name__}, "
                   "not a string")
    if len(value) > limit or _CONTROL.search(value):
        raise _bad(f"{where} is not a plausible value (control characters or over {limit} "
                   "characters)")
    return value


def _day(value: Any, where: str) -> dt.date:
    text = _text(value, where, 10)
    if not _DAY.fullmatch(text):
        raise _bad(f"{where} {_short(text)} is not a YYYY-MM-DD day")
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        raise _bad(f"{where} {_short(text)} is not a calendar day") from None


def amount(metrics: Mapping[str, Any], name: str, where: str,
           unit: str | None = None) -> tuple[Decimal, str]:
    """One metric's Amount: a decimal string, finite, not negative, under the row bound."""
    m = _mapping(metrics.get(name), f"{where}.Metrics.{name}")
    raw = m.get("Amount")
    if not isinstance(raw, str) or len(raw) > MAX_AMOUNT_CHARS:
        raise _bad(f"{where} {name}.Amount {_short(raw)} is not a decimal string")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        value = Decimal("NaN")
    # Decimal accepts "NaN" and "Infinity", which would then fail every comparison with the
    # budget: a malformed answer, like any other non-number.
    if not value.is_finite():
        raise TemporaryError(f"Cost Explorer returned a non-numeric {name}: {raw[:40]!r}; "
                             "run again later")
    if value < 0:
        # Inter-AZ transfer usage is never negative; a credit or refund would be its own
        # record type, and letting it through would lower a day under its budget.
        raise _bad(f"{where} {name}.Amount {raw[:40]!r} is negative")
    bound = MAX_ROW_USD if name == "UnblendedCost" else MAX_ROW_QUANTITY
    if value > bound:
        raise _bad(f"{where} {name}.Amount {raw[:40]!r} is over {bound:,.0f}, not a plausible "
                   "day of inter-AZ transfer")
    got_unit = _text(m.get("Unit"), f"{where} {name}.Unit", 32)
    if unit is not None and got_unit != unit:
        raise _bad(f"{where} {name}.Unit is {got_unit!r}, not {unit!r}: the budget is in {unit}")
    return value, got_unit


def split_tag_key(raw: str, tag_key: str) -> str:
    """'key$value' -> 'value'; 'key$' -> '' (no value). Tag keys may themselves contain '$'."""
    prefix = tag_key + "$"
    if raw.startswith(prefix):
        return raw[len(prefix):]
    # Defensive: if the key differs (should not), keep everything after the last '$'.
    return raw.rpartition("$")[2]


def _group(group: Any, where: str, tag_key: str, page: int, day: dt.date,
           est: bool) -> Row:
    g = _mapping(group, where)
    keys = [_text(k, f"{where}.Keys[{i}]") for i, k in enumerate(_list(g.get("Keys"), f"{where}.Keys"))]
    # We group by (TAG tag_key, DIMENSION USAGE_TYPE): exactly one key of each.
    tags = [k for k in keys if k.startswith(tag_key + "$")]
    if len(keys) != 2 or len(tags) != 1:
        raise _bad(f"{where}.Keys {_short(keys)} are not one '{tag_key}$value' tag key and "
                   "one usage type")
    raw_tag = tags[0]
    usage_type = keys[1] if keys[0] == raw_tag else keys[0]
    metrics = _mapping(g.get("Metrics"), f"{where}.Metrics")
    usd, _ = amount(metrics, "UnblendedCost", where, unit="USD")
    qty, unit = amount(metrics, "UsageQuantity", where)
    return Row(page, tag_key, raw_tag, split_tag_key(raw_tag, tag_key), usage_type, day, est,
               usd, qty, unit)


def parse_page(response: Mapping[str, Any], tag_key: str, page: int,
               window: tuple[dt.date, dt.date] | None = None) -> tuple[list[Row], set[dt.date]]:
    """Rows of one GetCostAndUsage page, and the days on it marked Estimated.

    `window` [start, end): every result must be one DAILY period inside it. Anything that is
    not a well-formed page raises MalformedAnswer.
    """
    resp = _mapping(response, "the answer")
    results = _list(resp.get("ResultsByTime"), "ResultsByTime")
    rows: list[Row] = []
    estimated: set[dt.date] = set()
    for i, result in enumerate(results):
        where = f"page {page} ResultsByTime[{i}]"
        r = _mapping(result, where)
        period = _mapping(r.get("TimePeriod"), f"{where}.TimePeriod")
        day = _day(period.get("Start"), f"{where}.TimePeriod.Start")
        end = _day(period.get("End"), f"{where}.TimePeriod.End")
        if end != day + dt.timedelta(days=1):
            raise _bad(f"{where}.TimePeriod {day}..{end} is not one day (the query is DAILY)")
        if window is not None and not window[0] <= day < window[1]:
            raise _bad(f"{where}.TimePeriod.Start {day} is outside the window "
                       f"{window[0]}..{window[1]}")
        est = r.get("Estimated", False)
        if not isinstance(est, bool):
            raise _bad(f"{where}.Estimated is {type(est).__name__}, not true/false")
        if est:
            estimated.add(day)
        groups = _list(r.get("Groups"), f"{where}.Groups")
        rows.extend(_group(g, f"{where}.Groups[{j}]", tag_key, page, day, est)
                    for j, g in enumerate(groups))
    return rows, estimated


def answered_days(response: Mapping[str, Any]) -> set[dt.date]:
    """The days one page answers for, empty groups included (call after `parse_page`)."""
    return {dt.date.fromisoformat(r["TimePeriod"]["Start"]) for r in response["ResultsByTime"]}


def missing_days_error(days: Sequence[dt.date], window: tuple[dt.date, dt.date],
                       tag_key: str, pages: int) -> TemporaryError:
    """Cost Explorer answers a DAILY query with one result per day, spend or not: a day it
    did not answer for is not a day without spend, so it is never judged as $0."""
    named = ", ".join(d.isoformat() for d in days[:7]) + (
        f" (+{len(days) - 7} more)" if len(days) > 7 else "")
    return TemporaryError(
        f"GetCostAndUsage gave no DAILY result for {named} of the window "
        f"{window[0]}..{window[1]} across {pages} page{'s' if pages != 1 else ''} of the query "
        f"grouped by {tag_key}; not judged (an unanswered day is never read as $0); run again "
        "later or move --end back")


def next_token(response: Mapping[str, Any], operation: str) -> str | None:
    token = _mapping(response, "the answer").get("NextPageToken")
    if token is None or token == "":
        return None
    if not isinstance(token, str) or len(token) > MAX_TOKEN_CHARS:
        raise MalformedAnswer(operation, f"NextPageToken is {type(token).__name__} of "
                                         f"{len(str(token))} characters, not a page token")
    return token


def dimension_values(response: Mapping[str, Any]) -> list[str]:
    """The names in one GetDimensionValues page."""
    op = "GetDimensionValues"
    values = _mapping(response, "the answer").get("DimensionValues")
    if not isinstance(values, list):
        raise MalformedAnswer(op, "DimensionValues is missing or not a list")
    out: list[str] = []
    for i, v in enumerate(values):
        value = v.get("Value") if isinstance(v, Mapping) else None
        if not isinstance(value, str) or len(value) > MAX_KEY_CHARS or _CONTROL.search(value):
            raise MalformedAnswer(op, f"DimensionValues[{i}].Value is not a usage type name")
        out.append(value)
    return out
