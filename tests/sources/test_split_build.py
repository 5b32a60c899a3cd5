"""A root built in parts says, byte for byte, what the real `kubectl kustomize` of the whole root
says, or it is built whole (topogate.sources.split_build).

Every comparison here is against the real kubectl on the same files. The random trees mix what
kustomize treats specially at the top of a build (ids shared across parts, references kustomize
resolves as mappings, the legacy kind order, cluster-scoped kinds, namespaces, renames); the
named cases pin each condition, with a control showing that a naive merge would have differed.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from topogate.safeio.repopaths import Roots
from topogate.safeio.saferead import InputError
from topogate.sources import kustomization, manifests, split_build, split_docs
from topogate.sources.kustomization import Tree, check_tree


def _kubectl(d: Path) -> subprocess.CompletedProcess[str]:
    return kustomization.run_kustomize(d)


def _tree(root: Path) -> Tree:
    """The root as collect plans its build: checked, then the split decided."""
    return kustomization.decide_split(check_tree(root, Roots.of([str(root)])))


def _write(root: Path, entries: dict[str, dict[str, str]], top: str | None = None) -> Path:
    """A root listing one directory per entry, each a kustomization with the given files."""
    (root / ".git").mkdir(parents=True, exist_ok=True)  # the repository the reads stay in
    for name, files in entries.items():
        d = root / "parts" / name
        d.mkdir(parents=True)
        for f, text in files.items():
            (d / f).write_text(text)
    (root / "kustomization.yaml").write_text(
        top if top is not None else yaml.safe_dump({"resources": [f"parts/{n}" for n in entries]}))
    return root


def _naive(root: Path, tree: Tree, n: int) -> str:
    """The parts merged with no condition checked (the control): what a careless split says."""
    outs = []
    for i, share in enumerate(split_build.shares(tree.parts, n)):
        d = root.parent / f"naive-{root.name}-{i}"
        d.mkdir()
        (d / "kustomization.yaml").write_text(yaml.safe_dump({"resources": [
            str(Path("..") / root.name / e) for e in share]}))
        outs.append(split_docs.scan(_kubectl(d).stdout, i) or [])
    docs = sorted((doc for p in outs for doc in p), key=split_docs.Doc.sort_key)
    return "---\n".join(doc.text for doc in docs)


# --- random trees ------------------------------------------------------------------------------

_NAMES = ("a", "b", "trainer", "web", "db")
_NAMESPACES = ("", "default", "team-a", "team-b")


def _object(rng: random.Random, ns: str) -> dict[str, object]:
    kind = rng.choice(["ConfigMap", "ServiceAccount", "Service", "Deployment", "RoleBinding",
                       "ClusterRole", "Namespace", "PyTorchJob", "CiliumNetworkPolicy",
                       "ValidatingWebhookConfiguration", "Secret", "PodDisruptionBudget"])
    name = f"{rng.choice(_NAMES)}-{rng.randrange(40)}" if rng.random() < 0.7 else rng.choice(_NAMES)
    api = {"Deployment": "apps/v1", "RoleBinding": "rbac.authorization.k8s.io/v1",
           "ClusterRole": "rbac.authorization.k8s.io/v1", "PyTorchJob": "kubeflow.org/v1",
           "CiliumNetworkPolicy": "cilium.io/v2", "PodDisruptionBudget": "policy/v1",
           "ValidatingWebhookConfiguration": "admissionregistration.k8s.io/v1"}.get(kind, "v1")
    meta: dict[str, object] = {"name": name}
    if ns and kind not in ("ClusterRole", "Namespace", "ValidatingWebhookConfiguration"):
        meta["namespace"] = ns
    obj: dict[str, object] = {"apiVersion": api, "kind": kind, "metadata": meta}
    if kind == "RoleBinding":
        obj["roleRef"] = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                          "name": rng.choice(_NAMES)}
        obj["subjects"] = [{"kind": "ServiceAccount", "name": rng.choice(_NAMES)}]
    elif kind == "ValidatingWebhookConfiguration":
        obj["webhooks"] = [{"name": "v.example.com", "sideEffects": "None",
                            "admissionReviewVersions": ["v1"],
                            "clientConfig": {"service": {"name": rng.choice(_NAMES),
                                                         "namespace": "team-a"}}}]
    elif kind == "Deployment":
        obj["spec"] = {"template": {"spec": {"serviceAccountName": rng.choice(_NAMES),
                                             "containers": [{"name": "c", "image": "x"}]}}}
    elif kind in ("ConfigMap", "Secret"):
        obj["data"] = {"k": "dg==" if kind == "Secret" else "v"}
    return obj


def _random_entries(rng: random.Random, n: int) -> dict[str, dict[str, str]]:
    entries = {}
    for i in range(n):
        ns = rng.choice(_NAMESPACES)
        objs = [_object(rng, ns) for _ in range(rng.randrange(1, 4))]
        k: dict[str, object] = {"resources": ["objects.yaml"]}
        if rng.random() < 0.3:
            k["namespace"] = rng.choice(["team-a", "team-b"])
        if rng.random() < 0.15:
            k["commonLabels"] = {"team": "x"}
        if rng.random() < 0.1:
            k["namePrefix"] = "p-"  # a rename: the tree is built whole
        entries[f"e{i:02d}"] = {"objects.yaml": yaml.safe_dump_all(objs),
                                "kustomization.yaml": yaml.safe_dump(k)}
    return entries


def test_random_trees_split_or_whole_never_differ(tmp_path: Path) -> None:
    merged = whole_only = refused = 0
    for seed in range(24):
        rng = random.Random(seed)
        root = _write(tmp_path / f"t{seed}", _random_entries(rng, rng.randrange(3, 9)))
        whole = _kubectl(root)
        tree = _tree(root)
        split = kustomization.build_in_parts(tree, 3) if tree.parts else None
        if split is None:
            whole_only += whole.returncode == 0
            refused += whole.returncode != 0
            continue
        assert whole.returncode == 0, f"seed {seed}: the split built what kustomize refuses"
        assert split[0] == whole.stdout, f"seed {seed}"
        merged += 1
    # each way is taken: the merge, the fallback of a tree that builds, and kustomize's refusal
    assert merged >= 5 and whole_only >= 3 and refused >= 1, (merged, whole_only, refused)


# --- each condition --------------------------------------------------------------------------

def _objects(*objs: Mapping[str, object]) -> dict[str, str]:
    return {"objects.yaml": yaml.safe_dump_all(objs), "kustomization.yaml": "resources: [objects.yaml]\n"}


def _sa(name: str, ns: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": ns}}


def test_a_subject_naming_another_parts_account_builds_whole(tmp_path: Path) -> None:
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "rb"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"kind": "ServiceAccount", "name": "trainer", "namespace": "default"}]}
    moved = _objects({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "trainer"}})
    moved["kustomization.yaml"] = "namespace: team-a\nresources: [objects.yaml]\n"
    root = _write(tmp_path / "r", {"a": moved, "b": _objects(binding)})
    whole = _kubectl(root).stdout
    assert "namespace: team-a" in whole.split("kind: ClusterRoleBinding")[1]  # kustomize set it
    tree = _tree(root)
    assert tree.parts == ("parts/a", "parts/b")
    assert _naive(root, tree, 2) != whole  # the control: merged blindly, the subject has no namespace
    assert kustomization.build_in_parts(tree, 2) is None


def test_an_id_in_two_parts_builds_whole(tmp_path: Path) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    cm_default = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}}
    root = _write(tmp_path / "r", {"a": _objects(cm), "b": _objects(cm_default)})
    assert _kubectl(root).returncode != 0  # "" and "default" are one namespace to kustomize
    assert kustomization.build_in_parts(_tree(root), 2) is None


def test_one_name_in_two_namespaces_is_merged(tmp_path: Path) -> None:
    root = _write(tmp_path / "r", {"a": _objects(_sa("trainer", "team-a")),
                                   "b": _objects(_sa("trainer", "team-b"))})
    whole = _kubectl(root)
    assert whole.returncode == 0
    split = kustomization.build_in_parts(_tree(root), 2)
    assert split is not None and split[0] == whole.stdout


def test_the_legacy_order_of_many_kinds(tmp_path: Path) -> None:
    kinds = [("v1", "Namespace", ""), ("apiextensions.k8s.io/v1", "CustomResourceDefinition", ""),
             ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", ""),
             ("cilium.io/v2", "CiliumNetworkPolicy", "n1"), ("kubeflow.org/v1", "PyTorchJob", "n1"),
             ("apps/v1", "Deployment", "n2"), ("v1", "Service", "n1"), ("v1", "ConfigMap", "n2"),
             ("policy/v1", "PodDisruptionBudget", "n1"), ("kueue.x-k8s.io/v1beta1", "LocalQueue", "n1"),
             ("v1", "LimitRange", "n3"), ("scheduling.k8s.io/v1", "PriorityClass", "")]
    entries = {}
    for i, (api, kind, ns) in enumerate(kinds):
        objs = []
        for j in range(3):  # names whose order differs as text and as (namespace, name) pairs
            meta: dict[str, object] = {"name": f"x{'-' * j}{i}"}
            if ns:
                meta["namespace"] = ns + "-b" * (j % 2)
            objs.append({"apiVersion": api, "kind": kind, "metadata": meta})
        entries[f"k{i:02d}"] = _objects(*objs)
    root = _write(tmp_path / "r", entries)
    whole = _kubectl(root)
    assert whole.returncode == 0, whole.stderr
    tree = _tree(root)
    for n in (2, 3, 5):
        split = kustomization.build_in_parts(tree, n)
        assert split is not None and split[0] == whole.stdout, n


@pytest.mark.parametrize("change", [
    {"namePrefix": "p-"},
    {"nameSuffix": "-s"},
    {"configMapGenerator": [{"name": "g", "literals": ["k=v"]}]},
    {"vars": [{"name": "V", "objref": {"kind": "ConfigMap", "name": "c", "apiVersion": "v1"}}]},
    {"patches": [{"path": "rename.yaml", "target": {"kind": "ConfigMap"}}]},
    {"patches": [{"patch": "- op: replace\n  path: /metadata/namespace\n  value: x\n",
                  "target": {"kind": "ConfigMap"}}]},
    {"patches": [{"path": "smp.yaml", "options": {"allowNameChange": True}}]},
    {"commonAnnotations": {"kustomize.config.k8s.io/needs-hash": "true"}},
], ids=["namePrefix", "nameSuffix", "generator", "vars", "json-patch-file", "json-patch-inline",
        "allowNameChange", "needs-hash"])
def test_a_tree_that_may_rename_is_built_whole(tmp_path: Path, change: dict[str, object]) -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    files = _objects(cm)
    files["kustomization.yaml"] = yaml.safe_dump({"resources": ["objects.yaml"], **change})
    files["rename.yaml"] = "- op: replace\n  path: /metadata/name\n  value: c2\n"
    files["smp.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n"
    user = _user_of("c")
    root = _write(tmp_path / "r", {"a": files, "b": _objects(user)})
    assert _kubectl(root).returncode == 0
    assert _tree(root).parts == ()


def test_a_rename_would_reach_across_parts(tmp_path: Path) -> None:
    """The control for the case above: kustomize points b's reference at a's renamed object."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    files = _objects(cm)
    files["kustomization.yaml"] = "namePrefix: p-\nresources: [objects.yaml]\n"
    user = _user_of("c")
    root = _write(tmp_path / "r", {"a": files, "b": _objects(user)})
    whole = _kubectl(root).stdout
    assert "name: p-c" in whole.split("kind: Deployment")[1]
    forced = Tree(Path(root).resolve(), (), False, ("parts/a", "parts/b"))
    assert _naive(root, forced, 2) != whole


