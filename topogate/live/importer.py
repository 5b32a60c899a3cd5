"""`topogate import`: an inventory skeleton from the nodes of a cluster.

Written with ruamel.yaml so the comments that tell a person what to finish sit beside the
entries they concern; the output is loaded back with the real loader before it replaces
anything, so an import never leaves an inventory `check` cannot read.
"""

from __future__ import annotations

import io
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topogate.core.exitcodes import ExitCode
from topogate.core.labels import DEFAULT_ZONE_LABEL, REGION_LABEL
from topogate.inventory.loader import InventoryError, load_inventory
from topogate.inventory.model import API_VERSION, KIND, Taint
from topogate.live.agentconfig import cilium_block
from topogate.live.errors import LiveError
from topogate.live.nodes import VARYING, LiveNode, PoolGroup, dns_label, group_pools, parse_nodes
from topogate.live.snapshot import Snapshot
from topogate.tree.writer import cannot_write, write_file

_ZONE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_PROVIDER_HINTS = (("eks.amazonaws.com/", "aws"), ("karpenter.k8s.aws/", "aws"),
                   ("topology.k8s.aws/", "aws"), ("cloud.google.com/", "gcp"),
                   ("kubernetes.azure.com/", "azure"))
_KIND_OF_LABEL = {
    "eks.amazonaws.com/nodegroup": "EKS managed node group",
    "karpenter.sh/nodepool": "Karpenter NodePool",
    "cloud.google.com/gke-nodepool": "GKE node pool",
    "kubernetes.azure.com/agentpool": "AKS agent pool",
    "agentpool": "AKS agent pool",
}


@dataclass(frozen=True)
class Imported:
    text: str
    cluster: str
    zones: tuple[str, ...]
    pools: tuple[PoolGroup, ...]
    notes: tuple[str, ...]  # what a person should know: ungrouped nodes, skipped nodes
    cilium: dict[str, Any] | None = None  # the `cilium:` block written, from the agent's objects


def _provider(nodes: Sequence[LiveNode]) -> str:
    for n in nodes:
        for key, _ in n.labels:
            for prefix, provider in _PROVIDER_HINTS:
                if key.startswith(prefix):
                    return provider
    return "other"


def _region(nodes: Sequence[LiveNode]) -> str:
    regions = Counter(n.label_map.get(REGION_LABEL, "") for n in nodes)
    regions.pop("", None)
    return regions.most_common(1)[0][0] if regions else "unknown"


def _taint_map(t: Taint) -> Any:
    from ruamel.yaml.comments import CommentedMap

    m = CommentedMap([("key", t.key)] + ([("value", t.value)] if t.value else []) + [("effect", t.effect)])
    m.fa.set_flow_style()
    return m


def _pool_entry(g: PoolGroup) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    counts = g.gpu_counts
    m = CommentedMap([("name", g.name), ("nodes", len(g.nodes))])
    if max(counts) > 0:
        # The smallest node: a job that fits on it fits on every node of the pool.
        m["gpusPerNode"] = min(counts)
    if g.labels:
        labels = CommentedMap(g.labels)
        labels.fa.set_flow_style()
        m["labels"] = labels
    varying = tuple((k, why) for k, why in g.dropped if why == VARYING)
    if varying:
        # what its nodes carry with different values (the rest is said once, at the top)
        m.yaml_set_comment_before_after_key("labels" if g.labels else "nodes", before="\n".join(
            _wrapped("left out: " + _dropped_text(varying), 96)), indent=6)
    # Taints every node of the pool carries; a node with more is reported below.
    common = set.intersection(*(set(ts) for ts in g.taint_sets)) if g.taint_sets else set()
    if common:
        taints = CommentedSeq(_taint_map(t) for t in sorted(common, key=lambda t: (t.key, t.value)))
        taints.fa.set_flow_style()
        m["taints"] = taints
    what = "no node-pool label: grouped by identical labels and taints" if g.unlabelled else \
        _KIND_OF_LABEL.get(g.nodes[0].pool_label or "", f"label {g.nodes[0].pool_label}")
    remarks = [what]
    if len(counts) > 1:
        remarks.append(f"GPUs per node differ: {', '.join(map(str, counts))}")
    if len(g.taint_sets) > 1:
        remarks.append("taints differ between its nodes")
    m.yaml_add_eol_comment("; ".join(remarks), "name")
    return m


def _dropped_text(dropped: tuple[tuple[str, str], ...]) -> str:
    """`a, b (why); c (why)`: the left-out labels grouped by their reason, in label order."""
    by_why: dict[str, list[str]] = {}
    for key, why in dropped:
        by_why.setdefault(why, []).append(key)
    return "; ".join(f"{', '.join(keys)} ({why})" for why, keys in by_why.items())


def _wrapped(text: str, width: int) -> list[str]:
    lines, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return [*lines, line]


