"""Run check and trace over upstream examples: Kubeflow trainer and mpi-operator examples, JobSet
samples, the YAML blocks of the NetworkPolicy recipes (markdown) and Cilium's examples/policies.

Each repository is read from a clone in the directory $TOPOGATE_UPSTREAM names (one per
repository, named OWNER+NAME), else, for those the Go module proxy serves, from the Go module
cache: github.com/cilium/cilium at the version tests/cilium/go.sum pins (the oracle's), the others
at the versions and go.sum hashes of tests/upstream.lock.json (`go mod download` checks each).
Without either the tests that need them skip; under TOPOGATE_REQUIRE_CILIUM (CI) a module that
cannot be had fails them. Nothing is copied into the repo: the files are read where they are, the
recipes' blocks are written to a temporary directory for the run only."""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from cilium_support import module_dir

REPOSITORIES = ("kubeflow/trainer", "kubeflow/mpi-operator", "kubernetes-sigs/jobset",
                "ahmetb/kubernetes-network-policy-recipes", "cilium/cilium")
UPSTREAM_HOW = ("set TOPOGATE_UPSTREAM to a directory holding clones of "
                + ", ".join(REPOSITORIES) + " (each cloned as OWNER+NAME, e.g. "
                "`git clone https://github.com/kubeflow/trainer $TOPOGATE_UPSTREAM/kubeflow+trainer`)")
UPSTREAM = Path(os.environ.get("TOPOGATE_UPSTREAM") or "/nonexistent/topogate-upstream")
LOCK = Path(__file__).with_name("upstream.lock.json")


@functools.cache
def _module(repo: str) -> Path | None:
    """The repository's files from the Go module cache, checked against the lock; None when it
    is not a module we read or Go cannot have it."""
    if repo == "cilium/cilium":
        return module_dir()
    pin = json.loads(LOCK.read_text(encoding="utf-8"))["modules"].get(repo)
    if pin is None or shutil.which("go") is None:
        return None
    with tempfile.TemporaryDirectory() as scratch:  # outside any module: the lock pins it
        out = subprocess.run(["go", "mod", "download", "-json", f"{pin['module']}@{pin['version']}"],
                             capture_output=True, text=True, timeout=600, check=False, cwd=scratch)
    if out.returncode != 0:
        return None
    got = json.loads(out.stdout)
    if got.get("Sum") != pin["sum"]:
        raise AssertionError(f"{pin['module']}@{pin['version']} has {got.get('Sum')}, not the locked {pin['sum']}")
    return Path(got["Dir"])


def root(repo: str) -> Path | None:
    """Where repository OWNER/NAME's files are read: a clone, else its Go module, else None."""
    clone = UPSTREAM / repo.replace("/", "+")
    if clone.is_dir():
        return clone
    return _module(repo)


def version(repo: str) -> str:
    """What of the repository was read: the module version, or "clone"."""
    clone = UPSTREAM / repo.replace("/", "+")
    if clone.is_dir():
        return "clone"
    if repo == "cilium/cilium":
        return "v1.20.2"
    return str(json.loads(LOCK.read_text(encoding="utf-8"))["modules"][repo]["version"])


def available() -> bool:
    return any(root(r) is not None for r in REPOSITORIES)


def clones() -> bool:
    """Are the inputs clones (which hold many more examples than the modules' zips)?"""
    return any((UPSTREAM / r.replace("/", "+")).is_dir() for r in REPOSITORIES)


JOB_KINDS = ("PyTorchJob", "MPIJob", "JobSet", "TrainJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob",
             "ClusterTrainingRuntime", "TrainingRuntime")
_EXAMPLE_DIRS = (("kubeflow/trainer", "examples"), ("kubeflow/trainer", "manifests/base/runtimes"),
                 ("kubeflow/mpi-operator", "examples"),
                 ("kubernetes-sigs/jobset", "site/static/examples"), ("kubernetes-sigs/jobset", "config/samples"),
                 ("kubernetes-sigs/jobset", "examples"))
