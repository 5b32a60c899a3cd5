"""`check` checks what Argo CD and Flux apply (topogate.gitops): the fixture repositories give the
verdicts the engines' renders imply, findings cite the engine object's line and the object's,
what cannot be read is said, and the Flux and Argo CD objects `generate` writes render to exactly
the objects `check --rendered` checks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, invoke, kubectl

from topogate.core import redact
from topogate.generators import render_tree
from topogate.gitops.objects import RenderedObject
from topogate.gitops.render import render
from topogate.sources.inventory import load_inventory
from topogate.sources.located import parse_yaml
from topogate.sources.manifests import collect
from topogate.tree import writer

FLUX = FIXTURES / "gitops-flux"
ARGO = FIXTURES / "gitops-argocd"
URL = "https://git.example.com/acme/repo.git"


def check(*args: str) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    r = invoke("check", *args, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    data = json.loads(r.stdout)
    return r.exit_code, data["findings"], data


def git_repo(root: Path, files: dict[str, Any]) -> Path:
    """A committed git repository holding `files` (YAML documents, or text)."""
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            p.write_text(content)
        else:
            p.write_text(yaml.safe_dump_all(content if isinstance(content, list) else [content], sort_keys=False))
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com",
                    "commit", "-qm", "x"], check=True)
    return root


INVENTORY = f"""apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {{name: t}}
gitops: {{repoURL: {URL}}}
clusters:
- name: c1
  provider: aws
  region: us-east-1
  zones:
  - name: zone-a
    pools: [{{name: gpu, nodes: 2, gpusPerNode: 4}}]
  networkZones: [{{name: all, zones: [zone-a]}}]
"""


def _job(zone: str) -> dict[str, Any]:
    group = {"replicas": 1, "restartPolicy": "OnFailure", "template": {"metadata": {"labels": {"app": "t"}}, "spec": {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}}},
        "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "t"},
            "spec": {"pytorchReplicaSpecs": {"Master": group, "Worker": group}}}


def _flux(path: str, spec: dict[str, Any] | None = None, url: str = URL) -> list[dict[str, Any]]:
    return [{"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
             "metadata": {"name": "repo", "namespace": "flux-system"}, "spec": {"interval": "1m", "url": url}},
            {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
             "metadata": {"name": "app", "namespace": "flux-system"},
             "spec": {"interval": "1m", "prune": True, "path": path, "targetNamespace": "ml",
                      "sourceRef": {"kind": "GitRepository", "name": "repo"}, **(spec or {})}}]


def _app(source: dict[str, Any], name: str = "app") -> dict[str, Any]:
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": name, "namespace": "argocd"},
            "spec": {"project": "default", "destination": {"name": "c1", "namespace": "ml"},
                     "source": {"repoURL": URL, "targetRevision": "main", **source}}}


def _rules(fs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((str(f["rule"]), str(f["severity"])) for f in fs)


# -- the fixture repositories ------------------------------------------------------------------


def test_flux_fixture_per_cluster_substitution_patch_and_target_namespace() -> None:
    """East gets zone-a through postBuild.substitute and is fine; west's Kustomization-level patch
    sends the Master to zone-d: the job can split, cited at the patch and at the job. Before
    the render layer both groups were `In [${TRAIN_ZONE}]`, TG103 twice, in no namespace."""
    code, fs, data = check(str(FLUX / "inventory.yaml"), str(FLUX / "clusters"))
    assert code == 1 and _rules(fs) == [("TG102", "error")], fs
    (f,) = fs
    assert f["object"] == "PyTorchJob/ml-team/train"
    # at the patch that sends the Master away (the cause), the job's own line as context
    assert str(f["file"]).endswith("clusters/west/flux.yaml") and f["line"] == 28
    assert "the object itself is written at fixtures/gitops-flux/apps/train/pytorchjob.yaml:" in f["message"]
    assert "Flux Kustomization flux-system/train" in f["message"]
    assert "spec.patches[0] (fixtures/gitops-flux/clusters/west/flux.yaml:28:5)" in f["message"]
    assert "spec.postBuild.substitute.TRAIN_ZONE (fixtures/gitops-flux/clusters/west/flux.yaml:" in f["message"]
    jobs = {j["cluster"]: j for j in data["workloads"]}
    assert jobs["east"]["colocated"] and jobs["east"]["schedulable"] and jobs["east"]["object"] == "PyTorchJob/ml-team/train"
    assert not jobs["west"]["colocated"] and jobs["west"]["schedulable"]


def test_flux_fixture_field_finding_points_at_the_substitution(tmp_path: Path) -> None:
    """A finding about the substituted field itself sits on the substitute line and names the
    job's own line: west's zone changed to one that does not exist makes both groups
    unschedulable, at `TRAIN_ZONE: zone-x`."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES.parent / "fixtures" / "gitops-flux", repo / "fixtures" / "gitops-flux")
    west = repo / "fixtures/gitops-flux/clusters/west/flux.yaml"
    west.write_text(west.read_text().replace("TRAIN_ZONE: zone-c", "TRAIN_ZONE: zone-x"))
    git_repo(repo, {})
    code, fs, _ = check(str(repo / "fixtures/gitops-flux/inventory.yaml"), str(repo / "fixtures/gitops-flux/clusters"))
    tg103 = [f for f in fs if f["rule"] == "TG103"]
    assert code == 1 and tg103, fs
    for f in tg103:
        assert str(f["file"]).endswith("clusters/west/flux.yaml") and f["line"] == 26, f
        assert "In [zone-x]" in f["message"] and "the object itself is written at" in f["message"]
        assert "apps/train/pytorchjob.yaml:" in f["message"]