def build(snapshot: Snapshot, cluster: str, zone_label: str = DEFAULT_ZONE_LABEL,
          pool_label: str | None = None, schema_ref: str = "") -> Imported:
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    nodes = parse_nodes(snapshot.nodes, zone_label, pool_label)
    notes: list[str] = []
    skipped = [n for n in nodes if not _ZONE_NAME.match(n.zone)]
    if skipped:
        notes.append(f"{len(skipped)} node(s) skipped, their {zone_label} label is missing or "
                     f"not a DNS-1123 label: {', '.join(n.name for n in skipped)}")
    kept = [n for n in nodes if _ZONE_NAME.match(n.zone)]
    if not kept:
        raise LiveError(f"{snapshot.source}: no node carries a usable {zone_label} label; "
                        "pass --zone-label KEY", ExitCode.BAD_INVOCATION)
    pools = group_pools(kept, zone_label)
    for name in sorted({g.name for g in pools if g.unlabelled}):
        members = [n.name for g in pools if g.name == name for n in g.nodes]
        notes.append(f"{len(members)} node(s) carry no node-pool label (EKS, Karpenter, GKE, AKS "
                      f"or --pool-label): grouped by identical labels and taints as pool {name}: "
                      f"{', '.join(members)}")
    zones = tuple(sorted({g.zone for g in pools}))

    zone_seq = CommentedSeq()
    for z in zones:
        zone_seq.append(CommentedMap([("name", z), ("pools", CommentedSeq(
            _pool_entry(g) for g in pools if g.zone == z))]))
    doors = CommentedSeq()
    for z in zones:
        nz = CommentedMap([("name", dns_label(z, "zone")), ("zones", CommentedSeq([z]))])
        nz["zones"].fa.set_flow_style()
        nz.fa.set_flow_style()
        doors.append(nz)
    provider = _provider(kept)
    c = CommentedMap([("name", cluster), ("provider", provider), ("region", _region(kept)),
                      ("zoneLabel", zone_label), ("zones", zone_seq), ("networkZones", doors)])
    block = cilium_block(list(snapshot.agent), provider)
    if snapshot.agent_note:
        notes.append(snapshot.agent_note)
    if block is not None:
        c["cilium"] = CommentedMap(block.items())
        c.yaml_set_comment_before_after_key(
            "cilium", before="The Cilium agent as the cluster runs it (kube-system/cilium-config, the cilium "
            "DaemonSet's image):\nevery verdict is that agent's.", indent=2)
        if "kubeAPIServer" in block:
            c["cilium"].yaml_add_eol_comment(f"a managed control plane ({provider}'s nodes say so)",
                                             "kubeAPIServer")
    c.yaml_set_comment_before_after_key(
        "networkZones", before="One network zone per zone: no door open between zones. Merge zones "
        "whose pods may talk\nto each other (a network zone lists several zones).", indent=2)
    doc = CommentedMap([("apiVersion", API_VERSION), ("kind", KIND),
                        ("metadata", CommentedMap([("name", cluster)])),
                        ("clusters", CommentedSeq([c])), ("workloads", CommentedSeq())])
    doc.yaml_set_comment_before_after_key(
        "workloads", before="Add the training jobs (name, namespace, cluster, kind, base, networkZone,"
        " placement).")
    head = [f"yaml-language-server: $schema={schema_ref}"] if schema_ref else []
    head += [f"Imported by `topogate import` from {os.path.basename(snapshot.source)} "
             f"({len(kept)} nodes). Finish it by hand: network zones and",
             "workloads are yours; pools, taints, labels and GPUs are what the nodes say."]
    others = sorted({(k, why) for g in pools for k, why in g.dropped if why != VARYING})
    if others:
        head += _wrapped("Labels the nodes carry that no pool keeps: " + _dropped_text(tuple(others)) + ".", 96)
    doc.yaml_set_start_comment("\n".join(head))
    y = YAML()
    y.indent(mapping=2, sequence=2, offset=0)
    y.width = 4096
    buf = io.StringIO()
    y.dump(doc, buf)
    return Imported(buf.getvalue(), cluster, zones, pools, tuple(notes), block)


SCHEMA_HOME = ".topogate/inventory.schema.json"  # what `topogate schema -o` is documented to write


def schema_ref_for(out: str) -> str:
    """The repository's copy of the schema (`topogate schema -o .topogate/inventory.schema.json`,
    run at the repository's root, taken as the working directory), relative to the written file:
    the installed package's own copy is no path a user's editor can keep."""
    schema = os.path.join(os.getcwd(), SCHEMA_HOME)
    try:
        return os.path.relpath(schema, os.path.dirname(os.path.abspath(out))).replace(os.sep, "/")
    except ValueError:  # pragma: no cover - another drive on Windows
        return SCHEMA_HOME


def refuse_unwritable(out: str, force: bool) -> None:
    """Exit 2 before the cluster is read: OUT exists without `force`, or cannot be written
    (the check every `-o FILE` passes: topogate.tree.writer.cannot_write)."""
    if os.path.lexists(out) and not force:
        raise LiveError(f"{out} exists; pass --force to replace it", ExitCode.BAD_INVOCATION)
    problem = cannot_write(out)
    if problem:
        raise LiveError(f"cannot write {out}: {problem}", ExitCode.BAD_INVOCATION)


def write(imported: Imported, out: str, force: bool) -> None:
    """Write atomically through the one file writer, never over an existing file without
    `force`, only if it loads back."""
    refuse_unwritable(out, force)

    def loads(tmp: str) -> str:
        try:
            # The temporary file is ours, so git cannot track it yet: in the user's repository a
            # tracked-only read would refuse every import.
            load_inventory(tmp, read_bases=False, tracked=False)
        except InventoryError as err:
            # A bug of ours, not the user's: say what the loader said, write nothing.
            first = "; ".join(p.message for p in err.problems[:3])
            return f"the imported inventory does not load ({first}); nothing was written; please report it"
        return ""

    problem = write_file(out, imported.text, verify=loads)
    if problem:
        raise LiveError(f"{out}: {problem}" if problem.startswith("cannot") else problem,
                        ExitCode.BAD_INVOCATION)
