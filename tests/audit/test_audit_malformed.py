"""An answer that is not a well-formed Cost Explorer page is exit 75 and one line, in every format.

Issue 10 item 1: an HTML or truncated JSON body read as "no spend" (exit 0, within budget);
other malformed shapes were exit 70; `-1e30` crashed the text and markdown renderers (exit 1,
read as "over budget") while JSON exited 0; negative amounts were accepted; a session token
that is not STS-shaped, echoed back in `X-Amz-Security-Token`, was printed.

Shapes a JSON body can carry are served by a real moto_server on 127.0.0.1 (it hands back the
seeded page verbatim). Bodies that are not JSON at all (HTML, truncated JSON, bytes) and error
answers that echo credentials cannot be seeded into moto, so a tiny HTTP server on 127.0.0.1
answers those; botocore, its parser and its retries are real in both.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Iterator
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from topogate.audit.egress import qty_text, usd_text
from topogate.audit.errors import redact_known, register_secrets, scrub

pytest.register_assert_rewrite("audit_support")
pytest_plugins = ["audit_support"]
from audit_support import (  # noqa: E402
    AUDIT_FIXTURES,
    FAKE_KEY_ID,
    FAKE_SECRET,
    Moto,
    aws_test_env,
    page,
    result,
)
from conftest import invoke  # noqa: E402

KEY = "topogate.dev/cluster"
UT = "DataTransfer-Regional-Bytes"
INVENTORY = str(AUDIT_FIXTURES / "inventory.yaml")
WINDOW = ("--start", "2026-11-24", "--end", "2026-11-27")
FORMATS = ("text", "json", "markdown")


# The other days of the window, answered without spend (an unanswered day is exit 75).
QUIET = [result("2026-11-25", []), result("2026-11-26", [])]


def good() -> dict[str, Any]:
    return page([result("2026-11-24", [(f"{KEY}$gpu-east", UT, "1.00", "100")]), *QUIET])


def _mutate(path: tuple[Any, ...], value: Any, delete: bool = False) -> dict[str, Any]:
    p = copy.deepcopy(good())
    node: Any = p
    for k in path[:-1]:
        node = node[k]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return p


_RBT = ("ResultsByTime", 0)
_GROUP = (*_RBT, "Groups", 0)
_COST = (*_GROUP, "Metrics", "UnblendedCost")
# (id, page): every one of these was read as something other than exit 75 before.
MOTO_SHAPES: list[tuple[str, dict[str, Any]]] = [
    ("missing ResultsByTime", _mutate(("ResultsByTime",), None, delete=True)),
    ("ResultsByTime null", _mutate(("ResultsByTime",), None)),
    ("results not a list", _mutate(("ResultsByTime",), {"a": 1})),
    ("results a string", _mutate(("ResultsByTime",), "nope")),
    ("result null", _mutate(_RBT, None)),
    ("TimePeriod null", _mutate((*_RBT, "TimePeriod"), None)),
    ("Start null", _mutate((*_RBT, "TimePeriod", "Start"), None)),
    ("odd date", _mutate((*_RBT, "TimePeriod", "Start"), "2026-02-30")),
    ("date not a day", _mutate((*_RBT, "TimePeriod", "Start"), "yesterday")),
    ("datetime", _mutate((*_RBT, "TimePeriod", "Start"), "2026-11-24T00:00:00Z")),
    ("two-day period", _mutate((*_RBT, "TimePeriod", "End"), "2026-11-26")),
    ("day outside the window", page([result("2026-12-24", [(f"{KEY}$gpu-east", UT, "1", "1")])])),
    ("Estimated a string", _mutate((*_RBT, "Estimated"), "yes")),
    ("Groups missing", _mutate((*_RBT, "Groups"), None, delete=True)),
    ("Groups not a list", _mutate((*_RBT, "Groups"), {"x": 1})),
    ("group null", _mutate(_GROUP, None)),
    ("Keys null", _mutate((*_GROUP, "Keys"), None)),
    ("Keys numbers", _mutate((*_GROUP, "Keys"), [1, 2])),
    ("Keys without the tag", _mutate((*_GROUP, "Keys"), ["other$x", UT])),
    ("Keys with a newline", _mutate((*_GROUP, "Keys"), [f"{KEY}$a\n::error::x", UT])),
    ("Metrics null", _mutate((*_GROUP, "Metrics"), None)),
    ("UnblendedCost missing", _mutate(_COST, None, delete=True)),
    ("Amount null", _mutate((*_COST, "Amount"), None)),
    ("Amount a number", _mutate((*_COST, "Amount"), 1.5)),
    ("Amount a list", _mutate((*_COST, "Amount"), ["1"])),
    ("Amount negative", _mutate((*_COST, "Amount"), "-1")),
    ("Amount -1e30", _mutate((*_COST, "Amount"), "-1e30")),
    ("Amount 1e30", _mutate((*_COST, "Amount"), "1e30")),
    ("Amount NaN", _mutate((*_COST, "Amount"), "NaN")),
    ("Amount -Infinity", _mutate((*_COST, "Amount"), "-Infinity")),
    ("Amount huge string", _mutate((*_COST, "Amount"), "1" * 5000)),
    ("Unit not USD", _mutate((*_COST, "Unit"), "EUR")),
    ("Unit null", _mutate((*_COST, "Unit"), None)),
    ("quantity negative", _mutate((*_GROUP, "Metrics", "UsageQuantity", "Amount"), "-5")),
    ("NextPageToken a list", {**good(), "NextPageToken": ["a"]}),
]


def _cli(fmt: str) -> tuple[int, str, str]:
    # An empty manifest directory: the cause analysis has nothing to build, so each run is fast.
    res = invoke("audit", "egress", INVENTORY, str(AUDIT_FIXTURES / "empty"),
                 *WINDOW, "--format", fmt, "--max-attempts", "1")
    return res.exit_code, res.stdout, res.stderr


def _one_line_75(code: int, out: str, err: str) -> str:
    assert code == 75, err
    assert out == ""
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("topogate audit: ") and "[exit 75; " in line
    return line


# The answer is refused before anything is rendered, so --format cannot change the outcome:
# every shape runs in text, and a few (the ones that crashed a renderer or exited 0) in all.
IN_EVERY_FORMAT = {"missing ResultsByTime", "Amount -1e30", "Amount 1e30", "Amount negative"}
SHAPE_CASES = [(n, b, f) for n, b in MOTO_SHAPES for f in FORMATS
               if f == "text" or n in IN_EVERY_FORMAT]


@pytest.mark.parametrize(("name", "body", "fmt"), SHAPE_CASES,
                         ids=[f"{n}-{f}" for n, _, f in SHAPE_CASES])
def test_malformed_page_from_moto_is_exit_75_one_line(moto_ce: Moto, name: str,
                                                      body: dict[str, Any], fmt: str) -> None:
    moto_ce.seed(body)
    line = _one_line_75(*_cli(fmt))
    assert "1 Cost Explorer request answered" in line  # moto answered it: it was billed
    assert "\n" not in line and "::error" not in line.split("topogate audit: ", 1)[1][:1]


def test_a_well_formed_page_still_passes(moto_ce: Moto) -> None:
    moto_ce.seed(good())
    code, out, err = _cli("text")
    assert code == 0 and "Verdict: within budget" in out, err


# ----------------------------------------------------------------------------- not JSON at all


class _Canned(BaseHTTPRequestHandler):
    status = 200
    body = b""
    content_type = "application/x-amz-json-1.1"
    hits = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server API
        type(self).hits += 1
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(self.status)
        self.send_header("Content-Type", self.content_type)
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A server on 127.0.0.1 that answers every request with the class's status and body."""
    servers: list[ThreadingHTTPServer] = []

    def start(status: int, body: bytes, content_type: str = "application/x-amz-json-1.1") -> Any:
        handler = type("Canned", (_Canned,), {"status": status, "body": body,
                                               "content_type": content_type, "hits": 0})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        aws_test_env(monkeypatch, f"http://127.0.0.1:{server.server_address[1]}")
        return handler

    yield start
    for s in servers:
        s.shutdown()
        s.server_close()