def test_argocd_fixture_application_patch_and_namespace() -> None:
    code, fs, data = check(str(ARGO / "inventory.yaml"), str(ARGO / "argocd"))
    assert code == 1 and _rules(fs) == [("TG102", "error")], fs
    (f,) = fs
    assert f["object"] == "PyTorchJob/ml-research/train"
    assert "spec.source.kustomize.patches[0] (fixtures/gitops-argocd/argocd/apps.yaml:32:9)" in f["message"]
    assert str(f["file"]).endswith("argocd/apps.yaml") and f["line"] == 32
    assert "the object itself is written at fixtures/gitops-argocd/apps/train/pytorchjob.yaml:" in f["message"]
    objects = {j["cluster"]: j["object"] for j in data["workloads"]}
    # east: the destination namespace; west: the Application's kustomize namespace wins over it
    assert objects == {"east": "PyTorchJob/ml-team/train", "west": "PyTorchJob/ml-research/train"}


# -- round trip: what generate writes --------------------------------------------------------


def _key(o: dict[str, Any]) -> tuple[str, str, str]:
    md = o.get("metadata") or {}
    return (str(o.get("kind")), str(md.get("namespace", "")), str(md.get("name")))


def _without_waves(o: dict[str, Any]) -> dict[str, Any]:
    md = dict(o["metadata"])
    ann = {k: v for k, v in (md.get("annotations") or {}).items() if not k.startswith("argocd.argoproj.io/")}
    md.pop("annotations", None)
    return {**o, "metadata": {**md, **({"annotations": ann} if ann else {})}}


