"""The documents of a root's parts as kustomize wrote them, merged as kustomize would have written
the whole (``split_build`` says when a root is built in parts, and why the merge is the build):
each document read for what kustomize sorts and identifies it by (``scan``), the parts merged in
its legacy order with no id shared across parts (``merge``), and the merged ids confirmed on the
objects parsed from it (``confirm``). Any document that looks other than kustomize writes it is
doubt, and doubt builds the root whole."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

# SortOrderTransformer.go: defaultOrderFirst, defaultOrderLast ("DO NOT CHANGE!" upstream).
_ORDER_FIRST = ("Namespace", "ResourceQuota", "StorageClass", "CustomResourceDefinition",
                "ServiceAccount", "PodSecurityPolicy", "Role", "ClusterRole", "RoleBinding",
                "ClusterRoleBinding", "ConfigMap", "Secret", "Endpoints", "Service", "LimitRange",
                "PriorityClass", "PersistentVolume", "PersistentVolumeClaim", "Deployment",
                "StatefulSet", "CronJob", "PodDisruptionBudget")
_ORDER_LAST = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
_TYPE_ORDER = {**{k: i - len(_ORDER_FIRST) for i, k in enumerate(_ORDER_FIRST)},
               **{k: 1 + i for i, k in enumerate(_ORDER_LAST)}}
# Kinds kustomize may take as cluster-scoped (kyaml/openapi's precomputedIsNamespaceScoped, and
# newer cluster-scoped kinds), by kind alone: a superset, so that two objects of one name in two
# namespaces count as one id when in doubt.
_MAYBE_CLUSTER_SCOPED = frozenset({
    "APIService", "CSIDriver", "CSINode", "CertificateSigningRequest", "ClusterRole",
    "ClusterRoleBinding", "ComponentStatus", "CustomResourceDefinition", "FlowSchema",
    "IngressClass", "MutatingWebhookConfiguration", "Namespace", "Node", "PersistentVolume",
    "PodSecurityPolicy", "PriorityClass", "PriorityLevelConfiguration", "RuntimeClass",
    "StorageClass", "TokenReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview",
    "SubjectAccessReview", "ValidatingWebhookConfiguration", "VolumeAttachment",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "ClusterTrustBundle",
    "StorageVersionMigration", "VolumeAttributesClass", "DeviceClass", "ResourceSlice",
    "IPAddress", "ServiceCIDR", "NodeProxyOptions"})
# filters/nameref: the referrers whose references kustomize's default nameReference config
# reaches as mappings (setMapping), and the kind they name: RoleBinding and ClusterRoleBinding
# `subjects`, webhooks' `clientConfig.service`, a Node's `spec.configSource.configMap`.
_MAPPING_REFERRERS = {"RoleBinding": "ServiceAccount", "ClusterRoleBinding": "ServiceAccount",
                      "ValidatingWebhookConfiguration": "Service",
                      "MutatingWebhookConfiguration": "Service", "Node": "ConfigMap"}


def _strings(v: Any) -> Iterable[str]:
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)



# --- the documents kustomize wrote ----------------------------------------------------------

@dataclass(frozen=True)
class Doc:
    """One document of a part's output and what kustomize sorts and identifies it by."""

    text: str  # ends with a newline, no separator
    part: int
    group: str
    version: str
    kind: str
    namespace: str
    name: str

    def sort_key(self) -> tuple[int, str, str]:
        """legacyIDSorter.Less as a key: the kind's rank, then legacyGVKSortString, then
        legacyResIDSortString (whose Gvk.String() is kind_version_group). Exact while no two
        Namespace kinds of different groups meet (`merge` checks)."""
        g, v, k = self.group or "~G", self.version or "~V", self.kind or "~K"
        return (_TYPE_ORDER.get(self.kind, 0), self.gvk_text(self.group, self.version, self.kind),
                f"{k}_{v}_{g}|{self.namespace or '~X'}|{self.name or '~N'}")

    @staticmethod
    def gvk_text(group: str, version: str, kind: str) -> str:
        """legacyGVKSortString."""
        return f"{group or '~G'}_{version or '~V'}_{kind or '~K'}"

    def id(self) -> tuple[str, str, str, str]:
        """apiVersion, kind, namespace and name, as the parsed object has them."""
        api = f"{self.group}/{self.version}" if self.group else self.version
        return api, self.kind, self.namespace, self.name

    def effective_id(self) -> tuple[str, str, str, str, str]:
        """resid.ResId.Equals: group, version, kind, name and the effective namespace ("" and
        "default" alike; none for a kind that may be cluster-scoped)."""
        ns = "" if self.kind in _MAYBE_CLUSTER_SCOPED else (self.namespace or "default")
        return self.group, self.version, self.kind, ns, self.name


