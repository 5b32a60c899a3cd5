"""Argo CD and Flux trees: they build with the real kubectl kustomize, validate against the
upstream CRDs, point at paths that exist, and apply the network layer before the workloads.

Each example is rendered into a temporary copy of its fixture directory (OUT = `<copy>/out`), so
the overlays' relative paths to the job bases resolve exactly as in a user's repository.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, REPO, crd_errors, kubectl, kustomize_build

from topogate.generators import admission, argocd, flux, render_files, render_tree
from topogate.inventory.model import GitOps, Inventory
from topogate.k8s.kinds import KUEUE_KINDS
from topogate.sources.inventory import load_inventory

WAVE = argocd.SYNC_WAVE
# Kinds the GitOps and monitoring trees create: each must be checked against an upstream CRD.
MUST_HAVE_CRD = {"Application", "GitRepository", "Kustomization", "PrometheusRule",
                 "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "PyTorchJob", "MPIJob",
                 "JobSet", "TrainJob", *KUEUE_KINDS}


def _render(case: str, tmp: Path, gitops: GitOps | None = None, keep: bool = True) -> tuple[Inventory, Path]:
    """Copy fixtures/<case> to tmp, render its tree into tmp/<case>/out, return (inventory, OUT)."""
    src = tmp / case
    shutil.copytree(FIXTURES / case, src)
    inv = load_inventory(str(src / "inventory.yaml"))
    if gitops is not None or not keep:
        inv = dataclasses.replace(inv, gitops=gitops)
    out = src / "out"
    for rel, data in render_tree(inv, str(out)).items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return inv, out


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def _key(o: dict[str, Any]) -> tuple[str, str, str]:
    md = o["metadata"]
    return (o["kind"], md.get("namespace", ""), md["name"])


def _validate(objs: list[dict[str, Any]]) -> None:
    for o in objs:
        errs = crd_errors(o)
        if o["kind"] in MUST_HAVE_CRD:
            assert errs is not None, f"no upstream CRD for {o['apiVersion']} {o['kind']}"
        assert not errs, f"{_key(o)} does not validate against its CRD: {errs}"


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, Path]:
    return _render("multi", tmp_path_factory.mktemp("multi"))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, Path]:
    return _render("lab", tmp_path_factory.mktemp("lab"))


def test_tree_with_gitops(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    assert inv.gitops is not None
    files = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    for c in ("gpu-east", "gpu-west"):
        for f in (f"argocd/apps/{c}.yaml", f"argocd/clusters/{c}/kustomization.yaml",
                  f"flux/{c}/kustomization.yaml", f"flux/{c}/gitrepository.yaml",
                  f"flux/{c}/kustomizations.yaml", f"flux/{c}/workloads/kustomization.yaml",
                  f"flux/{c}/job-policies/kustomization.yaml",
                  f"monitoring/{c}/kustomization.yaml", f"monitoring/{c}/prometheusrule.yaml",
                  f"monitoring/{c}/dashboards/topogate.json"):
            assert f in files, f
    assert "argocd/kustomization.yaml" in files


def test_tree_without_gitops_has_no_applications(lab: tuple[Inventory, Path]) -> None:
    # No repository URL, no Applications and no Flux objects: a placeholder URL would sync
    # nothing. The wrapper (used by the plugin) and monitoring need no URL and are there.
    inv, out = lab
    assert inv.gitops is None
    assert (out / "argocd/clusters/lab/kustomization.yaml").is_file()
    assert (out / "monitoring/lab/prometheusrule.yaml").is_file()
    assert not (out / "argocd/apps").exists()
    assert not (out / "argocd/kustomization.yaml").exists()
    assert not (out / "flux").exists()


@pytest.mark.parametrize("outputs", [["argocd"], ["flux"], ["monitoring"], []])
def test_outputs_leave_out_what_the_repository_does_not_use(tmp_path: Path, outputs: list[str]) -> None:
    """`outputs:` keeps only the GitOps outputs named; what is kept references nothing left out
    (no monitoring Application or Flux layer without monitoring/), and every kustomization of it
    still builds."""
    src = tmp_path / "multi"
    shutil.copytree(FIXTURES / "multi", src)
    (src / "inventory.yaml").write_text((src / "inventory.yaml").read_text() + f"outputs: {outputs}\n")
    inv = load_inventory(str(src / "inventory.yaml"))
    assert inv.outputs == frozenset(outputs)
    tree = render_tree(inv, str(src / "out"))
    tops = {p.split("/", 1)[0] for p in tree}
    assert tops == {"clusters", *outputs}
    for rel, data in tree.items():
        p = src / "out" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        if "monitoring" not in outputs:  # no path into monitoring/, no monitoring Application or layer
            assert b"monitoring/" not in data and b"-monitoring" not in data, rel
    for top in outputs:
        for k in (src / "out" / top).rglob("kustomization.yaml"):
            _validate(kustomize_build(k.parent))


def test_a_job_its_own_application_deploys_is_written_apart(tmp_path: Path) -> None:
    """deployedBy: own: the overlay (placement patch and the job's policy) is written under
    overlays/<cluster>/<ns>/<job>/ for the team's Application to point at; nothing topogate writes
    applies it (the cluster's tree, its Argo CD wrapper, its Flux layers), and a check of the
    generated tree still analyses it."""
    src = tmp_path / "multi"
    shutil.copytree(FIXTURES / "multi", src)
    text = (src / "inventory.yaml").read_text()
    first = text.index("- name: ", text.index("workloads:"))
    (src / "inventory.yaml").write_text(text[:first] + "- deployedBy: own\n  name: " + text[first + len("- name: "):])
    inv = load_inventory(str(src / "inventory.yaml"))
    (own,) = [w for w in inv.workloads if w.own]
    overlay = f"overlays/{own.cluster}/{own.namespace}/{own.name}"
    tree = render_tree(inv, str(src / "out"))
    assert {f"{overlay}/kustomization.yaml", f"{overlay}/ciliumnetworkpolicy.yaml", f"{overlay}/placement-patch.yaml"} <= set(tree)
    assert not any(f"workloads/{own.namespace}/{own.name}/" in p for p in tree)
    for rel, data in tree.items():
        (src / "out" / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / "out" / rel).write_bytes(data)
    applied = [o for top in (f"clusters/{own.cluster}", f"argocd/clusters/{own.cluster}",
                             f"flux/{own.cluster}/workloads", f"flux/{own.cluster}/job-policies")
               for o in kustomize_build(src / "out" / top)]
    assert not [o for o in applied if o["metadata"]["name"] in (own.name, f"topogate-{own.name}")]
    built = kustomize_build(src / "out" / overlay)
    assert {(o["kind"], o["metadata"]["name"]) for o in built} == {(own.kind, own.name),
                                                                    ("CiliumNetworkPolicy", f"topogate-{own.name}")}
    _validate(built)
    proc = subprocess.run([str(REPO / ".venv" / "bin" / "topogate"), "check", "inventory.yaml", "--format", "json"],
                          cwd=src, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": os.pathsep.join([str(Path(kubectl()).parent), os.environ["PATH"]])})
    assert proc.returncode == 0, proc.stderr
    assert own.object_id in {w["object"] for w in json.loads(proc.stdout)["workloads"]}


@pytest.mark.parametrize("case", ["lab", "multi"])
def test_every_gitops_kustomization_builds_and_validates(case: str, tmp_path: Path) -> None:
    _, out = _render(case, tmp_path)
    dirs = sorted(p.parent for top in ("argocd", "flux", "monitoring") if (out / top).is_dir()
                  for p in (out / top).rglob("kustomization.yaml"))
    assert dirs
    for d in dirs:
        objs = kustomize_build(d)
        _validate(objs)


def test_argocd_waves_put_network_first(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    for c in inv.clusters:
        wrapped = kustomize_build(out / argocd.wrapper_dir(c.name))
        plain = kustomize_build(out / "clusters" / c.name)
        # The wrapper adds annotations and nothing else.
        assert sorted(map(_key, wrapped)) == sorted(map(_key, plain))
        waves = {_key(o): int((o["metadata"].get("annotations") or {}).get(WAVE, "0")) for o in wrapped}
        kinds = {k for k, _, _ in waves}
        assert {"CiliumClusterwideNetworkPolicy", "CiliumNetworkPolicy"} <= kinds
        net = [w for (k, _, _), w in waves.items() if k == "CiliumClusterwideNetworkPolicy"]
        cnp = [w for (k, _, _), w in waves.items() if k == "CiliumNetworkPolicy"]
        jobs = [w for (k, _, _), w in waves.items() if k in ("PyTorchJob", "MPIJob", "JobSet", "TrainJob")]
        assert jobs, c.name
        # Argo CD applies lower waves first and waits for them to be healthy.
        assert max(net) < min(cnp) and max(cnp) < min(jobs), waves
        # Kueue's objects (gpu-east only) and the admission policy (both clusters) come before
        # every job they admit: a job created before its policy would never be checked.
        queued = [w for (k, _, _), w in waves.items() if k in KUEUE_KINDS]
        assert bool(queued) == (c.kueue is not None), c.name
        assert not queued or max(queued) < min(jobs), waves
        if c.kueue is not None:
            assert {k for k, _, _ in waves} >= set(KUEUE_KINDS)
        guards = [w for (k, _, _), w in waves.items() if k in admission.ADMISSION_KINDS]
        assert len(guards) == 2 and max(guards) < min(jobs), waves


def test_argocd_applications(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    g = inv.gitops
    assert g is not None
    apps = kustomize_build(out / "argocd")
    _validate(apps)
    by_name = {a["metadata"]["name"]: a for a in apps}
    assert sorted(by_name) == ["topogate-gpu-east", "topogate-gpu-east-monitoring",
                               "topogate-gpu-west", "topogate-gpu-west-monitoring"]
    for app in by_name.values():
        spec = app["spec"]
        assert app["metadata"]["namespace"] == g.argocd_namespace
        assert spec["project"] == g.argocd_project
        assert spec["source"]["repoURL"] == g.repo_url
        assert spec["source"]["targetRevision"] == g.target_revision
        # source.path is inside the repository; the tree lives at gitops.path == OUT here.
        path = spec["source"]["path"]
        assert path.startswith(g.path.strip("/") + "/")
        local = out / Path(path).relative_to(g.path.strip("/"))
        assert (local / "kustomization.yaml").is_file(), path
        # Two clusters: each Application goes to the Argo CD cluster of the same name.
        cluster = app["metadata"]["labels"]["topogate.dev/cluster"]
        assert spec["destination"] == {"name": cluster}
        assert spec["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
        # Deleting an Application must not delete running training jobs.
        assert "finalizers" not in app["metadata"]
    assert by_name["topogate-gpu-east"]["spec"]["source"]["path"] == "deploy/argocd/clusters/gpu-east"


def test_argocd_single_cluster_uses_destination_server(tmp_path: Path) -> None:
    g = GitOps("https://git.example.com/lab.git", target_revision="v1.2.0", path="./gitops/out/",
               destination_server="https://10.0.0.1:6443")
    inv, out = _render("lab", tmp_path, gitops=g)
    (app, mon) = _docs(out / "argocd/apps/lab.yaml")
    assert app["spec"]["destination"] == {"server": "https://10.0.0.1:6443"}
    assert app["spec"]["source"]["path"] == "gitops/out/argocd/clusters/lab"
    assert mon["spec"]["source"]["path"] == "gitops/out/monitoring/lab"
    _validate([app, mon])


def test_flux_layers(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    g = inv.gitops
    assert g is not None
    for c in inv.clusters:
        entry = kustomize_build(out / "flux" / c.name)
        _validate(entry)
        repos = [o for o in entry if o["kind"] == "GitRepository"]
        ks = {o["metadata"]["name"]: o for o in entry if o["kind"] == "Kustomization"}
        assert len(repos) == 1 and repos[0]["spec"]["url"] == g.repo_url
        assert repos[0]["spec"]["ref"] == {"branch": "main"}
        assert "secretRef" not in repos[0]["spec"]  # the example repository is public
        net, pol, wl, mon = (ks[flux.kustomization_name(c.name, layer)]
                             for layer in ("network", "job-policies", "workloads", "monitoring"))
        optional = [x for x in flux.OPTIONAL_LAYERS if x in flux.layers(inv, c)]
        # Both clusters opted in to admission, gpu-east to Kueue too.
        assert optional == (["kueue", "admission"] if c.name == "gpu-east" else ["admission"])
        assert sorted(ks) == sorted(flux.kustomization_name(c.name, x)
                                    for x in [*flux.LAYERS, *optional])
        # network -> job policies -> jobs, each waiting for the previous one to be healthy; the
        # opt-in layers (Kueue's queues) are in place before any job that uses them.
        assert pol["spec"]["dependsOn"] == [{"name": net["metadata"]["name"]}]
        assert wl["spec"]["dependsOn"] == [{"name": net["metadata"]["name"]}, {"name": pol["metadata"]["name"]},
                                           *({"name": flux.kustomization_name(c.name, x)} for x in optional)]
        assert "dependsOn" not in net["spec"] and "dependsOn" not in mon["spec"]
        for x in optional:
            assert "dependsOn" not in ks[flux.kustomization_name(c.name, x)]["spec"]
        for k in ks.values():
            assert k["metadata"]["namespace"] == g.flux_namespace
            assert k["spec"]["prune"] is True and k["spec"]["wait"] is True
            assert k["spec"]["sourceRef"] == {"kind": "GitRepository", "name": repos[0]["metadata"]["name"]}
            assert k["spec"]["path"].startswith("./" + g.path + "/")

        # Every path exists and builds; together the layers are exactly the cluster root, each
        # object in exactly one layer (Flux objects have one owner), byte for byte the same
        # objects the cluster root (and Argo CD) applies.
        def local(k: dict[str, Any]) -> Path:
            return out / Path(k["spec"]["path"][2:]).relative_to(g.path)
        net_objs, pol_objs, wl_objs = (kustomize_build(local(k)) for k in (net, pol, wl))
        opt_objs = [o for x in optional for o in kustomize_build(local(ks[flux.kustomization_name(c.name, x)]))]
        _validate(net_objs + pol_objs + wl_objs + opt_objs)
        # the network layer: the boundaries, and the target side of declared doors
        assert {o["kind"] for o in net_objs if not o["metadata"]["name"].startswith("topogate-door-")} == {
            "CiliumClusterwideNetworkPolicy"}
        assert len([o for o in net_objs if o["metadata"]["name"].startswith("topogate-door-")]) == len(
            inv.doors_of(c.name))
        assert {o["kind"] for o in pol_objs} == {"CiliumNetworkPolicy"}
        assert "CiliumNetworkPolicy" not in {o["kind"] for o in wl_objs}
        assert len(pol_objs) == len(inv.workloads_of(c.name))
        root = kustomize_build(out / "clusters" / c.name)
        # Kueue's and admission's layers own their objects.
        assert not {o["kind"] for o in wl_objs} & {*KUEUE_KINDS, *admission.ADMISSION_KINDS}
        layered = net_objs + pol_objs + wl_objs + opt_objs
        assert sorted(map(_key, layered)) == sorted(map(_key, root))
        assert len(set(map(_key, layered))) == len(layered)
        by_key = {_key(o): o for o in root}
        for o in layered:
            assert o == by_key[_key(o)], _key(o)
        kinds = {w.kind for w in inv.workloads_of(c.name)}
        exprs = {e["kind"] for e in wl["spec"].get("healthCheckExprs", [])}
        assert exprs == kinds & {"PyTorchJob", "MPIJob"}


def test_flux_layers_of_a_cluster_without_jobs(tmp_path: Path) -> None:
    # No workloads: the job-policies and workloads layers still build (empty), Flux reconciles them.
    inv, out = _render("multi", tmp_path)
    bare = dataclasses.replace(inv, workloads=())
    files = {f.path: f for f in flux.render(bare)}
    for layer in ("job-policies", "workloads"):
        doc = files[f"flux/gpu-east/{layer}/kustomization.yaml"].docs[0]
        assert doc["resources"] == [] and "patches" not in doc


def test_flux_health_checks_guard_a_missing_status(multi: tuple[Inventory, Path]) -> None:
    # Flux: an expression that reads a field that does not exist errors, and the check then
    # waits for the timeout. Every condition read is guarded by has(status.conditions).
    for check in flux.HEALTH_EXPRS.values():
        for key in ("current", "failed"):
            expr = check[key]
            assert expr.startswith("has(status.conditions) && "), expr
            assert expr.count("status.conditions") == 2, expr  # one guard, one use
    inv, out = multi
    ks = {o["metadata"]["name"]: o for o in _docs(out / "flux/gpu-east/kustomizations.yaml")}
    for e in ks["topogate-gpu-east-workloads"]["spec"]["healthCheckExprs"]:
        assert e["current"].startswith("has(status.conditions) && ")


def test_flux_git_ref() -> None:
    # targetRevision in Argo CD notation -> Flux spec.ref (flux.py docstring says why).
    sha = "0123456789abcdef0123456789abcdef01234567"
    cases = {
        "main": {"branch": "main"},
        "release/1.x": {"branch": "release/1.x"},
        "v1.2.3": {"branch": "v1.2.3"},  # ambiguous: a branch unless written refs/tags/...
        "refs/heads/main": {"branch": "main"},
        "refs/heads/team/a": {"branch": "team/a"},
        "refs/tags/v1.0.0": {"tag": "v1.0.0"},
        "refs/pull/42/head": {"name": "refs/pull/42/head"},
        "HEAD": {"name": "HEAD"},  # omitting ref would mean `master` in Flux, not the default branch
        sha: {"commit": sha},
        sha.upper(): {"commit": sha},
        sha[:39]: {"branch": sha[:39]},
    }
    for revision, ref in cases.items():
        assert flux.git_ref(revision) == ref, revision
    # Every mapping is a valid GitRepository.
    for revision in cases:
        g = GitOps("https://git.example.com/lab.git", target_revision=revision)
        repo = flux.git_repository(dataclasses.replace(_lab_inv(), gitops=g), _lab_inv().clusters[0])
        assert crd_errors(repo) == [], revision


def _lab_inv() -> Inventory:
    return load_inventory(str(FIXTURES / "lab" / "inventory.yaml"))


def test_flux_secret_ref(tmp_path: Path) -> None:
    g = GitOps("ssh://git@git.example.com/acme/private.git", path="deploy", flux_secret_ref="ml-gitops-auth")
    inv, out = _render("lab", tmp_path, gitops=g)
    objs = kustomize_build(out / "flux" / "lab")
    _validate(objs)
    repo = next(o for o in objs if o["kind"] == "GitRepository")
    assert repo["spec"]["secretRef"] == {"name": "ml-gitops-auth"}
    assert repo["metadata"]["namespace"] == g.flux_namespace  # the Secret lives beside it


# --- Flux bootstrap: its output must never land inside OUT ---

DOCS = REPO / "docs" / "gitops.md"


def _docs_bootstrap() -> tuple[list[str], dict[str, Any]]:
    """The `flux bootstrap` commands and the bootstrap Kustomization shown in docs/gitops.md."""
    text = DOCS.read_text()
    paths = re.findall(r"flux bootstrap [^\n`]*--path=([^\s`]+)", text)
    block = re.search(r"```yaml\n(# clusters/gpu-east/topogate\.yaml[^`]*)```", text)
    assert block, "docs/gitops.md lost the bootstrap Kustomization example"
    return paths, yaml.safe_load(block.group(1))


def test_flux_bootstrap_path_is_outside_the_tree(multi: tuple[Inventory, Path]) -> None:
    inv, _ = multi
    g = inv.gitops
    assert g is not None
    paths, doc = _docs_bootstrap()
    assert paths, "docs/gitops.md shows no flux bootstrap command"
    for p in paths:
        p = p.strip("./").replace("<cluster>", "gpu-east").replace("<c>", "gpu-east")
        assert not (p + "/").startswith(g.path.strip("/") + "/"), f"bootstrap --path={p} is inside OUT"
    # The documented Kustomization is what bootstrap_kustomization() builds, valid, and points
    # at the generated entry point.
    east = next(c for c in inv.clusters if c.name == "gpu-east")
    assert doc == flux.bootstrap_kustomization(inv, east)
    _validate([doc])
    assert doc["spec"]["path"] == "./deploy/flux/gpu-east"


def test_flux_bootstrap_output_does_not_disturb_generate(tmp_path: Path) -> None:
    """What `flux bootstrap --path=clusters/<c>` writes, at the documented place, beside OUT:
    `generate --check` still passes and `generate` still rewrites the tree."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "multi", repo / "topogate")
    env = {**os.environ, "PATH": os.pathsep.join([str(REPO / ".venv" / "bin"), os.environ.get("PATH", "")])}
    exe = str(REPO / ".venv" / "bin" / "topogate")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([exe, *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)

    assert run("generate", "topogate/inventory.yaml", "-o", "deploy").returncode == 0
    inv = load_inventory(str(repo / "topogate" / "inventory.yaml"))
    paths, _ = _docs_bootstrap()
    for c in inv.clusters:
        boot = repo / paths[0].strip("./").replace("<cluster>", c.name).replace("<c>", c.name)
        fs = boot / "flux-system"
        fs.mkdir(parents=True)
        for name in ("gotk-components.yaml", "gotk-sync.yaml", "kustomization.yaml"):
            (fs / name).write_text("# written by flux bootstrap\n")
        (boot / "topogate.yaml").write_text(yaml.safe_dump(flux.bootstrap_kustomization(inv, c)))
    check = run("generate", "topogate/inventory.yaml", "-o", "deploy", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    again = run("generate", "topogate/inventory.yaml", "-o", "deploy")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (repo / paths[0].strip("./").replace("<cluster>", "gpu-east").replace("<c>", "gpu-east")
            / "flux-system" / "gotk-sync.yaml").is_file()


def test_gitops_generators_are_pure_and_deterministic(tmp_path: Path) -> None:
    inv = load_inventory(str(FIXTURES / "multi" / "inventory.yaml"))
    a = render_tree(inv, str(tmp_path / "out"))
    b = render_tree(inv, str(tmp_path / "out"))
    assert a == b
    mine = [f for f in render_files(inv, str(tmp_path / "out"))
            if f.path.split("/")[0] in ("argocd", "flux", "monitoring")]
    assert mine
    for f in mine:
        if f.path.endswith(".yaml"):
            assert a[f.path].startswith(b"# generated by topogate from inventory.yaml, do not edit\n")


# --- the Config Management Plugin (examples/argocd-cmp) ---

CMP = REPO / "examples" / "argocd-cmp"


def test_cmp_plugin_generates_the_wrapper_output(tmp_path: Path) -> None:
    """Run the plugin's generate command the way the cmp-server does: sh -c in the app path,
    with ARGOCD_ENV_* set, on a repository that holds only the inventory and its bases."""
    plugin = _docs(CMP / "plugin.yaml")[0]
    assert plugin["apiVersion"] == "argoproj.io/v1alpha1" and plugin["kind"] == "ConfigManagementPlugin"
    assert plugin["metadata"]["name"] == "topogate" and plugin["spec"]["version"] == "v1"
    gen = plugin["spec"]["generate"]
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "lab", repo / "fixtures" / "lab")
    bindir = str(REPO / ".venv" / "bin")
    env = {"PATH": os.pathsep.join([bindir, str(Path(kubectl()).parent), "/usr/bin", "/bin"]),
           "HOME": str(tmp_path), "ARGOCD_ENV_TOPOGATE_CLUSTER": "lab",
           "ARGOCD_ENV_TOPOGATE_INVENTORY": "inventory.yaml", "ARGOCD_APP_NAME": "topogate-lab",
           **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})}
    proc = subprocess.run(gen["command"] + gen["args"], cwd=repo / "fixtures" / "lab", env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    objs = [d for d in yaml.safe_load_all(proc.stdout) if d is not None]
    _validate(objs)
    kinds = {o["kind"] for o in objs}
    assert {"CiliumClusterwideNetworkPolicy", "CiliumNetworkPolicy", "PyTorchJob"} <= kinds
    for o in objs:
        if o["kind"] == "CiliumClusterwideNetworkPolicy":
            assert o["metadata"]["annotations"][WAVE] == "-2"
    # stdout is manifests only; the summary went to stderr.
    assert "wrote" in proc.stderr
    # Missing cluster env: a clear error, not an empty sync.
    env.pop("ARGOCD_ENV_TOPOGATE_CLUSTER")
    bad = subprocess.run(gen["command"] + gen["args"], cwd=repo / "fixtures" / "lab", env=env,
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "TOPOGATE_CLUSTER" in bad.stderr


def test_cmp_plugin_reads_bases_elsewhere_in_a_copy_without_git(tmp_path: Path) -> None:
    """The cmp-server's copy of the repository has no .git and runs the plugin in the
    Application's path: an inventory in platform/ whose bases are in teams/ (outside its folder,
    inside the repository) is generated, as it is from a clone."""
    plugin = _docs(CMP / "plugin.yaml")[0]
    gen = plugin["spec"]["generate"]
    repo = tmp_path / "copy"
    shutil.copytree(FIXTURES / "lab" / "bases", repo / "teams")
    (repo / "platform").mkdir()
    (repo / "platform" / "inventory.yaml").write_text(
        (FIXTURES / "lab" / "inventory.yaml").read_text().replace("base: bases/train", "base: ../teams/train"))
    assert not (repo / ".git").exists()
    bindir = str(REPO / ".venv" / "bin")
    env = {"PATH": os.pathsep.join([bindir, str(Path(kubectl()).parent), "/usr/bin", "/bin"]),
           "HOME": str(tmp_path), "ARGOCD_ENV_TOPOGATE_CLUSTER": "lab", "ARGOCD_APP_SOURCE_PATH": "platform",
           **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {})}
    proc = subprocess.run(gen["command"] + gen["args"], cwd=repo / "platform", env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    jobs = [d for d in yaml.safe_load_all(proc.stdout) if d is not None and d["kind"] == "PyTorchJob"]
    assert [j["metadata"]["name"] for j in jobs] == ["train"]
    # topogate itself, run from that root: the working directory is the repository
    res = subprocess.run([str(Path(bindir) / "topogate"), "generate", "platform/inventory.yaml", "-o", "out"],
                         cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    # from inside platform/, teams/ is above the working directory: refused, as documented
    res = subprocess.run([str(Path(bindir) / "topogate"), "generate", "inventory.yaml", "-o", "../out2"],
                         cwd=repo / "platform", env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "resolves outside the inventory's repository" in res.stderr


def test_cmp_dockerfile_builds_from_the_repo_root() -> None:
    # The image installs topogate from its build context: that context is the repository root,
    # with the Dockerfile named by -f. Every COPY source must exist there.
    text = (CMP / "Dockerfile").read_text()
    assert "docker build -f examples/argocd-cmp/Dockerfile" in text and text.count(" .\n") >= 1
    for line in text.splitlines():
        if line.startswith("COPY "):
            src = line.split()[1]
            assert (REPO / src).exists(), line
    assert (REPO / "pyproject.toml").is_file()  # what `pip install /src/topogate` needs
    assert "docker build -f examples/argocd-cmp/Dockerfile" in DOCS.read_text()


def test_cmp_sidecar_patch_builds(tmp_path: Path) -> None:
    objs = kustomize_build(CMP)
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    assert cm["metadata"]["name"] == "topogate-cmp-plugin"
    assert yaml.safe_load(cm["data"]["plugin.yaml"])["kind"] == "ConfigManagementPlugin"
    dep = next(o for o in objs if o["kind"] == "Deployment")
    containers = {c["name"]: c for c in dep["spec"]["template"]["spec"]["containers"]}
    assert {"argocd-repo-server", "topogate"} <= set(containers)
    side = containers["topogate"]
    assert side["command"] == ["/var/run/argocd/argocd-cmp-server"]
    assert side["securityContext"]["runAsUser"] == 999
    mounts = {m["mountPath"]: m for m in side["volumeMounts"]}
    assert mounts["/home/argocd/cmp-server/config/plugin.yaml"]["subPath"] == "plugin.yaml"
    volumes = {v["name"] for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert {m["name"] for m in side["volumeMounts"]} <= volumes
    app = _docs(CMP / "application.yaml")[0]
    _validate([app])
    assert app["spec"]["source"]["plugin"]["name"] == "topogate-v1"
