"""The `kubernetes` client: which cluster, and paged read-only lists of what the commands need.

Lists are paged with `limit`/`continue` (a 5,000-node cluster with 100,000 pods would otherwise
be one response of hundreds of megabytes). The API server keeps a continue token for a few
minutes; when it answers 410 Gone the list restarts from the beginning, once, so the result is
still one consistent snapshot. Every request carries a timeout.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from topogate.audit.errors import MIN_SECRET_CHARS, register_secrets
from topogate.core import redact
from topogate.core.exitcodes import ExitCode
from topogate.live import http, itemshape
from topogate.live.errors import LiveError
from topogate.safeio import limits

DEFAULT_CHUNK = 500  # kubectl's own --chunk-size
DEFAULT_TIMEOUT = 30.0  # seconds, connect and read, per request
# Requests per list: 10,000 pages of the default 500 are 5 million objects, far past any
# cluster; a server handing out fresh continue tokens for ever stops here, or at the deadline.
MAX_PAGES = 10_000


@dataclass(frozen=True)
class Resource:
    """One list endpoint: the core/typed API for built-in kinds, the custom objects API else."""

    plural: str
    group: str  # "" for the core group
    version: str
    kind: str  # of the items (a list response's items carry no kind)
    optional: bool = False  # a CRD that may not be installed: 404 means "none"

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


NODES = Resource("nodes", "", "v1", "Node")
PODS = Resource("pods", "", "v1", "Pod")
NETWORK_POLICIES = Resource("networkpolicies", "networking.k8s.io", "v1", "NetworkPolicy")
POLICY_RESOURCES = (
    NETWORK_POLICIES,
    Resource("ciliumnetworkpolicies", "cilium.io", "v2", "CiliumNetworkPolicy", True),
    Resource("ciliumclusterwidenetworkpolicies", "cilium.io", "v2",
             "CiliumClusterwideNetworkPolicy", True),
    # Enforced by Cilium 1.20 behind --enable-k8s-cluster-network-policy.
    Resource("clusternetworkpolicies", "policy.networking.k8s.io", "v1alpha2", "ClusterNetworkPolicy", True),
)
JOB_RESOURCES = (
    Resource("pytorchjobs", "kubeflow.org", "v1", "PyTorchJob", True),
    Resource("mpijobs", "kubeflow.org", "v2beta1", "MPIJob", True),
    Resource("trainjobs", "trainer.kubeflow.org", "v1alpha1", "TrainJob", True),
    Resource("jobsets", "jobset.x-k8s.io", "v1alpha2", "JobSet", True),
)


@dataclass(frozen=True)
class Target:
    """Where to connect: a kubeconfig (file and context) or the pod's service account."""

    kubeconfig: str | None = None
    context: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    chunk: int = DEFAULT_CHUNK


def _default_kubeconfig() -> str | None:
    env = os.environ.get("KUBECONFIG", "")
    for f in env.split(os.pathsep):
        if f and os.path.isfile(f):
            return f
    home = os.path.expanduser("~/.kube/config")
    return home if os.path.isfile(home) else None


def api_client(target: Target) -> tuple[Any, str]:
    """The client and a label of the cluster for messages (the server address, no credentials).

    Like kubectl: --kubeconfig, else $KUBECONFIG or ~/.kube/config, else the in-cluster service
    account (a CronJob or a CI pod in the cluster).
    """
    from kubernetes import client, config

    _silence_client_logging()
    cfg = client.Configuration()
    kubeconfig = target.kubeconfig or _default_kubeconfig()
    try:
        if kubeconfig is None and target.context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
            config.load_incluster_config(client_configuration=cfg)
        elif kubeconfig is None:
            raise LiveError("no kubeconfig found (--kubeconfig, $KUBECONFIG, ~/.kube/config) and "
                            "not running in a cluster; or use --from-file", ExitCode.CONFIG)
        else:
            if not os.path.isfile(kubeconfig):
                raise LiveError(f"{kubeconfig}: no such kubeconfig file", ExitCode.CONFIG)
            config.load_kube_config(config_file=kubeconfig, context=target.context,
                                    client_configuration=cfg, persist_config=False)
    except LiveError:
        raise
    except Exception as err:  # noqa: BLE001 - ConfigException, bad YAML, missing cert files
        # Only the class and the first line: a kubeconfig parser's message may quote its content.
        first = (str(err).splitlines() or [""])[0][:200]
        # An exec plugin's failure carries its stderr, which may hold a token: the status only.
        first = _EXEC_STDERR.sub(r"\1 (its output is not shown)", first)
        raise LiveError(f"cannot use the kubeconfig {kubeconfig or '(in-cluster)'}: "
                        f"{type(err).__name__}: {first}", ExitCode.CONFIG) from None
    _register_credentials(cfg)
    cfg.retries = 1  # one quick reconnect; a real outage is exit 75, not minutes of retrying
    if not cfg.verify_ssl:
        # The kubeconfig's own insecure-skip-tls-verify: the user's choice, which kubectl follows
        # silently. urllib3 would print a two-line InsecureRequestWarning for every request.
        # lazy: urllib3 comes with the kubernetes client, loaded only by a live command
        import warnings

        import urllib3.exceptions

        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    return client.ApiClient(cfg), str(cfg.host)


