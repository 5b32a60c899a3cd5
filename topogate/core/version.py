"""topogate's own version and where its rules are documented, for reports that name the tool."""

from __future__ import annotations

import os
from importlib import metadata


def version() -> str:
    """The installed package's version ("0+unknown" from a source tree that is not installed)."""
    try:
        return metadata.version("topogate")
    except metadata.PackageNotFoundError:
        return "0+unknown"


def rules_url() -> str | None:
    """The URL of docs/rules.md of the topogate that runs, when the environment says where it is
    hosted (TOPOGATE_RULES_URL; the GitHub Action sets it from the action's repository and ref),
    else None: a made-up address would be worse than none."""
    url = os.environ.get("TOPOGATE_RULES_URL", "").strip()
    return url if url.startswith("https://") and not any(c.isspace() for c in url) else None


def rule_anchor(rule_id: str, name: str) -> str:
    """The fragment of a rule's heading in docs/rules.md (`## TG101 hard-block`)."""
    return f"{rule_id.lower()}-{name}"


__all__ = ["rule_anchor", "rules_url", "version"]
