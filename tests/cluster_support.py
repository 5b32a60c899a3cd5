"""The real Kubernetes control plane for the tests: etcd, kube-apiserver and kube-scheduler.

The binaries are built from Go modules by tests/cluster/build.sh (k8s.io/kubernetes v1.37.2 and
the etcd its module graph selects), once per machine, into a cache keyed by the module's go.sum;
`make test` runs that build first. Everything listens on 127.0.0.1 only, on free ports, with its
data, certificates and logs in one pytest temporary directory, and stops when the session ends.

Fixtures (session-scoped, started only when a test asks for them):
  kube_cluster    etcd + kube-apiserver (TLS from a CA made here, RBAC on, the admission plugins
                  that objects without controllers trip over turned off as the scheduler's
                  integration tests do), the upstream CRDs of tests/crds.lock.json installed and
                  Established, an admin kubeconfig.
  kube_scheduler  kube-scheduler against it as system:kube-scheduler (its own client
                  certificate and kubeconfig, leader election off).

Without Go (and no cached binaries) every test that asks is skipped with one line; under
TOPOGATE_REQUIRE_CLUSTER=1 (CI) it fails instead. Registered from tests/conftest.py.
"""

from __future__ import annotations

import contextlib
import ctypes
import datetime
import functools
import inspect
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import fetch_crds
import pytest
import yaml
from conftest import REPO, kubectl, require_crds
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

T = TypeVar("T")
BUILD = REPO / "tests" / "cluster" / "build.sh"
BINARIES = ("etcd", "kube-apiserver", "kube-scheduler")
HOST = "127.0.0.1"
START_TIMEOUT = 60.0  # seconds for each component to answer ready
LOG_TAIL = 40  # lines of each log shown when a start fails
HOW = ("install Go 1.26 and run `make cluster-bin` (builds kube-apiserver, kube-scheduler and etcd "
       "into a per-machine cache), or set TOPOGATE_CLUSTER_BIN=DIR holding those three binaries")
# The admission plugins the scheduler's integration tests turn off (test/integration/util in
# k8s.io/kubernetes): no controller here creates default ServiceAccounts, no node lifecycle
# controller removes the not-ready taints TaintNodesByCondition would add, and no PriorityClass
# or PVC protection is wanted in the way of a pod that only has to be bound.
DISABLED_ADMISSION = ("ServiceAccount", "TaintNodesByCondition", "Priority", "StorageObjectInUseProtection")


# What the session started and how long each took, for one line in pytest's closing summary.
_STARTED: list[str] = []


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _STARTED:
        terminalreporter.write_line(f"cluster: {'; '.join(_STARTED)}")


def cluster_required() -> bool:
    """CI sets TOPOGATE_REQUIRE_CLUSTER=1: there a control plane that cannot start fails the run."""
    return os.environ.get("TOPOGATE_REQUIRE_CLUSTER", "") not in ("", "0")


def _complete(directory: Path) -> bool:
    return all(os.access(directory / b, os.X_OK) for b in BINARIES)