_KIND = re.compile(r"^kind:\s*(\w+)\s*$", re.M)
_YAML_BLOCK = re.compile(r"```ya?ml\n(.*?)```", re.S)


def job_files() -> list[Path]:
    out: list[Path] = []
    for repo, d in _EXAMPLE_DIRS:
        base = root(repo)
        where = base / d if base is not None else None
        if where is None or not where.is_dir():
            continue
        for f in sorted(where.rglob("*.y*ml")):
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if any(k in JOB_KINDS for k in _KIND.findall(text)):
                out.append(f)
    return out


def recipe_blocks(tmp: Path) -> list[Path]:
    """Each YAML block of each recipe, as its own file under tmp."""
    out: list[Path] = []
    recipes = UPSTREAM / "ahmetb+kubernetes-network-policy-recipes"  # no Go module: a clone only
    for md in sorted(recipes.glob("*.md")) if recipes.is_dir() else []:
        for i, block in enumerate(_YAML_BLOCK.findall(md.read_text(encoding="utf-8"))):
            if "kind:" not in block:
                continue
            f = tmp / f"{md.stem}-{i}.yaml"
            f.write_text(block)
            out.append(f)
    return out


def workloads(f: Path) -> list[str]:
    """ns/Kind/name specs of the pod-running objects in a file, for trace."""
    specs: list[str] = []
    try:
        docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
    except yaml.YAMLError:
        return specs
    for d in docs:
        if isinstance(d, dict) and d.get("kind") in (*JOB_KINDS[:8], "Deployment", "Pod", "Job"):
            md = d.get("metadata") or {}
            if isinstance(md, dict) and md.get("name"):
                specs.append(f"{md.get('namespace') or 'default'}/{d['kind']}/{md['name']}")
    return specs


@dataclass
class Tally:
    runs: int = 0
    crashes: list[str] = field(default_factory=list)

    def run(self, what: str, fn: object, *args: object) -> object:
        self.runs += 1
        try:
            return fn(*args)  # type: ignore[operator]
        except SystemExit:
            return None
        except Exception as err:  # noqa: BLE001 - counting tracebacks is the point
            name = type(err).__name__
            if name in ("CheckInputError", "TraceError"):
                return err
            self.crashes.append(f"{what}: {name}: {err}\n{traceback.format_exc(limit=3)}")
            return None


# ---------------------------------------------------------------------------------------------
# Cilium's examples/policies, from a clone of cilium/cilium (an optional COMMITS.tsv beside it,
# path TAB commit per line, names the commit of each file when they come from several commits),
# else from the pinned module.
# ---------------------------------------------------------------------------------------------

def cilium_dir() -> Path:
    """examples/policies of cilium/cilium (a path that does not exist when there is none)."""
    base = root("cilium/cilium")
    return (base / "examples" / "policies") if base is not None else Path("/nonexistent/cilium")


def require(what: str, have: bool) -> None:
    """Skip the calling test without the upstream input (fail it under TOPOGATE_REQUIRE_CILIUM:
    CI has Go, and with it the modules)."""
    import pytest  # lazy: the support module is also imported by scripts

    if have:
        return
    why = f"no {what}: {UPSTREAM_HOW}, or install Go (the Go module proxy serves them)"
    if os.environ.get("TOPOGATE_REQUIRE_CILIUM", "") not in ("", "0"):
        pytest.fail(f"{why}; TOPOGATE_REQUIRE_CILIUM is set", pytrace=False)
    pytest.skip(why)


def cilium_files() -> list[Path]:
    """Every YAML example under examples/policies (policies, demo pods, Envoy configs)."""
    d = cilium_dir()
    return sorted(d.rglob("*.yaml")) if d.is_dir() else []


def cilium_commit(rel: str) -> str:
    """The upstream commit (or module version) examples/policies/<rel> was read at."""
    if version("cilium/cilium") != "clone":
        return version("cilium/cilium")
    table = UPSTREAM / "cilium+cilium" / "COMMITS.tsv"
    for line in table.read_text(encoding="utf-8").splitlines() if table.is_file() else []:
        path, _, commit = line.partition("\t")
        if path == f"examples/policies/{rel}":
            return commit
    return "?"


