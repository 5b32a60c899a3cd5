"""A stand-in for the Kubernetes API server's list endpoints, on 127.0.0.1, for the live tests.

STAND-IN, and why: no kube-apiserver (nor etcd, nor kind) can be installed on the machines
these tests run on. The real `kubernetes` Python client talks to this server over HTTP through
a real kubeconfig file the tests write, so everything on the client side (config loading,
bearer token, typed list calls, `limit`/`continue`, status codes) is the real thing. The server
answers only what topogate reads: `GET` lists of the resources in `PATHS`, served from
`kubectl get -o json` fixtures, paged like the API server (continue tokens, remainingItemCount,
items of built-in kinds without kind/apiVersion), with 410 Expired on a continue token, 401 for
a wrong token, 403, and 5xx on demand. Any other verb or path is refused and recorded, so tests
can assert that topogate only ever lists.

Imported through `pytest_plugins = ["live_support"]`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from conftest import run_cli

REPO = Path(__file__).resolve().parent.parent
LIVE = REPO / "fixtures" / "live"
TOKEN = "sha256~Zm9vYmFyLXN0YW5kLWluLXRva2VuLW5ldmVyLXByaW50ZWQtMTIzNDU2Nzg5MA"

# kind -> (list path, list kind, is a built-in kind whose list items carry no kind/apiVersion)
PATHS: dict[str, tuple[str, str, bool]] = {
    "Node": ("/api/v1/nodes", "NodeList", True),
    "Pod": ("/api/v1/pods", "PodList", True),
    "NetworkPolicy": ("/apis/networking.k8s.io/v1/networkpolicies", "NetworkPolicyList", True),
    "CiliumNetworkPolicy": ("/apis/cilium.io/v2/ciliumnetworkpolicies", "CiliumNetworkPolicyList", False),
    "CiliumClusterwideNetworkPolicy": ("/apis/cilium.io/v2/ciliumclusterwidenetworkpolicies",
                                       "CiliumClusterwideNetworkPolicyList", False),
    "PyTorchJob": ("/apis/kubeflow.org/v1/pytorchjobs", "PyTorchJobList", False),
    "MPIJob": ("/apis/kubeflow.org/v2beta1/mpijobs", "MPIJobList", False),
    "TrainJob": ("/apis/trainer.kubeflow.org/v1alpha1/trainjobs", "TrainJobList", False),
    "JobSet": ("/apis/jobset.x-k8s.io/v1alpha2/jobsets", "JobSetList", False),
}

EXPIRED = ("The provided continue parameter is too old to display a consistent list result. You "
           "can start a new list without the continue parameter, or use the continue token in "
           "this response to retrieve the remainder of the results.")


def status(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "code": code}


@dataclass
class StandIn:
    """The server's state: what it serves, what it should fail, what it was asked."""

    url: str = ""
    # list path -> the items, in the API server's order (by namespace/name)
    lists: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    installed: set[str] = field(default_factory=set)  # list paths that exist (CRDs installed)
    # list path -> statuses to answer, first request first ("410" applies to a continue request)
    faults: dict[str, list[int]] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, list[str]], bool]] = field(default_factory=list)
    resource_version: int = 4810000

    def serve(self, *items: dict[str, Any]) -> None:
        """Serve these objects (a fixture's items), and mark their lists as installed."""
        for path, _, _ in PATHS.values():
            self.lists.setdefault(path, [])
        self.installed.update(p for p, _, core in PATHS.values() if core)
        for obj in items:
            path = PATHS[obj["kind"]][0]
            self.lists[path].append(obj)
            self.installed.add(path)
        for objs in self.lists.values():
            objs.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))

    def serve_file(self, name: str) -> None:
        self.serve(*json.loads((LIVE / name).read_text())["items"])

    def install(self, kind: str) -> None:
        self.installed.add(PATHS[kind][0])

    def lists_of(self, path: str) -> list[dict[str, list[str]]]:
        return [q for m, p, q, _ in self.requests if p == path and m == "GET"]


def _token(offset: int, rv: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"rv": rv, "start": offset}).encode()).decode()