HTML = b"<html><head><title>Gateway</title></head><body>Please log in</body></html>"
BODIES = [
    ("html 200", 200, HTML, "text/html"),
    ("truncated json 200", 200, b'{"ResultsByTime": [{"TimePeriod": {"Start": "2026-11-24", "E',
     "application/x-amz-json-1.1"),
    ("garbage bytes 200", 200, bytes(range(256)) * 4, "application/octet-stream"),
    ("empty body 200", 200, b"", "application/x-amz-json-1.1"),
    ("json array 200", 200, b"[1, 2, 3]", "application/x-amz-json-1.1"),
    ("json string 200", 200, b'"ResultsByTime"', "application/x-amz-json-1.1"),
    ("html 403 from a proxy", 403, HTML, "text/html"),
    ("html 404", 404, HTML, "text/html"),
]


BODY_CASES = [(*b, f) for b in BODIES for f in FORMATS
              if f == "text" or b[0] in ("html 200", "truncated json 200")]


@pytest.mark.parametrize(("name", "status", "body", "ctype", "fmt"), BODY_CASES,
                         ids=[f"{b[0]}-{b[-1]}" for b in BODY_CASES])
def test_a_body_that_is_not_a_page_is_exit_75_one_line(canned: Any, name: str, status: int,
                                                       body: bytes, ctype: str, fmt: str) -> None:
    canned(status, body, ctype)
    line = _one_line_75(*_cli(fmt))
    assert "<html>" not in line


