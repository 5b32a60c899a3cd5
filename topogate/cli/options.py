"""Each command's options as one object: what its click options say, typed, built by `takes`.

A command with more than a handful of options takes its options object, not a parameter per
option (tests/report/test_report_pipeline.py counts them): the object is what the command's functions
pass around, and an option shared by several commands (the report's, a live source's) is one
class held by each command's own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ReportOptions:
    """What every command that reports findings takes (check, drift): where the report goes and
    which findings it shows."""

    output: tuple[str, ...] = ()
    output_format: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    quiet: bool = False
    verbose: bool = False

    @property
    def verbosity(self) -> int:
        return -1 if self.quiet else 1 if self.verbose else 0


@dataclass(frozen=True)
class CheckOptions:
    inventory: str = ""  # "" when given none: the settings' `inventory` (cli.check.with_settings)
    paths: tuple[str, ...] = ()
    rendered: str | None = None
    cluster: str | None = None
    fmt: str | None = None  # None: the configuration's format, else auto
    strict: bool = False
    report: ReportOptions = field(default_factory=ReportOptions)
    changed_since: str | None = None
    exit_zero: bool = False
    exclude: tuple[str, ...] = ()
    config_file: str | None = None
    no_config: bool = False
    show_settings: bool = False
    flows: str | None = None  # --flows: recorded Hubble flows (TG210)
    baseline: str | None = None  # --baseline: findings reported as baselined (topogate.check.baseline)

    def __post_init__(self) -> None:
        if self.inventory is None:  # click's value when INVENTORY is not given
            object.__setattr__(self, "inventory", "")


@dataclass(frozen=True)
class LiveOptions:
    """check --live's own options."""

    live: bool = False
    context: str | None = None
    kubeconfig: str | None = None
    from_file: str | None = None

    @property
    def wanted(self) -> bool:
        return bool(self.live or self.context or self.kubeconfig or self.from_file)


@dataclass(frozen=True)
class GenerateOptions:
    inventory: str  # "" when given none: the settings' `inventory`
    out: str
    check_only: bool = False
    show_diff: bool = False
    quiet: bool = False
    config_file: str | None = None
    no_config: bool = False

    def __post_init__(self) -> None:
        if self.inventory is None:  # click's value when INVENTORY is not given
            object.__setattr__(self, "inventory", "")


@dataclass(frozen=True)
class BaselineOptions:
    check: CheckOptions  # check's arguments and settings: the file lists what check reports
    out: str | None = None


@dataclass(frozen=True)
class SourceOptions:
    """Where a live command reads the cluster: a kubeconfig context, or a file instead."""

    context: str | None = None
    kubeconfig: str | None = None
    from_file: str | None = None
    chunk_size: int = 500
    request_timeout: float = 30.0


@dataclass(frozen=True)
class DriftOptions:
    inventory: str
    source: SourceOptions
    cluster: str | None = None
    pool_label: str | None = None
    fmt: str = "auto"
    strict: bool = False
    report: ReportOptions = field(default_factory=ReportOptions)


@dataclass(frozen=True)
class ImportOptions:
    source: SourceOptions
    out: str
    cluster_name: str | None = None
    pool_label: str | None = None
    zone_label: str = ""
    force: bool = False


@dataclass(frozen=True)
class DiffOptions:
    inventory: str | None
    paths: tuple[str, ...]
    base: str
    fmt: str = "text"
    output: str | None = None
    fail_on: str | None = None
    config_file: str | None = None
    no_config: bool = False


@dataclass(frozen=True)
class ReplayOptions:
    flows: str
    inventory: str | None
    paths: tuple[str, ...]
    fmt: str = "text"
    cluster: str | None = None
    suggest: bool = False
    config_file: str | None = None
    no_config: bool = False


@dataclass(frozen=True)
class TraceOptions:
    paths: tuple[str, ...]
    src: str
    dst: str
    port: str | None = None
    inventory: str | None = None
    cluster: str | None = None
    fmt: str = "text"


@dataclass(frozen=True)
class AuditOptions:
    """audit egress's options; the flow-log ones only with --flow-logs (cli.audit checks)."""

    inventory: str
    paths: tuple[str, ...] = ()
    start: dt.date | None = None
    end: dt.date | None = None
    fmt: str = "text"
    verify_usage_types: bool = False
    max_attempts: int = 4
    flow_logs: tuple[str, ...] = ()
    flow_log_format: str | None = None
    from_file: str | None = None
    context: str | None = None
    kubeconfig: str | None = None
    cluster_name: str | None = None
    job_budget_usd_per_day: float | None = None
    deadline: float = 600


def _build(cls: type[Any], given: dict[str, Any]) -> Any:
    """An instance of the options class `cls` from click's values, taking each value it has a field
    for out of `given`; a field whose type is an options class is built the same way."""
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name in given:
            values[f.name] = given.pop(f.name)
        elif dataclasses.is_dataclass(hints[f.name]):
            values[f.name] = _build(hints[f.name], given)
    return cls(**values)


def takes(*classes: type[Any]) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """The click callback below receives one object per class of `classes`, built from its
    options, instead of a parameter per option. Apply it first (below the click decorators)."""
    def wrap(f: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(f)
        def callback(**given: Any) -> None:
            left = dict(given)
            objects = [_build(cls, left) for cls in classes]
            if left:  # an option no object has a field for: a mistake in the command's declaration
                raise TypeError(f"{f.__name__}: no options object takes {', '.join(sorted(left))}")
            f(*objects)
        return callback
    return wrap


__all__ = ["AuditOptions", "BaselineOptions", "CheckOptions", "DiffOptions", "DriftOptions", "GenerateOptions", "ImportOptions",
           "LiveOptions", "ReplayOptions", "ReportOptions", "SourceOptions", "TraceOptions", "takes"]
