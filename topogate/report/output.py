"""The format of `check -o FILE`: `--output-format` when given, else the file's extension, else
the `--format` of the terminal report.

Before, `-o` always wrote markdown; `-o report.md` (what action.yml and most users pass for a
job summary) still does, through the extension, while `-o report.sarif` or `-o report.json`
now get what their names say and any other name gets the same format as standard output.
"""

from __future__ import annotations

from pathlib import PurePath

BY_SUFFIX = {".md": "markdown", ".markdown": "markdown", ".sarif": "sarif", ".json": "json",
             ".txt": "text"}


def output_format(explicit: str | None, path: str, stdout_format: str) -> str:
    if explicit:
        return explicit
    return BY_SUFFIX.get(PurePath(path).suffix.lower(), stdout_format)