def _handler(state: StandIn) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
            return

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _refuse(self) -> None:
            split = urlsplit(self.path)
            state.requests.append((self.command, split.path, parse_qs(split.query), False))
            self._send(405, status(405, "MethodNotAllowed", "the stand-in only lists"))

        do_POST = do_PUT = do_PATCH = do_DELETE = _refuse  # noqa: N815

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            split = urlsplit(self.path)
            query = parse_qs(split.query)
            # the scheme is case-insensitive, as in the API server (the in-cluster loader of
            # the client sends "bearer ...")
            scheme, _, token = (self.headers.get("Authorization") or "").partition(" ")
            authed = scheme.lower() == "bearer" and token == TOKEN
            state.requests.append(("GET", split.path, query, authed))
            if not authed:
                return self._send(401, status(401, "Unauthorized", "Unauthorized"))
            queue = state.faults.get(split.path, [])
            cont = query.get("continue", [""])[0]
            if queue and (queue[0] != 410 or cont):
                code = queue.pop(0)
                return self._send(code, self._fault(code, split.path))
            if split.path not in state.installed:
                return self._send(404, status(404, "NotFound", "the server could not find the "
                                                              "requested resource"))
            kind, (_, list_kind, core) = next((k, v) for k, v in PATHS.items() if v[0] == split.path)
            items = state.lists.get(split.path, [])
            start = json.loads(base64.urlsafe_b64decode(cont))["start"] if cont else 0
            limit = int(query.get("limit", ["0"])[0]) or len(items) or 1
            page = items[start:start + limit]
            if core:  # the API server omits kind/apiVersion on items of built-in lists
                page = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page]
            meta: dict[str, Any] = {"resourceVersion": str(state.resource_version)}
            if start + limit < len(items):
                meta["continue"] = _token(start + limit, state.resource_version)
                meta["remainingItemCount"] = len(items) - start - limit
            api_version = split.path.split("/apis/", 1)[1].rsplit("/", 1)[0] if not core else (
                "networking.k8s.io/v1" if kind == "NetworkPolicy" else "v1")
            return self._send(200, {"kind": list_kind, "apiVersion": api_version, "metadata": meta,
                                    "items": page})

        def _fault(self, code: int, path: str) -> dict[str, Any]:
            what = path.rsplit("/", 1)[-1]
            if code == 410:
                body = status(410, "Expired", EXPIRED)
                body["metadata"] = {"continue": _token(0, state.resource_version + 1)}
                return body
            if code == 403:
                return status(403, "Forbidden", f'{what} is forbidden: User "system:serviceaccount:'
                              f'ci:topogate" cannot list resource "{what}" at the cluster scope')
            if code == 401:
                return status(401, "Unauthorized", "Unauthorized")
            return status(code, "InternalError", "etcdserver: request timed out")

    return Handler


@contextlib.contextmanager
def _serving(tls: ssl.SSLContext | None = None) -> Iterator[StandIn]:
    state = StandIn()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "https" if tls is not None else "http"
    state.url = f"{scheme}://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def standin() -> Iterator[StandIn]:
    """A stand-in list API on an ephemeral port of 127.0.0.1 (see the module docstring)."""
    with _serving() as state:
        yield state


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A key and a certificate for IP 127.0.0.1, valid for a day (cryptography comes with moto)."""
    import datetime as dt
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kubernetes")])
    now = dt.datetime.now(dt.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    key_file, crt_file = tmp / "tls.key", tmp / "tls.crt"
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    crt_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return key_file, crt_file


@pytest.fixture
def standin_tls(tmp_path: Path) -> Iterator[tuple[StandIn, Path]]:
    """The stand-in over TLS with a self-signed certificate for 127.0.0.1; yields the server and
    the CA file a client must trust (the in-cluster ca.crt)."""
    key, crt = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(crt, key)
    with _serving(tls) as state:
        yield state, crt


def write_kubeconfig(path: Path, server: str, token: str = TOKEN, context: str = "stand-in") -> Path:
    """A real kubeconfig (the format kubectl writes) pointing at the stand-in."""
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": "stand-in", "cluster": {"server": server}}],
        "users": [{"name": "ci", "user": {"token": token}}],
        "contexts": [{"name": context, "context": {"cluster": "stand-in", "user": "ci"}}],
        "current-context": context,
    }, indent=2))
    return path


def run(*args: str) -> tuple[int, str, str]:
    """The CLI in process: (exit code, stdout, stderr); an unexpected exception is raised, so a
    traceback fails the test instead of reading as exit 1."""
    return run_cli(*args)