@functools.lru_cache(maxsize=1)
def _binaries() -> tuple[Path | None, str]:
    """(the directory with the three binaries, "") or (None, why not)."""
    env = os.environ.get("TOPOGATE_CLUSTER_BIN")
    if env:
        d = Path(env)
        return (d, "") if _complete(d) else (None, f"TOPOGATE_CLUSTER_BIN={env} lacks one of {', '.join(BINARIES)}")
    if shutil.which("bash") is None:
        return None, "no bash on PATH to run tests/cluster/build.sh"
    cached = subprocess.run(["bash", str(BUILD), "--dir"], capture_output=True, text=True, timeout=60)
    if cached.returncode == 0 and _complete(Path(cached.stdout.strip())):
        return Path(cached.stdout.strip()), ""
    if shutil.which("go") is None:
        return None, "no go on PATH and no cached kube-apiserver/etcd build"
    # Not built yet (a test run without `make test`): build now; a cached build answers at once.
    proc = subprocess.run(["bash", str(BUILD)], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return None, f"tests/cluster/build.sh failed (exit {proc.returncode}):\n{_tail(proc.stderr)}"
    return Path(proc.stdout.strip().splitlines()[-1]), ""


def require_binaries() -> Path:
    """The binary directory, or skip the calling test with one line (fail it when required)."""
    directory, problem = _binaries()
    if directory is None:
        if cluster_required():
            pytest.fail(f"{problem} and TOPOGATE_REQUIRE_CLUSTER is set: {HOW}", pytrace=False)
        pytest.skip(f"{problem}: {HOW}")
    return directory


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A skip raised in a fixture is reported at each test's own line; this one is reported at
    require_binaries, so pytest's summary folds every test it skipped into ONE line."""
    report: pytest.TestReport = yield
    problem = _binaries.cache_info().currsize and _binaries()[1]
    if (problem and report.skipped and isinstance(report.longrepr, tuple)
            and report.longrepr[2] == f"Skipped: {problem}: {HOW}"):
        report.longrepr = (__file__, inspect.getsourcelines(require_binaries)[1], report.longrepr[2])
    return report


def _tail(text: str, lines: int = LOG_TAIL) -> str:
    return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    """A port nothing on 127.0.0.1 listens on now (the kernel's pick, released for the child)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


# --- certificates --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pki:
    """A CA made for this session and the files signed by it, all under `root`."""

    root: Path
    ca_key: ec.EllipticCurvePrivateKey
    ca_cert: x509.Certificate

    @property
    def ca(self) -> Path:
        return self.root / "ca.crt"

    @classmethod
    def create(cls, root: Path) -> Pki:
        root.mkdir(parents=True, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "topogate-test-ca")])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                .public_key(key.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=1))
                .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                             content_commitment=False, key_encipherment=False,
                                             data_encipherment=False, key_agreement=False,
                                             encipher_only=False, decipher_only=False), critical=True)
                .sign(key, hashes.SHA256()))
        pki = cls(root, key, cert)
        pki.ca.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return pki

    def issue(self, stem: str, common_name: str, *, groups: Sequence[str] = (),
              server: bool = False) -> tuple[Path, Path]:
        """STEM.crt and STEM.key: a client certificate (CN user, O groups) or a 127.0.0.1 server one."""
        key = ec.generate_private_key(ec.SECP256R1())
        attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, common_name))
        now = datetime.datetime.now(datetime.timezone.utc)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(x509.Name(attrs))
                   .issuer_name(self.ca_cert.subject).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(HOST)), x509.DNSName("localhost")]), critical=False)
        cert = builder.sign(self.ca_key, hashes.SHA256())
        crt, pem = self.root / f"{stem}.crt", self.root / f"{stem}.key"
        crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(pem, key)
        return crt, pem


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)


def write_kubeconfig(path: Path, server: str, ca: Path, user: str, *, cert: Path | None = None,
                     key: Path | None = None, token: str | None = None) -> Path:
    """A kubeconfig with one cluster, one user (client certificate or bearer token), one context."""
    creds: dict[str, str] = {}
    if cert is not None and key is not None:
        creds = {"client-certificate": str(cert), "client-key": str(key)}
    if token is not None:
        creds["token"] = token
    doc = {"apiVersion": "v1", "kind": "Config", "preferences": {},
           "clusters": [{"name": "topogate-test", "cluster": {"server": server, "certificate-authority": str(ca)}}],
           "users": [{"name": user, "user": creds}],
           "contexts": [{"name": "topogate-test", "context": {"cluster": "topogate-test", "user": user}}],
           "current-context": "topogate-test"}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    path.chmod(0o600)
    return path


# --- processes -----------------------------------------------------------------------------------

def _die_with_parent() -> None:
    """In the child: SIGKILL when the test process dies, so a killed pytest leaves no server
    behind. Not SIGTERM: kube-apiserver's graceful shutdown waits for an etcd that got it too."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Component:
    """One started binary, its log file, and how it is stopped."""

    name: str
    log: Path
    proc: subprocess.Popen[bytes]

    @classmethod
    def start(cls, name: str, argv: Sequence[str], log: Path) -> Component:
        with log.open("wb") as out:
            proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    cwd=log.parent, preexec_fn=_die_with_parent)
        return cls(name, log, proc)

    def tail(self) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError as e:
            return f"(no log: {e})"
        return _tail(text)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=15)


class StartFailed(Exception):
    pass


def _logs(components: Sequence[Component]) -> str:
    parts = []
    for c in components:
        state = "running" if c.proc.poll() is None else f"exited {c.proc.returncode}"
        parts.append(f"--- {c.name} ({state}), last {LOG_TAIL} lines of {c.log}:\n{c.tail()}")
    return "\n".join(parts)


def wait_ready(url: str, components: Sequence[Component], *, context: ssl.SSLContext | None = None,
               headers: dict[str, str] | None = None, timeout: float = START_TIMEOUT) -> float:
    """Poll URL until it answers 200; the seconds it took. Raises StartFailed with every log's tail
    when a component exits or the time runs out."""
    start = time.monotonic()
    last = "no answer yet"
    while True:
        for c in components:
            if c.proc.poll() is not None:
                raise StartFailed(f"{c.name} exited with {c.proc.returncode} while waiting for {url}\n"
                                  f"{_logs(components)}")
        req = urllib.request.Request(url, headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=5, context=context) as resp:
                if resp.status == 200:
                    return time.monotonic() - start
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}: {_tail(e.read().decode(errors='replace'), 15)}"
        except (OSError, ssl.SSLError) as e:
            last = str(e)
        if time.monotonic() - start > timeout:
            raise StartFailed(f"{url} not ready within {timeout:.0f} s (last answer: {last})\n"
                              f"{_logs(components)}")
        time.sleep(0.25)


