"""`audit egress` checks its configuration (cost tags, the client, credentials) before the
analysis of PATHs, which takes minutes on a large repository (issue 11 item 5)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from topogate.cli import audit as audit_commands

sys.path.insert(0, str(Path(__file__).parent.parent))
from audit_support import AUDIT_FIXTURES, aws_test_env  # noqa: E402
from conftest import invoke  # noqa: E402

LAB = str(Path(__file__).resolve().parents[2] / "fixtures" / "lab")


@pytest.fixture
def analysed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []

    def record(inventory: str, paths: tuple[str, ...],
               causes: dict[str, str] | None = None) -> dict[str, list[str]]:
        calls.append(inventory)
        return {}

    monkeypatch.setattr(audit_commands, "_may_split", record)
    return calls


def _audit(inventory: str) -> tuple[int, str]:
    res = invoke("audit", "egress", inventory, LAB, "--max-attempts", "1")
    return res.exit_code, res.stderr


def test_missing_cost_tag_fails_before_the_analysis(monkeypatch: pytest.MonkeyPatch,
                                                    analysed: list[str]) -> None:
    aws_test_env(monkeypatch, "http://127.0.0.1:9")
    code, err = _audit(str(AUDIT_FIXTURES / "no-cost-tag.yaml"))
    assert code == 78 and "no cost tag" in err and analysed == []


def test_missing_credentials_fail_before_the_analysis(monkeypatch: pytest.MonkeyPatch,
                                                      analysed: list[str]) -> None:
    aws_test_env(monkeypatch, "http://127.0.0.1:9")
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    code, err = _audit(str(AUDIT_FIXTURES / "inventory.yaml"))
    assert code == 78 and "no AWS credentials" in err and analysed == []


def test_bad_endpoint_fails_before_the_analysis(monkeypatch: pytest.MonkeyPatch,
                                                analysed: list[str]) -> None:
    aws_test_env(monkeypatch, "not a url")
    code, err = _audit(str(AUDIT_FIXTURES / "inventory.yaml"))
    assert code == 78 and "endpoint" in err and analysed == []


def test_good_configuration_goes_on_to_the_analysis(monkeypatch: pytest.MonkeyPatch,
                                                    analysed: list[str]) -> None:
    aws_test_env(monkeypatch, "http://127.0.0.1:9")  # nothing listens: the request fails later
    code, _ = _audit(str(AUDIT_FIXTURES / "inventory.yaml"))
    assert analysed and code == 75


def test_check_refuses_an_unwritable_report_path_before_the_analysis(tmp_path: Path) -> None:
    res = invoke("check", f"{LAB}/inventory.yaml", "-o",
                 str(tmp_path / "missing" / "r.md"))
    assert res.exit_code == 2 and res.stdout == ""
    assert "is not a writable directory" in res.stderr
