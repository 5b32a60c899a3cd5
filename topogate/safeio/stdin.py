"""`-` among PATHs: manifests piped in (`kustomize build overlay | topogate check INV -`).

The stream is read once, whole, up to MAX_BYTES: a pipe that never ends (or a mistaken
`/dev/zero`) is refused with one line instead of filling memory. Findings name the input
`<stdin>` with the line and column inside the stream.
"""

from __future__ import annotations

import sys
from typing import BinaryIO

from topogate.core.position import Position

DISPLAY = "<stdin>"
MAX_BYTES = 64 * 1024 * 1024


class StdinError(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.pos = Position(DISPLAY, 1, 1)


def read_stdin(stream: BinaryIO | None = None, limit: int = MAX_BYTES) -> str:
    src = stream if stream is not None else sys.stdin.buffer
    data = src.read(limit + 1)
    if len(data) > limit:
        raise StdinError(f"more than {limit // (1024 * 1024)} MiB on standard input; "
                         "write the manifests to files and pass their paths")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise StdinError(f"not UTF-8 text (byte 0x{data[e.start]:02x} at offset {e.start})") from None

__all__ = ["DISPLAY", "StdinError", "read_stdin"]