# ----------------------------------------------------------------------------- amounts, renderers


@pytest.mark.parametrize("x", ["-1e30", "1e30", "1e300", "123456789012345678901234567890.555"])
def test_display_rounding_never_raises(x: str) -> None:
    # Old code: quantize in the 28-digit default context raised InvalidOperation in the renderer.
    assert usd_text(Decimal(x)).startswith(("$", "$-"))
    assert qty_text(Decimal(x))


# ----------------------------------------------------------------------------- credentials


ODD_TOKEN = "vendor-session.token_not:sts/shaped+x=="  # no STS prefix, has '-', '.', '_', ':'
ODD_KEY = "KEYID-not-akia-shaped"
ODD_SECRET = "s3cr3t with spaces & symbols"


def _odd_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ODD_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", ODD_SECRET)
    monkeypatch.setenv("AWS_SESSION_TOKEN", ODD_TOKEN)


@pytest.mark.parametrize("echo", [
    "X-Amz-Security-Token: {token}",
    "X-Amz-Security-Token={quoted}",
    "the token {token} and key {key} (secret {secret}) are not valid here",
    "X-Amz-Security-Token={lower}",
])
def test_an_error_echoing_any_credential_never_prints_it(canned: Any, monkeypatch: pytest.MonkeyPatch,
                                                         echo: str) -> None:
    from urllib.parse import quote

    quoted = quote(ODD_TOKEN, safe="")
    msg = echo.format(token=ODD_TOKEN, key=ODD_KEY, secret=ODD_SECRET, quoted=quoted,
                      lower=quoted.lower())
    body = json.dumps({"__type": "UnrecognizedClientException", "message": msg}).encode()
    canned(400, body)
    _odd_credentials(monkeypatch)  # after canned(), which sets the test environment
    code, out, err = _cli("text")
    assert code == 77
    for secret in (ODD_TOKEN, ODD_KEY, ODD_SECRET, quoted, quoted.lower()):
        assert secret not in out + err
    assert "[redacted]" in err


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_page_echoing_the_token_as_a_tag_value_never_prints_it(
        moto_ce: Moto, monkeypatch: pytest.MonkeyPatch, fmt: str) -> None:
    _odd_credentials(monkeypatch)
    moto_ce.seed(page([result("2026-11-24", [(f"{KEY}${ODD_TOKEN}", UT, "1.00", "100")]),
                       *QUIET]))
    code, out, err = _cli(fmt)
    assert code == 0, err
    assert ODD_TOKEN not in out + err and "[redacted]" in out


