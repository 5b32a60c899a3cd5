"""The baseline: today's findings, written once, reported as baselined afterwards.

A team adopting topogate on a repository that already exists has findings on day one. Waiving
each object takes a waiver per object; a baseline takes one command: `topogate baseline` writes
the findings of a check to a file, and `check` with that file (`--baseline FILE`, or `baseline:`
in the settings file) reports each finding it lists as baselined: counted in every report, kept
in SARIF as a suppressed result, failing nothing. A finding it does not list, a new one, still
fails the check, and an entry no finding matches any more is counted as gone (run `topogate
baseline` again to drop it).

A finding matches an entry by its rule, the object it is about and the file it is reported in:
unrelated lines that move, or a message that says more once other things change (the zones a
job can land in), do not make it new; a finding of another rule, about another object, or in
another file does. Several findings alike consume as many entries. The message is kept in the
file for the review, not matched.

The file is JSON with one finding a line, sorted, so that a review sees exactly what was added
or removed, and the same findings always give the same bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from topogate.check.settings_guard import Unreadable, text_at_ref
from topogate.core.findings import Finding
from topogate.core.position import Position
from topogate.safeio.repopaths import display, read_input
from topogate.safeio.saferead import InputError

VERSION = 1
DEFAULT_FILE = ".topogate-baseline.json"
Key = tuple[str, str, str]  # rule, object, file


def key(rule: str, object_: str, file: str, message: str = "") -> Key:
    return rule, object_, file


def finding_key(f: Finding) -> Key:
    return key(f.rule, f.object, f.file, f.message)


@dataclass(frozen=True)
class Entry:
    key: Key
    pos: Position  # its line in the baseline file


@dataclass(frozen=True)
class Baseline:
    file: str  # as shown in reports
    entries: tuple[Entry, ...]


class BaselineError(Exception):
    """The baseline file cannot be used: str() is `file:line:column: what to do`."""


def render(findings: Iterable[Finding]) -> str:
    """The baseline of `findings` (errors and warnings: notes fail nothing), one a line, sorted."""
    rows = sorted((f.rule, f.object, f.file, f.message) for f in findings if f.severity in ("error", "warning"))
    lines = [json.dumps({"rule": r, "object": o, "file": fi, "message": m}, ensure_ascii=False, sort_keys=True)
             for r, o, fi, m in rows]
    body = ",\n".join(lines)
    return (f'{{"topogate-baseline": {VERSION}, "findings": [\n' + body + ("\n" if body else "") + "]}\n")


def parse(text: str, shown: str) -> Baseline:
    """A baseline file's entries, each at its line; BaselineError names what is wrong."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise BaselineError(f"{shown}:{e.lineno}:{e.colno}: not JSON ({e.msg}); write it with "
                            "`topogate baseline`") from None
    if not isinstance(doc, dict) or doc.get("topogate-baseline") != VERSION or not isinstance(doc.get("findings"), list):
        raise BaselineError(f"{shown}:1:1: not a topogate baseline (version {VERSION}); write it with "
                            "`topogate baseline`")
    lines = text.splitlines()
    entries: list[Entry] = []
    line = 1
    for i, item in enumerate(doc["findings"]):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("rule", "object", "file",
                                                                                         "message")):
            raise BaselineError(f"{shown}:1:1: finding {i + 1} needs the strings rule, object, file and "
                                "message; write the file with `topogate baseline`")
        # one a line as `render` writes them: the line that starts this entry, else the file's start
        line = next((n for n in range(line + 1, len(lines) + 1) if lines[n - 1].lstrip().startswith("{")), line)
        entries.append(Entry(key(item["rule"], item["object"], item["file"], item["message"]),
                             Position(shown, line, 1)))
    return Baseline(shown, tuple(entries))


@dataclass(frozen=True)
class Applied:
    """What a baseline did to one check: the findings it took out, and its entries no finding
    matched (gone: fixed, or moved out of what this check reads)."""

    baselined: tuple[Finding, ...]
    kept: tuple[Finding, ...]
    unmatched: tuple[Entry, ...]


def apply(findings: Sequence[Finding], baseline: Baseline) -> Applied:
    """Each finding the baseline lists (by `finding_key`, one entry each) is baselined."""
    left = Counter(e.key for e in baseline.entries)
    taken: list[Finding] = []
    kept: list[Finding] = []
    for f in findings:
        k = finding_key(f)
        if f.severity in ("error", "warning") and left[k] > 0:
            left[k] -= 1
            taken.append(f)
        else:
            kept.append(f)
    unmatched: list[Entry] = []
    for e in baseline.entries:
        if left[e.key] > 0:
            left[e.key] -= 1
            unmatched.append(e)
    return Applied(tuple(taken), tuple(kept), tuple(unmatched))


def added(head: Baseline, base: Baseline) -> tuple[Entry, ...]:
    """The entries of `head` beyond `base`'s (as many of a key as `head` has more)."""
    theirs = Counter(e.key for e in base.entries)
    out: list[Entry] = []
    for e in head.entries:
        if theirs[e.key] > 0:
            theirs[e.key] -= 1
        else:
            out.append(e)
    return tuple(out)


def narrowed(head: Baseline, base: Baseline) -> Baseline:
    """`head` without what it adds to `base`: the entries both list."""
    extra = set(id(e) for e in added(head, base))
    return Baseline(head.file, tuple(e for e in head.entries if id(e) not in extra))


def load(path: str) -> Baseline:
    """The baseline file at `path` (read as every input is: inside its repository, a regular
    file under the size limit, tracked by git in a work tree); BaselineError otherwise."""
    shown = display(path)
    try:
        return parse(read_input(path, shown), shown)
    except InputError as e:
        raise BaselineError(str(e)) from None


def load_guarded(path: str, ref: str) -> tuple[Baseline, tuple[Entry, ...], str]:
    """The baseline to honour under `--changed-since ref`: the working tree's file without the
    entries it adds to the file at `ref` (a pull request may not baseline its own new findings),
    those entries, and a note for standard error when `ref`'s file cannot be read (then nothing
    is honoured)."""
    head = load(path)
    try:
        found = text_at_ref(ref, path)
    except Unreadable as e:
        return Baseline(head.file, ()), head.entries, f"the baseline at {ref} cannot be read ({e}): none is honoured"
    base = parse(found[1], f"{ref}:{found[0]}") if found is not None else Baseline(head.file, ())
    return narrowed(head, base), added(head, base), ""


__all__ = ["Applied", "Baseline", "BaselineError", "DEFAULT_FILE", "Entry", "added", "apply", "key", "load",
           "load_guarded", "narrowed", "parse", "render"]
