"""The real yaml-language-server for the tests, driven over the Language Server Protocol on stdio.

The server is the npm package pinned in tests/node/package-lock.json (`make node-tools` installs
it into tests/node/node_modules). `YamlLanguageServer` starts it, speaks JSON-RPC with
Content-Length framing, answers the server's own requests (its settings are pulled with
workspace/configuration, never pushed) and keeps the latest textDocument/publishDiagnostics per
document. Every wait has a timeout; `close()` shuts the server down and kills it if it lingers.

The settings keep it offline: no schema store catalogue, no Kubernetes CRD catalogue, and an
HTTP proxy on 127.0.0.1's discard port, so any download it still tried would fail here instead
of reaching the network. Without npm or the package the calling test is skipped with one line;
under TOPOGATE_REQUIRE_RENDER=1 (CI) it fails instead.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from node_tools import BIN, NODE_DIR, missing

ROOT = Path(__file__).resolve().parent.parent
SERVER = BIN / "yaml-language-server"
HOW = "run `make node-tools` (npm ci of tests/node) to install yaml-language-server"
# Generous: the shared 2-core machine may be busy; a healthy answer comes in well under a second.
TIMEOUT = 60.0

# What the server gets for each section it asks about (workspace/configuration).
YAML_SETTINGS: dict[str, Any] = {
    "validate": True,
    "hover": False,
    "completion": False,
    "schemaStore": {"enable": False},
    "kubernetesCRDStore": {"enable": False},
    "schemas": {},  # none by glob: each document names its schema in its modeline
}
HTTP_SETTINGS: dict[str, Any] = {"proxy": "http://127.0.0.1:9", "proxyStrictSSL": True}


def pinned_version() -> str:
    """The version tests/node/package.json pins (the lockfile holds the same)."""
    deps: dict[str, str] = json.loads((NODE_DIR / "package.json").read_text())["dependencies"]
    return deps["yaml-language-server"]


def require_server() -> Path:
    """The server's launcher, or skip the calling test with one line (fail it when required)."""
    problem = ""
    if shutil.which("node") is None:
        problem = "no node on PATH (install Node.js with npm)"
    elif not SERVER.exists():
        problem = f"{SERVER.relative_to(ROOT)} is not installed"
    else:
        installed = json.loads((NODE_DIR / "node_modules" / "yaml-language-server" / "package.json")
                               .read_text())["version"]
        if installed != pinned_version():
            problem = f"yaml-language-server {installed} is installed, the lockfile pins {pinned_version()}"
    if problem:
        missing(problem, HOW)
    return SERVER


@dataclass(frozen=True)
class Diagnostic:
    """One diagnostic, with the LSP's 0-based start turned into the loader's 1-based line:column."""

    line: int
    column: int
    message: str
    source: str

    @staticmethod
    def from_lsp(d: dict[str, Any]) -> Diagnostic:
        start = d["range"]["start"]
        return Diagnostic(start["line"] + 1, start["character"] + 1, str(d["message"]),
                          str(d.get("source", "")))


class LspError(Exception):
    pass


