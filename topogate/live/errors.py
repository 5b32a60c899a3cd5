"""Errors of the live commands: one line, an exit code from the same table as `audit egress`.

A CI job or a nightly CronJob acts on the code: run again later (75), fix the RBAC (77), fix the
kubeconfig or the token (78). Messages are built here from the status and the API server's own
`message`, never from the exception's text (which carries response headers), and are scrubbed.
"""

from __future__ import annotations

import json
from typing import Any

from topogate.audit.errors import scrub
from topogate.core.exitcodes import ExitCode
from topogate.core.redact import redact

RBAC_HINT = "examples/rbac-topogate-live.yaml"


class LiveError(Exception):
    """A failure the CLI turns into one line on stderr and an exit code."""

    def __init__(self, message: str, code: ExitCode) -> None:
        # known values and credential shapes (a token echoed back as `Bearer ...`, a JWT)
        super().__init__(scrub(redact(message)))
        self.code = code

    def line(self, command: str) -> str:
        return f"topogate {command}: {self.args[0]} [exit {int(self.code)}]"


def _status_message(body: Any) -> str:
    """The `message` of a Kubernetes Status body, if the body is one."""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    if not isinstance(body, str) or not body.strip():
        return ""
    try:
        doc = json.loads(body)
    except ValueError:
        return body.strip()[:200]
    return str(doc.get("message", "")) if isinstance(doc, dict) else ""


def from_api_status(status: int, body: Any, what: str, server: str) -> LiveError:
    """An HTTP error status of a list call as a LiveError."""
    detail = _status_message(body)
    tail = f" ({detail})" if detail else ""
    if status == 401:
        return LiveError(
            f"the API server at {server} rejected the credentials while listing {what} "
            f"(401 Unauthorized){tail}; refresh the kubeconfig token or the exec plugin's login, "
            "or the service account token", ExitCode.CONFIG)
    if status == 403:
        return LiveError(
            f"access denied listing {what} (403 Forbidden){tail}; bind the read-only ClusterRole "
            f"in {RBAC_HINT} to this user or service account", ExitCode.ACCESS_DENIED)
    if status == 410:
        return LiveError(
            f"the list of {what} expired twice while paging (410 Gone){tail}; the cluster changes "
            "faster than it can be read: run again, or raise --chunk-size", ExitCode.TEMPORARY)
    if status == 404:
        # A required list (nodes, pods, NetworkPolicies: built into every API server) that is not
        # found means the address is not an API server's root (a proxy path, another service):
        # running again changes nothing, the kubeconfig's `server` must be fixed.
        return LiveError(
            f"the server at {server} has no list of {what} (404 Not Found){tail}; it is not a "
            "Kubernetes API server's address: fix the kubeconfig's cluster server", ExitCode.CONFIG)
    if status == 429 or status >= 500:
        return LiveError(f"the API server failed listing {what} ({status}){tail}; run again later",
                         ExitCode.TEMPORARY)
    return LiveError(f"the API server refused listing {what} ({status}){tail}",
                     ExitCode.BAD_INVOCATION)


def _tls_failure(exc: BaseException) -> BaseException | None:
    """The ssl error that a configuration causes, anywhere in the chain urllib3 wraps it in
    (MaxRetryError -> SSLError -> ssl.SSLError): a certificate the CA does not sign or a host
    name it does not name, a CA file that holds no certificate, a server that speaks no TLS.
    None for no ssl error, or for a connection cut during the handshake (temporary)."""
    import ssl  # lazy: only a failed live request asks

    transient = (ssl.SSLEOFError, ssl.SSLZeroReturnError, ssl.SSLSyscallError, ssl.SSLWantReadError,
                 ssl.SSLWantWriteError)
    seen: list[BaseException] = []
    todo: list[object] = [exc]
    while todo and len(seen) < 20:
        e = todo.pop()
        if not isinstance(e, BaseException) or any(e is x for x in seen):
            continue
        if isinstance(e, ssl.SSLError):
            return None if isinstance(e, transient) else e
        seen.append(e)
        todo += [getattr(e, "reason", None), e.__cause__, e.__context__, *e.args]
    return None


def from_exception(exc: BaseException, what: str, server: str) -> LiveError:
    """Any exception of the client while listing, as a LiveError (imported lazily)."""
    # lazy: urllib3 comes with the kubernetes client, loaded only by a live command
    import ssl

    import urllib3.exceptions
    from kubernetes.client.exceptions import ApiException

    if isinstance(exc, LiveError):
        return exc
    if isinstance(exc, ApiException):
        return from_api_status(int(exc.status or 0), exc.body, what, server)
    tls = _tls_failure(exc)
    if isinstance(tls, ssl.SSLCertVerificationError):
        # Deterministic: the same certificate fails again. The kubeconfig names the CA to trust.
        return LiveError(
            f"the API server at {server} presented a certificate the kubeconfig does not trust "
            f"while listing {what} (TLS verification failed); set the cluster's "
            "certificate-authority(-data) to the CA that signed it, or check the server address",
            ExitCode.CONFIG)
    if tls is not None:
        return LiveError(
            f"TLS with the API server at {server} failed while listing {what} "
            f"({type(tls).__name__}: {getattr(tls, 'reason', None) or 'handshake'}); check the "
            "kubeconfig's certificate-authority(-data) and server address", ExitCode.CONFIG)
    if isinstance(exc, (urllib3.exceptions.HTTPError, OSError)):
        # The class name says enough (timeout, refused, TLS); the text may hold the request URL.
        kind = type(exc).__name__
        reason = getattr(exc, "reason", None)
        if reason is not None:
            kind = f"{kind}: {type(reason).__name__}"
        return LiveError(f"cannot reach the API server at {server} while listing {what} ({kind}); "
                         "run again later, or check the kubeconfig's server address",
                         ExitCode.TEMPORARY)
    # Anything else is the client's own failure: still one line, named by its class only.
    return LiveError(f"the kubernetes client failed while listing {what} ({type(exc).__name__}); "
                     "run again, and report it if it persists", ExitCode.TEMPORARY)

__all__ = ["LiveError", "from_api_status", "from_exception"]