@dataclass(frozen=True)
class Expected:
    """One flow whose answer Cilium's own docs state, as our words: the example file(s) it is
    about, the flow, Cilium's answer and where that answer is written."""

    files: tuple[str, ...]  # relative to examples/policies
    src: str
    dst: str
    port: str
    cilium: str  # allowed | denied
    doc: str  # the page (and section) that states it


_L3, _L4, _K8S, _DNS = ("layer3.rst", "layer4.rst", "kubernetes.rst", "gettingstarted dns")
_NS_PODS = "kubernetes/namespace/demo-pods.yaml"
_SA_PODS = "kubernetes/serviceaccount/demo-pods.yaml"
_DNS_NAME, _DNS_PAT, _DNS_PORT = (f"getting-started/dns-{x}.yaml" for x in ("matchname", "pattern", "port"))
MEDIABOT, SPACESHIP = "default:org=empire,class=mediabot", "default:org=empire,class=spaceship"

EXPECTED: tuple[Expected, ...] = (
    Expected(("l3/simple/l3.yaml",), "default:role=frontend", "default:role=backend", "8080", "allowed",
             f"{_L3} Simple Ingress Allow; l3/simple/README.rst"),
    Expected(("l3/simple/l3.yaml",), "default:role=other", "default:role=backend", "8080", "denied",
             f"{_L3} Simple Ingress Allow (default deny once selected)"),
    Expected(("l3/simple/l3_egress.yaml",), "default:role=frontend", "default:role=backend", "8080", "allowed",
             f"{_L3} Simple Egress Allow"),
    Expected(("l3/simple/l3_egress.yaml",), "default:role=frontend", "default:role=other", "8080", "denied",
             f"{_L3} Simple Egress Allow (default deny once selected)"),
    Expected(("l3/ingress-allow-all/ingress-allow-all.yaml",), "default:app=any", "default:role=victim", "80",
             "allowed", f"{_L3} Ingress Allow All Endpoints"),
    Expected(("l3/egress-allow-all/egress-allow-all.yaml",), "default:role=frontend", "default:app=any", "80",
             "allowed", f"{_L3} Egress Allow All Endpoints"),
    Expected(("l3/egress-allow-all/egress-allow-all.yaml",), "default:role=frontend", "other:app=any", "80",
             "denied", f"{_L3} Egress Allow All Endpoints (same namespace only)"),
    Expected(("l3/egress-deny/egress-deny.yaml",), "default:role=frontend", "default:role=backend", "80", "denied",
             f"{_L3} Simple Egress Deny"),
    Expected(("l3/egress-deny/egress-deny.yaml",), "default:role=frontend", "world", "443", "allowed",
             f"{_L3} Simple Egress Deny (toEntities all)"),
    Expected(("l3/egress-default-deny/egress-default-deny.yaml",), "default:role=restricted", "world", "443",
             "denied", f"{_L3} Ingress/Egress Default Deny"),
    Expected(("l3/egress-default-deny/egress-default-deny.yaml",), "default:role=restricted", "default:app=any",
             "80", "denied", f"{_L3} Ingress/Egress Default Deny"),
    Expected(("l3/requires/requires.yaml", "l3/requires/endpoints.yaml"), "default:env=prod,role=frontend",
             "default:env=prod", "80", "allowed", f"{_L3} Additional Label Requirements"),
    Expected(("l3/requires/requires.yaml", "l3/requires/endpoints.yaml"), "default:role=frontend",
             "default:env=prod", "80", "denied", f"{_L3} Additional Label Requirements"),
    Expected(("l3/entities/apiserver.yaml",), "default:env=dev", "kube-apiserver", "443", "allowed",
             f"{_L3} Access to/from kube-apiserver"),
    Expected(("l3/entities/apiserver.yaml",), "default:env=dev", "world", "443", "denied",
             f"{_L3} Access to/from kube-apiserver (default deny once selected)"),
    Expected(("l3/entities/host.yaml",), "default:env=dev", "host", "10250", "allowed",
             f"{_L3} Access to/from local host"),
    Expected(("l3/entities/nodes.yaml",), "remote-node", "default:env=dev", "8080", "allowed",
             f"{_L3} Access to/from all nodes in the cluster"),
    Expected(("l3/entities/nodes.yaml",), "world", "default:env=dev", "8080", "denied",
             f"{_L3} Access to/from all nodes in the cluster (default deny once selected)"),
    Expected(("l3/entities/world.yaml",), "world", "default:role=public", "80", "allowed",
             f"{_L3} Access to/from outside cluster"),
    Expected(("l3/entities/from_world_deny.yaml",), "world", "default:app=any", "80", "denied",
             "deny.rst (ingressDeny world)"),
    Expected(("l3/entities/from_world_deny.yaml",), "default:app=peer", "default:app=any", "80", "allowed",
             "deny.rst (everything but world still allowed)"),
    Expected(("l3/cidr/cidr.yaml",), "default:app=myService", "20.1.1.1", "443", "allowed",
             f"{_L3} Allow to external CIDR block"),
    Expected(("l3/cidr/cidr.yaml",), "default:app=myService", "10.1.2.3", "443", "allowed",
             f"{_L3} Allow to external CIDR block"),
    Expected(("l3/cidr/cidr.yaml",), "default:app=myService", "10.96.0.10", "443", "denied",
             f"{_L3} Allow to external CIDR block (except 10.96.0.0/12)"),
    Expected(("l3/fqdn/fqdn.yaml",), "default:app=test-app", "fqdn:my-remote-service.com", "443", "allowed",
             f"{_L3} DNS based, Example"),
    Expected(("l4/l4.yaml",), "default:app=myService", "world", "80", "allowed", f"{_L4} Example (L4)"),
    Expected(("l4/l4.yaml",), "default:app=myService", "default:app=any", "80", "allowed",
             f"{_L4} Example (L4): any layer 3 destination"),
    Expected(("l4/l4.yaml",), "default:app=myService", "world", "443", "denied", f"{_L4} Example (L4)"),
    Expected(("l4/l4_port_range.yaml",), "default:app=myService", "world", "444", "allowed",
             f"{_L4} Example Port Ranges"),
    Expected(("l4/l4_port_range.yaml",), "default:app=myService", "world", "445", "denied",
             f"{_L4} Example Port Ranges"),
    Expected(("l4/l3_l4_combined.yaml",), "default:role=frontend", "default:role=backend", "80", "allowed",
             f"{_L4} Labels-dependent Layer 4 rule"),
    Expected(("l4/l3_l4_combined.yaml",), "default:role=frontend", "default:role=backend", "443", "denied",
             f"{_L4} Labels-dependent Layer 4 rule"),
    Expected(("l4/l3_l4_combined.yaml",), "default:role=other", "default:role=backend", "80", "denied",
             f"{_L4} Labels-dependent Layer 4 rule"),
    Expected(("l4/cidr_l4_combined.yaml",), "default:role=crawler", "192.0.2.10", "80", "allowed",
             f"{_L4} CIDR-dependent Layer 4 Rule"),
    Expected(("l4/cidr_l4_combined.yaml",), "default:role=crawler", "192.0.2.10", "443", "denied",
             f"{_L4} CIDR-dependent Layer 4 Rule"),
    Expected(("l4/l4_sni.yaml",), "default:app=myService", "fqdn:cilium.io", "443", "denied",
             f"{_L4} Example (TLS SNI): another SNI is rejected"),
    Expected(("kubernetes/namespace/isolate-namespaces.yaml",), "ns1:app=a", "ns1:app=b", "80", "allowed",
             f"{_K8S} Enforce namespace boundaries"),
    Expected(("kubernetes/namespace/isolate-namespaces.yaml",), "ns2:app=a", "ns1:app=b", "80", "denied",
             f"{_K8S} Enforce namespace boundaries"),
    Expected(("kubernetes/namespace/isolate-namespaces.yaml",), "ns1:app=a", "world", "443", "allowed",
             f"{_K8S} Enforce namespace boundaries (egress not locked)"),
    Expected(("kubernetes/namespace/namespace-policy.yaml", _NS_PODS), "ns2/Pod/luke-pod",
             "ns1/Deployment/leia-deployment", "80", "allowed", f"{_K8S} Expose pods across namespaces"),
    Expected(("kubernetes/namespace/namespace-policy.yaml", _NS_PODS), "ns2/Pod/vader-pod",
             "ns1/Deployment/leia-deployment", "80", "denied", f"{_K8S} Expose pods across namespaces"),
    # v1.20.2's example puts the policy in namespace public.
    Expected(("kubernetes/namespace/kubedns-policy.yaml",), "public:app=any", "kube-system:k8s-app=kube-dns",
             "53/UDP", "allowed", f"{_K8S} Allow egress to kube-dns"),
    Expected(("kubernetes/namespace/kubedns-policy.yaml",), "public:app=any", "kube-system:k8s-app=kube-dns",
             "53/TCP", "denied", f"{_K8S} Allow egress to kube-dns (53/UDP only)"),
    Expected(("kubernetes/serviceaccount/serviceaccount-policy.yaml", _SA_PODS), "default/Pod/luke-pod",
             "default/Deployment/leia-deployment", "80", "allowed", "serviceaccount/README.rst"),
    Expected(("kubernetes/serviceaccount/serviceaccount-policy.yaml", _SA_PODS), "default/Pod/vader-pod",
             "default/Deployment/leia-deployment", "80", "denied", "serviceaccount/README.rst"),
    Expected(("kubernetes/clusterwide/clusterscope-policy.yaml", _NS_PODS), "ns2/Pod/luke-pod",
             "ns1/Deployment/leia-deployment", "80", "allowed", f"{_K8S} Clusterwide Policies"),
    Expected(("kubernetes/clusterwide/clusterscope-policy.yaml", _NS_PODS), "ns2/Pod/vader-pod",
             "ns1/Deployment/leia-deployment", "80", "denied", f"{_K8S} Clusterwide Policies"),
    Expected(("kubernetes/clusterwide/wildcard-from-endpoints.yaml",), "ns1:app=any",
             "kube-system:k8s-app=kube-dns", "53/UDP", "allowed", f"{_K8S} Allow all ingress to kube-dns"),
    Expected(("l7/http/simple/l7.yaml",), "default:env=prod", "default:app=service", "80", "allowed",
             "layer7.rst HTTP (GET /public only)"),
    Expected(("l7/http/simple/l7.yaml",), "default:env=dev", "default:app=service", "80", "denied",
             "layer7.rst HTTP"),
    Expected(("l7/dns/dns.yaml",), "default:org=alliance", "fqdn:cilium.io", "80", "allowed", "layer7.rst DNS"),
    Expected(("l7/dns/dns.yaml",), "default:org=alliance", "fqdn:sub.cilium.io", "80", "allowed", "layer7.rst DNS"),
    Expected(("l7/dns/dns.yaml",), "default:org=alliance", "fqdn:special-region1-service.api.cilium.io", "80",
             "allowed", "layer7.rst DNS"),
    Expected(("l7/dns/dns.yaml",), "default:org=alliance", "fqdn:region1-service.api.cilium.io", "80", "denied",
             "layer7.rst DNS"),
    Expected(("l7/dns/dns.yaml",), "default:org=alliance", "fqdn:anothersub.cilium.io", "80", "denied",
             "layer7.rst DNS"),
    Expected(("l7/dns/dns.yaml",), "default:org=alliance", "fqdn:cilium.io", "443", "denied",
             "layer7.rst DNS (TCP 80 only)"),
    Expected((_DNS_NAME,), MEDIABOT, "fqdn:api.twitter.com", "443", "allowed", f"{_DNS} matchName"),
    Expected((_DNS_NAME,), MEDIABOT, "fqdn:help.twitter.com", "443", "denied", f"{_DNS} matchName"),
    Expected((_DNS_NAME,), SPACESHIP, "fqdn:api.twitter.com", "443", "denied", f"{_DNS} matchName"),
    Expected((_DNS_PAT,), MEDIABOT, "fqdn:help.twitter.com", "443", "allowed", f"{_DNS} matchPattern"),
    Expected((_DNS_PAT,), MEDIABOT, "fqdn:twitter.com", "443", "denied", f"{_DNS} matchPattern"),
    Expected((_DNS_PORT,), MEDIABOT, "fqdn:help.twitter.com", "443", "allowed", f"{_DNS} DNS and port rules"),
    Expected((_DNS_PORT,), MEDIABOT, "fqdn:help.twitter.com", "80", "denied", f"{_DNS} DNS and port rules"),
)


