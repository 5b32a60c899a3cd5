"""Validate a generated tree the way the cluster would take it, object by object.

- a custom resource: its upstream CRD schema (conftest.crd_errors), the CRD's CEL rules
  (cel_support.crd_rule_errors) and what neither checks: items of an `x-kubernetes-list-type:
  map` list must be unique by their keys (the API server refuses duplicates);
- a built-in kind: kubernetes-validate (Kubernetes 1.37 schemas, strict);
- a Kustomization (kustomize.config.k8s.io): its resources and patch files exist;
- every object: metadata.name, namespace, label and annotation keys and values as the API
  server checks them (no CRD schema covers ObjectMeta), and the label keys and values in its
  selectors, node labels, tolerations and topology keys;
- each workload's JSON patch, applied to its base job with an independent RFC 6902 library: the
  patched job validates against its CRD (when one is known), its pod templates with
  kubernetes-validate, and the cluster's generated admission policy admits it.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
from typing import Any

import jsonpatch
import jsonschema
import yaml
from cel_support import admit, crd_rule_errors
from conftest import crd_errors, crd_schemas

from topogate.generators import cilium, kustomize
from topogate.inventory.model import Inventory
from topogate.k8s import kinds
from topogate.safeio.saferead import nodes

K8S_VERSION = "1.37.0"
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_BUILTIN_GROUPS = ("v1", "apps/", "batch/", "admissionregistration.k8s.io/", "rbac.authorization.k8s.io/",
                   "networking.k8s.io/")
_KUSTOMIZE_KEYS = {"apiVersion", "kind", "resources", "namespace", "patches", "configMapGenerator",
                   "components", "labels", "commonLabels", "commonAnnotations", "metadata"}


def _key_problems(key: str) -> str | None:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not _SUBDOMAIN.match(prefix)):
        return f"key prefix {prefix!r} is not a DNS subdomain"
    if len(name) > 63 or not _NAME.match(name):
        return f"key name {name!r} is not a qualified name"
    return None


# Cilium writes a label's source before its key (k8s:app, any:app); the rest is the pod's label.
_CILIUM_SOURCE = re.compile(r"^(k8s|any|reserved|cidr|fqdn|unspec|container):")


def _selector_key(key: str) -> str | None:
    key = _CILIUM_SOURCE.sub("", key)
    # Cilium's own keys for a pod's namespace and service account are qualified names too.
    return _key_problems(key)


def selector_problems(node: Any, where: str) -> list[str]:
    """Label keys and values inside an object's spec (selectors, node labels, tolerations,
    topology keys): the API server checks them in pods and node selectors, and a selector with a
    key no object can carry matches nothing. No CRD schema says so; Kubernetes' label rules do."""
    out: list[str] = []
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("matchLabels", "nodeSelector", "nodeLabels") and isinstance(v, dict):
                for lk, lv in v.items():
                    bad = _selector_key(str(lk))
                    if bad or not isinstance(lv, str) or len(lv) > 63 or not _VALUE.match(lv):
                        out.append(f"{where}: {k} {lk!r}: {lv!r} is not a label ({bad or 'value'})")
            elif k == "matchExpressions" and isinstance(v, list):
                for e in v:
                    if isinstance(e, dict) and isinstance(e.get("key"), str):
                        bad = _selector_key(e["key"])
                        vals = e.get("values") or []
                        if e.get("operator") in ("In", "NotIn"):
                            bad = bad or next((f"value {x!r}" for x in vals if not isinstance(x, str)
                                               or len(x) > 63 or not _VALUE.match(x)), None)
                        if bad:
                            out.append(f"{where}: matchExpressions {e['key']!r}: {bad}")
            elif k in ("topologyKey", "nodeLabel") and isinstance(v, str) and _key_problems(v):
                out.append(f"{where}: {k} {v!r}: {_key_problems(v)}")
            elif k == "tolerations" and isinstance(v, list):
                for t in v:
                    if isinstance(t, dict) and t.get("key") and _key_problems(str(t["key"])):
                        out.append(f"{where}: toleration key {t['key']!r}: {_key_problems(str(t['key']))}")
                    tv = t.get("value") if isinstance(t, dict) else None
                    if isinstance(tv, str) and (len(tv) > 63 or not _VALUE.match(tv)):
                        out.append(f"{where}: toleration value {tv!r} is not a label value")
            out += selector_problems(v, where)
    elif isinstance(node, list):
        for v in node:
            out += selector_problems(v, where)
    return out


