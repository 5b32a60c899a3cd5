"""One list request to the API server, bounded: time, bytes, encoding, redirects, Retry-After.

The `kubernetes` client's typed calls read a whole body whatever it holds: a body trickled at
one byte a second never trips the per-read timeout, a gzip body nobody asked for is inflated
whole (3 MB became 9.5 GB), an error body is read in full to quote it, and urllib3 follows
redirects to any host and sleeps whatever `Retry-After` says (3600 s). So the GET is sent here,
through the client's own connection pool (its TLS settings and proxy) with the client's own
authentication (the kubeconfig's token, or the exec plugin's, refreshed by the client), and:

- every request ends by the command's deadline (TOPOGATE_LIVE_DEADLINE), whatever the server
  does; the body is read as it arrives, checking the clock between reads;
- a body is at most TOPOGATE_LIVE_PAGE_MB; a Content-Encoding is refused (none is asked for);
- no redirect is followed (the API server never redirects a list): it is refused, naming the
  host it pointed to;
- `Retry-After` on 429/503 is waited for only up to MAX_RETRY_AFTER seconds and inside the
  deadline, at most MAX_RETRIES times a list; a longer one is exit 75 at once.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from topogate.core.exitcodes import ExitCode
from topogate.live.errors import LiveError, from_api_status, from_exception
from topogate.safeio import limits

MAX_RETRY_AFTER = 10.0  # seconds: a server asking for longer is down, for a CronJob's purposes
MAX_RETRIES = 3  # Retry-After waits per list
_ERROR_BODY = 64 * 1024  # what an error body may hold of the Status message quoted


@dataclass
class Budget:
    """The time and the retries left to one command's API reads."""

    deadline: float  # time.monotonic() by which every read ends
    seconds: int  # the deadline as configured, for messages
    retries: int = MAX_RETRIES

    @classmethod
    def start(cls) -> Budget:
        try:
            s = limits.live_deadline_s()
        except limits.LimitError as e:
            raise LiveError(str(e), ExitCode.BAD_INVOCATION) from None
        return cls(time.monotonic() + s, s)

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def expired(self, what: str, server: str) -> LiveError:
        return LiveError(f"reading {what} from the API server at {server} did not finish within "
                         f"{self.seconds} s, the deadline of one command (TOPOGATE_LIVE_DEADLINE); "
                         "run again later, or raise the deadline for a very large cluster",
                         ExitCode.TEMPORARY)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    retry_after: str | None = None  # the Retry-After header, as sent


def _headers(api: Any) -> dict[str, str]:
    headers = {"Accept": "application/json", "Accept-Encoding": "identity",
               **{k: str(v) for k, v in api.default_headers.items()}}
    # the client's own authentication: token, exec plugin (refreshed by its hook), client certs
    # are in the pool's TLS settings
    api.update_params_for_auth(headers, [], ["BearerToken"])
    return headers


def get(api: Any, path: str, query: dict[str, str], timeout: float, budget: Budget,
        what: str, server: str) -> Answer:
    """GET path?query: the status and the (bounded) body; LiveError on anything else."""
    # lazy: urllib3 comes with the kubernetes client, loaded only by a live command
    import urllib3

    left = budget.left()
    if left <= 0:
        raise budget.expired(what, server)
    per = max(0.05, min(timeout, left))
    try:
        cap = limits.live_page_bytes()
    except limits.LimitError as e:
        raise LiveError(str(e), ExitCode.BAD_INVOCATION) from None
    try:
        resp = api.rest_client.pool_manager.request(
            "GET", str(api.configuration.host).rstrip("/") + path, fields=query,
            headers=_headers(api), preload_content=False, decode_content=False, redirect=False,
            retries=urllib3.Retry(total=1, connect=1, read=0, status=0, redirect=0, other=0,
                                  raise_on_redirect=False, respect_retry_after_header=False),
            timeout=urllib3.Timeout(connect=per, read=per))
    except Exception as err:  # noqa: BLE001 - urllib3/OS errors become one line
        if budget.left() <= 0:
            raise budget.expired(what, server) from None
        raise from_exception(err, what, server) from None
    try:
        _refuse_redirect(resp, what, server)
        encoding = str(resp.headers.get("Content-Encoding", "identity") or "identity").strip().lower()
        if encoding != "identity":
            raise LiveError(f"the API server at {server} sent {what} encoded as {encoding[:40]!r}, "
                            "which topogate did not ask for (a compressed body can expand "
                            "thousands of times); a proxy? run again later", ExitCode.TEMPORARY)
        ok = 200 <= resp.status <= 299
        body = _read(resp, cap if ok else _ERROR_BODY, budget, what, server, truncate=not ok)
        return Answer(int(resp.status), body, resp.headers.get("Retry-After"))
    finally:
        resp.release_conn()


def _refuse_redirect(resp: Any, what: str, server: str) -> None:
    if resp.status not in (301, 302, 303, 307, 308):
        return
    location = str(resp.headers.get("Location", "") or "")
    target = urlsplit(location)
    where = target.netloc if target.netloc else "the same host"
    here = urlsplit(server).netloc
    other = "another host" if target.netloc and target.netloc != here else "elsewhere"
    raise LiveError(f"the API server at {server} redirected the list of {what} to {other} "
                    f"({where[:100]}); the API server never redirects a list, and topogate "
                    "follows no redirect (it would carry the token along): point the kubeconfig's "
                    "server at the API server itself", ExitCode.CONFIG)


def _read(resp: Any, cap: int, budget: Budget, what: str, server: str, *, truncate: bool) -> bytes:
    """The body as it arrives, until EOF, the cap or the deadline. `truncate`: keep the first
    `cap` bytes of an error body and stop, instead of refusing it."""
    chunks: list[bytes] = []
    got = 0
    while True:
        if budget.left() <= 0:
            raise budget.expired(what, server)
        try:
            chunk = resp.read1(65536)
        except Exception as err:  # noqa: BLE001 - a read timeout, a reset, a protocol error
            if budget.left() <= 0:
                raise budget.expired(what, server) from None
            raise from_exception(err, what, server) from None
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        got += len(chunk)
        if got > cap:
            if truncate:
                return b"".join(chunks)[:cap]
            raise LiveError(f"the API server at {server} sent a page of {what} larger than "
                            f"{cap // limits.MiB} MB (TOPOGATE_LIVE_PAGE_MB); lower --chunk-size, "
                            "or raise the limit if the objects really are that large",
                            ExitCode.TEMPORARY)


def retry_after(status: int, headers_value: str | None) -> float | None:
    """Seconds a 429/503 asks to wait (None: no usable Retry-After, so no wait)."""
    if status not in (429, 503) or not headers_value:
        return None
    text = headers_value.strip()
    if not text.isascii() or not text.isdigit() or len(text) > 9:
        return None  # an HTTP date, or nonsense: not waited for
    return float(text)


def failed(answer: Answer, what: str, server: str) -> LiveError:
    return from_api_status(answer.status, answer.body, what, server)


__all__ = ["Answer", "Budget", "MAX_RETRIES", "MAX_RETRY_AFTER", "failed", "get", "retry_after"]