def test_generated_engine_objects_render_to_what_check_rendered_reads(tmp_path: Path) -> None:
    """The Argo CD Applications and Flux Kustomizations `generate` writes, each engine's
    rendered from its own objects alone, give exactly the objects `check --rendered OUT OUT`
    reads (each cluster's clusters/<c> and monitoring/<c>): Flux's as they are, Argo CD's with
    its sync waves (argocd/clusters/<c> adds them, built here in a scratch copy), which nothing
    checked reads."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "multi", repo / "inventory")
    inv_path = repo / "inventory" / "inventory.yaml"
    inv = load_inventory(str(inv_path))
    out = repo / "deploy"
    writer.write_tree(str(out), render_tree(inv, str(out)))
    git_repo(repo, {})
    today = collect([str(out)], also_inside=[str(inv_path)])
    inside = [str(out), str(inv_path)]

    def engine_objects(pattern: str) -> list[Any]:
        return [o for f in sorted(out.glob(pattern)) for o in parse_yaml(f.read_text(), str(f), str(f))]

    argo = render(engine_objects("argocd/apps/*.yaml"), inv, also_inside=inside)
    flux = render(engine_objects("flux/*/*.yaml"), inv, also_inside=inside)
    assert not argo.notes and not flux.notes, (argo.notes, flux.notes)
    for c in inv.clusters:
        read = sorted((o.obj for o in today if o.built_from in (str(out / "clusters" / c.name),
                                                                 str(out / "monitoring" / c.name))), key=_key)
        assert read
        by_flux = [o.obj for o in flux.objects if isinstance(o, RenderedObject) and o.cluster == c.name
                   and o.kind not in ("Kustomization", "GitRepository")]
        assert sorted(by_flux, key=_key) == read
        by_argo = sorted((o.obj for o in argo.objects if isinstance(o, RenderedObject) and o.cluster == c.name),
                         key=_key)
        assert [_without_waves(o) for o in by_argo] == read
        waves = [d for d in yaml.safe_load_all(subprocess.run(
            [kubectl(), "kustomize", str(out / "argocd" / "clusters" / c.name)], capture_output=True, text=True,
            check=True).stdout) if d]
        of_cluster_app = [o.obj for o in argo.objects if isinstance(o, RenderedObject) and o.render is not None
                          and o.render.name == f"topogate-{c.name}"]
        assert sorted(of_cluster_app, key=_key) == sorted(waves, key=_key)


def test_check_rendered_of_the_generated_tree_is_unchanged(tmp_path: Path) -> None:
    """With both engines' objects among the inputs, each object Argo CD and Flux would both
    apply is checked once: `check --rendered OUT OUT` says what it said before the render."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "multi", repo / "inventory")
    inv_path = repo / "inventory" / "inventory.yaml"
    inv = load_inventory(str(inv_path))
    out = repo / "deploy"
    writer.write_tree(str(out), render_tree(inv, str(out)))
    git_repo(repo, {})
    code, fs, data = check(str(inv_path), "--rendered", str(out), str(out))
    assert code == 0 and [(f["rule"], f["object"]) for f in fs] == [("TG122", "TrainJob/llm/gpt-sft")], fs
    assert len(data["workloads"]) == 4