# What topogate does not model, as the keys that carry it in a Cilium rule; each key of a policy
# file must come back as a TG120 finding (check) and a warning (trace) that names it.
NOT_MODELLED_KEYS = ("toServices", "fromGroups",
                     "toGroups", "serverNames", "listener", "terminatingTLS", "originatingTLS")
_AUTH = {"authentication": "mode", "auth": "type"}


def _constructs(node: object, out: set[str], under_spec: bool = False) -> None:
    if isinstance(node, list):
        for x in node:
            _constructs(x, out, under_spec)
        return
    if not isinstance(node, dict):
        return
    for k, v in node.items():
        if k in NOT_MODELLED_KEYS and v is not None:
            out.add(str(k))
        elif k == "nodeSelector" and under_spec:
            out.add("nodeSelector")
        elif k in _AUTH and isinstance(v, dict) and v.get(_AUTH[k]) not in (None, "", "disabled"):
            out.add(f"{k}.{_AUTH[k]}")
        elif k == "rules" and isinstance(v, dict) and any(x != "dns" and v[x] for x in v):
            out.add("L7 rules")
        elif k in ("cidrGroupRef", "cidrGroupSelector"):
            out.add("CIDR group")
        elif k == "endpointSelector" and isinstance(v, dict):
            keys = [str(x) for x in v.get("matchLabels") or {}]
            out.update(f"endpointSelector {x}" for x in keys if x.split(":", 1)[0] not in ("k8s", "any")
                       and ":" in x)
        _constructs(v, out, False)


