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


def write_report(path: str, text: str) -> str:
    """Write the report whole or not at all; "" on success, else why it could not be written.

    Written beside the target and renamed, so a reader (a CI step posting it as a comment)
    never sees half a report."""
    import os
    import tempfile

    from topogate.core.redact import redact
    from topogate.safeio.oserror import reason

    text = redact(text)  # a file posted back to the pull request, as a log is

    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".topogate-report-", dir=directory)
    except OSError as e:
        return f"cannot write in {directory}: {reason(e)}"
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as e:
        os.unlink(tmp)
        return f"cannot write: {reason(e)}"
    return ""


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask
