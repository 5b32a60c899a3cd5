"""Load an inventory: every problem at once, each with file:line:column, or a frozen model.

Order of work: read YAML with positions (syntax errors stop here: nothing after them can be
trusted), validate against the shipped JSON Schema (the same file editors use), then the checks
a schema cannot express: uniqueness, references, placement, base manifests and GPU capacity.
Semantic checks run on whatever parts are well-typed so one bad field does not hide others.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import json
import math
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema

from topogate import kinds, progress
from topogate.inventory.basefiles import line_of, parse_base_text
from topogate.inventory.basefiles import shown as _shown
from topogate.inventory.doors import read_doors
from topogate.inventory.model import (
    DEFAULT_ZONE_LABEL,
    AdmissionConfig,
    Cluster,
    CostConfig,
    EgressRule,
    GitOps,
    Inventory,
    KueueConfig,
    Metrics,
    NetworkZone,
    Pool,
    PortSpec,
    Position,
    ReplicaGroup,
    Taint,
    Waiver,
    Workload,
    Zone,
    follow_zones,
    kueue_groupable,
)
from topogate.inventory.yamlpos import Located, YamlReadError, YPath, read_yaml
from topogate.oserror import reason
from topogate.words import plural

_DNS = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# Flux's GitRepository takes http, https and ssh URLs (its CRD pattern); Argo CD takes those too.
_GIT_URL = re.compile(r"^(https?|ssh)://[^\s/@]+(@[^\s/]+)?(/[^\s]*)?$")


@dataclass(frozen=True, order=True)
class Problem:
    pos: Position
    message: str

    def __str__(self) -> str:
        return f"{self.pos}: {self.message}"


class InventoryError(Exception):
    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))


@lru_cache(maxsize=1)
def inventory_schema() -> dict[str, Any]:
    text = resources.files("topogate.schemas").joinpath("inventory.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 200 else f"of {value.bit_length()} bits"
        return f"integer {text}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string '{value if len(value) <= 60 else value[:57] + '...'}'"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "object": "a mapping", "array": "a list", "boolean": "true or false"}


def _schema_problems(loc: Located, bad_paths: set[YPath]) -> list[Problem]:
    validator = jsonschema.Draft202012Validator(inventory_schema())
    out: list[Problem] = []
    for err in validator.iter_errors(loc.data):
        path: YPath = tuple(err.absolute_path)
        bad_paths.add(path)
        where = "/".join(str(p) for p in path) or "the document"
        v = err.validator
        if v == "additionalProperties":
            allowed = sorted(err.schema.get("properties", {}))
            for key in sorted(set(err.instance) - set(allowed)):
                out.append(Problem(loc.key_at(path + (key,)),
                                   f"unknown key '{key}' in {where}; allowed keys: {', '.join(allowed)}"))
        elif v == "required":
            missing = [k for k in err.validator_value if k not in err.instance]
            for key in missing:
                out.append(Problem(loc.at(path), f"missing required field '{key}' in {where}"))
        elif v == "type":
            want = err.validator_value
            words = " or ".join(str(_TYPE_WORDS.get(t, t)) for t in (want if isinstance(want, list) else [want]))
            out.append(Problem(loc.at(path), f"{where} must be {words}, not {_describe(err.instance)}"))
        elif v == "pattern" and err.validator_value == inventory_schema()["$defs"]["dnsLabel"]["pattern"]:
            out.append(Problem(loc.at(path), (
                f"{where}: {_describe(err.instance)} is not a DNS-1123 label (lowercase letters, "
                "digits and '-', 1-63 characters, starting and ending with a letter or digit); it "
                "becomes a path in the generated tree")))
        elif v in ("enum", "const"):
            allowed_vals = err.validator_value if v == "enum" else [err.validator_value]
            out.append(Problem(loc.at(path), (
                f"{where}: {_describe(err.instance)} is not allowed; use one of: "
                + ", ".join(str(a) for a in allowed_vals))))
        elif v in ("not", "pattern") and err.schema.get("description"):
            out.append(Problem(loc.at(path), (
                f"{where}: {_describe(err.instance)} is not allowed: {err.schema['description']}")))
        elif v == "minItems":
            out.append(Problem(loc.at(path), f"{where} must list at least {err.validator_value} item(s)"))
        elif v in ("minimum", "maximum") and isinstance(err.instance, float) and err.instance != err.instance:
            out.append(Problem(loc.at(path), f"{where} must be a number, not NaN"))
        elif v in ("minimum", "maximum"):
            word = "at least" if v == "minimum" else "at most"
            out.append(Problem(loc.at(path), f"{where} must be {word} {err.validator_value}, not {err.instance}"))
        else:
            out.append(Problem(loc.at(path), f"{where}: {err.message}"))
    return out


def _labels(d: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in d.items())) if isinstance(d, dict) else ()


def _dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _canonical(data: Any, sets: bool = True) -> Any:
    """Data in a canonical form: mapping keys sorted and, for the inventory (`sets`), every list
    sorted too: no list in an inventory has a meaningful order (zones, pools, taints, FQDNs,
    ports), so reordering one keeps the digest. Base manifests keep their list order
    (containers, args)."""
    if isinstance(data, dict):
        return {k: _canonical(v, sets) for k, v in sorted(data.items())}
    if isinstance(data, list):
        items = [_canonical(x, sets) for x in data]
        if sets:
            items.sort(key=lambda x: json.dumps(x, sort_keys=True, default=str))
        return items
    return data


def _repo_root(start: Path) -> Path:
    """The repository holding the inventory (nearest .git upward), else its own directory."""
    for p in (start, *start.parents):
        if (p / ".git").exists():
            return p
    return start


class _Checker:
    def __init__(self, loc: Located, file: str, inv_dir: Path, read_bases: bool = True):
        self.read_bases = read_bases
        self.loc = loc
        self.file = file
        self.inv_dir = inv_dir
        self.repo = _repo_root(inv_dir)
        self.problems: list[Problem] = []
        self.bad_paths: set[YPath] = set()  # paths the schema already complained about
        self.cluster_index: dict[str, int] = {}

    def err(self, path: YPath, msg: str, key: bool = False) -> None:
        self.problems.append(Problem(self.loc.key_at(path) if key else self.loc.at(path), msg))

    def has_problem_under(self, prefix: YPath) -> bool:
        return any(p[:len(prefix)] == prefix for p in self.bad_paths)

    def unique(self, items: list[tuple[YPath, str]], what: str, scope: str = "") -> None:
        seen: dict[str, YPath] = {}
        for path, name in items:
            if name in seen:
                first = self.loc.at(seen[name])
                self.err(path, (f"duplicate {what} '{name}'{scope} (first at line {first.line}); "
                                "names must be unique"))
            else:
                seen[name] = path

    # -- clusters ---------------------------------------------------------------------------
    def cluster(self, i: int, c: dict[str, Any]) -> Cluster:
        base: YPath = ("clusters", i)
        zones: list[Zone] = []
        zone_items: list[tuple[YPath, str]] = []
        for zi, z in enumerate(_seq(c.get("zones"))):
            if not isinstance(z, dict):
                continue
            zp = base + ("zones", zi)
            pools: list[Pool] = []
            pool_items: list[tuple[YPath, str]] = []
            for pi, p in enumerate(_seq(z.get("pools"))):
                if not isinstance(p, dict):
                    continue
                pp = zp + ("pools", pi)
                pool_items.append((pp + ("name",), str(p.get("name"))))
                taints = tuple(
                    Taint(str(t.get("key", "")), str(t.get("effect", "")), str(t.get("value", "") or ""),
                          self.loc.at(pp + ("taints", ti)))
                    for ti, t in enumerate(_seq(p.get("taints"))) if isinstance(t, dict))
                pools.append(Pool(
                    str(p.get("name", "")), _int(p.get("nodes")), _int(p.get("gpusPerNode")),
                    _labels(p.get("labels")), taints, self.loc.at(pp),
                    _quantity(p.get("cpuPerNode")), _quantity(p.get("memoryPerNode"))))
            self.unique(pool_items, "pool", f" in zone '{z.get('name')}'")
            zone_items.append((zp + ("name",), str(z.get("name"))))
            zones.append(Zone(str(z.get("name", "")), tuple(sorted(pools, key=lambda p: p.name)),
                              self.loc.at(zp)))
        self.unique(zone_items, "zone", f" in cluster '{c.get('name')}'")
        zone_names = {z.name for z in zones}
        nzs: list[NetworkZone] = []
        owner: dict[str, tuple[str, YPath]] = {}
        nz_items: list[tuple[YPath, str]] = []
        for ni, n in enumerate(_seq(c.get("networkZones"))):
            if not isinstance(n, dict):
                continue
            np_: YPath = base + ("networkZones", ni)
            nz_items.append((np_ + ("name",), str(n.get("name"))))
            members: list[str] = []
            for zi, zname in enumerate(_seq(n.get("zones"))):
                zname = str(zname)
                zpath = np_ + ("zones", zi)
                if zname not in zone_names:
                    self.err(zpath, (
                        f"network zone '{n.get('name')}' names zone '{zname}', which cluster "
                        f"'{c.get('name')}' does not have; known zones: {', '.join(sorted(zone_names)) or 'none'}"))
                elif zname in owner:
                    other = owner[zname][0]
                    self.err(zpath, (
                        f"zone '{zname}' is already in network zone '{other}'; a zone belongs to "
                        "exactly one network zone (a door cannot be both open and locked)"))
                else:
                    owner[zname] = (str(n.get("name")), zpath)
                members.append(zname)
            nzs.append(NetworkZone(str(n.get("name", "")), tuple(sorted(set(members))), self.loc.at(np_)))
        self.unique(nz_items, "network zone", f" in cluster '{c.get('name')}'")
        cost = c.get("cost")
        cost_cfg = None
        if isinstance(cost, dict):
            budget = cost.get("budgetUSDPerDay")
            if isinstance(budget, float) and not math.isfinite(budget):
                self.err(base + ("cost", "budgetUSDPerDay"), "budgetUSDPerDay must be a finite number of dollars")
                budget = None
            cost_cfg = CostConfig(
                cost.get("tagKey") if isinstance(cost.get("tagKey"), str) else None,
                str(cost["tagValue"]) if isinstance(cost.get("tagValue"), str) else None,
                float(budget) if isinstance(budget, (int, float)) and not isinstance(budget, bool) else None,
                self.loc.at(base + ("cost",)))
        zone_label = c.get("zoneLabel")
        return Cluster(
            str(c.get("name", "")), str(c.get("provider", "")), str(c.get("region", "")),
            zone_label if isinstance(zone_label, str) else DEFAULT_ZONE_LABEL, cost_cfg,
            tuple(sorted(zones, key=lambda z: z.name)),
            tuple(sorted(nzs, key=lambda n: n.name)), self.loc.at(base),
            self.kueue(base, c, zones), self.admission(base, c))

    def kueue(self, base: YPath, c: dict[str, Any], zones: list[Zone]) -> KueueConfig | None:
        k = c.get("kueue")
        if not isinstance(k, dict) or not isinstance(k.get("queue"), str):
            return None
        # One resource group covers every resource, so every flavor must list the same ones: a
        # pool without a declared CPU would get a quota of 0 and be locked out of the queue.
        pools = [p for z in zones for p in z.pools]
        for what, attr in (("cpuPerNode", "cpu_per_node"), ("memoryPerNode", "memory_per_node")):
            have = sorted(f"{z.name}/{p.name}" for z in zones for p in z.pools if getattr(p, attr))
            if have and len(have) != len(pools):
                self.err(base + ("kueue",), (
                    f"cluster '{c.get('name')}' uses Kueue and declares {what} on {', '.join(have)} "
                    f"but not on every pool; its ClusterQueue covers a resource for all pools or "
                    f"none: declare {what} on every pool or on none"))
        return KueueConfig(k["queue"], self.loc.at(base + ("kueue",)))

    def admission(self, base: YPath, c: dict[str, Any]) -> AdmissionConfig | None:
        a = c.get("admission")
        if not isinstance(a, dict):
            return None
        actions = a.get("validationActions", ["Deny"])
        if not isinstance(actions, list):
            return None
        if "Deny" in actions and "Warn" in actions:
            self.err(base + ("admission", "validationActions"), (
                "validationActions cannot hold both Deny and Warn (Kubernetes rejects the binding): "
                "use [Deny] to enforce, or [Warn, Audit] while rolling out"))
        return AdmissionConfig(tuple(str(x) for x in actions), self.loc.at(base + ("admission",)))

    # -- workloads --------------------------------------------------------------------------
    def workload(self, i: int, w: dict[str, Any], clusters: dict[str, Cluster]) -> Workload | None:
        base: YPath = ("workloads", i)
        name, ns = str(w.get("name", "")), str(w.get("namespace", ""))
        kind = str(w.get("kind", ""))
        cname = w.get("cluster")
        cluster = clusters.get(str(cname)) if isinstance(cname, str) else None
        if isinstance(cname, str) and cluster is None:
            self.err(base + ("cluster",), (
                f"workload '{name}' names cluster '{cname}', which the inventory does not define; "
                f"known clusters: {', '.join(sorted(clusters)) or 'none'}"))
        nzname = w.get("networkZone")
        nz = cluster.network_zone(str(nzname)) if cluster and isinstance(nzname, str) else None
        if cluster and isinstance(nzname, str) and nz is None:
            self.err(base + ("networkZone",), (
                f"workload '{name}' names network zone '{nzname}', which cluster '{cluster.name}' does "
                f"not define; known: {', '.join(sorted(n.name for n in cluster.network_zones)) or 'none'}"))
        placement = w.get("placement", "pin")
        zone = w.get("zone")
        if nz is not None and isinstance(zone, str) and zone not in nz.zones:
            self.err(base + ("zone",), (
                f"workload '{name}' is pinned to zone '{zone}', which is not in its network zone "
                f"'{nz.name}' ({', '.join(nz.zones)}); pick one of those zones"))
        if nz is not None and placement == "pin" and zone is None and len(nz.zones) != 1:
            self.err(base, (
                f"workload '{name}' uses placement 'pin' but network zone '{nz.name}' has "
                f"{len(nz.zones)} zones ({', '.join(nz.zones)}); add `zone:` with one of them, or "
                "use `placement: follow` to keep the job together in whichever zone it starts"))
        if placement == "follow" and isinstance(zone, str):
            self.err(base + ("zone",), (
                f"workload '{name}' uses placement 'follow', which chooses the zone at run time; "
                "remove `zone:` or use `placement: pin`"))

        base_rel = w.get("base")
        base_dir, docs = "", ()
        groups: tuple[ReplicaGroup, ...] = ()
        if isinstance(base_rel, str) and base_rel:
            base_dir, docs = (self.read_base(base + ("base",), base_rel) if self.read_bases
                              else ("", ()))
            if base_dir and kind in kinds.KINDS and _DNS.match(name):
                groups = self.groups_of(base + ("base",), docs, kind, name, base_rel)

        metrics = None
        m = w.get("metrics")
        if isinstance(m, dict) and isinstance(m.get("port"), int):
            metrics = Metrics(int(m["port"]), str(m.get("namespace", "monitoring")),
                              self.loc.at(base + ("metrics",)))
        egress = tuple(
            EgressRule(
                tuple(str(x) for x in _seq(e.get("fqdns"))),
                tuple(str(x) for x in _seq(e.get("cidrs"))),
                tuple(PortSpec(_int(p.get("port")), str(p.get("protocol", "TCP")),
                               _int(p["endPort"]) if "endPort" in p else None)
                      for p in _dicts(e.get("ports"))),
                self.loc.at(base + ("egress", ei)),
                tuple(self.loc.at(base + ("egress", ei, "fqdns", fi))
                      for fi, _ in enumerate(_seq(e.get("fqdns")))))
            for ei, e in enumerate(_dicts(w.get("egress"))))
        for ei, e in enumerate(_dicts(w.get("egress"))):
            if not e.get("fqdns") and not e.get("cidrs"):
                self.err(base + ("egress", ei), "an egress entry needs `fqdns:` or `cidrs:`")
            for ci, cidr in enumerate(_seq(e.get("cidrs"))):
                try:
                    ipaddress.ip_network(str(cidr), strict=False)
                except ValueError:
                    self.err(base + ("egress", ei, "cidrs", ci), (
                        f"'{cidr}' is not a CIDR (like 10.0.0.0/8 or 2001:db8::/32); Cilium's CRD "
                        "would reject the policy"))
            for pi, port in enumerate(_dicts(e.get("ports"))):
                end, start = port.get("endPort"), port.get("port")
                if isinstance(end, int) and isinstance(start, int) and end < start:
                    self.err(base + ("egress", ei, "ports", pi, "endPort"), (
                        f"endPort {end} is below port {start}; a range runs from port up to endPort"))
        scheduler, queue = str(w.get("scheduler", "default")), w.get("queue")
        wl = Workload(
            name, ns, str(cname or ""), kind, str(base_rel or ""), str(nzname or ""),
            str(placement), zone if isinstance(zone, str) else None, metrics, egress, groups,
            base_dir, docs, self.loc.at(base), scheduler, queue if isinstance(queue, str) else None)
        self.kueue_workload(base, wl, cluster)
        # Capacity only means something once the cluster and the placement are well-formed;
        # otherwise it repeats an earlier problem in other words.
        placement_ok = not (isinstance(zone, str) and zone not in nz.zones) if nz else False
        if (cluster and nz is not None and groups and placement_ok
                and not self.has_problem_under(("clusters", self.cluster_index.get(cluster.name, -1)))):
            self.capacity(base, wl, cluster, nz)
        return wl

    def kueue_workload(self, base: YPath, w: Workload, cluster: Cluster | None) -> None:
        if w.queue is not None and w.scheduler != "kueue":
            self.err(base + ("queue",), (f"workload '{w.name}' names a queue but is not placed by "
                                         "Kueue; add `scheduler: kueue` or remove `queue:`"))
        if w.scheduler != "kueue" or cluster is None:
            return
        if cluster.kueue is None:
            self.err(base + ("scheduler",), (
                f"workload '{w.name}' uses scheduler 'kueue' but cluster '{cluster.name}' has no "
                "`kueue:` section; add `kueue: {queue: NAME}` to the cluster (topogate then "
                "generates its Topology, ResourceFlavors and queues) or remove `scheduler:`"))
            return
        # Kueue fits a PodSet group (exactly two pod sets, one of them a single pod) into one
        # topology domain; pod sets outside a group are fitted independently. For `follow`
        # nothing else keeps the job in one zone (docs/kueue.md).
        if w.placement == "follow" and w.groups and not kueue_groupable(w.groups):
            shape = ", ".join(f"{g.name} x{g.replicas}" for g in w.groups)
            self.err(base, (
                f"workload '{w.name}' uses scheduler 'kueue' with placement 'follow', but Kueue "
                f"can keep only one pod set, or two with one of a single pod, in one zone; this "
                f"job has {shape}: use `placement: pin` with `zone:`"))

    def read_base(self, path: YPath, rel: str) -> tuple[str, tuple[Any, ...]]:
        try:
            return self._read_base(path, rel)
        except (OSError, RuntimeError, ValueError) as e:
            # a name too long, a NUL byte, a symlink loop: the path itself is unusable
            shown = rel if len(rel) <= 60 else rel[:57] + "..."
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
            self.err(path, f"base '{shown}' cannot be read ({why}); fix the path")
            return "", ()

    def _read_base(self, path: YPath, rel: str) -> tuple[str, tuple[Any, ...]]:
        if os.path.isabs(rel):
            self.err(path, f"base '{rel}' must be a path relative to the inventory file")
            return "", ()
        target = (self.inv_dir / rel).resolve()
        try:
            target.relative_to(self.repo)
        except ValueError:
            self.err(path, (f"base '{rel}' resolves outside the inventory's repository; keep bases "
                            "inside the repository so Argo CD and Flux can read them"))
            return "", ()
        if not target.is_dir():
            self.err(path, f"base '{rel}' does not exist or is not a directory (relative to the inventory file)")
            return "", ()
        kfile = next((target / n for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")
                      if (target / n).is_file()), None)
        if kfile is None:
            self.err(path, (f"base '{rel}' has no kustomization.yaml; add one that lists the job's "
                            "manifests under `resources:` so the overlay can build on it"))
            return "", ()
        before = len(self.problems)
        ktext = self.read_base_text(kfile) or ""
        kdocs = self.parse_base_text(ktext, kfile) if ktext else []
        kdoc = kdocs[0] if kdocs and isinstance(kdocs[0], dict) else {}
        resources = kdoc.get("resources", [])
        if not isinstance(resources, list):
            self.problems.append(Problem(line_of(ktext, kfile, "resources"), (
                f"`resources` of base '{rel}' must be a list of paths")))
            return "", ()
        # Read the base the way kustomize does. A base that is only a list of its own files is
        # read directly; one that transforms them (patches, labels, components, sub-directories)
        # is built with kubectl kustomize, so patches are computed against what it really yields.
        simple = set(kdoc) <= _PLAIN_KUSTOMIZATION_KEYS
        docs: list[Any] = []
        for res in resources:
            res = str(res)
            if "://" in res or res.startswith(("github.com/", "git@", "ssh:")):
                self.problems.append(Problem(line_of(ktext, kfile, res), (
                    f"resource '{res}' of base '{rel}' is remote: generate would depend on the "
                    "network and on what that URL serves today; vendor it into the repository")))
                continue
            f = (target / res).resolve()
            if f.is_file():
                try:
                    f.relative_to(target)
                except ValueError:
                    self.problems.append(Problem(line_of(ktext, kfile, res), (
                        f"resource '{res}' of base '{rel}' is a file outside the base directory; "
                        "kustomize refuses that (load restrictor): move it into the base or make "
                        "its directory a kustomization of its own")))
                    continue
                docs.extend(d for d in self.load_base_file(f) if d is not None)
            elif f.is_dir():
                simple = False
            else:
                self.problems.append(Problem(line_of(ktext, kfile, res), (
                    f"resource '{res}' of base '{rel}' does not exist; kustomize cannot build the "
                    "base (and so no overlay on it): fix the path or remove the entry")))
        if len(self.problems) > before:
            return "", ()  # the job cannot be read reliably: say nothing more about it
        if not simple:
            built = self.build_base(path, target, rel)
            if built is None:
                return "", ()
            docs = built
        if not self.one_job_per_base(path, docs, rel):
            return "", ()
        return str(target), tuple(docs)

    def build_base(self, path: YPath, target: Path, rel: str) -> list[Any] | None:
        from topogate.kustomization import run_kustomize
        from topogate.manifests import ManifestError, kubectl

        try:
            exe = kubectl()
        except ManifestError as e:
            self.err(path, f"base '{rel}' transforms its resources, so reading it needs kubectl: {e.message}")
            return None
        proc = run_kustomize(target, exe)  # under the time, memory and network limits
        if proc.returncode != 0:
            last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "build failed"
            self.err(path, f"kubectl kustomize cannot build base '{rel}': {last}")
            return None
        return [d for d in self.parse_base_text(proc.stdout, target / "kustomization.yaml") if d is not None]

    def one_job_per_base(self, path: YPath, docs: list[Any], rel: str) -> bool:
        """The overlay carries everything in its base: a second job would ride along unpatched."""
        jobs = [d for d in docs if isinstance(d, dict) and d.get("kind") in kinds.KINDS]
        ids = [f"{d.get('kind')}/{_map(d.get('metadata')).get('name')}" for d in jobs]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            self.err(path, f"base '{rel}' declares {', '.join(dupes)} more than once; kustomize "
                           "cannot build it")
            return False
        if len(jobs) > 1:
            self.err(path, (f"base '{rel}' holds {len(jobs)} training jobs ({', '.join(sorted(ids))}); "
                            "each workload needs a base of its own, or the other jobs ride along "
                            "in its overlay without placement"))
            return False
        return True

    def parse_base_text(self, text: str, f: Path) -> list[Any]:
        """Documents of a base manifest; its problem, if any, is reported at its own line."""
        docs, problems = parse_base_text(text, f)
        self.problems += [Problem(pos, msg) for pos, msg in problems]
        return docs

    def read_base_text(self, f: Path) -> str | None:
        try:
            return f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            self.problems.append(Problem(Position(_shown(f), 1, 1), f"cannot read a base manifest: {e}"))
            return None

    def load_base_file(self, f: Path) -> list[Any]:
        """Documents of one base file; a problem is reported at its own line, in its file."""
        text = self.read_base_text(f)
        return [] if text is None else self.parse_base_text(text, f)

    def groups_of(self, path: YPath, docs: tuple[Any, ...], kind: str, name: str,
                  rel: str) -> tuple[ReplicaGroup, ...]:
        job = kinds.find_job(list(docs), kind, name)
        if job is None:
            self.err(path, (f"base '{rel}' has no {kind} named '{name}' among its resources; the "
                            "workload's name must be the job's metadata.name"))
            return ()
        want_group = kinds.KINDS[kind].api_version.rpartition("/")[0]
        api = str(job.get("apiVersion", ""))
        if api.rpartition("/")[0] != want_group:
            self.err(path, (f"the {kind} '{name}' in base '{rel}' has apiVersion '{api}'; topogate "
                            f"patches {kind} of API group {want_group}: fix the apiVersion"))
            return ()
        if kind == "TrainJob" and not _map(_map(job.get("spec")).get("runtimeRef")).get("name"):
            self.err(path, (f"the TrainJob '{name}' in base '{rel}' has no spec.runtimeRef.name; the "
                            "Trainer needs a runtime to create its pods"))
            return ()
        cluster_scoped = [f"{d.get('kind')}/{_map(d.get('metadata')).get('name')}" for d in docs
                          if isinstance(d, dict) and d.get("kind") in _CLUSTER_SCOPED_IN_BASES]
        if cluster_scoped:
            self.err(path, (f"base '{rel}' holds cluster-scoped {', '.join(cluster_scoped)}; the "
                            "overlay sets the workload's namespace on everything in its base: apply "
                            "cluster-scoped objects separately (a TrainingRuntime in the namespace "
                            "works in a base)"))
            return ()
        from topogate import shapes

        bad = shapes.first_problem(job)
        if bad is not None:
            # generate patches these fields: a wrong type would crash the patch, not explain itself
            self.err(path, (f"the {kind} '{name}' in base '{rel}': {shapes.field_name(bad[0])} must be "
                            f"{bad[1]}, not {shapes.describe_at(job, bad[0])}; the API server would "
                            "refuse it: fix the field"))
            return ()
        groups = list(kinds.replica_groups(job, _runtime_groups(job, docs)))
        if not groups:
            self.err(path, f"the {kind} '{name}' in base '{rel}' has no replica groups (pods) to place")
            return ()
        return tuple(ReplicaGroup(g.name, g.pods, g.gpus_per_pod) for g in groups)

    def capacity(self, base: YPath, w: Workload, c: Cluster, nz: NetworkZone) -> None:
        # A co-located job must fit in ONE zone: that is what pin and follow both guarantee.
        if w.placement == "follow" and not follow_zones(c, nz, w) and w.gpus:
            self.err(base, (
                f"workload '{w.name}' uses placement 'follow' but no zone of network zone "
                f"'{nz.name}' has both a node with {plural(max(g.gpus_per_pod for g in w.groups), 'GPU')} "
                f"and {plural(w.gpus, 'GPU')} in all; the job can never start: reduce replicas or add GPU nodes"))
            return
        zones = [w.zone] if w.zone else list(nz.zones)
        best = max((z.gpus for z in c.zones if z.name in zones), default=0)
        total = sum(z.gpus for z in c.zones if z.name in nz.zones)
        if w.gpus > best:
            detail = ", ".join(f"{g.name} {g.replicas}x{g.gpus_per_pod}" for g in w.groups if g.gpus)
            self.err(base, (
                f"workload '{w.name}' needs {plural(w.gpus, 'GPU')} ({detail}) but the largest zone it may use "
                f"in network zone '{nz.name}' has {best} (the network zone has {total} in all); the "
                "job can never start: reduce replicas or add GPU nodes"))
        for g in w.groups:
            per_node = max((p.gpus_per_node for z in c.zones if z.name in zones for p in z.pools),
                           default=0)
            if g.gpus_per_pod > per_node:
                self.err(base, (
                    f"workload '{w.name}' group {g.name} asks {plural(g.gpus_per_pod, 'GPU')} per pod but no node "
                    f"in network zone '{nz.name}' has more than {per_node}"))


def _runtime_groups(job: dict[str, Any], docs: tuple[Any, ...]) -> tuple[str, ...]:
    """The replicated jobs of a TrainJob's runtime, when the runtime is among the base's docs."""
    if job.get("kind") != "TrainJob":
        return ()
    ref = _map(_map(job.get("spec")).get("runtimeRef"))
    for d in docs:
        if (isinstance(d, dict) and d.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime")
                and _map(d.get("metadata")).get("name") == ref.get("name")):
            rjs = _map(_map(_map(d.get("spec")).get("template")).get("spec")).get("replicatedJobs")
            return tuple(str(r.get("name")) for r in _seq(rjs) if isinstance(r, dict))
    return ()


_PLAIN_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "resources", "metadata"}
_CLUSTER_SCOPED_IN_BASES = ("ClusterTrainingRuntime", "Namespace", "ClusterRole",
                            "ClusterRoleBinding", "CiliumClusterwideNetworkPolicy")


def _seq(v: Any) -> list[Any]:
    """v when it is a list: after a schema error a list field may hold anything."""
    return v if isinstance(v, list) else []


def _map(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _quantity(v: Any) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    return str(v) if isinstance(v, (int, str)) else None


def _int(v: Any) -> int:
    if isinstance(v, float) and v.is_integer():
        return int(v)  # JSON Schema counts 2.0 as an integer, so the model must too
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def load_inventory(path: str | os.PathLike[str], read_bases: bool = True) -> Inventory:
    """Read, validate and build the inventory; raise InventoryError with every problem found.

    `read_bases=False` skips the workloads' base manifests (and what depends on them: replica
    groups, GPU demand): for commands that need only clusters, such as the cost audit running
    where only the inventory file is mounted."""
    file = str(path)
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise InventoryError([Problem(Position(file, 1, 1), f"cannot read the inventory: {reason(e)}")]) from None
    try:
        loc = read_yaml(text, file)
    except YamlReadError as e:
        raise InventoryError([Problem(p.pos, p.message) for p in e.problems]) from None
    problems = [Problem(p.pos, p.message) for p in loc.problems]
    if not isinstance(loc.data, dict):
        raise InventoryError(problems + [Problem(loc.at(()), (
            "the inventory must be a mapping with apiVersion: topogate.dev/v1alpha1 and "
            "kind: Inventory"))])
    data = loc.data
    inv_dir = Path(file).resolve().parent
    chk = _Checker(loc, file, inv_dir, read_bases)
    problems += _schema_problems(loc, chk.bad_paths)
    cluster_index = {str(c.get("name")): i for i, c in enumerate(_seq(data.get("clusters")))
                     if isinstance(c, dict)}
    chk.cluster_index = cluster_index

    clusters: list[Cluster] = []
    cluster_items: list[tuple[YPath, str]] = []
    for i, c in enumerate(_seq(data.get("clusters"))):
        if isinstance(c, dict):
            cluster_items.append((("clusters", i, "name"), str(c.get("name"))))
            clusters.append(chk.cluster(i, c))
    chk.unique(cluster_items, "cluster")
    by_name = {c.name: c for c in clusters}

    workloads: list[Workload] = []
    wl_items: list[tuple[YPath, str]] = []
    workload_data = _seq(data.get("workloads"))
    for i, w in enumerate(workload_data):
        if read_bases and i % 50 == 0:
            progress.note(f"reading workloads and their bases ({i:,}/{len(workload_data):,})")
        if isinstance(w, dict):
            wl_items.append((("workloads", i, "name"),
                             f"{w.get('cluster')}/{w.get('namespace')}/{w.get('name')}"))
            wl = chk.workload(i, w, by_name)
            if wl is not None:
                workloads.append(wl)
    chk.unique(wl_items, "workload (cluster/namespace/name)")

    waivers: list[Waiver] = []
    for i, wv in enumerate(_dicts(data.get("waivers"))):
        exp = wv.get("expires")
        expires = None
        if isinstance(exp, str):
            try:
                expires = dt.date.fromisoformat(exp)
            except ValueError:
                chk.err(("waivers", i, "expires"), f"expires '{exp}' is not a date (YYYY-MM-DD)")
        waivers.append(Waiver(str(wv.get("rule", "")), str(wv.get("object", "")),
                              str(wv.get("reason", "")), expires, loc.at(("waivers", i))))

    doors = read_doors(chk, data, by_name, workloads)

    gitops = None
    g = data.get("gitops")
    if isinstance(g, dict) and isinstance(g.get("repoURL"), str) and not _GIT_URL.match(g["repoURL"]):
        # Written into Argo CD Applications and a Flux GitRepository, whose CRD takes only these
        # schemes: anything else is refused here, not by the cluster after the merge.
        chk.err(("gitops", "repoURL"), (
            f"repoURL {g['repoURL']!r} is not a Git URL Argo CD and Flux both accept; use "
            "https://host/org/repo.git or ssh://git@host/org/repo.git (no spaces)"))
    if isinstance(g, dict) and isinstance(g.get("repoURL"), str):
        gitops = GitOps(
            g["repoURL"], str(g.get("targetRevision", "main")), str(g.get("path", ".")),
            str(g.get("argocdNamespace", "argocd")), str(g.get("argocdProject", "default")),
            str(g.get("fluxNamespace", "flux-system")),
            str(g.get("destinationServer", "https://kubernetes.default.svc")),
            str(g["fluxSecretRef"]) if isinstance(g.get("fluxSecretRef"), str) else None,
            loc.at(("gitops",)))

    problems += chk.problems
    if problems:
        raise InventoryError(problems)

    canon = {"inventory": _canonical(data),
             "bases": {f"{w.cluster}/{w.namespace}/{w.name}": _canonical(list(w.base_docs), sets=False)
                       for w in workloads}}
    digest = hashlib.sha256(
        json.dumps(canon, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()
    md = _map(data.get("metadata"))
    return Inventory(
        str(md.get("name", "")), file, digest,
        tuple(sorted(clusters, key=lambda c: c.name)),
        tuple(sorted(workloads, key=lambda w: (w.cluster, w.namespace, w.name))),
        tuple(waivers), gitops, str(inv_dir), loc.at(()), doors)
