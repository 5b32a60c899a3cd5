"""The `kubernetes` client: which cluster, and paged read-only lists of what the commands need.

Lists are paged with `limit`/`continue` (a 5,000-node cluster with 100,000 pods would otherwise
be one response of hundreds of megabytes). The API server keeps a continue token for a few
minutes; when it answers 410 Gone the list restarts from the beginning, once, so the result is
still one consistent snapshot. Every request carries a timeout.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from topogate.core.exitcodes import ExitCode
from topogate.live import itemshape
from topogate.live.errors import LiveError, from_exception

DEFAULT_CHUNK = 500  # kubectl's own --chunk-size
DEFAULT_TIMEOUT = 30.0  # seconds, connect and read, per request


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
        raise LiveError(f"cannot use the kubeconfig {kubeconfig or '(in-cluster)'}: "
                        f"{type(err).__name__}: {first}", ExitCode.CONFIG) from None
    cfg.retries = 1  # one quick reconnect; a real outage is exit 75, not minutes of retrying
    if not cfg.verify_ssl:
        # The kubeconfig's own insecure-skip-tls-verify: the user's choice, which kubectl follows
        # silently. urllib3 would print a two-line InsecureRequestWarning for every request.
        import warnings

        import urllib3.exceptions

        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
    return client.ApiClient(cfg), str(cfg.host)


def _fetcher(api: Any, res: Resource, timeout: float) -> Callable[[int, str | None], Any]:
    from kubernetes import client

    kw: dict[str, Any] = {"_preload_content": False, "_request_timeout": (timeout, timeout)}

    def page(limit: int, cont: str | None) -> Any:
        args = dict(kw, limit=limit)
        if cont:
            args["_continue"] = cont
        if res is NODES:
            return client.CoreV1Api(api).list_node(**args)
        if res is PODS:
            return client.CoreV1Api(api).list_pod_for_all_namespaces(**args)
        if res is NETWORK_POLICIES:
            return client.NetworkingV1Api(api).list_network_policy_for_all_namespaces(**args)
        return client.CustomObjectsApi(api).list_cluster_custom_object(
            res.group, res.version, res.plural, **args)

    return page


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


def _page_items(doc: Any, res: Resource, server: str) -> list[dict[str, Any]]:
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
             keep: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Listed:
    """Every object of a resource, page by page; a 410 on a continue token restarts once.

    `keep` trims each object as its page arrives (see slim_pod)."""
    from kubernetes.client.exceptions import ApiException

    page = _fetcher(api, res, timeout)
    items: list[dict[str, Any]] = []
    cont: str | None = None
    requests = 0
    restarted = False
    while True:
        requests += 1
        try:
            raw = page(chunk, cont)
            doc = json.loads(raw.data)
        except ApiException as err:
            if err.status == 410 and cont is not None and not restarted:
                items, cont, restarted = [], None, True
                continue
            if err.status == 404 and res.optional and cont is None:
                return Listed((), requests, restarted, installed=False)
            raise from_exception(err, res.plural, server) from None
        except ValueError:
            raise LiveError(f"the API server at {server} sent a list of {res.plural} that is not "
                            "JSON; run again later", ExitCode.TEMPORARY) from None
        except Exception as err:  # noqa: BLE001 - urllib3/OS errors become one line
            raise from_exception(err, res.plural, server) from None
        for item in _page_items(doc, res, server):
            items.append(keep(item) if keep else item)
        cont = doc["metadata"].get("continue") or None
        if not cont:
            return Listed(tuple(items), requests, restarted)

__all__ = ["DEFAULT_CHUNK", "DEFAULT_TIMEOUT", "JOB_RESOURCES", "Listed", "NETWORK_POLICIES",
           "NODES", "PODS", "POLICY_RESOURCES", "Resource", "Target", "api_client", "list_all",
           "slim_pod"]