_ID_KEY = re.compile(r"^(apiVersion|kind|metadata):(?: (.*))?$")
_META_KEY = re.compile(r"^  (name|namespace): (.*)$")
_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")


def scan(text: str, part: int) -> list[Doc] | None:
    """The documents of one `kubectl kustomize` output, as kustomize's encoder writes them (no
    comments, top-level keys at column 0, metadata's at two spaces, `---` between documents,
    which no value can hold at column 0); None for anything else: the root is built whole."""
    if not text:
        return []
    if not text.endswith("\n"):
        return None
    out: list[Doc] = []
    for chunk in text[:-1].split("\n---\n"):
        fields: dict[str, str] = {}
        section = ""
        for line in chunk.split("\n"):
            if not line or line[0] in " -":  # inside the value of the top-level key above
                if section == "metadata" and line[:2] == "  " and line[2:3] != " ":
                    m = _META_KEY.match(line)
                    if m:
                        value = _value(m.group(2))
                        if value is None:
                            return None
                        fields[m.group(1)] = value
                continue
            if line[0] == "#":
                return None
            m = _ID_KEY.match(line)
            section = m.group(1) if m else ""  # "": a top-level key of no interest here
            if section in ("apiVersion", "kind"):
                value = _value(m.group(2) or "") if m else None
                if value is None:
                    return None
                fields[section] = value
        group, slash, version = fields.get("apiVersion", "").partition("/")  # resid.ParseGroupVersion
        if not slash:
            group, version = "", group
        out.append(Doc(chunk + "\n", part, group, version, fields.get("kind", ""),
                       fields.get("namespace", ""), fields.get("name", "")))
    return out


def _value(raw: str) -> str | None:
    """A scalar as written on one line: plain, or quoted without escapes; None otherwise."""
    if _PLAIN.match(raw):
        return raw
    if len(raw) >= 2 and raw[0] == raw[-1] == "'" and "'" not in raw[1:-1]:
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"' and not set(raw[1:-1]) & {'"', "\\"}:
        return raw[1:-1]
    return None


Ids = tuple[tuple[str, str, str, str], ...]  # (apiVersion, kind, namespace, name) of each document


def merge(parts: Sequence[list[Doc]]) -> tuple[str, Ids] | None:
    """The root's output from its parts' (module doc) and the ids `confirm` holds it to, or None
    where it might differ."""
    docs = [d for p in parts for d in p]
    if len({d.effective_id() for d in docs}) != len(docs):
        return None  # a shared id: the whole build decides (it refuses two)
    if len({(d.group, d.version) for d in docs if d.kind == "Namespace"}) > 1:
        return None  # gvkLessThan's special case for Namespace kinds: not worth mirroring
    gvks = {(d.group, d.version, d.kind) for d in docs}
    if len({Doc.gvk_text(*g) for g in gvks}) != len(gvks):
        return None  # two kinds one legacyGVKSortString (an `_` in a name): Go keeps their order
    keyed = sorted((d.sort_key(), i, d) for i, d in enumerate(docs))
    if any(a[0] == b[0] for a, b in zip(keyed, keyed[1:], strict=False)):
        return None  # legacyIDSorter would meet a tie, which Go's unstable sort breaks its way
    docs = [d for _, _, d in keyed]
    if _mapping_reference_across(parts):
        return None
    return "---\n".join(d.text for d in docs), tuple(d.id() for d in docs)


def _mapping_reference_across(parts: Sequence[list[Doc]]) -> bool:
    """Whether a reference kustomize resolves as a mapping (module doc) names an object, of the
    kind it refers to, that another part holds."""
    owners: dict[tuple[str, str], set[int]] = {}
    for p in parts:
        for d in p:
            owners.setdefault((d.kind, d.name), set()).add(d.part)
    for p in parts:
        for d in p:
            target = _MAPPING_REFERRERS.get(d.kind)
            if target is None:
                continue
            try:
                obj = yaml.load(d.text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            except yaml.YAMLError:
                return True
            # Every string of the referrer, not only where Kubernetes puts the name: kustomize's
            # field specs walk lists and mappings in whatever shape they find.
            if any(owners.get((target, name), set()) - {d.part} for name in _strings(obj)):
                return True
    return False


def confirm(ids: Ids, objects: Sequence[dict[str, Any]]) -> bool:
    """Whether the objects parsed from a merged output are the documents `scan` saw, in order:
    what the line scan read is then what YAML says."""
    if len(ids) != len(objects):
        return False
    for want, o in zip(ids, objects, strict=True):
        meta = o.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        got = (o.get("apiVersion") or "", o.get("kind") or "", meta.get("namespace") or "",
               meta.get("name") or "")
        if got != want:
            return False
    return True


__all__ = ["Doc", "Ids", "confirm", "merge", "scan"]