def meta_problems(meta: Any, where: str, namespaced: bool | None = None) -> list[str]:
    """What the API server's ObjectMeta validation would refuse (names, labels, annotations)."""
    if not isinstance(meta, dict):
        return [f"{where}: metadata is not a mapping"]
    out = []
    name = meta.get("name")
    if name is not None and (not isinstance(name, str) or len(name) > 253 or not _SUBDOMAIN.match(name)):
        out.append(f"{where}: name {name!r} is not a DNS subdomain")
    ns = meta.get("namespace")
    if ns is not None and (not isinstance(ns, str) or not _LABEL.match(ns)):
        out.append(f"{where}: namespace {ns!r} is not a DNS label")
    for k, v in (meta.get("labels") or {}).items():
        bad = _key_problems(str(k))
        if bad or not isinstance(v, str) or len(v) > 63 or not _VALUE.match(v):
            out.append(f"{where}: label {k!r}: {v!r} is invalid ({bad or 'value'})")
    annotations = meta.get("annotations") or {}
    for k, v in annotations.items():
        bad = _key_problems(str(k))
        if bad or not isinstance(v, str):
            out.append(f"{where}: annotation {k!r} is invalid ({bad or 'value not a string'})")
    if sum(len(str(k)) + len(str(v)) for k, v in annotations.items()) > 256 * 1024:
        out.append(f"{where}: annotations over 256 KiB")
    return out


@functools.cache
def _k8s_validator(api_version: str, kind: str) -> Any:
    """kubernetes-validate's own schema files and check (strict: unknown fields refused), with
    the validator kept: its `validate` re-reads a large definitions file on every call."""
    from kubernetes_validate import utils
    from referencing import Registry, Resource

    version = [v for v in utils.all_versions() if utils.major_minor(v) <= utils.major_minor(K8S_VERSION)][-1]
    d = f"kubernetes-json-schema/v{version}-local-strict"
    api = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    schema = utils.schema_contents(f"{d}/{kind.lower()}-{api}.json", K8S_VERSION)
    defs = utils.schema_contents(f"{d}/_definitions.json", K8S_VERSION)
    registry = Resource.from_contents(defs) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


@functools.cache
def _crd_nodes(api_version: str, kind: str) -> Any:
    return crd_schemas().get((api_version, kind))


def list_map_problems(schema: Any, value: Any, path: str) -> list[str]:
    """Duplicates in `x-kubernetes-list-type: map` lists (jsonschema does not check them)."""
    if not isinstance(schema, dict):
        return []
    out: list[str] = []
    if isinstance(value, list):
        keys = schema.get("x-kubernetes-list-map-keys")
        if schema.get("x-kubernetes-list-type") == "map" and keys:
            seen = [tuple(json.dumps(v.get(k), sort_keys=True) for k in keys) for v in value if isinstance(v, dict)]
            if len(seen) != len(set(seen)):
                out.append(f"{path}: duplicate items by {keys}")
        if schema.get("x-kubernetes-list-type") == "set" and len(
                {json.dumps(v, sort_keys=True) for v in value}) != len(value):
            out.append(f"{path}: duplicate items in a set")
        for i, v in enumerate(value):
            out += list_map_problems(schema.get("items"), v, f"{path}/{i}")
    elif isinstance(value, dict):
        props = schema.get("properties") or {}
        for k, v in value.items():
            sub = props.get(k, schema.get("additionalProperties"))
            out += list_map_problems(sub, v, f"{path}/{k}")
    return out


def object_problems(obj: dict[str, Any], where: str) -> list[str]:
    """Everything the API server would refuse in one object, as far as the tests can tell."""
    api, kind = str(obj.get("apiVersion")), str(obj.get("kind"))
    out = meta_problems(obj.get("metadata"), f"{where} {kind}")
    out += selector_problems({k: v for k, v in obj.items() if k != "metadata"}, f"{where} {kind}")
    errors = crd_errors(obj)
    if errors is not None:
        out += [f"{where} {kind}: {e}" for e in errors[:5]]
        if not errors:
            rules, _ = crd_rule_errors(obj)
            out += [f"{where} {kind}: CEL: {r}" for r in rules]
            out += [f"{where} {kind}: {p}" for p in list_map_problems(_crd_nodes(api, kind), obj, "")]
    elif api == "v1" or api.startswith(_BUILTIN_GROUPS):
        v = _k8s_validator(api, kind)
        out += [f"{where} {kind}: {'/'.join(map(str, e.absolute_path))}: {e.message}"
                for e in list(v.iter_errors(obj))[:5]]
    else:
        out.append(f"{where}: no schema known for {api} {kind}; the test cannot vouch for it")
    return out


