"""Cilium's own policy engine for the tests: tests/cilium/ (github.com/cilium/cilium v1.20.2 as a
library) built by tests/cilium/build.sh into a per-machine cache, run as one long-lived child.

`CiliumOracle.ask(case)` sends a whole case (the agent's settings, Namespaces, policies as
objects, endpoints, flows) as one JSON line and reads one JSON line back: per policy whether the
agent imports it (and its reason when not), per endpoint the identity the agent gives it, per
flow the verdict of the sender's egress and of the receiver's ingress ("none" for a side that
is not a pod). tests/cilium/main.go says how each is computed.

The child runs under an address-space limit and is told to die with the test process; each
answer has a deadline. Without Go (and no cached build) the tests that ask are skipped with one
line, unless TOPOGATE_REQUIRE_CILIUM=1 (CI) makes that a failure. TOPOGATE_CILIUM_BIN=DIR uses
DIR/cilium-oracle instead of building.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import resource
import selectors
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import REPO, _cidr, _strict, crds_dir, crds_problem, require_crds

BUILD = REPO / "tests" / "cilium" / "build.sh"
BINARY = "cilium-oracle"
HOW = ("install Go 1.26 and run `make cilium-bin` (builds cilium-oracle from github.com/cilium/cilium "
       "v1.20.2 into a per-machine cache), or set TOPOGATE_CILIUM_BIN=DIR holding cilium-oracle")
# Go reserves address space generously; the engine itself stays far below a few hundred MB.
MEMORY = 8 << 30
ANSWER_TIMEOUT = 60.0  # seconds for one case


def cilium_required() -> bool:
    return os.environ.get("TOPOGATE_REQUIRE_CILIUM", "") not in ("", "0")


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:])


@functools.lru_cache(maxsize=1)
def _binary() -> tuple[Path | None, str]:
    """(the cilium-oracle binary, "") or (None, why not)."""
    env = os.environ.get("TOPOGATE_CILIUM_BIN")
    if env:
        b = Path(env) / BINARY
        return (b, "") if os.access(b, os.X_OK) else (None, f"TOPOGATE_CILIUM_BIN={env} has no {BINARY}")
    if shutil.which("bash") is None:
        return None, "no bash on PATH to run tests/cilium/build.sh"
    cached = subprocess.run(["bash", str(BUILD), "--dir"], capture_output=True, text=True, timeout=60)
    if cached.returncode == 0 and os.access(Path(cached.stdout.strip()) / BINARY, os.X_OK):
        return Path(cached.stdout.strip()) / BINARY, ""
    if shutil.which("go") is None:
        return None, "no go on PATH and no cached cilium-oracle build"
    # Not built yet (a test run without `make test`): build now.
    proc = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return None, f"tests/cilium/build.sh failed (exit {proc.returncode}):\n{_tail(proc.stderr)}"
    return Path(proc.stdout.strip().splitlines()[-1]) / BINARY, ""


def require_binary() -> Path:
    """The binary, or skip the calling test (fail it when TOPOGATE_REQUIRE_CILIUM is set)."""
    binary, problem = _binary()
    if binary is None:
        if cilium_required():
            pytest.fail(f"{problem} and TOPOGATE_REQUIRE_CILIUM is set: {HOW}", pytrace=False)
        pytest.skip(f"{problem}: {HOW}")
    return binary


MODULE = "github.com/cilium/cilium"
CRD_DIR = "pkg/k8s/apis/cilium.io/client/crds/v2"


@functools.lru_cache(maxsize=1)
def module_dir() -> Path | None:
    """The pinned github.com/cilium/cilium in the Go module cache (go.sum checks it), or None
    without Go."""
    if shutil.which("go") is None:
        return None
    out = subprocess.run(["go", "mod", "download", "-json", MODULE], capture_output=True, text=True,
                         timeout=600, check=False, cwd=BUILD.parent)
    if out.returncode != 0:
        return None
    return Path(json.loads(out.stdout)["Dir"])


@functools.lru_cache(maxsize=4)
def _policy_validator(kind: str) -> Any:
    """The pinned version's own CRD schema of a Cilium policy kind, strict as the API server
    (unknown fields refused, CIDRs checked)."""
    import jsonschema  # lazy: only the oracle's generator validates

    root = module_dir()
    if root is None:
        return None
    name = {"CiliumNetworkPolicy": "ciliumnetworkpolicies", "CiliumClusterwideNetworkPolicy":
            "ciliumclusterwidenetworkpolicies"}[kind]
    crd = yaml.safe_load((root / CRD_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
    (schema,) = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == "v2"]
    formats = jsonschema.FormatChecker(formats=())
    formats.checks("cidr")(_cidr)
    return jsonschema.Draft7Validator(_strict(schema), format_checker=formats)


def cilium_crd(fname: str) -> Path:
    """A Cilium policy CRD file (`ciliumnetworkpolicies.yaml`, ...): the upstream copy where the
    CRDs are (TOPOGATE_CRDS, .crds, ../shared/crds), else the pinned module's own; a checkout with
    neither skips (or fails, under TOPOGATE_REQUIRE_CRDS) as require_crds says."""
    if crds_problem() is None:
        return crds_dir() / "cilium.io" / fname
    root = module_dir()
    if root is None:
        return require_crds() / "cilium.io" / fname
    return root / CRD_DIR / fname


def schema_errors(obj: Mapping[str, Any]) -> list[str]:
    """What the API server would refuse in a Cilium policy object (its CRD schema of v1.20.2);
    [] for other kinds or without Go."""
    kind = str(obj.get("kind"))
    if kind not in ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"):
        return []
    v = _policy_validator(kind)
    if v is None:
        return []
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(obj)]


def lab_with_agent(tmp_path: Path, block: str) -> Path:
    """A copy of fixtures/lab whose cluster names its agent (`cilium: BLOCK`, YAML flow style);
    `inventory-default.yaml` beside it is the lab's own inventory. Returns the new inventory."""
    d = tmp_path / "lab"
    shutil.copytree(REPO / "fixtures" / "lab", d)
    inv = d / "inventory.yaml"
    text = inv.read_text(encoding="utf-8")
    (d / "inventory-default.yaml").write_text(text, encoding="utf-8")
    anchor = "  zoneLabel: topology.kubernetes.io/zone\n"
    assert anchor in text
    inv.write_text(text.replace(anchor, f"{anchor}  cilium: {block}\n", 1), encoding="utf-8")
    return inv