@dataclass
class Cluster:
    """A running etcd + kube-apiserver; `kubectl` runs the venv's kubectl as the admin."""

    server: str
    root: Path
    pki: Pki
    kubeconfig: Path
    token: str  # a bearer token of the admin (static token file), for clients that want one
    components: list[Component]
    startup_seconds: float
    crds: list[str] = field(default_factory=list)  # names of the installed CRDs
    crd_seconds: float = 0.0  # creating them and waiting until each is Established

    def kubectl(self, *args: str, stdin: str | None = None, timeout: float = 60,
                check: bool = True, kubeconfig: Path | None = None) -> subprocess.CompletedProcess[str]:
        # Discovery cache in the session's directory, not in ~/.kube.
        argv = [kubectl(), "--kubeconfig", str(kubeconfig or self.kubeconfig),
                f"--cache-dir={self.root / 'kube-cache'}", *args]
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout)
        if check and proc.returncode != 0:
            pytest.fail(f"kubectl {' '.join(args)} failed (exit {proc.returncode}):\n{proc.stderr}"
                        f"{proc.stdout}", pytrace=False)
        return proc

    def apply(self, *objects: dict[str, object]) -> None:
        """Create or update objects with server-side apply (idempotent: a second call changes nothing)."""
        body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
        self.kubectl("apply", "--server-side", "--field-manager=topogate-tests", "-f", "-", stdin=body)

    def ensure_namespace(self, name: str) -> None:
        """The namespace exists afterwards. No namespace controller runs here, so a deleted
        namespace would stay Terminating for the rest of the session: tests share namespaces
        and delete what they put in them instead."""
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def get(self, *args: str) -> dict[str, object]:
        out: dict[str, object] = json.loads(self.kubectl("get", "-o", "json", *args).stdout)
        return out

    def logs(self) -> str:
        return _logs(self.components)


