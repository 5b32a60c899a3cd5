"""An API server (or a proxy in front of it) that misbehaves (issue 21, items 4, 11 and 13):
the live commands end by their deadline with exit 75 and one line, never wait for ever, never
inflate or hold an unbounded body, never follow a redirect.

STAND-IN, and why: a real kube-apiserver does none of this on demand. A small HTTP server on
127.0.0.1 plays each misbehaviour; topogate runs as a child process (`drift` through the real
`kubernetes` client configuration and urllib3 pool), with a timeout, so a regression fails
instead of hanging the suite.
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.register_assert_rewrite("live_support")
from conftest import TOPOGATE  # noqa: E402
from live_support import LIVE, REPO, TOKEN, write_kubeconfig  # noqa: E402

INV = "fixtures/live/eks/inventory.yaml"
NODES = json.loads((LIVE / "eks-nodes.json").read_text())["items"]


def _page(items: list[dict[str, object]], cont: str | None = None) -> bytes:
    meta = {"resourceVersion": "1", **({"continue": cont} if cont else {})}
    return json.dumps({"kind": "NodeList", "apiVersion": "v1", "metadata": meta,
                       "items": items}).encode()


Behaviour = Callable[[BaseHTTPRequestHandler, dict[str, str]], None]


class Server:
    def __init__(self, behave: Behaviour) -> None:
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                outer.paths.append(self.path)
                query = dict(p.split("=", 1) for p in self.path.partition("?")[2].split("&") if "=" in p)
                try:
                    behave(self, query)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def send(h: BaseHTTPRequestHandler, code: int, body: bytes, **headers: str) -> None:
    h.send_response(code)
    h.send_header("Content-Type", "application/json")
    h.send_header("Content-Length", str(len(body)))
    for k, v in headers.items():
        h.send_header(k.replace("_", "-"), v)
    h.end_headers()
    h.wfile.write(body)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[Behaviour], tuple[Server, Path]]]:
    servers: list[Server] = []

    def start(behave: Behaviour) -> tuple[Server, Path]:
        s = Server(behave)
        servers.append(s)
        return s, write_kubeconfig(tmp_path / f"kubeconfig-{len(servers)}", s.url)

    yield start
    for s in servers:
        s.close()


def drift(kubeconfig: Path, *extra: str, env: dict[str, str] | None = None,
          limit: float = 60) -> tuple[int, str, float]:
    start = time.monotonic()
    proc = subprocess.run([*TOPOGATE, "drift", INV, "--kubeconfig",
                           str(kubeconfig), *extra], cwd=REPO, capture_output=True, text=True,
                          timeout=limit, env={**os.environ, **(env or {})})
    took = time.monotonic() - start
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr.strip(), took


def one_line_75(code: int, err: str) -> None:
    assert code == 75, err
    assert len(err.splitlines()) == 1 and err.endswith("[exit 75]"), err
    assert TOKEN not in err


# --- item 4: the client can no longer wait for ever ---


def test_endless_fresh_continue_tokens_stop_at_the_deadline(serve) -> None:  # type: ignore[no-untyped-def]
    n = [0]

    def endless(h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        n[0] += 1
        send(h, 200, _page([], base64.b64encode(str(n[0]).encode()).decode()))

    _, kc = serve(endless)
    code, err, took = drift(kc, env={"TOPOGATE_LIVE_DEADLINE": "3"})
    one_line_75(code, err)
    assert "did not finish within 3 s" in err and "TOPOGATE_LIVE_DEADLINE" in err
    assert took < 15


def test_endless_pages_stop_at_the_page_cap(monkeypatch: pytest.MonkeyPatch, serve) -> None:  # type: ignore[no-untyped-def]
    from topogate.live import client
    from topogate.live.errors import LiveError

    n = [0]

    def endless(h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        n[0] += 1
        send(h, 200, _page([], f"t{n[0]}"))

    server, kc = serve(endless)
    monkeypatch.setattr(client, "MAX_PAGES", 40)
    api, url = client.api_client(client.Target(kubeconfig=str(kc)))
    with pytest.raises(LiveError) as err:
        client.list_all(api, client.NODES, url)
    assert "still paging nodes after 40 requests" in str(err.value)
    assert len(server.paths) == 40


def test_a_repeated_continue_token_is_refused(serve) -> None:  # type: ignore[no-untyped-def]
    _, kc = serve(lambda h, q: send(h, 200, _page(NODES[:1], "same")))
    code, err, _ = drift(kc)
    one_line_75(code, err)
    assert "same continue token twice" in err


@pytest.mark.parametrize("status", [429, 503])
def test_a_long_retry_after_is_not_obeyed(serve, status: int) -> None:  # type: ignore[no-untyped-def]
    server, kc = serve(lambda h, q: send(h, status, b'{"kind":"Status","message":"slow down"}',
                                         Retry_After="3600"))
    code, err, took = drift(kc)
    one_line_75(code, err)
    assert "retry after 3600 s" in err
    assert took < 20 and len(server.paths) == 1


def test_a_short_retry_after_is_waited_for_once(serve) -> None:  # type: ignore[no-untyped-def]
    calls = [0]

    def once(h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        calls[0] += 1
        if calls[0] == 1:
            send(h, 429, b'{"kind":"Status","message":"slow down"}', Retry_After="1")
        else:
            send(h, 200, _page(NODES))

    _, kc = serve(once)
    code, err, _ = drift(kc)
    assert code in (0, 1), err
    assert calls[0] == 2


def test_a_trickled_body_does_not_beat_the_deadline(serve) -> None:  # type: ignore[no-untyped-def]
    def trickle(h: BaseHTTPRequestHandler, q: dict[str, str]) -> None:
        body = _page(NODES)
        h.send_response(200)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        for b in body[:200]:  # one byte every 0.2 s: each read is inside --request-timeout
            h.wfile.write(bytes([b]))
            h.wfile.flush()
            time.sleep(0.2)

    _, kc = serve(trickle)
    code, err, took = drift(kc, "--request-timeout", "1", env={"TOPOGATE_LIVE_DEADLINE": "3"})
    one_line_75(code, err)
    assert "did not finish within 3 s" in err
    assert took < 15


# --- item 11: response size ---


def test_a_compressed_body_never_asked_for_is_refused(serve) -> None:  # type: ignore[no-untyped-def]
    # Small here; the same 3 MB of gzip once inflated to 9.5 GB.
    body = gzip.compress(_page(NODES))
    _, kc = serve(lambda h, q: send(h, 200, body, Content_Encoding="gzip"))
    code, err, _ = drift(kc)
    one_line_75(code, err)
    assert "encoded as 'gzip'" in err


def test_more_items_than_the_limit_asked_for_are_refused(serve) -> None:  # type: ignore[no-untyped-def]
    _, kc = serve(lambda h, q: send(h, 200, _page(NODES * 50)))  # 550 nodes for limit=10
    code, err, _ = drift(kc, "--chunk-size", "10")
    one_line_75(code, err)
    assert "550 items where at most 10 (limit) were asked for" in err


def test_a_page_over_the_byte_cap_is_refused(serve) -> None:  # type: ignore[no-untyped-def]
    big = _page(NODES[:1] * 1) + b" " * (2 << 20)
    _, kc = serve(lambda h, q: send(h, 200, big))
    code, err, _ = drift(kc, env={"TOPOGATE_LIVE_PAGE_MB": "1"})
    one_line_75(code, err)
    assert "larger than 1 MB (TOPOGATE_LIVE_PAGE_MB)" in err


# --- item 13: redirects ---


def test_a_redirect_to_another_host_is_refused(serve) -> None:  # type: ignore[no-untyped-def]
    other, _ = serve(lambda h, q: send(h, 200, _page(NODES)))
    server, kc = serve(lambda h, q: send(h, 307, b"", Location=f"{other.url}/api/v1/nodes?limit=500"))
    code, err, _ = drift(kc)
    assert code == 78, err
    assert "redirected the list of nodes to another host" in err and len(err.splitlines()) == 1
    assert other.paths == [], "the redirect was followed (with the token)"


# --- item 8: credentials never reach an error line ---

ODD_TOKEN = "plain-odd-token-of-no-known-shape-42"


@pytest.mark.parametrize(("status", "body"), [
    (401, json.dumps({"kind": "Status", "message": f"bad header Authorization: Bearer {ODD_TOKEN}"})),
    (403, json.dumps({"kind": "Status", "message": f"token {ODD_TOKEN} cannot list nodes"})),
    (401, f"<html><body>proxy says: you sent {ODD_TOKEN}</body></html>"),
], ids=["401-status", "403-status", "401-html"])
def test_a_server_echoing_the_token_never_prints_it(serve, tmp_path: Path, status: int,  # type: ignore[no-untyped-def]
                                                    body: str) -> None:
    server, _ = serve(lambda h, q: send(h, status, body.encode()))
    kc = write_kubeconfig(tmp_path / "kubeconfig-odd", server.url, ODD_TOKEN)
    code, err, _ = drift(kc)
    assert code in (77, 78), err
    assert ODD_TOKEN not in err and "[redacted]" in err, err


def test_a_failing_exec_plugins_output_is_never_printed(serve, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    server, _ = serve(lambda h, q: send(h, 401, b'{"kind":"Status","message":"Unauthorized"}'))
    plugin = tmp_path / "login"
    plugin.write_text(f"#!/bin/sh\necho 'refresh failed for token {ODD_TOKEN}' >&2\nexit 3\n")
    plugin.chmod(0o755)
    kc = tmp_path / "kubeconfig-exec"
    kc.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server.url}}],
        "users": [{"name": "u", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": str(plugin),
            "interactiveMode": "Never"}}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x"}))
    code, err, _ = drift(kc)
    assert code in (75, 77, 78), err
    assert ODD_TOKEN not in err, err
    assert len(err.splitlines()) == 1, "the client's own log line reached stderr"
