"""What a single-file `-o PATH` names, and writing to the ones that are streams.

A regular file (or a name not yet taken) is replaced whole by `writer.write_file`: a new file
written beside it and renamed onto the name, so a reader never sees half of it. That rename
is wrong for anything else: onto a character device or a FIFO it puts a regular file where the
node was (as root, `schema -o /dev/null` did), and onto `/dev/stdout` it replaces the link in
/dev. Those are written through instead, as a shell's `>` writes them: a character device, a
FIFO (`-o /dev/stdout` in a pipeline, `-o >(gzip > r.gz)`), and a regular file reached through
a link into /proc or /dev/fd (`-o /dev/stdout > log.txt`: the open file of the process, which
is added to, never truncated under the output already in it). A directory, a socket or a block
device is refused.

The kind is read by following links (`/dev/stdout` is one), and checked again on the open
descriptor: a name swapped for a regular file in between is refused, not appended to.
"""

from __future__ import annotations

import os
import stat

from topogate.safeio.oserror import reason

REPLACE = "replace"  # a regular file or a new name: replaced whole
THROUGH = "through"  # a character device, a FIFO, a process's open file: written as a stream
_REFUSED = {stat.S_IFDIR: "is a directory", stat.S_IFSOCK: "is a socket", stat.S_IFBLK: "is a block device"}
_MAX_LINKS = 40  # as the kernel's own bound on a chain of symbolic links


def _names_open_file(path: str) -> bool:
    """Whether `path` reaches its file through /proc or /dev/fd (`/dev/stdout`, `/dev/fd/3`,
    `/proc/self/fd/1`): the file a process has open, not a name in a directory."""
    p = os.path.abspath(path)
    for _ in range(_MAX_LINKS):
        p = os.path.join(os.path.realpath(os.path.dirname(p)), os.path.basename(p))
        if p.startswith(("/proc/", "/dev/fd/")):
            return True
        if not os.path.islink(p):
            return False
        p = os.path.join(os.path.dirname(p), os.readlink(p))
    return False


def _kind(mode: int, path: str) -> tuple[str, str]:
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return THROUGH, ""
    if stat.S_ISREG(mode):
        return (THROUGH if _names_open_file(path) else REPLACE), ""
    return "", _REFUSED.get(stat.S_IFMT(mode), "is not a regular file")


def target_of(path: str) -> tuple[str, str]:
    """(REPLACE or THROUGH, "") for a path `-o` may write, else ("", why not)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return REPLACE, ""  # a new name (or a dangling link, replaced as before)
    except OSError as e:
        return "", f"cannot be read: {reason(e)}"
    kind, why = _kind(st.st_mode, path)
    if kind == THROUGH and not os.access(path, os.W_OK):
        return "", "is not writable"
    return kind, why


def write_through(path: str, data: bytes) -> str:
    """Write `data` to the stream `path` names (module doc); "" or why it could not."""
    try:
        # No O_CREAT: only what is there is written to. A FIFO waits for its reader, as `>` does.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        return f"cannot write: {reason(e)}"
    try:
        kind, why = _kind(os.fstat(fd).st_mode, path)
        if kind != THROUGH:
            return why or "was replaced by a regular file while it was opened"
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except OSError as e:
        return f"cannot write: {reason(e)}"
    finally:
        os.close(fd)
    return ""
