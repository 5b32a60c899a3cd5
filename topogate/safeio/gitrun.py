"""Running git on a checkout whose content a pull request wrote: bounded, offline, inert.

Git runs through topogate.safeio.subproc (time, memory and output limits, its own process group) with
an environment of its own (topogate.safeio.subproc.child_env: no credential of ours reaches it) and
with every feature that could run code or reach a remote turned off: no fsmonitor, no hooks,
no external diff, no pager, no protocol at all, no prompt, no lock on the index (a concurrent
`git status` of the user's must not fail).
"""

from __future__ import annotations

import os

from topogate.safeio import subproc


class GitFailed(Exception):
    """git could not run, or failed; str() is one line saying why."""


def env() -> dict[str, str]:
    return {**subproc.child_env(), "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
            "GIT_ALLOW_PROTOCOL": "none", "GIT_PAGER": "cat", "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1"}


def git(cwd: str, *args: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr stripped) of `git -C cwd ARGS`; GitFailed when git cannot run."""
    real = os.path.realpath(cwd)
    argv = ["git", "-C", cwd, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null",
            "-c", "diff.external=", "-c", f"safe.directory={real}", *args]
    try:
        proc = subproc.run(argv, env())
    except OSError as e:  # git not installed, or not executable
        raise GitFailed(f"git cannot run ({e.strerror or e})") from None
    return proc.returncode, proc.stdout, proc.stderr.strip()


def last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def split_z(out: str) -> list[str]:
    """The paths of a `-z` listing."""
    return [p for p in out.split("\0") if p]


def tracked_files(top: str) -> frozenset[str]:
    """Real paths of the files git tracks in the work tree `top` (submodules included)."""
    code, out, err = git(top, "ls-files", "-z", "--cached", "--recurse-submodules")
    if code != 0:
        raise GitFailed(f"git ls-files failed in {top} ({last_line(err)})")
    real_top = os.path.realpath(top)
    # Tracked paths are what the index names: a tracked symlink is tracked as itself, and the
    # file it points at must be tracked in its own right (the caller resolves symlinks).
    return frozenset(os.path.join(real_top, p) for p in split_z(out))


__all__ = ["GitFailed", "env", "git", "last_line", "split_z", "tracked_files"]