def test_json_patches_that_keep_ids_split(tmp_path: Path) -> None:
    files = _objects({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    files["kustomization.yaml"] = yaml.safe_dump({
        "resources": ["objects.yaml"], "namespace": "team-a",
        "patches": [{"path": "p.yaml", "target": {"kind": "ConfigMap"}},
                    {"patch": "- op: add\n  path: /metadata/labels\n  value: {a: b}\n",
                     "target": {"kind": "ConfigMap"}}]})
    files["p.yaml"] = "- op: add\n  path: /data\n  value: {k: v}\n"
    root = _write(tmp_path / "r", {"a": files, "b": _objects(_sa("s", "team-b"))})
    tree = _tree(root)
    assert tree.parts == ("parts/a", "parts/b")
    split = kustomization.build_in_parts(tree, 2)
    assert split is not None and split[0] == _kubectl(root).stdout


@pytest.mark.parametrize("top", [
    "resources: [parts/a, parts/b]\nnamespace: x\n",
    "resources: [parts/a, parts/b]\nsortOptions: {order: fifo}\n",
    "resources: [parts/a, parts/b, parts/a/objects.yaml]\n",
    "resources: [parts/a, parts/a]\n",
    "kind: Component\nresources: [parts/a, parts/b]\n",
], ids=["namespace", "sortOptions", "a-file", "twice", "component"])
def test_a_root_that_does_more_than_list_directories_is_built_whole(tmp_path: Path, top: str) -> None:
    root = _write(tmp_path / "r", {"a": _objects(_sa("s", "x")), "b": _objects(_sa("t", "x"))}, top)
    assert _tree(root).parts == ()


def test_scan_reads_kustomize_output_or_declines() -> None:
    text = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  annotations:\n    name: not-this\n"
            "  name: c\n  namespace: 'ns'\ndata:\n  name: nor-this\n---\n"
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: \"d\"\n")
    docs = split_docs.scan(text, 0)
    assert docs is not None
    assert [(d.group, d.version, d.kind, d.namespace, d.name) for d in docs] == [
        ("", "v1", "ConfigMap", "ns", "c"), ("apps", "v1", "Deployment", "", "d")]
    assert "---\n".join(d.text for d in docs) == text
    for odd in ("# a comment\napiVersion: v1\n", "apiVersion: v1\nkind: K\nmetadata:\n  name: a # b\n",
                "kind: K\nmetadata:\n  name: \"a\\u0062\"\n", "kind: |\n  K\n", "kind: K"):
        assert split_docs.scan(odd, 0) is None, odd


def test_confirm_holds_the_scan_to_what_yaml_read() -> None:
    docs = split_docs.scan("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", 0)
    assert docs is not None
    ids = tuple(d.id() for d in docs)
    assert split_docs.confirm(ids, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}])
    assert not split_docs.confirm(ids, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}])
    assert not split_docs.confirm(ids, [])


