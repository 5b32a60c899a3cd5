"""Make text safe to print into a CI log.

The GitHub Actions runner reads every line a step prints: a line that starts with `::` (after
leading whitespace) is a workflow command (`::error ...`, `::add-mask::`, `::stop-commands::`,
which turns off every later annotation), and `##[name ...]` anywhere in a line is the older
form. File names, base paths and messages that quote user values come from pull requests, so
whatever topogate prints that may hold them goes through here:

- `one_line(value)`: a single value (a file name, a key) becomes one visible line: newlines
  and other control characters (C0, DEL, C1, Unicode line/paragraph separators, bidi
  overrides) are shown as `\\n`, `\\x1b`, `\\u2028`; then `line` below.
- `line(text)`: a line topogate built: a leading `::` becomes `%3A:` and `##[` becomes
  `##%5B`, so the runner sees plain text (the same percent-encoding the runner's own escaping
  uses). Control characters are escaped as in `one_line`; tabs are kept.
- `lines(text)`: every line of a multi-line output, its own newlines kept.
- `json_text(text)`: JSON output: `##[` inside strings becomes `##\\u005b`, which decodes to
  the same string (JSON escapes control characters itself and no JSON line starts with `::`).

`--format github` does its own escaping (its lines are meant to be commands).

Each of these also redacts credentials and the values a run registered as secret
(topogate.core.redact): whatever is printed for a CI log passes through here.
"""

from __future__ import annotations

import re

from topogate.core.redact import redact

_OTHERS = r"\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(rf"[\x00-\x08\x0a-\x1f{_OTHERS}]")  # tabs kept
_CONTROL_OR_TAB = re.compile(rf"[\x00-\x1f{_OTHERS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_COMMAND_START = re.compile(r"^(\s*):")


def _show(m: re.Match[str]) -> str:
    ch = m.group(0)
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def _neutralise(text: str) -> str:
    if text.lstrip().startswith("::"):
        text = _COMMAND_START.sub(r"\1%3A", text, count=1)
    return text.replace("##[", "##%5B")


def line(text: str) -> str:
    """One line topogate built: no control character, not a workflow command."""
    return _neutralise(_CONTROL.sub(_show, redact(text)))


def one_line(value: str) -> str:
    """One value (a file name, a key, a message): one visible line, not a workflow command."""
    return _neutralise(_CONTROL_OR_TAB.sub(_show, redact(value)))


def lines(text: str) -> str:
    """Every line of `text` made safe; the line breaks themselves are kept."""
    return "\n".join(_neutralise(_CONTROL.sub(_show, x)) for x in redact(text).split("\n"))


def json_text(text: str) -> str:
    """JSON output with `##[` written as `##\\u005b` (same decoded value)."""
    return redact(text).replace("##[", "##\\u005b")


def for_log(fmt: str, text: str) -> str:
    """A whole report in format `fmt`, safe for standard output (which may be a CI log): no
    workflow command from a file name or a message, no credential. github's own lines are
    commands on purpose and escape their data themselves."""
    if fmt == "github":
        return redact(text)
    if fmt in ("json", "sarif"):
        return json_text(text)
    return lines(text)

__all__ = ["for_log", "json_text", "line", "lines", "one_line"]