def test_scrub_redacts_registered_values_of_any_shape() -> None:
    token = "zz-unit-test-token.with_odd:shape"
    register_secrets(token, "short", None)
    assert scrub(f"header X-Amz-Security-Token: {token} end") == "header [redacted] end"
    assert scrub(f"the value {token}, echoed") == "the value [redacted], echoed"
    assert redact_known(f"a{token}b") == "a[redacted]b"
    assert redact_known("short") == "short"  # under MIN_SECRET_CHARS: not a credential
    assert FAKE_KEY_ID not in scrub(FAKE_KEY_ID) and FAKE_SECRET not in scrub(FAKE_SECRET)


def test_a_loader_crash_is_exit_70_never_1(monkeypatch: pytest.MonkeyPatch) -> None:
    """FAULT INJECTION: no inventory is known that crashes the loader with read_bases=False
    any more (issue 10 item 6 listed several); a crash there must still not exit 1, which a
    scheduler reads as "over budget"."""
    import topogate.cli.audit as audit_commands

    def crash(*_: Any, **__: Any) -> Any:
        raise TypeError("'list' object has no attribute 'get'")

    monkeypatch.setattr(audit_commands, "load_inventory", crash)
    code, out, err = _cli("text")
    assert code == 70 and out == ""
    (line,) = err.strip().splitlines()
    assert "internal error reading the inventory (TypeError" in line and "[exit 70]" in line


@pytest.mark.parametrize("body", [b'{"DimensionValues": "x"}', b'{"DimensionValues": [{"Value": 3}]}',
                                  b"{}", HTML])
def test_a_malformed_dimension_values_answer_is_exit_75(canned: Any, body: bytes) -> None:
    # moto does not implement GetDimensionValues: the local server answers for it.

    canned(200, body)
    res = invoke("audit", "egress", INVENTORY, str(AUDIT_FIXTURES / "empty"),
                 *WINDOW, "--verify-usage-types", "--max-attempts", "1")
    line = _one_line_75(res.exit_code, res.stdout, res.stderr)
    assert "GetDimensionValues" in line


def _transformed(token: str) -> dict[str, str]:
    import base64

    return {
        "cut at the end": token[:-1],
        "cut at the start": token[1:],
        "base64": base64.b64encode(token.encode()).decode(),
        "base64 inside a basic-auth header": base64.b64encode(f"user:{token}".encode()).decode(),
        "every punctuation %-encoded (%2E)": "".join(
            c if c.isalnum() else f"%{ord(c):02X}" for c in token),
        "every punctuation %-encoded, lower-case hex": "".join(
            c if c.isalnum() else f"%{ord(c):02x}" for c in token),
    }


@pytest.mark.parametrize("how", list(_transformed("x")))
def test_transformed_copies_of_a_credential_are_redacted(how: str) -> None:
    token = "zz.unit-test.session~token.0123456789"  # no AWS shape: only its value can tell
    register_secrets(token)
    copy = _transformed(token)[how]
    line = scrub(f"GetCostAndUsage: UnrecognizedClientException: bad token {copy} here")
    assert copy not in line and "[redacted]" in line, line
    assert copy not in redact_known(f"tag value {copy}")


@pytest.mark.parametrize("how", list(_transformed("x")))
def test_a_report_never_prints_a_transformed_credential(
        moto_ce: Moto, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    _odd_credentials(monkeypatch)
    copy = _transformed(ODD_TOKEN)[how]
    moto_ce.seed(page([result("2026-11-24", [(f"{KEY}${copy}", UT, "1.00", "100")]), *QUIET]))
    code, out, err = _cli("text")
    assert code == 0, err
    assert copy not in out + err
