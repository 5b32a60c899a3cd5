"""No credential reaches a report: the one filter every report passes through before it is printed.

`check` runs in pull-request CI and its reports go back to the pull request (annotations, a
job summary, a PR comment, SARIF). The first line of defence is that nothing secret is read:
kustomize never reads `.git/` (where `actions/checkout` keeps the job's token) nor a file git
does not track (topogate.sources.kustomization, topogate.safeio.repopaths). This module is the second: what a
report prints is searched for

- values this run was told are not to be echoed (`register`): the data of every ConfigMap and
  Secret a kustomize generator produced, and the credentials a command was given; also each
  long line and word of them, their base64 and percent-encoded forms (every punctuation
  character encoded too, `.` as `%2E`, in either hex case), and each cut by one character at
  either end (a `replacements` delimiter or a truncation leaves such a piece);
- anything shaped like a credential: an Authorization header's value, GitHub tokens (`ghp_`,
  `gho_`, `ghs_`, `ghu_`, `ghr_`, `github_pat_`), GitLab tokens, AWS access key ids and the
  secrets written after `aws_secret_access_key`, JSON web tokens, private key blocks, and a
  base64 run that decodes to any of these (a basic-auth header carries
  `base64("x-access-token:ghs_...")`);

and each is replaced by `[redacted]`. The replacement holds no quote or backslash, so a JSON or
SARIF report stays valid.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"

# Shorter registered values are not worth redacting everywhere they occur ("true", a port).
MIN_CHARS = 8

_SHAPES = re.compile(
    # an Authorization header (as git's extraheader writes it): the value, scheme included
    r"(?i:(?<=authorization:)[ \t]*(?:(?:basic|bearer|token|digest|negotiate)[ \t]+)?[^\s\"',;]+)"
    r"|(?i:(?<=authorization=)(?:(?:basic|bearer|token)(?:[ \t]|%20|\+))?[^\s\"',;&]+)"
    r"|\bgh[pousr]_[A-Za-z0-9]{16,}"
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"
    r"|\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b"
    r"|(?i:(?<=aws_secret_access_key)[\"']?[ \t]*[=:][ \t]*[\"']?[A-Za-z0-9/+=]{16,})"
    r"|(?i:(?<=aws_session_token)[\"']?[ \t]*[=:][ \t]*[\"']?[A-Za-z0-9/+=]{16,})"
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r"|\bsha256~[A-Za-z0-9_-]{20,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
)
# Candidates for "base64 of a credential": long runs of the base64 alphabets.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{20,}={0,2}")

_known: set[str] = set()
_pattern: list[re.Pattern[str] | None] = [None]


def _variants(value: str) -> set[str]:
    """The forms a value may take on its way into a report."""
    every = "".join(c if c.isascii() and c.isalnum() else quote(c, safe="") or c for c in value)
    out = {value, value.strip(), " ".join(value.split()), quote(value, safe=""),
           quote_plus(value, safe=""),
           # every punctuation character encoded ('.' as %2E: clients that encode all but
           # letters and digits), and each percent form with lower-case hex
           every.replace(".", "%2E").replace("-", "%2D").replace("_", "%5F").replace("~", "%7E")}
    out |= {re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), v) for v in list(out)}
    raw = value.encode("utf-8", "surrogatepass")
    for offset in range(3):
        # base64 of any text holding the value: past the first and before the last partial
        # group, the encoding of the value's bytes does not depend on what surrounds them
        # except through the alignment, so each of the three alignments leaves a fixed core.
        padded = b"\0" * offset + raw
        enc = base64.b64encode(padded).decode("ascii").rstrip("=")
        core = enc[4 if offset else 0: (len(enc) // 4 - 1) * 4]
        out.add(core)
        out.add(core.replace("+", "-").replace("/", "_"))
    for v in list(out):
        if len(v) >= 2 * MIN_CHARS:  # cut by one character at either end
            out.update((v[1:], v[:-1]))
    return {v for v in out if len(v) >= MIN_CHARS}


def register(values: Iterable[str]) -> None:
    """Values never to be echoed (and each line and word of them, when long enough)."""
    added = False
    for value in values:
        if not isinstance(value, str) or len(value.strip()) < MIN_CHARS:
            continue
        pieces = {value, *value.splitlines(), *value.split()}
        for piece in pieces:
            if len(piece.strip()) >= MIN_CHARS:
                new = _variants(piece) - _known
                if new:
                    _known.update(new)
                    added = True
    if added:
        _pattern[0] = None


def forget() -> None:
    """Drop every registered value (between runs of one process, as the tests make)."""
    _known.clear()
    _pattern[0] = None


def _known_pattern() -> re.Pattern[str] | None:
    if _pattern[0] is None and _known:
        # longest first, so no part of a longer value survives a shorter one's replacement
        _pattern[0] = re.compile("|".join(re.escape(v) for v in sorted(_known, key=lambda v: (-len(v), v))))
    return _pattern[0]


def _decodes_to_credential(run: str) -> bool:
    text = run.rstrip("=")
    for alt in (None, b"-_"):
        try:
            data = base64.b64decode(text + "=" * (-len(text) % 4), altchars=alt, validate=True)
        except (binascii.Error, ValueError):
            continue
        decoded = data.decode("utf-8", "replace")
        if _SHAPES.search(decoded) or (_known and any(k in decoded for k in _known)):
            return True
    return False


def redact(text: str) -> str:
    """`text` with every registered value and credential-shaped string replaced."""
    known = _known_pattern()
    if known is not None:
        text = known.sub(REDACTED, text)
    text = _SHAPES.sub(lambda m: REDACTED if m.group(0).strip() else m.group(0), text)
    return _BASE64_RUN.sub(lambda m: REDACTED if _decodes_to_credential(m.group(0)) else m.group(0), text)


__all__ = ["MIN_CHARS", "forget", "redact", "register"]