def test_a_generated_tree_checked_elsewhere_than_its_gitops_path(tmp_path: Path) -> None:
    """A tree `generate` wrote to OUT other than `gitops.path` (here `out`, the inventory saying
    `deploy`): its Applications' and Kustomizations' paths resolve inside OUT, which stands for
    `gitops.path`, so they render (no "path does not exist") and the verdict is the usual one."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "multi", repo / "inventory")
    inv_path = repo / "inventory" / "inventory.yaml"
    out = repo / "out"
    writer.write_tree(str(out), render_tree(load_inventory(str(inv_path)), str(out)))
    git_repo(repo, {})
    code, fs, data = check(str(inv_path), "--rendered", str(out), str(out))
    assert code == 0 and [(f["rule"], f["object"]) for f in fs] == [("TG122", "TrainJob/llm/gpt-sft")], fs
    assert len(data["workloads"]) == 4


# -- what cannot be read is said --------------------------------------------------------------


def _run(tmp_path: Path, files: dict[str, Any], *paths: str) -> tuple[int, list[dict[str, Any]], dict[str, Any]]:
    repo = git_repo(tmp_path / "repo", {"inventory.yaml": INVENTORY, **files})
    return check(str(repo / "inventory.yaml"), *(str(repo / p) for p in paths))


def test_substitute_from_not_among_the_inputs(tmp_path: Path) -> None:
    """A ConfigMap only the cluster has: the job that reads ${ZONE} is not analysed (never as the
    literal), and the finding says so."""
    code, fs, data = _run(tmp_path, {
        "app/job.yaml": _job("${ZONE}"),
        "flux.yaml": _flux("./app", {"postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "vars"}]}}),
    }, "flux.yaml")
    assert _rules(fs) == [("TG012", "warning")] and not data["workloads"], fs
    assert "ConfigMap flux-system/vars, not among the inputs" in fs[0]["message"]
    assert "not analysed" in fs[0]["message"]


def test_substitute_from_among_the_inputs(tmp_path: Path) -> None:
    code, fs, data = _run(tmp_path, {
        "app/job.yaml": _job("${ZONE}"),
        "flux.yaml": [*_flux("./app", {"postBuild": {"substituteFrom": [{"kind": "ConfigMap", "name": "vars"}]}}),
                      {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "vars", "namespace": "flux-system"},
                       "data": {"ZONE": "zone-a"}}],
    }, "flux.yaml")
    assert (code, fs) == (0, []) and data["workloads"][0]["object"] == "PyTorchJob/ml/t"


def test_unset_variable_strict_fails_the_kustomization(tmp_path: Path) -> None:
    code, fs, data = _run(tmp_path, {
        "app/job.yaml": _job("${ZONE}"),
        "flux.yaml": _flux("./app", {"postBuild": {"substitute": {"OTHER": "x"}}}),
    }, "flux.yaml")
    assert code == 1 and _rules(fs) == [("TG013", "error")] and not data["workloads"], fs
    assert "${ZONE} in PyTorchJob/ml/t" in fs[0]["message"] and "applies nothing" in fs[0]["message"]


def test_no_variables_applies_the_text_as_written(tmp_path: Path) -> None:
    code, fs, _ = _run(tmp_path, {
        "app/job.yaml": _job("${ZONE}"),
        "flux.yaml": _flux("./app", {"postBuild": {}}),
    }, "flux.yaml")
    assert ("TG013", "warning") in _rules(fs) and ("TG103", "error") in _rules(fs), fs


def test_default_and_opt_out(tmp_path: Path) -> None:
    job = _job("${ZONE:=zone-a}")
    opted = _job("${ZONE}")
    opted["metadata"] = {"name": "u", "annotations": {"kustomize.toolkit.fluxcd.io/substitute": "disabled"}}
    code, fs, data = _run(tmp_path, {
        "app/job.yaml": [job, opted],
        "flux.yaml": _flux("./app", {"postBuild": {"substitute": {"OTHER": "x"}}}),
    }, "flux.yaml")
    # t takes its default; u is applied as written (Flux leaves it alone), so it fits no node
    assert [(f["rule"], f["object"]) for f in fs] == [("TG103", "PyTorchJob/ml/u")] * 2, fs
    assert {j["object"]: j["schedulable"] for j in data["workloads"]} == {"PyTorchJob/ml/t": True,
                                                                          "PyTorchJob/ml/u": False}


def test_other_repository_helm_plugin_and_unknown_git_repository(tmp_path: Path) -> None:
    code, fs, _ = _run(tmp_path, {
        "app/job.yaml": _job("zone-a"),
        "apps.yaml": [
            _app({"path": "app"}) | {"metadata": {"name": "ours", "namespace": "argocd"}},
            {**_app({"path": "x"}, "theirs"), "spec": {**_app({"path": "x"})["spec"],
                                                      "source": {"repoURL": "https://other.example/x.git", "path": "x"}}},
            {**_app({}, "chart"), "spec": {**_app({})["spec"], "source": {"repoURL": "https://charts.example",
                                                                         "chart": "c", "targetRevision": "1"}}},
            _app({"path": "app", "plugin": {"name": "p"}}, "plugin"),
        ],
        "flux.yaml": [_flux("./app")[1]],
    }, "apps.yaml", "flux.yaml")
    messages = " | ".join(str(f["message"]) for f in fs if f["rule"] == "TG012")
    assert "another repository" in messages and "Helm chart" in messages and "Config Management Plugin" in messages
    assert "GitRepository flux-system/repo is not among the inputs" in messages
    assert {f["rule"] for f in fs} == {"TG012"}


def test_each_cluster_its_own_git_repository(tmp_path: Path) -> None:
    """flux-system/repo in each cluster's directory, one fetching this repository and one
    another: each Kustomization is resolved against its own cluster's."""
    inv = INVENTORY.replace("clusters:\n", "clusters:\n- {name: c2, provider: aws, region: us-east-1, zones: [{name: zone-a, "
                            "pools: [{name: gpu, nodes: 2, gpusPerNode: 4}]}], networkZones: [{name: all, "
                            "zones: [zone-a]}]}\n")
    ours, theirs = _flux("./app"), _flux("./app", url="https://other.example/x.git")
    code, fs, data = _run(tmp_path, {"inventory.yaml": inv, "app/job.yaml": _job("zone-a"),
                                     "clusters/c1/flux.yaml": ours, "clusters/c2/flux.yaml": theirs},
                          "clusters")
    assert [(f["rule"], f["file"].split("repo/")[-1]) for f in fs] == [("TG012", "clusters/c2/flux.yaml")], fs
    assert [(j["cluster"], j["object"]) for j in data["workloads"]] == [("c1", "PyTorchJob/ml/t")]


