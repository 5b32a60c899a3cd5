"""Colour for the text report on a terminal: severities, verdicts and blocked flows stand out.

Only when standard output is a terminal and NO_COLOR is unset or empty (https://no-color.org):
a pipe, a file, CI logs and `--format` other than text get plain bytes, so what tests and
tools read never contains escape codes. Colour is added after rendering, to the finished text,
so the reporters stay pure and the plain text is exactly what a pipe would get.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

RED, YELLOW, GREEN, BOLD, RESET = "\033[31m", "\033[33m", "\033[32m", "\033[1m", "\033[0m"

# (pattern, colour): the severity word of a finding line, the verdict line, blocked flows.
_RULES = (
    (re.compile(r"(?<=: )error(?= TG\d{3} )"), RED + BOLD),
    (re.compile(r"(?<=: )warning(?= TG\d{3} )"), YELLOW + BOLD),
    (re.compile(r"^FAIL(?=: )", re.M), RED + BOLD),
    (re.compile(r"^ok(?=: )", re.M), GREEN + BOLD),
    (re.compile(r"^  blocked(?=: )", re.M), RED),
    (re.compile(r"NOT (?:colocated|schedulable)"), RED),
)


def use_color(env: Mapping[str, str], isatty: bool) -> bool:
    return isatty and not env.get("NO_COLOR")


def colorize(text: str) -> str:
    for pattern, code in _RULES:
        text = pattern.sub(f"{code}\\g<0>{RESET}", text)
    return text

__all__ = ["colorize", "use_color"]