def cilium_constructs(f: Path) -> set[str]:
    """The constructs topogate does not model that the Cilium policies of file ``f`` use."""
    out: set[str] = set()
    for d in yaml.safe_load_all(f.read_text(encoding="utf-8")):
        if isinstance(d, dict) and str(d.get("kind", "")).startswith("Cilium") and "NetworkPolicy" in d["kind"]:
            for spec in [d.get("spec"), *(d.get("specs") or [])]:
                if isinstance(spec, dict):
                    if "nodeSelector" in spec:
                        out.add("nodeSelector")
                    _constructs({k: v for k, v in spec.items() if k != "nodeSelector"}, out)
    return out


def cilium_subjects(f: Path) -> list[str]:
    """Trace specs (``ns:k=v,...``) for the pods each policy of ``f`` selects by matchLabels."""
    specs: list[str] = []
    for d in yaml.safe_load_all(f.read_text(encoding="utf-8")):
        if not (isinstance(d, dict) and "NetworkPolicy" in str(d.get("kind", ""))):
            continue
        md = d.get("metadata") if isinstance(d.get("metadata"), dict) else {}
        for spec in [d.get("spec"), *(d.get("specs") or [])]:
            sel = spec.get("endpointSelector") if isinstance(spec, dict) else None
            if not isinstance(sel, dict):
                continue
            ns, labels = str(md.get("namespace") or "default"), []
            for k, v in sorted((sel.get("matchLabels") or {}).items()):
                src, _, key = str(k).rpartition(":")
                if src not in ("", "k8s", "any"):
                    break
                if key == "io.kubernetes.pod.namespace":
                    ns = str(v)
                elif "," not in f"{key}{v}" and "=" not in f"{key}{v}":
                    labels.append(f"{key}={'' if v is None else v}")
            else:
                specs.append(f"{ns}:{','.join(labels) or 'app=any'}")
    return list(dict.fromkeys(specs))