# --- in collect -------------------------------------------------------------------------------

def _many(root: Path, n: int) -> Path:
    entries = {f"e{i:02d}": _objects(_sa(f"s{i}", f"team-{i % 3}"),
                                     {"apiVersion": "v1", "kind": "ConfigMap",
                                      "metadata": {"name": "shared", "namespace": f"team-{i}"}})
               for i in range(n)}
    return _write(root, entries)


def _seen(objs: list[manifests.K8sObject]) -> list[tuple[str, str, str | None]]:
    return [(o.obj["kind"], o.obj["metadata"]["name"], o.obj["metadata"].get("namespace")) for o in objs]


def _spy_on_parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Two CPUs, and the part counts each split build was asked for."""
    calls: list[int] = []
    real = kustomization.build_in_parts

    def spy(tree: Tree, n: int) -> object:
        calls.append(n)
        return real(tree, n)

    monkeypatch.setattr(manifests.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(kustomization, "build_in_parts", spy)
    monkeypatch.setattr(manifests, "SPLIT_FROM", 12)  # the policy, on trees quick to build
    return calls


def test_collect_builds_a_large_root_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _spy_on_parts(monkeypatch)
    n = manifests.SPLIT_FROM + 4
    root = _many(tmp_path / "r", n)
    split = manifests.collect([str(root)])
    assert calls == [manifests.PARTS_PER_CPU * 2]
    monkeypatch.setattr(manifests, "SPLIT_FROM", 10_000)
    whole = manifests.collect([str(root)])
    assert calls == [manifests.PARTS_PER_CPU * 2]  # not asked again
    assert _seen(split) == _seen(whole) and len(whole) == 2 * n
    assert [o.pos for o in split] == [o.pos for o in whole]


def test_collect_builds_whole_when_the_parse_disagrees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scan that misread a document (forced here: no real output makes it) is caught once the
    output is parsed, and the whole build is read instead."""
    calls = _spy_on_parts(monkeypatch)
    root = _many(tmp_path / "r", manifests.SPLIT_FROM)
    real_scan = split_build.scan

    def misread(text: str, part: int) -> list[split_docs.Doc] | None:
        docs = real_scan(text, part)
        return [split_docs.Doc(d.text, d.part, d.group, d.version, d.kind, d.namespace, d.name + "x")
                for d in docs] if docs else docs

    monkeypatch.setattr(split_build, "scan", misread)
    got = manifests.collect([str(root)])
    assert calls == [2]  # it was built in parts, then read whole
    monkeypatch.setattr(manifests, "SPLIT_FROM", 10_000)
    assert _seen(got) == _seen(manifests.collect([str(root)]))