def test_inventory_without_repo_url_cannot_tell(tmp_path: Path) -> None:
    repo = git_repo(tmp_path / "repo", {"inventory.yaml": INVENTORY.replace(f"gitops: {{repoURL: {URL}}}\n", ""),
                                        "app/job.yaml": _job("zone-a"), "apps.yaml": _app({"path": "app"})})
    code, fs, _ = check(str(repo / "inventory.yaml"), str(repo / "apps.yaml"))
    assert _rules(fs) == [("TG012", "warning")] and "no `gitops.repoURL`" in fs[0]["message"]


def test_missing_path_fails_the_render(tmp_path: Path) -> None:
    code, fs, _ = _run(tmp_path, {"flux.yaml": _flux("./nowhere"), "apps.yaml": _app({"path": "gone"})},
                       "flux.yaml", "apps.yaml")
    assert code == 1 and _rules(fs) == [("TG014", "error")] * 2, fs


def test_directory_source_recurse_include_exclude_and_jsonnet(tmp_path: Path) -> None:
    code, fs, data = _run(tmp_path, {
        "app/job.yaml": _job("zone-a"),
        "app/skip.yaml": _job("zone-x") | {"metadata": {"name": "skipped"}},
        "app/deep/more.yaml": _job("zone-a") | {"metadata": {"name": "deep"}},
        "app/lib.jsonnet": "{}",
        "apps.yaml": _app({"path": "app", "directory": {"recurse": True, "exclude": "skip.yaml"}}),
    }, "apps.yaml")
    assert _rules(fs) == [("TG012", "warning")] and "lib.jsonnet" in fs[0]["message"], fs
    assert sorted(j["object"] for j in data["workloads"]) == ["PyTorchJob/ml/deep", "PyTorchJob/ml/t"]


def test_application_set_list_generator(tmp_path: Path) -> None:
    appset = {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "metadata": {"name": "s", "namespace": "argocd"},
              "spec": {"generators": [{"list": {"elements": [{"zone": "zone-a", "ns": "one"}, {"zone": "zone-x", "ns": "two"}]}}],
                       "template": {"metadata": {"name": "job-{{ns}}"},
                                    "spec": {"project": "default", "destination": {"name": "c1", "namespace": "{{ns}}"},
                                             "source": {"repoURL": URL, "path": "app", "kustomize": {
                                                 "patches": [{"target": {"kind": "PyTorchJob"}, "patch": yaml.safe_dump([
                                                     {"op": "replace", "path": "/spec/pytorchReplicaSpecs/Worker/template/spec/"
                                                      "affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/"
                                                      "nodeSelectorTerms/0/matchExpressions/0/values", "value": ["{{zone}}"]}])}]}}}}}}
    code, fs, data = _run(tmp_path, {"app/kustomization.yaml": {"resources": ["job.yaml"]}, "app/job.yaml": _job("zone-a"),
                                     "appset.yaml": appset}, "appset.yaml")
    assert {j["object"]: j["schedulable"] for j in data["workloads"]} == {"PyTorchJob/one/t": True, "PyTorchJob/two/t": False}
    assert {f["rule"] for f in fs} == {"TG103"} and all("ApplicationSet" not in str(f["file"]) or True for f in fs)


def test_secret_values_are_never_printed(tmp_path: Path) -> None:
    value = "zone-from-a-secret-9f3b"
    code, fs, _ = _run(tmp_path, {
        "app/job.yaml": _job("${ZONE}"),
        "flux.yaml": [*_flux("./app", {"postBuild": {"substituteFrom": [{"kind": "Secret", "name": "vars"}]}}),
                      {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "vars", "namespace": "flux-system"},
                       "stringData": {"ZONE": value}}],
    }, "flux.yaml")
    r = invoke("check", str(tmp_path / "repo" / "inventory.yaml"), str(tmp_path / "repo" / "flux.yaml"))
    assert code == 1 and any(f["rule"] == "TG103" for f in fs)
    assert value not in r.output and "[redacted]" in r.output
    redact.forget()


