"""Test support for the egress audit: a real moto_server on 127.0.0.1 and a request capture.

Imported by tests/audit/test_audit_*.py through `pytest_plugins`, so its fixtures need no shared
conftest. moto ignores Filter/GroupBy, so the tests assert on what topogate actually put on
the wire: `Capture` records every HTTP request body through botocore's `before-send` event.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from topogate.audit.egress import default_client_factory

REPO = Path(__file__).resolve().parent.parent
AUDIT_FIXTURES = REPO / "fixtures" / "audit"

# Credentials that look like real ones, so a leak into output would be caught by the scrub
# tests; they only ever reach 127.0.0.1.
FAKE_KEY_ID = "AKIAIOSFODNN7EXAMPLE"
FAKE_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _moto_server_binary() -> str:
    here = Path(sys.executable).parent / "moto_server"
    found = str(here) if here.exists() else shutil.which("moto_server")
    if not found:
        pytest.fail("moto_server not found: install the test extras (moto[server])")
    return found


@pytest.fixture(scope="session")
def moto_server() -> Iterator[str]:
    """A real moto_server process on 127.0.0.1; yields its base URL."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen([_moto_server_binary(), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{url}/moto-api/", timeout=1):
                break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"moto_server did not start on port {port}")
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def _post(url: str, payload: Any = None) -> int:
    data = json.dumps(payload).encode() if payload is not None else b""
    req = urllib.request.Request(url, data=data, method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(resp.status)


def aws_test_env(monkeypatch: pytest.MonkeyPatch, endpoint: str | None) -> None:
    """Dummy credentials, no metadata probing, no user config; CE endpoint -> `endpoint`."""
    for k in list(os.environ):
        if k.startswith("AWS_"):
            monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")  # the CE client must still use us-east-1
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    if endpoint:
        monkeypatch.setenv("AWS_ENDPOINT_URL_COST_EXPLORER", endpoint)


@dataclass
class Moto:
    url: str

    def reset(self) -> None:
        assert _post(f"{self.url}/moto-api/reset") == 200

    def seed(self, *pages: dict[str, Any]) -> None:
        """Queue GetCostAndUsage answers: moto hands them out in order, one per new request."""
        assert _post(f"{self.url}/moto-api/static/ce/cost-and-usage-results",
                     {"results": list(pages)}) == 201


@pytest.fixture
def moto_ce(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Moto]:
    """moto reset before and after the test, and the environment pointed at it."""
    aws_test_env(monkeypatch, moto_server)
    m = Moto(moto_server)
    m.reset()
    yield m
    m.reset()


@dataclass
class Capture:
    """Every HTTP request the Cost Explorer client sent: target operation, URL, JSON body."""

    sent: list[dict[str, Any]] = field(default_factory=list)

    def _record(self, request: Any, **_: Any) -> None:
        target = request.headers.get("X-Amz-Target", b"")
        target = target.decode() if isinstance(target, bytes) else str(target)
        body = request.body
        if isinstance(body, bytes):
            body = body.decode()
        self.sent.append({"operation": target.rpartition(".")[2], "url": request.url,
                          "params": json.loads(body or "{}"),
                          "authorization": request.headers.get("Authorization", b"")})

    def factory(self, max_attempts: int = 2) -> Any:
        """The production client factory, with this capture hooked onto each client."""
        make = default_client_factory(max_attempts)

        def wrapped() -> Any:
            client = make()
            client.meta.events.register("before-send.cost-explorer", self._record)
            return client

        return wrapped

    def operations(self) -> list[str]:
        return [s["operation"] for s in self.sent]


def result(day: str, groups: list[tuple[str, str, str, str]], estimated: bool = False,
           end: str | None = None) -> dict[str, Any]:
    """One ResultsByTime entry: groups are (tag group key, usage type, USD, GB)."""
    import datetime as dt

    end = end or (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
    return {
        "TimePeriod": {"Start": day, "End": end},
        "Total": {},
        "Groups": [{"Keys": [tag, ut],
                    "Metrics": {"UnblendedCost": {"Amount": usd, "Unit": "USD"},
                                "UsageQuantity": {"Amount": gb, "Unit": "GB"}}}
                   for tag, ut, usd, gb in groups],
        "Estimated": estimated,
    }


def page(results: list[dict[str, Any]], token: str | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"ResultsByTime": results, "DimensionValueAttributes": [],
                         "GroupDefinitions": [{"Type": "TAG", "Key": "topogate.dev/cluster"},
                                              {"Type": "DIMENSION", "Key": "USAGE_TYPE"}]}
    if token:
        p["NextPageToken"] = token
    return p