def test_an_inline_patch_that_is_not_yaml_is_kustomizes_to_report(tmp_path: Path) -> None:
    files = _objects({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}})
    files["kustomization.yaml"] = yaml.safe_dump({"resources": ["objects.yaml"], "patches": [
        {"patch": "- op: [unclosed\n", "target": {"kind": "ConfigMap"}}]})
    root = _write(tmp_path / "r", {"a": files, "b": _objects(_sa("s", "x"))})
    assert _tree(root).parts == ()  # no error of check_tree's: the build reports it
    assert _kubectl(root).returncode != 0


# --- a root that wraps one directory (the generated argocd/clusters/<name>/) -----------------

def _wrapped(tmp_path: Path, wrapper: dict[str, object], files: dict[str, str] | None = None) -> Path:
    (tmp_path / ".git").mkdir(exist_ok=True)
    inner = _write(tmp_path / "r", {
        f"e{i}": _objects(_sa(f"s{i}", f"team-{i % 2}"),
                          {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                           "metadata": {"name": f"p{i}", "namespace": f"team-{i % 2}"}})
        for i in range(5)})
    top = tmp_path / "wrap"  # beside the root it wraps, as argocd/clusters/<c> is beside clusters/<c>
    top.mkdir()
    for f, text in (files or {}).items():
        (top / f).write_text(text)
    (top / "kustomization.yaml").write_text(yaml.safe_dump({"resources": [os.path.relpath(inner, top)], **wrapper}))
    return top


