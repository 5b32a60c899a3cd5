"""The content checks of a tree's plain YAML files, run once the builds are under way.

The safety walk (sources.kustomization.check_tree) checks where every file a build reads lies,
and reads it, before that build starts: that is what keeps kubectl inside the repository. The
content of a YAML file a build reads as a resource or a patch (composed and checked: duplicate
keys, depth, alias growth, saferead.nodes) does not have to come first: kubectl reads it under
the child limits, and no output is read before `settle` has checked every such file, so a
refusal still comes before anything a build made is looked at, at the same file, line and
column. What waiting buys: a file whose text is exactly what `topogate generate` writes for the
inventory (`trusted`, the digests of check --rendered's render) is not composed at all: its
content is the renderer's, which writes plain YAML only (tests/tree_validation.py holds every
file rendered for the bundled and the generated inventories to saferead.nodes). At 2,000 jobs
that is 4,000 of 6,000 files, the CiliumNetworkPolicies and the placement patches.

Only small plain files wait (`may_wait`): a file with an alias (`*`) is composed by the walk,
so that an alias bomb never reaches kubectl; one of more than WAITS_UP_TO characters too (what
kubectl would spend on it is bounded by its size); one holding a backslash too (an escape may
spell what split_build.forbidden looks for). Whether a patch keeps every object's id
(split_build) is asked only of a tree that would be built in parts (`keeps`): its patches are
then composed before that build starts, as the walk did.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable, Mapping

from topogate.safeio.saferead import nodes
from topogate.sources.split_build import patch_keeps_ids

# (real path, text as read) -> whether the text is known to be the renderer's own
Trusted = Callable[[str, str], bool]

# The largest file whose check may wait, in characters: a generated overlay file is a few KB.
WAITS_UP_TO = 64 * 1024


def may_wait(text: str) -> bool:
    """Whether a file's content check may wait (see the module doc)."""
    return len(text) <= WAITS_UP_TO and "*" not in text and "\\" not in text


def digest(text: str | bytes) -> str:
    """What `trusted` compares: the SHA-256 of a file's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def tree_digests(root: str, files: Mapping[str, str | bytes]) -> dict[str, str]:
    """The digest of every file of a tree rendered for `root`, by its real path there."""
    real = os.path.realpath(root)
    return {os.path.join(real, rel): digest(content) for rel, content in files.items()}


def vouched_by(digests: Mapping[str, str]) -> Trusted:
    """Trusted for the files whose text has the digest `digests` gives their real path: what
    the renderer wrote there (tests/tree_validation.py holds every rendered file to `nodes`)."""
    return lambda real, text: digests.get(real) == digest(text)


class DeferredChecks:
    """The files whose content check waits, in the order the walk met them."""

    def __init__(self) -> None:
        self._files: dict[str, tuple[str, str]] = {}  # real path -> (shown, text)
        self._keeps: dict[str, bool] = {}  # composed patches: real path -> keeps every id

    def add(self, real: str, shown: str, text: str) -> None:
        if real not in self._keeps:
            self._files.setdefault(real, (shown, text))

    def asks(self, real: str) -> bool:
        """Whether a split must ask `keeps` about the patch at `real`: its check waited here
        (the walk took it to keep ids, whatever `keeps` has found since)."""
        return real in self._files or real in self._keeps

    def keeps(self, reals: Iterable[str]) -> bool:
        """Whether every patch at `reals` keeps ids, each composed and checked (InputError on
        the first that fails) the first time it is asked."""
        for real in reals:
            if real not in self._keeps:
                shown, text = self._files.pop(real)  # checked now: settle has nothing left to do
                self._keeps[real] = patch_keeps_ids(nodes(text, shown))
            if not self._keeps[real]:
                return False
        return True

    def settle(self, trusted: Trusted | None = None) -> None:
        """Check every file not checked yet, in the order met, but those `trusted` vouches for;
        InputError on the first that fails. Nothing is held afterwards."""
        files, self._files = self._files, {}
        for real, (shown, text) in files.items():
            if trusted is None or not trusted(real, text):
                nodes(text, shown)


__all__ = ["WAITS_UP_TO", "DeferredChecks", "Trusted", "digest", "may_wait", "tree_digests", "vouched_by"]