class YamlLanguageServer:
    """One yaml-language-server process with a workspace folder; open documents, read diagnostics."""

    def __init__(self, workspace: Path, server: Path):
        self.workspace = workspace
        env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
        env["HOME"] = str(workspace.parent)  # nothing of the user's home is read or written
        self._proc = subprocess.Popen(
            [str(server), "--stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, cwd=workspace, env=env)
        self._next_id = 0
        self._version = 0
        self._write_lock = threading.Lock()
        self._cond = threading.Condition()
        self._responses: dict[int, dict[str, Any]] = {}
        self._diagnostics: dict[str, list[list[dict[str, Any]]]] = {}
        self._notifications: list[dict[str, Any]] = []
        self._closed_reason = ""
        self.stderr: queue.Queue[bytes] = queue.Queue()
        self._reader = threading.Thread(target=self._read_loop, daemon=True)
        self._reader.start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    # -- framing -------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self._proc.stdin is not None
        with self._write_lock:
            self._proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self._proc.stdin.flush()

    def _read_message(self) -> dict[str, Any] | None:
        out = self._proc.stdout
        assert out is not None
        length = -1
        while True:
            line = out.readline()
            if not line:
                return None
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length < 0:
            raise LspError("a message without Content-Length")
        body = out.read(length)
        message: dict[str, Any] = json.loads(body)
        return message

    def _read_loop(self) -> None:
        try:
            while (msg := self._read_message()) is not None:
                if "method" in msg and "id" in msg:
                    self._answer(msg)
                    continue
                with self._cond:
                    if "id" in msg:
                        self._responses[int(msg["id"])] = msg
                    elif msg["method"] == "textDocument/publishDiagnostics":
                        params = msg["params"]
                        self._diagnostics.setdefault(params["uri"], []).append(params["diagnostics"])
                    else:
                        self._notifications.append(msg)
                    self._cond.notify_all()
            reason = "the server closed its output"
        except Exception as e:  # noqa: BLE001 - reported to every waiter, not lost in a thread
            reason = f"reading from the server failed: {e!r}"
        with self._cond:
            self._closed_reason = reason
            self._cond.notify_all()

    def _drain_stderr(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            self.stderr.put(line)

    def _answer(self, request: dict[str, Any]) -> None:
        """The server asks the client: settings by section; anything else is acknowledged."""
        result: Any = None
        if request["method"] == "workspace/configuration":
            sections = {"yaml": YAML_SETTINGS, "http": HTTP_SETTINGS}
            result = [sections.get(item.get("section", ""), None) for item in request["params"]["items"]]
        self._send({"id": request["id"], "result": result})

    # -- waiting -------------------------------------------------------------------------------

    def _wait(self, ready: Callable[[], Any], what: str, timeout: float = TIMEOUT) -> Any:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not (got := ready()):
                if self._closed_reason:
                    raise LspError(f"waiting for {what}: {self._closed_reason}{self._stderr_tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise LspError(f"no {what} within {timeout:.0f}s{self._stderr_tail()}")
                self._cond.wait(left)
            return got

    def _stderr_tail(self) -> str:
        lines: list[bytes] = []
        while not self.stderr.empty():
            lines.append(self.stderr.get_nowait())
        return ("; server stderr: " + b"".join(lines[-20:]).decode(errors="replace")) if lines else ""

    def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        rid = self._next_id
        self._send({"id": rid, "method": method, "params": params})
        resp: dict[str, Any] = self._wait(lambda: self._responses.pop(rid, None), f"answer to {method}")
        if "error" in resp:
            raise LspError(f"{method}: {resp['error']}")
        return resp.get("result")

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    # -- the conversation ----------------------------------------------------------------------

    def start(self) -> dict[str, Any]:
        """initialize/initialized with the workspace folder; returns the server's info once its
        settings are in place (the server says so with yaml/schema/store/initialized)."""
        uri = self.workspace.as_uri()
        result: dict[str, Any] = self.request("initialize", {
            "processId": os.getpid(),
            "rootUri": uri,
            "workspaceFolders": [{"uri": uri, "name": self.workspace.name}],
            "capabilities": {
                "workspace": {"configuration": True, "workspaceFolders": True},
                "textDocument": {"publishDiagnostics": {"relatedInformation": False}},
            },
            "locale": "en",
        })
        # Asks the server to announce when its settings are applied: the pull it starts on
        # `initialized` is answered by _answer, and only then may documents be opened (a document
        # validated earlier would be checked against the defaults). It goes before `initialized`:
        # the server reads its messages in order, and the announcement is made only if this one
        # was read before the pull's answer came back (sent after `initialized`, a slow client
        # thread loses that race and the announcement never comes).
        self.notify("yaml/supportSchemaSelection", {})
        self.notify("initialized", {})
        self._wait(lambda: any(n["method"] == "yaml/schema/store/initialized" for n in self._notifications),
                   "yaml/schema/store/initialized")
        return result

    def diagnostics(self, path: Path) -> list[Diagnostic]:
        """Open path and return the diagnostics the server publishes for it (its one validation
        of this open), sorted by position; the document is closed again afterwards."""
        uri = path.as_uri()
        with self._cond:
            seen = len(self._diagnostics.get(uri, []))
        # The server caches parsed documents by uri and version: a reopened uri with new text
        # under an old version number would be checked as the old text.
        self._version += 1
        self.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "yaml", "version": self._version,
            "text": path.read_text()}})
        published = self._wait(lambda: self._diagnostics.get(uri, [])[seen:], f"diagnostics for {path.name}")
        self.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
        # didClose publishes an empty list: wait for it, so the next open of uri starts clean
        self._wait(lambda: len(self._diagnostics.get(uri, [])) > seen + 1, f"the close of {path.name}")
        return sorted((Diagnostic.from_lsp(d) for d in published[0]),
                      key=lambda d: (d.line, d.column, d.message))

    def close(self) -> None:
        """shutdown + exit, then make sure the process is gone."""
        try:
            if self._proc.poll() is None and not self._closed_reason:
                self.request("shutdown", None)
                self.notify("exit", None)
        except (LspError, OSError):
            pass
        finally:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=10)
            for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    stream.close()