_WAVE = '{"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy", "metadata": {"name": "all", "annotations": {"argocd.argoproj.io/sync-wave": "-1"}}}'


def test_a_wrapping_root_with_targeted_patches_splits(tmp_path: Path) -> None:
    top = _wrapped(tmp_path, {"patches": [
        {"patch": _WAVE, "target": {"group": "cilium.io", "kind": "CiliumNetworkPolicy"}},
        {"path": "labels.yaml", "target": {"kind": "ServiceAccount", "labelSelector": "x notin (y)"}}]},
        {"labels.yaml": "- op: add\n  path: /metadata/labels\n  value: {team: a}\n"})
    tree = _tree(top)
    assert len(tree.parts) == 5 and tree.parts_from == (tmp_path / "r").resolve()
    whole = _kubectl(top)
    assert whole.returncode == 0 and "sync-wave" in whole.stdout and "team: a" in whole.stdout
    for n in (2, 3):
        split = kustomization.build_in_parts(tree, n)
        assert split is not None and split[0] == whole.stdout, n


@pytest.mark.parametrize("wrapper", [
    {"patches": [{"patch": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s1, namespace: team-1}\n"
                           "automountServiceAccountToken: false\n"}]},
    {"patches": [{"patch": _WAVE, "target": {"kind": "CiliumNetworkPolicy"}, "options": {"allowNameChange": True}}]},
    {"patches": [{"patch": "- op: replace\n  path: /metadata/name\n  value: z\n", "target": {"name": "s1"}}]},
    {"patches": [{"patch": _WAVE, "target": {"kind": "CiliumNetworkPolicy"}}], "namespace": "x"},
], ids=["untargeted", "options", "renames", "more-fields"])
def test_a_wrapping_root_that_does_more_is_built_whole(tmp_path: Path, wrapper: dict[str, object]) -> None:
    top = _wrapped(tmp_path, wrapper)
    assert _tree(top).parts == ()  # (with allowNameChange every policy becomes "all": refused)