def job_problems(job: dict[str, Any], where: str) -> list[str]:
    """A training job: its CRD when one is known (the training-operator v1 kinds other than
    PyTorchJob and MPIJob have none here), and each pod template with kubernetes-validate."""
    out = object_problems(job, where) if crd_errors(job) is not None else meta_problems(job["metadata"], where)
    ns = job["metadata"].get("namespace", "default")
    if job.get("kind") == "TrainJob":
        templates = [r["template"]["spec"]["template"] for e in job["spec"].get("runtimePatches", [])
                     if e.get("manager") == kustomize.TRAINJOB_MANAGER
                     for r in e["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]]
    else:
        templates = [g.template for g in kinds.replica_groups(job)]
    for tpl in templates:
        spec = dict(tpl.get("spec") or {})
        # A runtime patch is a partial pod template: a stand-in container makes it a whole one.
        spec.setdefault("containers", [{"name": "stand-in", "image": "example.invalid/x"}])
        pod = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": ns},
               "template": {**tpl, "spec": spec}}
        out += object_problems(pod, where)
        out += meta_problems(tpl.get("metadata") or {}, f"{where} pod template")
    return out


def built_problems(obj: dict[str, Any], where: str) -> list[str]:
    """An object `kubectl kustomize` built from the tree."""
    if obj.get("kind") == "TrainingRuntime":
        # A base may hold its runtime. No TrainingRuntime CRD is pinned here; the Trainer
        # declares it with the very schema of ClusterTrainingRuntime (only the scope differs).
        obj = {**obj, "kind": "ClusterTrainingRuntime"}
    return job_problems(obj, where) if obj.get("kind") in kinds.TRAINING_KINDS else object_problems(obj, where)


def _kustomization_problems(doc: dict[str, Any], path: str, tree: dict[str, bytes],
                            outside: set[str]) -> list[str]:
    out = [f"{path}: unknown key {k}" for k in sorted(set(doc) - _KUSTOMIZE_KEYS)]
    here = posixpath.dirname(path)

    def exists(rel: str) -> bool:
        p = posixpath.normpath(posixpath.join(here, rel))
        return p in tree or f"{p}/kustomization.yaml" in tree or p in outside

    for r in doc.get("resources") or []:
        if not isinstance(r, str) or not exists(r):
            out.append(f"{path}: resource {r!r} is neither generated nor a base")
    for p in doc.get("patches") or []:
        if "path" in p and not exists(p["path"]):
            out.append(f"{path}: patch file {p['path']!r} is not generated")
        if "path" not in p and not isinstance(p.get("patch"), str):
            out.append(f"{path}: a patch needs `path:` or `patch:`")
    for g in doc.get("configMapGenerator") or []:
        out += [f"{path}: generator file {f!r} is not generated" for f in g.get("files", []) if not exists(f)]
    return out


def parse(path: str, data: bytes) -> list[Any]:
    text = data.decode("utf-8")
    if path.endswith(".json"):
        return [json.loads(text)]
    # check --rendered takes a file of OUT that is exactly the generator's without composing it
    # (topogate.sources.deferred): what the generator writes must pass that check, for every
    # inventory these tests render
    nodes(text, path)
    return [d for d in yaml.safe_load_all(text) if d is not None]


def tree_problems(inv: Inventory, tree: dict[str, bytes], out_dir: str) -> list[str]:
    """Every problem of the generated tree (in memory) for `inv`; [] when the cluster would
    take all of it."""
    bases = {posixpath.normpath(posixpath.join(cilium.workload_dir(w), kustomize.base_path(out_dir, w)))
             for w in inv.workloads}
    out: list[str] = []
    for path, data in tree.items():
        for doc in parse(path, data):
            if path.endswith(".json") or not isinstance(doc, dict):
                continue  # dashboards; JSON patches are checked below, applied to their jobs
            if doc.get("apiVersion") == "kustomize.config.k8s.io/v1beta1":
                out += _kustomization_problems(doc, path, tree, bases)
            else:
                out += object_problems(doc, path)
    policies = {}
    for c in inv.clusters:
        adm = tree.get(f"clusters/{c.name}/admission/policy.yaml")
        if adm is not None:
            policies[c.name] = next(d for d in parse("", adm) if d["kind"] == "ValidatingAdmissionPolicy")
    for w in inv.workloads:
        out += _patched_job_problems(inv, w, tree, policies.get(w.cluster))
    return out


def _patched_job_problems(inv: Inventory, w: Any, tree: dict[str, bytes],
                          policy: dict[str, Any] | None) -> list[str]:
    (ops,) = parse("", tree[f"{cilium.workload_dir(w)}/{kustomize.PATCH_FILE}"])
    base = kinds.find_job(list(w.base_docs), w.kind, w.name)
    assert base is not None
    where = f"{w.object_id} (patched)"
    try:
        job = jsonpatch.apply_patch(base, ops)
    except jsonpatch.JsonPatchException as e:
        return [f"{where}: the placement patch does not apply: {e}"]
    job["metadata"] = {**job["metadata"], "namespace": w.namespace}
    out = job_problems(job, where)
    if policy is not None:
        verdict = admit(policy, job)
        if not verdict.allowed:
            out.append(f"{where}: the generated admission policy refuses it: {verdict.messages}")
    return out
