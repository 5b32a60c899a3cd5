"""Failure paths of the egress audit: each gives its exit code and exactly one line.

moto cannot produce Cost Explorer's error responses (throttling, DataUnavailable,
BillExpiration, AccessDenied) and does not implement GetDimensionValues, so those paths use
botocore's Stubber on a real client. Stubber answers before the retry loop, so the retry
behaviour itself is tested separately against a real HTTP server on 127.0.0.1 that always
throttles. Missing credentials and a missing region are real botocore failures, not stubs.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from topogate.audit.egress import USAGE_TYPE_GROUP, default_client_factory, run_audit
from topogate.audit.errors import AuditError
from topogate.core.exitcodes import ExitCode
from topogate.sources.inventory import load_inventory

pytest.register_assert_rewrite("audit_support")
pytest_plugins = ["audit_support"]
from audit_support import AUDIT_FIXTURES, FAKE_KEY_ID, FAKE_SECRET, Moto, aws_test_env  # noqa: E402
from conftest import invoke, run_cli  # noqa: E402

D = dt.date.fromisoformat
START, END = D("2026-11-24"), D("2026-11-27")
INVENTORY = str(AUDIT_FIXTURES / "inventory.yaml")
# Cost Explorer answers a DAILY query with one result per day, spend or not.
NO_SPEND = {"ResultsByTime": [
    {"TimePeriod": {"Start": d, "End": e}, "Total": {}, "Groups": [], "Estimated": False}
    for d, e in (("2026-11-24", "2026-11-25"), ("2026-11-25", "2026-11-26"),
                 ("2026-11-26", "2026-11-27"))]}


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> None:
    # an endpoint nobody listens on: a stub that fails to intercept cannot reach the internet
    aws_test_env(monkeypatch, "http://127.0.0.1:9")


def stubbed(*steps: tuple[str, str, dict[str, Any]]) -> tuple[Any, Stubber]:
    """A factory for a real CE client whose answers come from Stubber, in order.

    steps: ("ok", operation, response) or ("error", operation, {"code":..., "status":..., "message":...}).
    """
    client = boto3.client("ce", region_name="us-east-1",
                          config=Config(retries={"mode": "standard", "max_attempts": 3}))
    stub = Stubber(client)
    for kind, op, data in steps:
        if kind == "ok":
            stub.add_response(op, data)
        else:
            stub.add_client_error(op, service_error_code=data["code"],
                                  service_message=data.get("message", ""),
                                  http_status_code=data.get("status", 400))
    stub.activate()
    return (lambda: client), stub


def audit_error(factory: Any, **kw: Any) -> AuditError:
    with pytest.raises(AuditError) as e:
        run_audit(load_inventory(INVENTORY), START, END, factory, None, **kw)
    line = e.value.line()
    assert "\n" not in line and line.startswith("topogate audit: ")
    assert FAKE_KEY_ID not in line and FAKE_SECRET not in line
    return e.value


@pytest.mark.parametrize(("code", "status", "exit_code", "words"), [
    ("LimitExceededException", 400, ExitCode.TEMPORARY, "throttled"),
    ("DataUnavailableException", 400, ExitCode.TEMPORARY, "no data for the window yet"),
    ("BillExpirationException", 400, ExitCode.BAD_INVOCATION, "older than Cost Explorer keeps"),
    ("AccessDeniedException", 400, ExitCode.ACCESS_DENIED, "ce:GetCostAndUsage"),
    ("InternalServerError", 500, ExitCode.TEMPORARY, "run again later"),
])
def test_cost_explorer_errors_map_to_exit_codes(env: None, code: str, status: int,
                                                exit_code: ExitCode, words: str) -> None:
    factory, stub = stubbed(("error", "get_cost_and_usage",
                             {"code": code, "status": status, "message": "the service said no"}))
    err = audit_error(factory)
    assert err.code == exit_code and code in err.message and words in err.message
    assert err.requests == 1 and f"[exit {int(exit_code)}; 1 Cost Explorer request answered]" in err.line()
    stub.assert_no_pending_responses()


def test_error_after_first_page_counts_both_requests(env: None) -> None:
    page1 = {"ResultsByTime": [], "NextPageToken": "p2"}
    factory, _ = stubbed(("ok", "get_cost_and_usage", page1),
                         ("error", "get_cost_and_usage", {"code": "LimitExceededException"}))
    err = audit_error(factory)
    assert err.requests == 2 and "2 Cost Explorer requests answered" in err.line()


def test_access_denied_message_never_leaks_credentials(env: None) -> None:
    msg = (f"User: arn:aws:sts::123456789012:assumed-role/audit/{FAKE_KEY_ID} is not authorized "
           f"to perform: ce:GetCostAndUsage (signature {FAKE_SECRET})")
    factory, _ = stubbed(("error", "get_cost_and_usage",
                          {"code": "AccessDeniedException", "message": msg}))
    err = audit_error(factory)
    assert err.code == ExitCode.ACCESS_DENIED and "[redacted]" in err.message


def test_no_credentials_is_configuration(monkeypatch: pytest.MonkeyPatch) -> None:
    aws_test_env(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    err = audit_error(default_client_factory(2))  # real botocore NoCredentialsError
    assert err.code == ExitCode.CONFIG and "no AWS credentials" in err.message
    assert err.requests == 0  # signing failed before anything was sent: nothing billed


def test_no_region_is_configuration(env: None) -> None:
    # Measured: botocore 1.44 resolves `boto3.client("ce")` without any region to the global
    # endpoint ce.us-east-1.amazonaws.com, so a real NoRegionError cannot be provoked for Cost
    # Explorer here (older botocore and wrappers that build clients for other services can
    # still raise it). The factory raises botocore's own exception to exercise the mapping.
    from botocore.exceptions import NoRegionError

    def factory() -> Any:
        raise NoRegionError()

    err = audit_error(factory)
    assert err.code == ExitCode.CONFIG and "no AWS region" in err.message and err.requests == 0


def test_default_factory_needs_no_region(moto_ce: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    moto_ce.seed(NO_SPEND)
    r = run_audit(load_inventory(INVENTORY), START, END, default_client_factory(2), None)
    assert r.requests == 1


def test_no_request_at_all_without_aws_clusters(env: None) -> None:
    def factory() -> Any:
        raise AssertionError("no client may be created")

    from dataclasses import replace

    inv = load_inventory(INVENTORY)
    inv = replace(inv, clusters=tuple(c for c in inv.clusters if c.provider != "aws"))
    r = run_audit(inv, START, END, factory, None)
    assert r.requests == 0 and r.exit_code == 0 and all(not c.measured for c in r.clusters)


# ----------------------------------------------------------------------------- --verify-usage-types


def _dims(*values: str) -> dict[str, Any]:
    return {"DimensionValues": [{"Value": v, "Attributes": {}} for v in values],
            "ReturnSize": len(values), "TotalSize": len(values)}


def test_verify_usage_types_confirms_names_then_queries(env: None) -> None:
    factory, stub = stubbed(
        ("ok", "get_dimension_values", _dims(USAGE_TYPE_GROUP)),
        ("ok", "get_dimension_values", _dims("DataTransfer-Regional-Bytes",
                                             "USW2-DataTransfer-Regional-Bytes")),
        ("ok", "get_cost_and_usage", NO_SPEND))
    r = run_audit(load_inventory(INVENTORY), START, END, factory, None, verify=True)
    assert r.requests == 3
    assert r.verified_usage_types == ("DataTransfer-Regional-Bytes", USAGE_TYPE_GROUP,
                                      "USW2-DataTransfer-Regional-Bytes")
    assert any("USE1-DataTransfer-Regional-Bytes not found" in w for w in r.warnings)
    stub.assert_no_pending_responses()


def test_verify_usage_types_fails_clearly_when_the_group_is_absent(env: None) -> None:
    factory, _ = stubbed(("ok", "get_dimension_values", _dims()),
                         ("ok", "get_dimension_values", _dims()))
    err = audit_error(factory, verify=True)
    assert err.code == ExitCode.CONFIG and USAGE_TYPE_GROUP in err.message
    assert err.requests == 2  # failed before any GetCostAndUsage


def test_verify_usage_types_sends_the_expected_requests(env: None) -> None:
    factory, stub = stubbed(
        ("ok", "get_dimension_values", _dims(USAGE_TYPE_GROUP)),
        ("ok", "get_dimension_values", _dims()),
        ("ok", "get_cost_and_usage", NO_SPEND))
    # Stubber checks the parameters it is handed, so the assertion is on the real request
    stub._queue[0]["expected_params"] = {  # noqa: SLF001 - Stubber has no public setter after add
        "TimePeriod": {"Start": "2026-11-24", "End": "2026-11-27"},
        "Dimension": "USAGE_TYPE_GROUP", "SearchString": "Inter AZ", "Context": "COST_AND_USAGE"}
    stub._queue[1]["expected_params"] = {  # noqa: SLF001
        "TimePeriod": {"Start": "2026-11-24", "End": "2026-11-27"},
        "Dimension": "USAGE_TYPE", "SearchString": "DataTransfer-Regional-Bytes",
        "Context": "COST_AND_USAGE"}
    run_audit(load_inventory(INVENTORY), START, END, factory, None, verify=True)
    stub.assert_no_pending_responses()


# ----------------------------------------------------------------------------- real retries


class _Throttle(BaseHTTPRequestHandler):
    hits = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        body = json.dumps({"__type": "LimitExceededException", "message": "Rate exceeded"}).encode()
        self.send_response(400)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def throttling_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Throttle]]:
    handler = type("Throttle", (_Throttle,), {"hits": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    aws_test_env(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}")
    try:
        yield handler
    finally:
        server.shutdown()
        server.server_close()


def test_throttling_is_retried_a_bounded_number_of_times_then_exit_75(
        throttling_server: type[_Throttle]) -> None:
    err = audit_error(default_client_factory(max_attempts=3))
    assert throttling_server.hits == 3  # standard mode retried LimitExceededException twice
    assert err.code == ExitCode.TEMPORARY and "after 3 attempts" in err.message
    assert err.requests == 1


def test_cli_failure_is_one_line_on_stderr_without_traceback_or_secret(
        throttling_server: type[_Throttle]) -> None:
    res = invoke("audit", "egress", INVENTORY, "--max-attempts", "2",
                 "--start", "2026-11-24", "--end", "2026-11-27")
    assert res.exit_code == 75
    assert res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    assert "LimitExceededException" in lines[0] and "1 Cost Explorer request answered" in lines[0]
    assert FAKE_KEY_ID not in res.stderr and FAKE_SECRET not in res.stderr


def test_cli_no_credentials_exit_78(monkeypatch: pytest.MonkeyPatch) -> None:
    aws_test_env(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    res = invoke("audit", "egress", INVENTORY)
    assert res.exit_code == 78 and len(res.stderr.strip().splitlines()) == 1
    assert "no AWS credentials" in res.stderr


# ----------------------------------------------------------------------------- configuration, counting, secrets


def _closed_port() -> int:
    import socket

    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cli(*args: str) -> tuple[int, str, str]:
    return run_cli("audit", "egress", INVENTORY, *args, raise_unexpected=False)


def test_invalid_endpoint_url_is_configuration_exit_78(monkeypatch: pytest.MonkeyPatch) -> None:
    # Real botocore: a bare ValueError("Invalid endpoint: not a url") when the client is made.
    # Old code: "internal error ... please report it", exit 70.
    aws_test_env(monkeypatch, "not a url")
    code, out, err = _cli("--start", "2026-11-24", "--end", "2026-11-27")
    assert code == 78 and out == ""
    (line,) = err.strip().splitlines()
    assert "AWS_ENDPOINT_URL_COST_EXPLORER" in line and "internal error" not in line
    assert "[exit 78; 0 Cost Explorer requests answered]" in line


def test_connection_refused_counts_no_answered_request(monkeypatch: pytest.MonkeyPatch) -> None:
    # A real refused TCP connection on 127.0.0.1. Old code: "1 Cost Explorer request", although
    # nothing reached the service; the attempts botocore made are still said.
    aws_test_env(monkeypatch, f"http://127.0.0.1:{_closed_port()}")
    code, out, err = _cli("--start", "2026-11-24", "--end", "2026-11-27", "--max-attempts", "2")
    assert code == 75 and out == ""
    (line,) = err.strip().splitlines()
    assert "cannot reach Cost Explorer (2 attempts)" in line
    assert "[exit 75; 0 Cost Explorer requests answered]" in line


def test_a_password_in_the_endpoint_url_is_never_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    # Old code printed `Could not connect to the endpoint URL: "http://user:secret@127.0.0.1:N/"`.
    port = _closed_port()
    aws_test_env(monkeypatch, f"http://audit-user:s3cr3t-pa55@127.0.0.1:{port}")
    code, out, err = _cli("--start", "2026-11-24", "--end", "2026-11-27", "--max-attempts", "1")
    assert code == 75
    assert "s3cr3t-pa55" not in out + err and "audit-user" not in out + err
    assert f"http://[redacted]@127.0.0.1:{port}/" in err


@pytest.mark.parametrize("code", ["ExpiredTokenException", "ExpiredToken"])
def test_expired_credentials_are_configuration_not_access_denied(env: None, code: str) -> None:
    # Stubber: moto does not expire credentials, so it cannot send ExpiredTokenException.
    # Old code: exit 77 with advice to change IAM permissions, which would not help.
    factory, _ = stubbed(("error", "get_cost_and_usage",
                          {"code": code, "status": 400,
                           "message": "The security token included in the request is expired"}))
    err = audit_error(factory)
    assert err.code == ExitCode.CONFIG and code in err.message
    assert "refresh" in err.message and "OIDC" in err.message
    assert "ce:GetCostAndUsage" not in err.message  # not IAM advice
    assert "[exit 78; 1 Cost Explorer request answered]" in err.line()


@pytest.mark.parametrize("bad", ["20261124", "2026-W48-2", "2026-W48", "2026-11-24T00:00",
                                 "2026-328", "２０２６-11-24"])
def test_only_yyyy_mm_dd_dates_are_accepted(env: None, bad: str) -> None:
    # Old code: date.fromisoformat (3.11+) took 20261124 and week dates as valid days.
    code, out, err = _cli("--start", bad)
    assert code == 2 and out == "" and "YYYY-MM-DD" in err


def test_a_window_that_ends_after_today_is_refused_before_any_request(
        env: None, monkeypatch: pytest.MonkeyPatch) -> None:
    # Old code sent it (and paid $0.01 per request) for days Cost Explorer cannot have.
    import topogate.audit.egress as egress

    def no_client(*_: Any, **__: Any) -> Any:
        raise AssertionError("no Cost Explorer client may be made")

    monkeypatch.setattr(egress, "default_client_factory", no_client)
    monkeypatch.setattr("topogate.audit.default_client_factory", no_client)
    tomorrow = (dt.date.today() + dt.timedelta(days=1)).isoformat()
    code, out, err = _cli("--end", tomorrow)
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert f"--end {tomorrow} is after today" in line and "[exit 2;" in line


# ----------------------------------------------------------------------------- a total deadline


class _SlowBody(BaseHTTPRequestHandler):
    """Headers at once, then the body a byte at a time, each within botocore's read timeout:
    per-read timeouts never fire; only a total deadline ends the wait. Bounded: it gives up
    after 60 bytes (30 s), so a test without the deadline fails instead of hanging."""

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            self.wfile.write(b'{"ResultsByTime": [')
            for _ in range(60):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.5)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        pass


def test_a_body_that_trickles_in_hits_the_total_deadline_exit_75(
        monkeypatch: pytest.MonkeyPatch) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _SlowBody)
    server.daemon_threads = True
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    aws_test_env(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}")
    try:
        t0 = time.monotonic()
        res = invoke("audit", "egress", INVENTORY, "--deadline", "2",
                     "--start", "2026-11-24", "--end", "2026-11-27")
        elapsed = time.monotonic() - t0
    finally:
        server.shutdown()
        server.server_close()
    assert res.exit_code == 75, res.stderr
    assert elapsed < 15  # the deadline ended it, not the server giving up after 30 s
    assert res.stdout == ""
    (line,) = res.stderr.strip().splitlines()
    assert "did not finish within its deadline of 2 s (--deadline)" in line
    # the one request never finished: not counted as answered, and the line says it may be billed
    assert "a request cut short may still be billed" in line
    assert "0 Cost Explorer requests answered" in line


def test_the_cronjob_deadline_leaves_room_for_its_retry() -> None:
    import yaml

    docs = [d for d in yaml.safe_load_all((AUDIT_FIXTURES.parent.parent / "examples"
                                           / "cronjob-egress-audit.yaml").read_text()) if d]
    job = docs[1]["spec"]["jobTemplate"]["spec"]
    (container,) = job["template"]["spec"]["containers"]
    args = container["args"]
    deadline = float(args[args.index("--deadline") + 1])
    assert deadline * (job["backoffLimit"] + 1) < job["activeDeadlineSeconds"]