def test_an_untargeted_patch_would_fail_in_the_parts_without_its_object(tmp_path: Path) -> None:
    """The control for "untargeted": that patch names one object, which the other parts lack."""
    patch = "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: s1, namespace: team-1}\nautomountServiceAccountToken: false\n"
    top = _wrapped(tmp_path, {"patches": [{"patch": patch}]})
    part = tmp_path / "part"
    part.mkdir()
    (part / "kustomization.yaml").write_text(yaml.safe_dump({
        "resources": ["../r/parts/e0"], "patches": [{"patch": patch}]}))
    assert _kubectl(top).returncode == 0 and _kubectl(part).returncode != 0


def test_small_roots_beside_do_not_keep_a_large_one_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A small root (few kustomizations: the monitoring roots beside a cluster's) takes a CPU only
    briefly, so one large root beside it is still built in parts; two large ones fill two CPUs."""
    calls = _spy_on_parts(monkeypatch)
    big = _many(tmp_path / "big", manifests.SPLIT_FROM)
    small = _write(tmp_path / "small", {"a": _objects(_sa("s", "x")), "b": _objects(_sa("t", "x"))})
    other = _many(tmp_path / "other", manifests.SPLIT_FROM)
    manifests.collect([str(big), str(small)])
    assert calls == [manifests.PARTS_PER_CPU * 2]
    manifests.collect([str(big), str(other)])
    assert calls == [manifests.PARTS_PER_CPU * 2]


# --- cases a review found (each once built in parts where the whole build differed) --------

def _cm(name: str, ns: str = "", **meta: object) -> dict[str, object]:
    m: dict[str, object] = {"name": name, **meta}
    if ns:
        m["namespace"] = ns
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": m}


def _user_of(cm: str) -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x",
                                                           "envFrom": [{"configMapRef": {"name": cm}}]}]}}}}


@pytest.mark.parametrize("annotations", [
    {"internal.config.kubernetes.io/needsHashSuffix": "enabled"},
    {"internal.config.kubernetes.io/previousNames": "cfg", "internal.config.kubernetes.io/previousKinds": "ConfigMap",
     "internal.config.kubernetes.io/previousNamespaces": "default"},
], ids=["needsHashSuffix", "previousNames"])
def test_kustomizes_internal_annotations_build_whole(tmp_path: Path, annotations: dict[str, str]) -> None:
    root = _write(tmp_path / "r", {"a": _objects(_user_of("cfg")),
                                   "b": _objects(_cm("renamed" if "previousNames" in str(annotations) else "cfg",
                                                     annotations=annotations))})
    whole = _kubectl(root)
    assert whole.returncode == 0
    forced = Tree(root.resolve(), (), False, ("parts/a", "parts/b"))
    assert _naive(root, forced, 2) != whole.stdout  # the control: the whole build renamed a reference
    assert _tree(root).parts == ()


def test_a_local_config_object_builds_whole(tmp_path: Path) -> None:
    local = _cm("x", annotations={"config.kubernetes.io/local-config": "true"})
    root = _write(tmp_path / "r", {"a": _objects(local), "b": _objects(_cm("x"))})
    assert _kubectl(root).returncode != 0  # the local object still takes its id, then is dropped
    assert _tree(root).parts == ()


def test_an_entry_above_the_root_builds_whole(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "kustomization.yaml").write_text("resources: [objects.yaml]\n")
    (tmp_path / "a" / "objects.yaml").write_text(yaml.safe_dump(_cm("a")))
    (tmp_path / "kustomization.yaml").write_text("resources: [a]\n")
    root = tmp_path / "root"  # in the repository of tmp_path, below the directory it lists
    (root / "b").mkdir(parents=True)
    for f, text in _objects(_cm("b")).items():
        (root / "b" / f).write_text(text)
    (root / "kustomization.yaml").write_text("resources: [.., b]\n")
    assert "cycle" in _kubectl(root).stderr
    assert _tree(root).parts == ()


def test_two_kustomization_files_build_whole(tmp_path: Path) -> None:
    root = _write(tmp_path / "r", {"a": _objects(_cm("a")), "b": _objects(_cm("b"))})
    (root / "kustomization.yml").write_text((root / "kustomization.yaml").read_text())
    assert _kubectl(root).returncode != 0
    assert _tree(root).parts == ()


@pytest.mark.parametrize("names", [("yes", "no"), ("1", "2")])
def test_entries_kustomize_does_not_read_as_strings_build_whole(tmp_path: Path, names: tuple[str, str]) -> None:
    root = _write(tmp_path / "r", {n: _objects(_cm(f"c{n}")) for n in names},
                  "resources: [" + ", ".join(f"parts/{n}".replace("parts/", "") for n in names) + "]\n")
    for n in names:
        (root / "parts" / n).rename(root / n)
    assert _kubectl(root).returncode != 0  # a boolean, a number: not a path to kustomize
    assert _tree(root).parts == ()


def test_a_cluster_scoped_kind_of_kustomizes_schema_shares_an_id_across_namespaces(tmp_path: Path) -> None:
    opts = [{"apiVersion": "v1", "kind": "NodeProxyOptions", "metadata": {"name": "x", "namespace": ns}}
            for ns in ("a", "b")]
    root = _write(tmp_path / "r", {"a": _objects(opts[0]), "b": _objects(opts[1])})
    assert _kubectl(root).returncode != 0
    assert kustomization.build_in_parts(_tree(root), 2) is None


def test_a_subject_written_as_one_mapping_is_looked_at(tmp_path: Path) -> None:
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "rb", "namespace": "team-a"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": {"kind": "ServiceAccount", "name": "sa"}}
    moved = _objects({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}})
    moved["kustomization.yaml"] = "namespace: team-a\nresources: [objects.yaml]\n"
    root = _write(tmp_path / "r", {"a": _objects(binding), "b": moved})
    whole = _kubectl(root).stdout
    tree = _tree(root)
    assert _naive(root, tree, 2) != whole  # kustomize set the namespace in that odd shape too
    assert kustomization.build_in_parts(tree, 2) is None


def test_two_kinds_of_one_legacy_sort_text_build_whole(tmp_path: Path) -> None:
    objs = [{"apiVersion": "g_v1/A", "kind": "B", "metadata": {"name": "x"}},
            {"apiVersion": "g/v1", "kind": "A_B", "metadata": {"name": "x"}}]
    root = _write(tmp_path / "r", {"a": _objects(objs[0]), "b": _objects(objs[1])})
    assert _kubectl(root).returncode == 0
    assert kustomization.build_in_parts(_tree(root), 2) is None


def test_a_wrapper_target_that_is_not_a_string_builds_whole(tmp_path: Path) -> None:
    top = _wrapped(tmp_path, {})
    (top / "kustomization.yaml").write_text(
        "resources: [../r]\npatches:\n- target: {kind: ConfigMap, name: null}\n"
        "  patch: '{\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"all\"}, \"data\": {\"k\": \"v\"}}'\n")
    assert _tree(top).parts == ()


def test_dotdot_after_a_symlink_is_refused(tmp_path: Path) -> None:
    """kustomize joins `link/../b` as text (root/b), the file system follows the link first
    (other/b): the directory kustomize would build is not the one checked. Refused outright."""
    root = _write(tmp_path / "r", {"a": _objects(_cm("a")), "b": _objects(_cm("b"))})
    (tmp_path / "r" / "other" / "x").mkdir(parents=True)
    (tmp_path / "r" / "other" / "b").mkdir()
    (tmp_path / "r" / "other" / "b" / "kustomization.yaml").write_text("resources: []\n")
    (root / "parts" / "link").symlink_to(root / "other" / "x")
    (root / "kustomization.yaml").write_text("resources: [parts/a, parts/link/../b]\n")
    with pytest.raises(InputError, match=r"after a symbolic link: kustomize resolves it to .*parts/b"):
        _tree(root)


# --- cases a second review found -------------------------------------------------------------

def test_an_api_version_with_two_slashes_sorts_as_kustomize_splits_it(tmp_path: Path) -> None:
    one = {"apiVersion": "x/y/z", "kind": "Foo", "metadata": {"name": "one"}}
    two = {"apiVersion": "x0/v1", "kind": "Foo", "metadata": {"name": "two"}}
    root = _write(tmp_path / "r", {"a": _objects(one), "b": _objects(two)})
    whole = _kubectl(root)
    assert whole.returncode == 0
    split = kustomization.build_in_parts(_tree(root), 2)
    assert split is None or split[0] == whole.stdout


def test_forbidden_text_spelled_with_an_escape_is_read_as_yaml_reads_it(tmp_path: Path) -> None:
    hashed = ('apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\n  annotations:\n'
              '    "internal.config.kubernetes\\x2Eio/needsHashSuffix": enabled\n')
    root = _write(tmp_path / "r", {"a": _objects(_user_of("cfg")),
                                   "b": {"objects.yaml": hashed, "kustomization.yaml": "resources: [objects.yaml]\n"}})
    assert "cfg-" in _kubectl(root).stdout  # kustomize decoded it, and hashed the name
    assert _tree(root).parts == ()


@pytest.mark.parametrize("patch", [
    '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "all", "annotations": '
    '{"internal.config.kubernetes.io/needsHashSuffix": "enabled"}}}',
    '{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "all"}, "$patch": "delete"}',
], ids=["renames", "deletes"])
def test_a_wrapper_patch_that_renames_or_deletes_builds_whole(tmp_path: Path, patch: str) -> None:
    top = _wrapped(tmp_path, {"patches": [{"patch": patch, "target": {"kind": "ConfigMap"}}]})
    assert _tree(top).parts == ()


def test_a_wrapper_patch_file_outside_the_root_builds_whole(tmp_path: Path) -> None:
    top = _wrapped(tmp_path, {"patches": [{"path": "../p.yaml", "target": {"kind": "ServiceAccount"}}]})
    (tmp_path / "p.yaml").write_text("- op: add\n  path: /metadata/labels\n  value: {a: b}\n")
    assert "not in or below" in _kubectl(top).stderr
    assert _tree(top).parts == ()


@pytest.mark.parametrize("name", ["y", "1e3", "0o17"])
def test_entries_one_yaml_reader_takes_as_no_string_build_whole(tmp_path: Path, name: str) -> None:
    root = _write(tmp_path / "r", {"a": _objects(_cm("a"))}, f"resources: [parts/a, {name}]\n")
    (root / name).mkdir()
    for f, text in _objects(_cm("b")).items():
        (root / name / f).write_text(text)
    assert _tree(root).parts == ()


def test_an_entry_that_looks_inline_is_still_a_path_and_checked(tmp_path: Path) -> None:
    """`resources: ["{c}"]` names a directory `{c}`: it is checked like any other (here: a
    remote base inside it is refused), not skipped as inline text."""
    root = _write(tmp_path / "r", {"a": _objects(_cm("a"))}, 'resources: [parts/a, "{c}"]\n')
    (root / "{c}").mkdir()
    (root / "{c}" / "kustomization.yaml").write_text("resources: [github.com/example/repo]\n")
    with pytest.raises(kustomization.NotLocal, match="remote"):
        _tree(root)