def wait_for(what: str, probe: Callable[[], T], timeout: float = 30.0) -> T:
    """probe() until it returns something truthy; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}", pytrace=False)
        time.sleep(0.2)


def _start_control_plane(root: Path, bindir: Path, timeout: float = START_TIMEOUT) -> Cluster:
    started = time.monotonic()
    pki = Pki.create(root / "pki")
    serving_crt, serving_key = pki.issue("apiserver", "kube-apiserver", server=True)
    admin_crt, admin_key = pki.issue("admin", "topogate-admin", groups=["system:masters"])
    sa_key = ec.generate_private_key(ec.SECP256R1())
    _write_key(pki.root / "sa.key", sa_key)
    (pki.root / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    token = secrets.token_hex(24)
    tokens = pki.root / "tokens.csv"
    tokens.write_text(f'{token},topogate-admin-token,topogate-admin-token,"system:masters"\n')
    tokens.chmod(0o600)

    etcd_port, peer_port, api_port = free_port(), free_port(), free_port()
    etcd_url = f"http://{HOST}:{etcd_port}"
    peer_url = f"http://{HOST}:{peer_port}"
    etcd = Component.start("etcd", [
        str(bindir / "etcd"), "--name=topogate", f"--data-dir={root / 'etcd-data'}",
        f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
        f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
        f"--initial-cluster=topogate={peer_url}", "--log-level=warn",
        "--quota-backend-bytes=2147483648", "--unsafe-no-fsync",
    ], root / "etcd.log")
    components = [etcd]
    try:
        wait_ready(f"{etcd_url}/health", components, timeout=timeout)
        server = f"https://{HOST}:{api_port}"
        apiserver = Component.start("kube-apiserver", [
            str(bindir / "kube-apiserver"),
            f"--etcd-servers={etcd_url}",
            f"--bind-address={HOST}", f"--advertise-address={HOST}", f"--secure-port={api_port}",
            f"--cert-dir={root / 'apiserver-certs'}",
            f"--tls-cert-file={serving_crt}", f"--tls-private-key-file={serving_key}",
            f"--client-ca-file={pki.ca}", f"--token-auth-file={tokens}",
            "--authorization-mode=Node,RBAC",
            f"--disable-admission-plugins={','.join(DISABLED_ADMISSION)}",
            f"--service-account-key-file={pki.root / 'sa.pub'}",
            f"--service-account-signing-key-file={pki.root / 'sa.key'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            # Addresses for Services only; nothing is routed. No Endpoints reconciler: it would
            # publish 127.0.0.1 as the kubernetes Service's endpoint (as the integration tests do).
            "--service-cluster-ip-range=10.0.0.0/16", "--endpoint-reconciler-type=none",
            "--profiling=false",
        ], root / "kube-apiserver.log")
        components.append(apiserver)
        ctx = ssl.create_default_context(cafile=str(pki.ca))
        wait_ready(f"{server}/readyz", components, context=ctx, headers={"Authorization": f"Bearer {token}"},
                   timeout=timeout)
    except BaseException:
        for c in reversed(components):
            c.stop()
        raise
    kubeconfig = write_kubeconfig(root / "admin.kubeconfig", server, pki.ca, "topogate-admin",
                                  cert=admin_crt, key=admin_key)
    return Cluster(server=server, root=root, pki=pki, kubeconfig=kubeconfig, token=token,
                   components=components, startup_seconds=time.monotonic() - started)


def _install_crds(cluster: Cluster, directory: Path) -> list[str]:
    """Create every CRD of tests/crds.lock.json and wait until each is Established."""
    files = [directory / e["path"] for e in fetch_crds.lock_entries()]
    args: list[str] = []
    for f in files:
        args += ["-f", str(f)]
    # `create`, not client-side `apply`: some of these CRDs are larger than the annotation that
    # client-side apply would store.
    out = cluster.kubectl("create", "-o", "name", *args, timeout=120).stdout.split()
    cluster.kubectl("wait", "--for=condition=Established", f"--timeout={START_TIMEOUT:.0f}s", *out,
                    timeout=START_TIMEOUT + 10)
    return [n.split("/", 1)[1] for n in out]


@pytest.fixture(scope="session")
def kube_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """etcd and kube-apiserver on 127.0.0.1 with the upstream CRDs installed; stopped at session end."""
    bindir = require_binaries()
    crds = require_crds()
    root = tmp_path_factory.mktemp("cluster")
    try:
        cluster = _start_control_plane(root, bindir)
    except StartFailed as e:
        pytest.fail(f"the control plane did not start:\n{e}", pytrace=False)
    try:
        t0 = time.monotonic()
        cluster.crds = _install_crds(cluster, crds)
        cluster.crd_seconds = round(time.monotonic() - t0, 2)
        cluster.startup_seconds = round(cluster.startup_seconds, 2)
        _STARTED.append(f"etcd + kube-apiserver ready in {cluster.startup_seconds:.1f} s, "
                        f"{len(cluster.crds)} CRDs Established in {cluster.crd_seconds:.1f} s")
        yield cluster
    finally:
        for c in reversed(cluster.components):
            c.stop()


@dataclass(frozen=True)
class Scheduler:
    component: Component
    kubeconfig: Path
    startup_seconds: float


@pytest.fixture(scope="session")
def kube_scheduler(kube_cluster: Cluster) -> Iterator[Scheduler]:
    """kube-scheduler as system:kube-scheduler against kube_cluster; stopped at session end."""
    bindir = require_binaries()
    root = kube_cluster.root
    crt, key = kube_cluster.pki.issue("scheduler", "system:kube-scheduler")
    serving_crt, serving_key = kube_cluster.pki.issue("scheduler-serving", "kube-scheduler", server=True)
    kubeconfig = write_kubeconfig(root / "scheduler.kubeconfig", kube_cluster.server, kube_cluster.pki.ca,
                                  "system:kube-scheduler", cert=crt, key=key)
    port = free_port()
    comp = Component.start("kube-scheduler", [
        str(bindir / "kube-scheduler"), f"--kubeconfig={kubeconfig}",
        f"--authentication-kubeconfig={kubeconfig}", f"--authorization-kubeconfig={kubeconfig}",
        "--leader-elect=false", f"--bind-address={HOST}", f"--secure-port={port}",
        f"--tls-cert-file={serving_crt}", f"--tls-private-key-file={serving_key}", "--v=2",
    ], root / "kube-scheduler.log")
    ctx = ssl.create_default_context(cafile=str(kube_cluster.pki.ca))
    try:
        took = wait_ready(f"https://{HOST}:{port}/readyz", [comp, *kube_cluster.components], context=ctx)
    except StartFailed as e:
        comp.stop()
        pytest.fail(f"kube-scheduler did not start:\n{e}", pytrace=False)
    _STARTED.append(f"kube-scheduler ready in {took:.1f} s")
    try:
        yield Scheduler(comp, kubeconfig, round(took, 2))
    finally:
        comp.stop()
