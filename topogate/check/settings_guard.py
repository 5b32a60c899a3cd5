"""Under `check --changed-since REF` the settings that narrow the gate come from REF, not from
the pull request's working tree (TG011 reports a pull request that narrows them).

The settings file (topogate.check.config) can leave paths unread, restrict the check to one
cluster, drop rules and turn `strict` off; the pull request under review can edit it. So the
file that applies at REF is found as `discover` finds it in the working tree (the same
directories, from the working directory up to the repository's root; or the `--config` file's
path), its text is read from REF's tree through git (topogate.safeio.gitrun: offline, bounded;
`git ls-tree` and `git cat-file`, never the working tree), and each setting is the stronger of
the two: the working tree's where it narrows no more than REF's, else REF's, and then a
`Weakened` fact names it at its line in the working tree's file. `format` changes no verdict
and is the working tree's.

A file outside the repository (a `--config` the workflow wrote elsewhere) is not the pull
request's and is used as it is. When REF's settings cannot be read (git cannot answer, REF is
unknown, the file at REF is a symbolic link) nothing narrows the check: the working tree's
narrowing settings are not applied, and one line on standard error says so. An invalid file at
REF is a `BaseSettingsError` (exit 2): REF's own checks fail on it too.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from topogate.analysis.result import RuleInfo
from topogate.check import gitdiff
from topogate.check.config import (
    PYPROJECT,
    YAML_NAME,
    ConfigError,
    Globs,
    Origin,
    Settings,
    has_tool_table,
    load_text,
    shown,
)
from topogate.core.position import Position
from topogate.inventory.problems import Problem
from topogate.policies.context import Weakened
from topogate.policies.selection import SelectionError, resolve_rules
from topogate.safeio import gitrun, limits

# The settings that can narrow the gate, as the file spells them, and their Settings fields.
NARROWING = {"select": "select", "ignore": "ignore", "strict": "strict", "cluster": "cluster",
             "exclude": "exclude", "per-path-ignores": "per_path_ignores", "inventory": "inventory",
             "paths": "paths", "baseline": "baseline"}
# What a run needs whatever REF says (the inventory and PATHs given no argument): kept from the
# working tree when REF's settings cannot be read, said on standard error.
_NEEDED = ("inventory", "paths")
# What each would do to every check that reads the file, once merged.
_IMPACT = {"select": "hide those rules' findings", "ignore": "hide those rules' findings",
           "per-path-ignores": "hide those rules' findings in those files",
           "strict": "let warnings pass", "cluster": "leave the other clusters unanalysed",
           "exclude": "leave those paths unread", "inventory": "check against another inventory",
           "paths": "leave those paths unread", "baseline": "hide the findings that file lists"}
_REGULAR = ("100644", "100755")
_NO_FILE = ("040000", "160000")  # a tree, a submodule (a symbolic link, 120000, is not followed)
# The rule of the facts this module finds: no settings file hides its findings (REF's could,
# with a `select` of other rules), only the command line's own --select/--ignore.
RULE = "TG011"


def never_hidden(select: Sequence[str], ignore: Sequence[str], rules: Sequence[RuleInfo]) -> frozenset[str]:
    """The rules the settings file cannot hide, less what the command line's own `select` and
    `ignore` drop (select_outcome's `always`)."""
    kept = {RULE}
    try:
        if select:
            kept &= resolve_rules(select, rules, "--select")
        kept -= resolve_rules(ignore, rules, "--ignore")
    except SelectionError:
        return frozenset()  # select_outcome names the bad value
    return frozenset(kept)


class BaseSettingsError(Exception):
    """The settings file at REF is invalid: every problem, at REF:path:line:column."""

    def __init__(self, file: str, problems: Sequence[Problem]):
        self.file = file
        self.problems = list(problems)
        super().__init__(file)


@dataclass(frozen=True)
class Guarded:
    """The settings a `--changed-since` run uses, and how they came about."""

    settings: Settings
    weakened: tuple[Weakened, ...] = ()  # TG011's facts
    base: str = ""  # where the settings taken from REF were read, when any was: "main:.topogate.yaml"
    taken: tuple[str, ...] = ()  # the settings taken from REF (as the file spells them)
    note: str = ""  # one line for standard error when REF's settings could not be read
    said: str = ""  # what the reports say of it: "ignore from main:.topogate.yaml: this file narrows it more ..."


class _Unreadable(Exception):
    """REF's settings cannot be read; str() says why."""


def guard(ref: str, head: Settings, *, repo_dir: str, start: str, config_file: str | None,
          formats: Sequence[str], rule_names: Sequence[str], rules: Sequence[RuleInfo]) -> Guarded:
    """The settings of a `--changed-since ref` run: `head` (the working tree's) with every
    setting that narrows more than REF's replaced by REF's. `repo_dir`: a directory of the
    repository under check (the inventory's); `start`: where `discover` began (the working
    directory); `config_file`: the `--config` given, if any."""
    try:
        top = gitdiff.toplevel(repo_dir)
    except gitdiff.GitUnknown as e:
        return _unreadable(head, ref, str(e))
    if head.path and not _under(os.path.realpath(head.path), top):
        return Guarded(head)  # not the repository's: the workflow's own file
    if config_file is not None:
        target = os.path.realpath(config_file)
        if not _under(target, top):
            return Guarded(head)
        candidates = [os.path.relpath(target, top)]
    else:
        here = os.path.realpath(start)
        if not head.path and not _under(here, top):
            return Guarded(head)  # discovery never looks inside the repository from here
        candidates = _discovery(here, top)
    try:
        commit = _commit(top, ref)
        found = _at_ref(top, commit, candidates, config_file is not None)
    except _Unreadable as e:
        return _unreadable(head, ref, str(e))
    if found is None and not head.file:
        return Guarded(head)  # no file here or there: the defaults, both
    if found is None:
        base, label = Settings(), f"{ref} (no settings file)"
    else:
        rel, text = found
        label = f"{ref}:{rel}"
        try:
            base = load_text(text, os.path.join(top, rel), label, formats, rule_names, ref=ref)
        except ConfigError as err:
            raise BaseSettingsError(label, err.problems) from None
    return _stronger(head, base, ref, label, rules)


class Unreadable(Exception):
    """A file cannot be read at a git ref; str() says why."""


def text_at_ref(ref: str, path: str) -> tuple[str, str] | None:
    """(the path relative to its repository's root, the text) of the regular file `path` as it
    is at `ref`, read through git as REF's settings are; None when it is not there. Unreadable
    (git fails, `ref` is no commit, the path is no regular file there) says why."""
    try:
        top = gitdiff.toplevel(os.path.dirname(os.path.abspath(path)))
        real = os.path.realpath(path)
        if not _under(real, top):
            raise Unreadable(f"{path} is outside the repository")
        rel = os.path.relpath(real, top)
        return _at_ref(top, _commit(top, ref), [rel], True)
    except gitdiff.GitUnknown as e:
        raise Unreadable(str(e)) from None
    except _Unreadable as e:
        raise Unreadable(str(e)) from None


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _discovery(here: str, top: str) -> list[str]:
    """The paths `discover` tries, in its order, relative to the repository's root."""
    out: list[str] = []
    d = here
    while _under(d, top):
        rel = os.path.relpath(d, top)
        out += [os.path.normpath(os.path.join(rel, n)) for n in (YAML_NAME, PYPROJECT)]
        if d == top:
            break
        d = os.path.dirname(d)
    return out


def _run(top: str, *args: str) -> tuple[int, str, str]:
    try:
        return gitrun.git(top, *args)
    except gitrun.GitFailed as e:
        raise _Unreadable(str(e)) from None


def _git(top: str, *args: str) -> str:
    code, out, err = _run(top, *args)
    if code != 0:
        command = next(a for a in args if not a.startswith("-"))
        raise _Unreadable(f"git {command} failed ({gitrun.last_line(err)})")
    return out


def _commit(top: str, ref: str) -> str:
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise _Unreadable(f"'{ref}' is not a git ref")
    code, out, _ = _run(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if code != 0:
        raise _Unreadable(f"'{ref}' is not a commit here")
    return out.strip()


def _at_ref(top: str, commit: str, candidates: Sequence[str], named: bool) -> tuple[str, str] | None:
    """(path, text) of the settings file at `commit`: the first candidate that is one (a
    pyproject.toml only with [tool.topogate], unless named by --config); None when none is."""
    listing = _git(top, "--literal-pathspecs", "ls-tree", "-z", "-l", "--end-of-options", commit, "--",
                   *candidates)
    entries: dict[str, tuple[str, str, str]] = {}
    for row in listing.split("\0"):
        meta, tab, path = row.partition("\t")
        if tab:
            mode, _kind, oid, size = meta.split()
            entries[path] = (mode, oid, size)
    for rel in candidates:
        if rel not in entries:
            continue
        mode, oid, size = entries[rel]
        if mode in _NO_FILE:
            continue  # a directory or a submodule: `discover` passes it over too
        if mode not in _REGULAR:
            raise _Unreadable(f"{rel} is not a regular file there (git mode {mode})")
        if int(size) > limits.max_file_bytes():
            raise _Unreadable(f"{rel} is larger than the file size limit (TOPOGATE_MAX_FILE_MB)")
        text = _git(top, "cat-file", "blob", oid)
        if named or os.path.basename(rel) != PYPROJECT or has_tool_table(text):
            return rel, text
    return None


def _unreadable(head: Settings, ref: str, why: str) -> Guarded:
    """REF's settings are unknown: nothing of the working tree's narrows the check."""
    taken = tuple(k for k in NARROWING if k not in ("strict", *_NEEDED) and _narrows(head, k))
    if not taken:
        return Guarded(head)
    settings = dataclasses.replace(head, select=(), ignore=(), cluster=None, exclude=Globs(base=head.exclude.base),
                                   per_path_ignores=(),
                                   origins=tuple(o for o in head.origins if o[0][0] not in taken))
    return Guarded(settings, base=f"{ref} (unreadable)", taken=taken, note=(
        f"--changed-since {ref}: the settings at {ref} cannot be read ({why}): {', '.join(taken)} of "
        f"{head.file} narrow the check and are not applied"),
        said=f"{_and(taken)} not applied: the settings at {ref} cannot be read")


def _and(words: Sequence[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def _narrows(s: Settings, key: str) -> bool:
    return bool(getattr(s, NARROWING[key])) if key != "exclude" else bool(s.exclude.patterns)


def _stronger(head: Settings, base: Settings, ref: str, label: str, rules: Sequence[RuleInfo]) -> Guarded:
    """Each setting the stronger of the two; a Weakened fact for each the working tree narrows."""
    where = head.file or shown(base.path)
    anchor = Position(where, 1, 1) if not head.file else None
    facts: list[Weakened] = []
    taken: list[str] = []
    for key, compare in _COMPARE.items():
        found = compare(head, base, _Rules(rules))
        if not found:
            continue
        taken.append(key)
        for path, what, theirs in found:
            pos = anchor or head.origin(*path)[1]
            facts.append(Weakened(key, f"Settings/{where}", (
                f"{what}, which {ref}'s settings do not ({theirs}); under --changed-since this check uses "
                f"{ref}'s {key}, but once merged every check reading this file would {_IMPACT[key]}"), pos))
    if not taken:
        return Guarded(head)
    fields = {NARROWING[k]: getattr(base, NARROWING[k]) for k in taken}
    if "paths" in taken:  # every path either reads: more is checked, never less
        fields["paths"] = (*head.paths, *(p for p in base.paths if p not in head.paths))
    origins: list[Origin] = [o for o in head.origins if o[0][0] not in taken]
    origins += [o for o in base.origins if o[0][0] in taken]
    settings = dataclasses.replace(head, **fields, origins=tuple(origins))
    source = f"from {label}" if base.file else f"from {ref}, which has no settings file"
    mine = "this file narrows" if head.file else "no settings file here narrows"
    return Guarded(settings, tuple(sorted(facts)), label, tuple(taken), said=(
        f"{_and(taken)} {source}: {mine} {'them' if len(taken) > 1 else 'it'} more (--changed-since {ref})"))


class _Rules:
    """Rule IDs of a settings list (IDs, prefixes, names), as --select/--ignore resolve them."""

    def __init__(self, rules: Sequence[RuleInfo]):
        self.rules = rules
        self.every = frozenset(r.id for r in rules)

    def of(self, spec: Sequence[str]) -> frozenset[str]:
        try:
            return resolve_rules(spec, self.rules, "settings") if spec else frozenset()
        except SelectionError:  # both files were validated against the same rules
            return frozenset()

    def selected(self, s: Settings) -> frozenset[str]:
        return self.of(s.select) if s.select else self.every


def _ids(ids: frozenset[str], most: int = 8) -> str:
    shown_ids = sorted(ids)
    more = len(shown_ids) - most
    return ", ".join(shown_ids[:most]) + (f" and {more} more" if more > 0 else "")


def _listed(values: Sequence[str], none: str) -> str:
    return ", ".join(values) if values else none


# Each comparison: [(key path in the working tree's file, what it does, what REF's says)], empty
# when the working tree's setting narrows no more than REF's.
Found = list[tuple[tuple[str, ...], str, str]]


def _select(head: Settings, base: Settings, r: _Rules) -> Found:
    left = r.selected(base) - r.selected(head)
    if not left:
        return []
    return [(("select",), f"select: {_listed(head.select, '')} leaves out {_ids(left)}",
             f"select: {base.select and ', '.join(base.select) or 'every rule'}")]


def _ignore(head: Settings, base: Settings, r: _Rules) -> Found:
    new = r.of(head.ignore) - r.of(base.ignore)
    if not new:
        return []
    return [(("ignore",), f"ignore: {_ids(new)} newly ignored", f"ignore: {_listed(base.ignore, 'no rule')}")]


def _strict(head: Settings, base: Settings, r: _Rules) -> Found:
    if not base.strict or head.strict:
        return []
    said = "strict: false" if any(o[0] == ("strict",) for o in head.origins) else "strict left out"
    return [(("strict",), f"{said} lets warnings pass", "strict: true")]


def _cluster(head: Settings, base: Settings, r: _Rules) -> Found:
    if head.cluster is None or head.cluster == base.cluster:
        return []
    return [(("cluster",), f"cluster: {head.cluster} restricts the check to one cluster",
             f"cluster: {base.cluster or 'every cluster'}")]


def _same_base(a: Globs, b: Globs) -> bool:
    return os.path.realpath(a.base) == os.path.realpath(b.base)


def _exclude(head: Settings, base: Settings, r: _Rules) -> Found:
    theirs = set(base.exclude.patterns) if _same_base(head.exclude, base.exclude) else set()
    new = [p for p in head.exclude.patterns if p not in theirs]
    if not new:
        return []
    return [(("exclude",), f"exclude: {', '.join(new)} newly left unread",
             f"exclude: {_listed(base.exclude.patterns, 'nothing')}")]


def _per_path(head: Settings, base: Settings, r: _Rules) -> Found:
    out: Found = []
    for globs, rules in head.per_path_ignores:
        glob = globs.patterns[0]
        theirs = next((rs for g, rs in base.per_path_ignores if g.patterns == globs.patterns and _same_base(g, globs)),
                      ())
        new = r.of(rules) - r.of(theirs)
        if new:
            out.append((("per-path-ignores", glob), f"per-path-ignores: {glob}: {_ids(new)} newly ignored there",
                        f"per-path-ignores {glob}: {_listed(theirs, 'no rule')}"))
    return out


def _inventory(head: Settings, base: Settings, r: _Rules) -> Found:
    if not head.inventory or not base.inventory or os.path.realpath(head.inventory) == os.path.realpath(base.inventory):
        return []
    return [(("inventory",), f"inventory: {shown(head.inventory)} replaces the inventory the check reads",
             f"inventory: {shown(base.inventory)}")]


def _baseline(head: Settings, base: Settings, r: _Rules) -> Found:
    if not head.baseline or not base.baseline or os.path.realpath(head.baseline) == os.path.realpath(base.baseline):
        return []
    return [(("baseline",), f"baseline: {shown(head.baseline)} replaces the baseline the check reads",
             f"baseline: {shown(base.baseline)}")]


def _paths(head: Settings, base: Settings, r: _Rules) -> Found:
    mine = {os.path.realpath(p) for p in head.paths}
    gone = [shown(p) for p in base.paths if os.path.realpath(p) not in mine]
    if not gone:
        return []
    return [(("paths",), f"paths: {', '.join(gone)} no longer listed",
             f"paths: {', '.join(shown(p) for p in base.paths)}")]


_COMPARE: dict[str, Callable[[Settings, Settings, _Rules], Found]] = {
    "select": _select, "ignore": _ignore, "strict": _strict, "cluster": _cluster, "exclude": _exclude,
    "per-path-ignores": _per_path, "inventory": _inventory, "paths": _paths, "baseline": _baseline}


__all__ = ["RULE", "BaseSettingsError", "Guarded", "Unreadable", "guard", "never_hidden", "text_at_ref"]