_EXEC_STDERR = re.compile(r"^(exec: process returned -?\d+)\..*$")


class _DropClientRecords(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return f"{os.sep}kubernetes{os.sep}" not in record.pathname


def _silence_client_logging() -> None:
    """The kubernetes client logs a failing exec plugin's stderr (which may hold a token) with
    `logging.error` on the root logger, and its REST layer logs bodies at debug level: none of
    it may reach a CI log. topogate logs nothing itself; its messages are LiveError lines."""
    logging.getLogger("kubernetes").setLevel(logging.CRITICAL + 1)
    root = logging.getLogger()
    if not any(isinstance(f, _DropClientRecords) for f in root.filters):
        root.addFilter(_DropClientRecords())


def _register_credentials(cfg: Any) -> None:
    """The kubeconfig's (or exec plugin's, or service account's) token, password and key
    material, registered with both scrubbers: a server or proxy that echoes the request in a
    Status message or an HTML page must not print it."""
    values: list[str] = []
    for v in (cfg.api_key or {}).values():
        text = str(v)
        values += [text, text.split(" ", 1)[-1]]  # "Bearer TOKEN" and TOKEN alone
    values += [str(x) for x in (cfg.password, cfg.username and cfg.password and
                                f"{cfg.username}:{cfg.password}") if x]
    register_secrets(*values)
    # core.redact also registers each word: not "Bearer", which is no secret
    redact.register(v for v in values if " " not in v and len(v) >= MIN_SECRET_CHARS)


def _path(res: Resource) -> str:
    """The list path of a resource across all namespaces (the core group under /api)."""
    if not res.group:
        return f"/api/{res.version}/{res.plural}"
    return f"/apis/{res.group}/{res.version}/{res.plural}"


@dataclass(frozen=True)
class Listed:
    items: tuple[dict[str, Any], ...]
    requests: int
    restarted: bool = False
    installed: bool = True  # False: an optional CRD answered 404


def slim_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The fields of a pod that `check --live` reads. A page is trimmed as it arrives, so
    100,000 pods are held as a few hundred bytes each, not as their whole specs."""
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    return {
        "apiVersion": pod.get("apiVersion"), "kind": pod.get("kind"),
        "metadata": {k: md[k] for k in ("name", "namespace", "labels", "ownerReferences") if k in md},
        "spec": {"nodeName": spec.get("nodeName"), "hostNetwork": spec.get("hostNetwork"),
                 "containers": [{"resources": {"limits": ((c or {}).get("resources") or {}).get("limits")}}
                                for c in spec.get("containers") or [] if isinstance(c, dict)]},
        # the addresses: `audit egress --flow-logs` joins flow-log records to pods by them
        "status": {"phase": status.get("phase"), "podIP": status.get("podIP"),
                   "hostIP": status.get("hostIP"),
                   "conditions": [c for c in status.get("conditions") or []
                                  if isinstance(c, dict) and c.get("type") == "PodScheduled"]},
    }


def _page_items(doc: Any, res: Resource, server: str, chunk: int) -> list[dict[str, Any]]:
    """The items of one list page, each of the shape the readers expect; LiveError (exit 75:
    a broken server or proxy, run again later) for a page or an item of any other shape."""
    def broken(what: str) -> LiveError:
        return LiveError(f"the API server at {server} sent a list of {res.plural} {what}; "
                         "a proxy or a broken server? run again later", ExitCode.TEMPORARY)

    if not isinstance(doc, dict):
        raise broken("that is not a JSON object")
    items = doc.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise broken("whose `items` is not a list")
    if len(items) > chunk:
        raise broken(f"of {len(items):,} items where at most {chunk} (limit) were asked for")
    meta = doc.get("metadata")
    if meta is not None and (not isinstance(meta, dict) or not isinstance(meta.get("continue", ""), str)):
        raise broken("whose `metadata.continue` is not a string")
    if meta is None:
        doc["metadata"] = {}
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise broken(f"whose items[{i}] is not an object")
        item.setdefault("apiVersion", res.api_version)
        item.setdefault("kind", res.kind)
        why = itemshape.problem(item)
        if why is not None:
            raise broken(f"whose items[{i}] ({itemshape.name_of(item)}) is malformed: {why}")
        out.append(item)
    return out


def list_all(api: Any, res: Resource, server: str, chunk: int = DEFAULT_CHUNK,
             timeout: float = DEFAULT_TIMEOUT,
             keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
             budget: http.Budget | None = None) -> Listed:
    """Every object of a resource, page by page; a 410 on a continue token restarts once.

    Bounded whatever the server does (topogate.live.http): by the command's deadline, at most
    MAX_PAGES requests, no continue token twice, at most `chunk` items and
    TOPOGATE_LIVE_PAGE_MB a page. `keep` trims each object as its page arrives (see slim_pod)."""
    budget = budget if budget is not None else http.Budget.start()
    path = _path(res)
    items: list[dict[str, Any]] = []
    cont: str | None = None
    seen: set[str] = set()
    requests = 0
    restarted = False
    while True:
        if requests >= MAX_PAGES:
            raise LiveError(f"the API server at {server} was still paging {res.plural} after "
                            f"{MAX_PAGES:,} requests; a broken server? run again later, or raise "
                            "--chunk-size", ExitCode.TEMPORARY)
        requests += 1
        query = {"limit": str(chunk), **({"continue": cont} if cont else {})}
        answer = http.get(api, path, query, timeout, budget, res.plural, server)
        if not 200 <= answer.status <= 299:
            if answer.status == 410 and cont is not None and not restarted:
                items, cont, restarted = [], None, True
                seen.clear()
                continue
            if answer.status == 404 and res.optional and cont is None:
                return Listed((), requests, restarted, installed=False)
            _wait_or_fail(answer, res, server, budget)
            continue  # waited as asked: the same page again
        doc = _json(answer.body, res, server)
        for item in _page_items(doc, res, server, chunk):
            items.append(keep(item) if keep else item)
        cont = _next_token(doc, res, server, seen)
        if not cont:
            return Listed(tuple(items), requests, restarted)


def _wait_or_fail(answer: http.Answer, res: Resource, server: str, budget: http.Budget) -> None:
    """Sleep a short Retry-After of a 429/503 inside the deadline, else raise the status."""
    wait = http.retry_after(answer.status, answer.retry_after)
    if wait is None:
        raise http.failed(answer, res.plural, server)
    if wait > http.MAX_RETRY_AFTER or wait >= budget.left() or budget.retries <= 0:
        raise LiveError(f"the API server at {server} answered {answer.status} listing {res.plural} "
                        f"and asks to retry after {wait:g} s; topogate waits at most "
                        f"{http.MAX_RETRY_AFTER:g} s, {http.MAX_RETRIES} times, inside its deadline: "
                        "run again later", ExitCode.TEMPORARY)
    budget.retries -= 1
    time.sleep(wait)


def _json(body: bytes, res: Resource, server: str) -> Any:
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError):
        doc = None
    if doc is None or itemshape.too_deep(doc, limits.MAX_DEPTH):
        raise LiveError(f"the API server at {server} sent a list of {res.plural} that is not "
                        "JSON of a list (or nested past any object); run again later",
                        ExitCode.TEMPORARY)
    return doc


def _next_token(doc: dict[str, Any], res: Resource, server: str, seen: set[str]) -> str | None:
    cont = doc["metadata"].get("continue") or None
    if cont is None:
        return None
    if cont in seen:
        raise LiveError(f"the API server at {server} sent the same continue token twice while "
                        f"listing {res.plural}, which would page for ever; a broken server or "
                        "proxy? run again later", ExitCode.TEMPORARY)
    seen.add(cont)
    return str(cont)


__all__ = ["JOB_RESOURCES", "NODES", "PODS", "POLICY_RESOURCES", "Resource", "Target", "api_client",
           "list_all", "slim_pod"]
