"""The files a branch changed since a git ref, for `check --changed-since` (topogate.check.changed).

What a pull-request gate means by "changed": every file that differs between the merge base of
REF and HEAD and the working tree, plus files git does not track yet (`git diff --name-only
$(git merge-base REF HEAD)` and `git ls-files --others --exclude-standard`). Renames count as
both names. Git runs through topogate.safeio.subproc (bounded, in its own process group) and never
touches the network: no fetch, no remote helper, no hook, no fsmonitor, no pager.

Anything that keeps the answer from being certain (git missing, not a repository, REF unknown,
a shallow clone without the merge base) is a `GitUnknown` whose text says what to do; the
caller then checks everything.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from topogate.safeio import gitrun


class GitUnknown(Exception):
    """The changed files cannot be known; str() is one line saying why and what to do."""


def _git(cwd: str, *args: str) -> tuple[int, str, str]:
    try:
        return gitrun.git(cwd, *args)
    except gitrun.GitFailed as e:
        raise GitUnknown(str(e)) from None


_last_line = gitrun.last_line
_split = gitrun.split_z


def toplevel(where: str) -> str:
    """The real path of the work tree holding `where` (a directory)."""
    code, out, err = _git(where, "rev-parse", "--show-toplevel")
    if code != 0:
        raise GitUnknown(f"{where} is not in a git work tree ({_last_line(err)})")
    return os.path.realpath(out.strip())


def changed_files(ref: str, where: str) -> tuple[str, str, tuple[str, ...]]:
    """(work tree, merge base, real paths of the changed files, sorted) of the repository
    holding the directory `where`."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise GitUnknown(f"'{ref}' is not a git ref")
    top = toplevel(where)
    code, out, err = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if code != 0:
        shallow = _git(top, "rev-parse", "--is-shallow-repository")[1].strip() == "true"
        hint = ("this is a shallow clone: fetch REF (actions/checkout: fetch-depth: 0)" if shallow
                else "fetch it first (git fetch origin main), or name a commit, branch or tag")
        raise GitUnknown(f"'{ref}' is not a commit here; {hint}")
    code, out, err = _git(top, "merge-base", "--end-of-options", out.strip(), "HEAD")
    if code != 0:
        shallow = _git(top, "rev-parse", "--is-shallow-repository")[1].strip() == "true"
        why = ("the clone is shallow: fetch the history (actions/checkout: fetch-depth: 0)" if shallow
               else "they share no history")
        raise GitUnknown(f"no merge base of '{ref}' and HEAD ({why})")
    base = out.strip()
    code, diff, err = _git(top, "diff", "--name-only", "--no-renames", "--no-ext-diff", "-z",
                           "--end-of-options", base, "--")
    if code != 0:
        raise GitUnknown(f"git diff failed ({_last_line(err)})")
    code, new, err = _git(top, "ls-files", "--others", "--exclude-standard", "-z")
    if code != 0:
        raise GitUnknown(f"git ls-files failed ({_last_line(err)})")
    return top, base, _real(top, [*_split(diff), *_split(new)])


def _real(top: str, rel: Sequence[str]) -> tuple[str, ...]:
    """Real paths, as the build roots' file sets are (a symlinked directory inside the
    repository names the same file twice otherwise); a deleted file keeps its own name."""
    return tuple(sorted({os.path.realpath(os.path.join(top, p)) for p in rel}))


__all__ = ["GitUnknown", "changed_files", "toplevel"]
