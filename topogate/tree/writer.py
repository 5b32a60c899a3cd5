"""The only module that writes the generated tree to disk.

Promise: after any failure or kill, OUT is the old tree or the new tree, never a mix; what a
killed run leaves beside OUT is invisible to git (`git add -A` takes none of it) and the next
run removes it.

How:
- Runs are serialised by an exclusive `flock` on the directory holding OUT: no lock file, so a
  kill leaves none (where directories cannot be locked, NFS, on `.OUT.topogate.lock` beside
  OUT, removed at the end of the run). A second run waits, then sees the first one's finished
  tree.
- Under the lock, leftovers of killed runs are recovered first: a hidden old tree with no OUT
  (a kill between the two renames of the fallback swap below) is put back as OUT; every other
  `.OUT.topogate-new-*` / `.OUT.topogate-old-*` directory is removed.
- OUT is checked before anything is written: not a symlink, a directory, every file carrying
  topogate's header (typo protection: `-o` pointed at a source directory), and every
  directory readable and writable by us (otherwise it could be moved but never deleted).
- The new tree is written into `tree` inside a fresh holder `.OUT.topogate-new-*` beside OUT
  (same file system), whose `.gitignore` of `*`, written first, hides the holder from git
  whatever state a kill leaves it in (the old tree lands there after the swap, and the
  fallback's `.OUT.topogate-old-*` gets one too). The tree is given OUT's mode and group
  first (so a setgid OUT passes its group on), then swapped with OUT in one
  `renameat2(RENAME_EXCHANGE)`: no moment without OUT. Where the kernel or file system lacks
  it, two renames (OUT aside, new into place), with the recovery above for a kill in between.
- Every OSError (a full disk, a permission, a race) becomes a WriteError with one line; the
  temporary directory is removed and OUT is as it was.

Durability against power loss (fsync) is not attempted: the output is reproducible from the
inventory, so a re-run is the recovery.
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from topogate.core.escape import lines
from topogate.core.redact import redact
from topogate.safeio.oserror import reason
from topogate.safeio.saferead import is_generated
from topogate.tree.target import THROUGH, target_of, write_through

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class WriteError(Exception):
    """OUT cannot be (safely) replaced; the message says why and what to do."""


def _walk(out: Path, errors: list[str] | None = None) -> list[str]:
    """Every file under `out`, as sorted relative POSIX paths (symlinks count as files).

    A directory that cannot be listed is reported in `errors` (os.walk would skip it silently,
    which is how an unreadable directory once slipped past the foreign-file check)."""
    return sorted(tree_entries(out, errors))


def tree_entries(out: str | os.PathLike[str], errors: list[str] | None = None) -> dict[str, os.DirEntry[str]]:
    """Every file under `out` (the paths `_walk` lists) with its directory entry, whose
    `stat(follow_symlinks=False)` is the file's lstat, made once and kept.

    One scandir per directory and no pathlib per file: `check --rendered` lists, lstats and
    reads every file of a tree of tens of thousands. A symlinked directory is listed, not
    followed: it is not ours either way. Iterative, so no depth of directories exhausts the
    stack."""
    root = Path(out)
    found: dict[str, os.DirEntry[str]] = {}
    todo = [(str(root), "")]
    while todo:
        path, rel = todo.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError as e:
            if errors is not None:
                errors.append(f"{Path(e.filename or root).relative_to(root).as_posix()}: "
                              f"{e.strerror or e}")
            continue
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            if is_dir and not entry.is_symlink():
                todo.append((entry.path, f"{rel}{entry.name}/"))
            else:
                found[f"{rel}{entry.name}"] = entry
    return found


def foreign_files(out: str | os.PathLike[str]) -> list[str]:
    """Files under `out` that topogate did not generate (empty when `out` is missing)."""
    root = Path(out)
    if not root.exists():
        return []
    return [p for p in _walk(root) if os.path.islink(root / p) or not is_generated(root / p)]


def _blocked_dirs(root: Path) -> list[str]:
    """Directories in OUT (OUT included) we could move but not empty: unreadable, read-only,
    or not ours to write. topogate makes its directories with owner rwx, so a directory
    without it was changed by someone; as root `os.access` says yes to everything, hence the
    mode bits too."""
    bad: list[str] = []
    errors: list[str] = []
    dirs = [root]
    for dirpath, dirnames, _ in os.walk(root, onerror=lambda e: errors.append(str(e.filename))):
        dirs.extend(Path(dirpath) / d for d in dirnames
                    if not os.path.islink(os.path.join(dirpath, d)))
    for d in dirs:
        try:
            mode = os.lstat(d).st_mode
        except OSError:
            continue
        if mode & 0o700 != 0o700 or not os.access(d, os.R_OK | os.W_OK | os.X_OK):
            rel = d.relative_to(root).as_posix()
            bad.append(f"{'.' if rel == '.' else rel} (mode {stat.filemode(mode)})")
    bad.extend(f"{Path(e).relative_to(root).as_posix()} (cannot be listed)" for e in errors
               if e and e != str(root) and Path(e).is_relative_to(root))
    return sorted(set(bad))


def _check_paths(files: Mapping[str, bytes]) -> None:
    for p in files:
        parts = p.split("/")
        if not p or p.startswith("/") or "\\" in p or any(x in ("", ".", "..") for x in parts):
            raise WriteError(f"refusing to write {p!r}: not a clean relative path")


def diff_tree(out: str | os.PathLike[str], files: Mapping[str, bytes],
              entries: Mapping[str, os.DirEntry[str]] | None = None) -> list[tuple[str, str]]:
    """What `write_tree(out, files)` would change: (status, path), status added/changed/removed,
    sorted by path. `entries`: `tree_entries(out)` when the caller has it already."""
    root = Path(out)
    on_disk = entries if entries is not None else tree_entries(root) if root.is_dir() else {}
    result: list[tuple[str, str]] = []
    for p in sorted(on_disk.keys() | files.keys()):
        if p not in files:
            result.append(("removed", p))
        elif p not in on_disk:
            result.append(("added", p))
        else:
            same = False
            entry = on_disk[p]
            try:
                st = entry.stat(follow_symlinks=False)
                # Only a regular file of the right size is read: a FIFO would hang the run, a
                # link to /dev/zero would never end, and a large file cannot be equal anyway.
                if stat.S_ISREG(st.st_mode) and st.st_size == len(files[p]):
                    with open(entry.path, "rb") as fh:
                        same = fh.read() == files[p]
            except OSError:
                pass
            if not same:
                result.append(("changed", p))
    return result


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _write_all(tmp: Path, files: Mapping[str, bytes]) -> None:
    made: set[Path] = {tmp}
    for rel in sorted(files):
        target = tmp.joinpath(*rel.split("/"))
        parent = target.parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.update(parent.parents)
            made.add(parent)
        with open(target, "wb") as fh:
            fh.write(files[rel])


# ----------------------------------------------------------------------------- leftovers


def _prefixes(name: str) -> tuple[str, str]:
    return f".{name}.topogate-new-", f".{name}.topogate-old-"


def _remove(path: Path) -> None:
    """Remove a tree we made, even one a killed run left with a directory we cannot write."""

    def unlock(func: object, p: str, _exc: object) -> None:
        try:
            parent = os.path.dirname(p)
            os.chmod(parent, 0o700)
            if os.path.isdir(p) and not os.path.islink(p):
                os.chmod(p, 0o700)
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
        except OSError:
            pass

    if path.is_symlink() or not path.exists():
        if path.is_symlink():
            path.unlink()
        return
    shutil.rmtree(path, onerror=unlock)


def _recover(root: Path) -> None:
    """Under the lock: put back an old tree a kill left hidden, remove every other leftover."""
    parent, name = root.parent, root.name
    new_prefix, old_prefix = _prefixes(name)
    try:
        entries = sorted(os.listdir(parent))
    except OSError:
        return
    olds = [parent / e for e in entries if e.startswith(old_prefix)]
    news = [parent / e for e in entries if e.startswith(new_prefix)]
    if not root.exists() and not root.is_symlink():
        # Killed between "OUT aside" and "new into place": the old tree is the whole truth.
        for old in olds:
            # only a real directory we made: a planted symlink must not become OUT
            if not old.is_symlink() and (old / "tree").is_dir() and not (old / "tree").is_symlink():
                os.rename(old / "tree", root)
                break
    for leftover in olds + news:
        _remove(leftover)


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    """An exclusive flock held for the whole run: on the directory holding OUT, so no lock file
    is ever made and a kill leaves none in the repository (runs into one directory are
    serialised, whichever their OUT). Where a directory cannot be locked (NFS emulates flock
    with write locks, which need a file open for writing), on `.OUT.topogate.lock` beside OUT
    instead (`_file_locked`)."""
    try:
        fd = os.open(root.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as e:
        raise WriteError(f"cannot open {root.parent} to lock it: {e.strerror or e}") from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as e:
            if e.errno not in (errno.EBADF, errno.ENOLCK, errno.EINVAL, errno.EOPNOTSUPP):
                raise WriteError(f"cannot lock {root.parent}: {e.strerror or e}") from e
            with _file_locked(root):
                yield
            return
        try:  # the lock file of a killed run that had to use one: ours now, under the lock
            os.unlink(root.parent / f".{root.name}.topogate.lock")
        except OSError:
            pass
        yield
    finally:
        os.close(fd)


@contextmanager
def _file_locked(root: Path) -> Iterator[None]:
    """An exclusive flock on `.OUT.topogate.lock` beside OUT (not inside the tree, which is
    replaced), where the directory cannot be locked.

    The file is removed at the end, so no stray file is left in the user's repository. That
    is safe because a waiter, once it holds the lock, checks that the name still points at the
    file it locked; if the holder removed it meanwhile, the waiter starts over on the new file.
    A kill leaves the file behind, which is harmless: the next run locks and removes it.
    """
    lock = root.parent / f".{root.name}.topogate.lock"
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o644)
        except OSError as e:
            raise WriteError(f"cannot open the lock file {lock}: {e.strerror or e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                same = os.stat(lock, follow_symlinks=False).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
        except BaseException:
            os.close(fd)
            raise
        if same:
            break
        os.close(fd)
    try:
        yield
    finally:
        try:
            os.unlink(lock)  # still holding the lock: see the docstring
        except OSError:
            pass
        os.close(fd)


# ----------------------------------------------------------------------------- the swap


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directory entries atomically; False where renameat2 or the flag is missing."""
    import ctypes  # lazy: a first run (no OUT yet to swap with) never needs it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                          ctypes.c_uint]
    renameat2.restype = ctypes.c_int
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def hidden_from_git(directory: Path) -> None:
    """A `.gitignore` of `*` in `directory`: `git add -A` and `git status` skip it whole (the
    file included), so what a killed run leaves beside OUT is never committed by accident."""
    # A kill after the file exists and before its content is in would leave an empty
    # .gitignore, which ignores nothing (itself included). On Linux the file is written unnamed
    # (O_TMPFILE) and then linked in whole, so there is no such moment; elsewhere (or where the
    # file system has no O_TMPFILE) two system calls with nothing between them keep it short.
    data = b"# a topogate run's scratch space, never committed\n*\n"
    if _link_whole(directory, ".gitignore", data):
        return
    fd = os.open(directory / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def _link_whole(directory: Path, name: str, data: bytes) -> bool:
    """Write `data` to an unnamed file in `directory` and link it in as `name`: it appears with
    its content or not at all. False where O_TMPFILE or /proc/self/fd is missing."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return False
    try:
        fd = os.open(directory, flag | os.O_WRONLY, 0o644)
    except OSError:
        return False
    try:
        dirfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        os.close(fd)
        return False
    try:
        if os.write(fd, data) != len(data):
            return False
        # A directory fd makes os.link call linkat(AT_SYMLINK_FOLLOW), which follows the /proc
        # link to the unnamed file; plain link() would try to link the /proc entry itself.
        os.link(f"/proc/self/fd/{fd}", name, src_dir_fd=dirfd, dst_dir_fd=dirfd, follow_symlinks=True)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        os.close(dirfd)


def _swap(new: Path, out: Path) -> None:
    """Make `new` (a holder's `tree`) OUT; the old tree ends in `new`'s place, still inside
    its holder (hidden from git), which the caller removes."""
    if not out.exists():
        os.rename(new, out)
        return
    if not _exchange(new, out):
        old = Path(tempfile.mkdtemp(prefix=_prefixes(out.name)[1], dir=out.parent))
        hidden_from_git(old)
        os.rename(out, old / "tree")
        try:
            os.rename(new, out)
        except OSError:
            os.rename(old / "tree", out)  # put the previous tree back
            _remove(old)
            raise
        os.rename(old / "tree", new)  # beside the holder's .gitignore: removed with it
        _remove(old)


def _prepare(tmp: Path, root: Path) -> None:
    """Give the new tree OUT's mode and group before anything is written into it."""
    if root.is_dir():
        st = os.stat(root)
        if st.st_gid != os.stat(tmp).st_gid:
            os.chown(tmp, -1, st.st_gid)
        os.chmod(tmp, stat.S_IMODE(st.st_mode))
    else:
        # mkdtemp makes the directory 0700; a new tree looks like any directory the user makes.
        os.chmod(tmp, 0o777 & ~_umask())


def write_tree(out: str | os.PathLike[str], files: Mapping[str, bytes]) -> None:
    """Replace the directory `out` with exactly `files` (relative POSIX path -> bytes), atomically."""
    _check_paths(files)
    root = Path(os.path.abspath(out))
    try:
        root.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise WriteError(f"cannot create {root.parent}: {e.strerror or e}") from e
    with _locked(root):
        try:
            _recover(root)
        except OSError as e:
            raise WriteError(f"cannot clean up what an interrupted run left beside {root}: "
                             f"{e.strerror or e}; remove the .{root.name}.topogate-* "
                             "directories there") from e
        _check_out(root)
        try:
            holder = Path(tempfile.mkdtemp(prefix=_prefixes(root.name)[0], dir=root.parent))
        except OSError as e:
            raise WriteError(f"cannot create a temporary directory beside {root}: "
                             f"{e.strerror or e}") from e
        tmp = holder / "tree"
        try:
            hidden_from_git(holder)
            tmp.mkdir()
            _prepare(tmp, root)
            _write_all(tmp, files)
        except (OSError, ValueError) as e:
            _remove(holder)
            raise WriteError(f"writing the new tree failed, {root} is unchanged: "
                             f"{getattr(e, 'strerror', None) or e}") from e
        try:
            _swap(tmp, root)
        except OSError as e:
            _remove(holder)
            raise WriteError(f"cannot put the new tree in place, {root} is unchanged: "
                             f"{e.strerror or e}") from e
        _remove(holder)  # the old tree, in the new one's place


def _check_out(root: Path) -> None:
    if root.is_symlink():
        raise WriteError(f"{root} is a symlink; point -o at a real directory")
    if root.exists() and not root.is_dir():
        raise WriteError(f"{root} exists and is not a directory")
    if not root.exists():
        return
    blocked = _blocked_dirs(root)
    if blocked:
        shown = ", ".join(blocked[:5]) + (f" and {len(blocked) - 5} more" if len(blocked) > 5 else "")
        raise WriteError(
            f"{root} holds directories that are unreadable or read-only ({shown}); refusing to "
            "replace it, since they could be moved but not removed. Restore their permissions "
            "(chmod u+rwx) or remove them.")
    foreign = foreign_files(root)
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise WriteError(
            f"{root} holds files topogate did not generate ({shown}); refusing to replace it. "
            "Choose an empty or new directory, or remove those files.")


def cannot_write(path: str) -> str:
    """"" when a file may be made at `path`, else why not: the one check every `-o FILE` passes
    before any work (a report after the analysis, an inventory after the cluster was read).
    A character device or a FIFO is written through, a directory or a socket refused
    (topogate.tree.target)."""
    kind, why = target_of(path)
    if not kind:
        return f"{path} {why}"
    if kind == THROUGH:
        return ""
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory) or not os.access(directory, os.W_OK):
        return f"{directory} is not a writable directory"
    return ""


def write_file(path: str, text: str, verify: Callable[[str], str] | None = None,
               stream: Callable[[str], str] = lines) -> str:
    """Write one file (a report, an imported inventory) whole or not at all; "" on success,
    else why it could not be written. Its text is redacted first (topogate.core.redact): a
    report is posted back to the pull request, as a log is.

    Written beside the target and renamed, so a reader (a CI step posting it as a comment)
    never sees half a file. `verify`, given the written temporary file, returns "" or why it
    must not replace `path` (`import` loads the inventory back first).

    A character device or a FIFO (`-o /dev/stdout`) is not replaced but written through
    (topogate.tree.target), as `stream(text)`: escaped for a CI log as standard output is,
    since that is where such a stream often ends (`stream` names the escaping of the text's
    format; the default keeps every line's own breaks). A directory or a socket is refused."""
    kind, why = target_of(path)
    if not kind:
        return f"{path} {why}"
    if kind == THROUGH:
        return _through(path, text, verify, stream)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".topogate-report-", suffix=os.path.splitext(path)[1], dir=directory)
    except OSError as e:
        return f"cannot write in {directory}: {reason(e)}"
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(redact(text))
        os.chmod(tmp, 0o666 & ~_umask())
        problem = verify(tmp) if verify is not None else ""
        if not problem:
            os.replace(tmp, path)
            return ""
    except OSError as e:
        problem = f"cannot write: {reason(e)}"
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return problem


def _through(path: str, text: str, verify: Callable[[str], str] | None, stream: Callable[[str], str]) -> str:
    """A stream is written once, so what `verify` reads is a private copy, checked first."""
    if verify is not None:
        try:
            fd, tmp = tempfile.mkstemp(prefix=".topogate-verify-", suffix=os.path.splitext(path)[1])
        except OSError as e:
            return f"cannot write a copy to verify: {reason(e)}"
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(redact(text))
            problem = verify(tmp)
        except OSError as e:
            problem = f"cannot write a copy to verify: {reason(e)}"
        finally:
            os.unlink(tmp)
        if problem:
            return problem
    return write_through(path, stream(text).encode("utf-8"))


__all__ = ["WriteError", "cannot_write", "diff_tree", "foreign_files", "tree_entries", "write_file", "write_tree"]