def inventory_with_agent(directory: Path, block: Mapping[str, Any]) -> Path:
    """A one-cluster inventory in `directory` whose agent is `block` (its `cilium:` block), for a
    trace over plain files (`--inventory`)."""
    inv = {"apiVersion": "topogate.dev/v1alpha1", "kind": "Inventory", "metadata": {"name": "agent"},
           "clusters": [{"name": "agent", "provider": "other", "region": "r",
                         "zones": [{"name": "z", "pools": [{"name": "p", "nodes": 1}]}],
                         "networkZones": [{"name": "n", "zones": ["z"]}], "cilium": dict(block)}],
           "workloads": []}
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "inventory.yaml"
    path.write_text(yaml.safe_dump(inv, sort_keys=False), encoding="utf-8")
    return path


class OracleError(RuntimeError):
    pass


_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None


def _limit() -> None:
    """In the child before exec: its own process group, an address-space limit, and death with
    the test process (plain system calls only)."""
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))
    if _LIBC is not None:
        _LIBC.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class CiliumOracle:
    """One cilium-oracle child: a case in, an answer out."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self.cases = 0
        self.seconds = 0.0
        self._proc = subprocess.Popen(
            [str(binary)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            preexec_fn=_limit, env={"PATH": "/usr/bin:/bin", "GOMAXPROCS": "2"})

    def ask(self, case: Mapping[str, Any]) -> dict[str, Any]:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        start = time.monotonic()
        proc.stdin.write(json.dumps(case, separators=(",", ":")).encode() + b"\n")
        proc.stdin.flush()
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            if not sel.select(ANSWER_TIMEOUT):
                self.close()
                raise OracleError(f"cilium-oracle gave no answer in {ANSWER_TIMEOUT:.0f} s")
        line = proc.stdout.readline()
        if not line:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise OracleError(f"cilium-oracle exited ({proc.wait()}):\n{_tail(err)}")
        self.cases += 1
        self.seconds += time.monotonic() - start
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._proc.wait()
        for f in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if f is not None:
                f.close()


@pytest.fixture(scope="session")
def cilium_oracle() -> Generator[CiliumOracle, None, None]:
    oracle = CiliumOracle(require_binary())
    try:
        yield oracle
    finally:
        oracle.close()
