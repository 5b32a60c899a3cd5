"""The glob of Flux's post-build substitution (fluxcd/pkg/envsubst's own copy of Go's
path.Match), which the trims `${var#p}`, `${var##p}`, `${var%p}`, `${var%%p}` match with:
`*` and `?` match `/` too, and a trailing `*` matches whatever remains.

Held against the Go package with the rest of the substitution (tests/oracles/test_flux_oracle.py).
"""

from __future__ import annotations


class BadPattern(ValueError):
    """A malformed class or escape, met where the match reaches it (as Go's path.Match)."""


def glob_match(pattern: str, name: str) -> bool:
    """Whether name matches pattern as envsubst's glob does: `*` and `?` match `/` too, and a trailing `*`
    matches whatever remains. BadPattern for a malformed class or escape."""
    while pattern:
        star, chunk, pattern = _chunk(pattern)
        if star and not chunk:
            return True
        rest = _match_chunk(chunk, name)
        if rest is not None and (not rest or pattern):
            name = rest
            continue
        if star:
            for i in range(len(name)):
                rest = _match_chunk(chunk, name[i + 1:])
                if rest is not None:
                    if not pattern and rest:
                        continue
                    name = rest
                    break
            else:
                return False
            continue
        return False
    return not name


def _chunk(pattern: str) -> tuple[bool, str, str]:
    star = False
    while pattern.startswith("*"):
        pattern, star = pattern[1:], True
    in_range = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern):
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _match_chunk(chunk: str, s: str) -> str | None:
    """What is left of s after chunk matched its start, or None. A malformed chunk raises
    BadPattern only where the match gets to it (as Go's does)."""
    while chunk:
        if not s:
            return None
        c = chunk[0]
        if c == "[":
            r, s, chunk = s[0], s[1:], chunk[1:]
            negated = chunk.startswith("^")
            if negated:
                chunk = chunk[1:]
            match, n = False, 0
            while True:
                if chunk.startswith("]") and n > 0:
                    chunk = chunk[1:]
                    break
                lo, chunk = _esc(chunk)
                hi = lo
                if chunk[0] == "-":
                    hi, chunk = _esc(chunk[1:])
                if lo <= r <= hi:
                    match = True
                n += 1
            if match == negated:
                return None
        elif c == "?":
            s, chunk = s[1:], chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern("syntax error in pattern")
            if chunk[0] != s[0]:
                return None
            s, chunk = s[1:], chunk[1:]
    return s


def _esc(chunk: str) -> tuple[str, str]:
    if not chunk or chunk[0] in "-]":
        raise BadPattern("syntax error in pattern")
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern("syntax error in pattern")
    r, rest = chunk[0], chunk[1:]
    if not rest:
        raise BadPattern("syntax error in pattern")
    return r, rest


__all__ = ["BadPattern", "glob_match"]
