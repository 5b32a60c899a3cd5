"""Characters YAML can carry only as escapes ("\\x05", "\\u0085"...) and kustomize refuses.

libyaml refuses a raw control character, but a double-quoted escape reads fine and puts the
character in a string. kustomize (go-yaml) then refuses it when it reads the generated tree or
the base ("control characters are not allowed"), after `generate` wrote files that build for
nobody. Only text holding a backslash can carry one, so callers check that first: the walk
costs nothing for the usual inventory.
"""

from __future__ import annotations

import re
from typing import Any

# What go-yaml's reader takes: tab, LF, CR, printable ASCII, NEL, and the non-surrogate,
# non-FFFE/FFFF rest of Unicode.
_UNPRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def unprintable(s: str) -> str | None:
    """The first character of `s` kustomize would refuse, as #xNN, or None."""
    m = _UNPRINTABLE.search(s)
    return f"#x{ord(m.group()):02x}" if m else None


def message(char: str) -> str:
    return (f"the escaped character {char} is not allowed: kustomize refuses control characters; "
            "remove it")


def unprintable_paths(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], bool, str]]:
    """(path, is_key, character) of every string key or value holding such a character."""
    out: list[tuple[tuple[Any, ...], bool, str]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [(path, data)]
    seen: set[int] = set()
    while stack:
        p, v = stack.pop()
        if isinstance(v, (dict, list)):
            if id(v) in seen:  # an alias: its content is checked once
                continue
            seen.add(id(v))
        if isinstance(v, dict):
            for k, item in v.items():
                c = unprintable(k) if isinstance(k, str) else None
                if c:
                    out.append(((*p, k), True, c))
                stack.append(((*p, k), item))
        elif isinstance(v, list):
            stack.extend(((*p, i), item) for i, item in enumerate(v))
        elif isinstance(v, str):
            c = unprintable(v)
            if c:
                out.append((p, False, c))
    return sorted(out, key=lambda t: [str(x) for x in t[0]])
