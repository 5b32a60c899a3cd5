"""Why a file could not be read or written, in words a user can act on.

`str(OSError)` reads "[Errno 2] No such file or directory: 'x'": an errno is noise to a user,
and the path is often already in the message's position. These helpers give the reason alone,
or the reason and the path when the path is not said elsewhere.
"""

from __future__ import annotations


def reason(e: BaseException) -> str:
    """"No such file or directory", "Permission denied", "not UTF-8 text (...)"."""
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})"
    if isinstance(e, OSError) and e.strerror:
        return e.strerror
    return str(e) or type(e).__name__



__all__ = ["reason"]
