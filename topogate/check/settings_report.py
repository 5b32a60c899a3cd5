"""What the settings file left out of a check, setting by setting, for every report to name
(topogate.analysis.result.SettingsUse).

The command line's --select/--ignore/--exclude/--cluster are the workflow's and are counted as
before ("hidden by --select/--ignore"); what the file did is counted under the file's name, so a
report never blames the workflow for what the file under review did. A finding both hid counts
for the command line in the summary, and for each setting that matches it in the detail.
"""

from __future__ import annotations

from collections.abc import Sequence

from topogate.analysis.map.clusters import ClusterOf
from topogate.analysis.result import Narrowed, RuleInfo, SettingsUse
from topogate.check.config import Settings
from topogate.check.run import CheckOutcome
from topogate.check.settings_guard import Guarded
from topogate.core.position import Position
from topogate.policies.selection import SelectionError, deselected, resolve_rules


def _rules(spec: Sequence[str], rules: Sequence[RuleInfo]) -> frozenset[str]:
    try:
        return resolve_rules(spec, rules, "settings")
    except SelectionError:  # validated before the run: cannot happen
        return frozenset()


def settings_use(settings: Settings, outcome: CheckOutcome, *, select: Sequence[str], ignore: Sequence[str],
                 cluster: str | None, guarded: Guarded | None = None) -> SettingsUse | None:
    """The file's part in `outcome` (after selection); `select`, `ignore` and `cluster` are the
    command line's own. None when no settings file was used."""
    base = guarded.base if guarded is not None else ""
    if not settings.file and not base:
        return None
    result = outcome.result
    rules = result.rules
    hidden = deselected(result)
    chosen = _rules(select, rules) if select else None
    dropped = _rules(ignore, rules) if ignore else frozenset()
    by_command_line = {f for f in hidden if (chosen is not None and f.rule not in chosen) or f.rule in dropped}
    narrowed: list[Narrowed] = []

    def at(*key: str) -> tuple[Position, str]:
        ref, pos = settings.origin(*key)
        return pos, ref

    if settings.select and not select:
        mine = _rules(settings.select, rules)
        narrowed.append(Narrowed("select", settings.select, *at("select"),
                                 findings=tuple(f for f in hidden if f.rule not in mine)))
    if settings.ignore:
        mine = _rules(settings.ignore, rules)
        narrowed.append(Narrowed("ignore", settings.ignore, *at("ignore"),
                                 findings=tuple(f for f in hidden if f.rule in mine)))
    for globs, spec in settings.per_path_ignores:
        mine = _rules(spec, rules)
        glob = globs.patterns[0]
        narrowed.append(Narrowed("per-path-ignores", spec, *at("per-path-ignores", glob), glob=glob,
                                 findings=tuple(f for f in hidden if f.rule in mine and globs.matches(f.file))))
    if settings.exclude.patterns:
        patterns = set(settings.exclude.patterns)
        left = {p for b, pattern, p in outcome.excluded if b == settings.exclude.base and pattern in patterns}
        narrowed.append(Narrowed("exclude", settings.exclude.patterns, *at("exclude"), paths=tuple(sorted(left))))
    if settings.cluster and not cluster and outcome.inventory is not None:
        of = ClusterOf(outcome.inventory)
        elsewhere = sum(1 for o in outcome.objects if of.own(o)[0] not in (None, settings.cluster))
        others = tuple(c.name for c in outcome.inventory.clusters if c.name != settings.cluster)
        narrowed.append(Narrowed("cluster", (settings.cluster,), *at("cluster"), clusters=others, objects=elsewhere))
    return SettingsUse(settings.file, tuple(narrowed), tuple(f for f in hidden if f not in by_command_line),
                       base, guarded.taken if guarded is not None else (),
                       guarded.said if guarded is not None else "")


__all__ = ["settings_use"]