def test_the_repository_is_never_written(tmp_path: Path) -> None:
    """Flux writes its generated kustomization into the directory and Argo CD edits its own:
    topogate does both in a scratch copy."""
    repo = git_repo(tmp_path / "repo", {
        "inventory.yaml": INVENTORY, "plain/job.yaml": _job("zone-a"),
        "kust/kustomization.yaml": {"resources": ["job.yaml"]}, "kust/job.yaml": _job("zone-a"),
        "flux.yaml": _flux("./plain", {"namePrefix": "p-"}),
        "apps.yaml": _app({"path": "kust", "kustomize": {"namePrefix": "a-", "commonLabels": {"x": "y"}}})})
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    code, fs, data = check(str(repo / "inventory.yaml"), str(repo / "flux.yaml"), str(repo / "apps.yaml"))
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert before == after
    assert sorted(j["object"] for j in data["workloads"]) == ["PyTorchJob/ml/a-t", "PyTorchJob/ml/p-t"]


@pytest.mark.parametrize("path", ["../../../etc", "/etc"])
def test_paths_stay_inside_the_repository(tmp_path: Path, path: str) -> None:
    """Flux joins its path to the source's root securely (`..` stops there); Argo CD's path must
    be a directory of the repository."""
    code, fs, _ = _run(tmp_path, {"app/job.yaml": _job("zone-a"), "apps.yaml": _app({"path": path}),
                                  "flux.yaml": _flux(path)}, "apps.yaml", "flux.yaml")
    assert all(f["rule"] in ("TG014", "TG110", "TG005") for f in fs), fs
    assert any(f["rule"] == "TG014" and "Application" in f["object"] for f in fs)


# -- hostile input -------------------------------------------------------------------------------


def test_an_alias_bomb_through_substitution_is_not_expanded(tmp_path: Path) -> None:
    """Values can write anchors and aliases into the substituted text: a billion laughs made of
    nine variables is refused by the checks every file gets, in a moment, and said."""
    names = [f"L{i}" for i in range(9)]
    values = {names[0]: "&l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"}
    for i in range(1, 9):
        values[names[i]] = f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]"
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bomb"},
          "data": {f"k{i}": "${" + n + "}" for i, n in enumerate(names)}}
    code, fs, _ = _run(tmp_path, {"app/cm.yaml": cm, "app/job.yaml": _job("zone-a"),
                                  "flux.yaml": _flux("./app", {"postBuild": {"substitute": values}})}, "flux.yaml")
    assert [f["rule"] for f in fs] == ["TG012"] and "alias" in fs[0]["message"], fs


def test_deep_nesting_is_not_evaluated(tmp_path: Path) -> None:
    deep = "${A:-" * 200 + "x" + "}" * 200
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "deep"}, "data": {"k": deep}}
    code, fs, data = _run(tmp_path, {"app/cm.yaml": cm, "app/job.yaml": _job("${Z}"),
                                     "flux.yaml": _flux("./app", {"postBuild": {"substitute": {"Z": "zone-a"}}})},
                          "flux.yaml")
    assert [f["rule"] for f in fs] == ["TG012"] and "nested more than" in fs[0]["message"], fs
    assert data["workloads"][0]["schedulable"]


def test_flux_reads_a_kustomization_otherwise_than_kubectl_refused(tmp_path: Path) -> None:
    """An unknown field (Flux drops it, kubectl refuses it) and a number where a string belongs
    (Flux makes it one, kubectl refuses it): refused at their lines, exit 2."""
    repo = git_repo(tmp_path / "repo", {
        "inventory.yaml": INVENTORY, "app/job.yaml": _job("zone-a"),
        "app/kustomization.yaml": "resources: [job.yaml]\nnamePrefix: 1\nnamesPrefix: x-\n",
        "flux.yaml": _flux("./app")})
    r = invoke("check", str(repo / "inventory.yaml"), str(repo / "flux.yaml"))
    assert r.exit_code == 2, r.output
    assert "app/kustomization.yaml:2:13: `1` is read as a number here" in r.output
    assert "app/kustomization.yaml:3:1: `namesPrefix` is no field of a kustomization" in r.output
