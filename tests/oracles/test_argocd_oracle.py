"""topogate's render of an Application's kustomize source equals Argo CD's own, on generated
Applications.

The oracle is tests/argocd/main.go (argocd-render): argo-cd v3.6.2's util/kustomize Build, the
repo-server's own code, built with the Go 1.27.3 toolchain (tests/argocd/build.sh fetches it),
running the kustomize CLI v5.8.1 it drives (the kustomize of kubectl 1.37) in a scratch copy of
the repository. Argo CD's own code over the real CLI, rather than a kustomization written as we
think the repo-server writes it built with kubectl: the sequence of `kustomize edit` commands,
their arguments (images and labels `$VAR`-expanded, `k:v` pairs, --force, --without-selector,
--include-templates), the patches Argo CD writes into the file itself and the components it
keeps under ignoreMissingComponents are then Argo CD's, not our reading of them. (What comes
after Build, the destination namespace on objects without one, is the application
controller's and is held by tests/gitops/test_gitops_render.py.)

Each case is a scratch repository: an application directory whose kustomization has its own
images (and the legacy imageTags), replicas, labels, annotations, patches, `bases`, components,
and an Application source with any of namePrefix, nameSuffix, images (every argument form,
`*` to keep, invalid ones), replicas (counts as numbers and strings), commonLabels and
commonAnnotations (forced or not, without selector, into templates, `$ARGOCD_APP_NAME`
expanded), namespace, patches (inline, from a file, targeted or not), components (present,
missing, globbed, ignoreMissingComponents). Both renders must fail together or give the same
objects in the same order.

TOPOGATE_ARGOCD_CASES (default 80) and TOPOGATE_ARGOCD_SEED choose the cases.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import yaml
from gitops_support import REPO_URL, ask, inventory, normal, oracle, rendered_objects, topogate_render

from topogate.gitops import argocd
from topogate.gitops.notes import FAILS
from topogate.safeio.saferead import InputError

CASES = int(os.environ.get("TOPOGATE_ARGOCD_CASES", "80"))
SEED = int(os.environ.get("TOPOGATE_ARGOCD_SEED", "39"))


def _dump(path: Path, docs: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _deployment(name: str, image: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image}]}}}}


def _patch(rng: random.Random) -> dict[str, Any]:
    kind = rng.random()
    if kind < 0.4:
        return {"target": {"kind": "Deployment", "name": rng.choice(["web", "w.*", "api"])},
                "patch": yaml.safe_dump([{"op": "add", "path": "/metadata/annotations",
                                          "value": {"patched": "yes"}}])}
    if kind < 0.7:
        return {"patch": yaml.safe_dump({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                         "spec": {"replicas": 5}})}
    if kind < 0.85:
        return {"path": "patch.yaml", **({"target": {"kind": "Deployment"}} if rng.random() < 0.5 else {})}
    return {"target": {"kind": "ConfigMap"}, "patch": yaml.safe_dump([{"op": "add", "path": "/data/new", "value": "v"}]),
            "options": {"allowNameChange": True}}


def _case(rng: random.Random, root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Write one case's repository; (the Application, its source's kustomize options)."""
    app = root / "apps" / "a"
    _dump(app / "deploy.yaml", [_deployment("web", rng.choice(["nginx", "nginx:1.25", "registry:5000/nginx:1"])),
                                _deployment("api", "busybox@sha256:" + "a" * 64)])
    _dump(app / "cm.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"},
                             "data": {"k": "v"}}])
    _dump(app / "patch.yaml", [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                                "spec": {"template": {"metadata": {"labels": {"from-file": "yes"}}}}}])
    _dump(app / "sub" / "kustomization.yaml", [{"resources": ["more.yaml"]}])
    _dump(app / "sub" / "more.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "more"},
                                       "data": {"m": "1"}}])
    for c in ("c1", "c2"):
        _dump(root / "components" / c / "kustomization.yaml", [{
            "apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
            "patches": [{"target": {"kind": "ConfigMap"},
                         "patch": yaml.safe_dump([{"op": "add", "path": f"/data/{c}", "value": c}])}]}])
    k: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                         "resources": ["deploy.yaml", "cm.yaml"]}
    if rng.random() < 0.2:
        k["bases"] = ["sub"]
    else:
        k["resources"].append("sub")
    if rng.random() < 0.3:
        k["images"] = [{"name": "nginx", "newTag": "0.9", "newName": "old/nginx"}]
    if rng.random() < 0.15:
        k["imageTags"] = [{"name": "busybox", "newTag": "legacy"}]
    if rng.random() < 0.3:
        k["replicas"] = [{"name": "api", "count": 2}, {"name": "web", "count": 7}]
    if rng.random() < 0.3:
        k["commonLabels"] = {"team": "ml"}
    if rng.random() < 0.2:
        k["labels"] = [{"pairs": {"tier": "gpu"}}]
    if rng.random() < 0.3:
        k["commonAnnotations"] = {"note": "own"}
    if rng.random() < 0.3:
        k["patches"] = [_patch(rng)]
    if rng.random() < 0.2:
        k["components"] = ["../../components/c1"]
    _dump(app / "kustomization.yaml", [k])

    opts: dict[str, Any] = {}
    if rng.random() < 0.3:
        opts["namePrefix"] = rng.choice(["pre-", "-dash-"])
    if rng.random() < 0.2:
        opts["nameSuffix"] = "-suf"
    if rng.random() < 0.4:
        opts["images"] = rng.sample(["nginx=mirror/nginx:2", "nginx:3", "busybox@sha256:" + "b" * 64,
                                     "nginx=*:5", "registry:5000/nginx:9", "nginx=new/$ARGOCD_APP_NAME:1",
                                     "busybox=other", "bad"], rng.randint(1, 3))
    if rng.random() < 0.3:
        opts["replicas"] = [{"name": "web", "count": rng.choice([3, "4"])}]
    if rng.random() < 0.4:
        opts["commonLabels"] = rng.choice([{"team": "override"}, {"app-name": "$ARGOCD_APP_NAME"}, {"x": '"quoted"'}])
        opts["forceCommonLabels"] = rng.random() < 0.5
        opts["labelWithoutSelector"] = rng.random() < 0.4
        opts["labelIncludeTemplates"] = rng.random() < 0.3
    if rng.random() < 0.3:
        opts["commonAnnotations"] = rng.choice([{"note": "app"}, {"who": "${ARGOCD_APP_NAME}"}])
        opts["forceCommonAnnotations"] = rng.random() < 0.5
        opts["commonAnnotationsEnvsubst"] = rng.random() < 0.5
    if rng.random() < 0.3:
        opts["namespace"] = "ns-app"
    if rng.random() < 0.4:
        opts["patches"] = [_patch(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.3:
        opts["components"] = rng.choice([["../../components/c2"], ["../../components/missing"],
                                         ["../../components/c*"], ["../../components/c2", "../../components/gone"]])
        opts["ignoreMissingComponents"] = rng.random() < 0.6
    application = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                   "metadata": {"name": "app-one", "namespace": "argocd"},
                   "spec": {"project": "default", "destination": {"name": "c1"},
                            "source": {"repoURL": REPO_URL, "targetRevision": "main", "path": "apps/a",
                                       "kustomize": opts}}}
    _dump(root / "app.yaml", [application])
    return application, opts


def _topogate(root: Path, inv: Any) -> tuple[str, list[Any]]:
    try:
        r = topogate_render(root, ["app.yaml"], inv)
    except InputError as e:
        return "refused: " + str(e), []
    if any(n.kind == FAILS for n in r.notes):
        return "fails", []
    assert not r.notes, r.notes
    return "ok", [normal(o) for o in rendered_objects(r)]


def test_argocd_render_equals_argocd_own(tmp_path: Path) -> None:
    binary = oracle("argocd")
    inv = inventory(tmp_path)
    rng = random.Random(SEED)
    cases, requests = [], []
    for i in range(CASES):
        root = tmp_path / f"case{i}"
        app, opts = _case(rng, root)
        theirs = tmp_path / f"oracle{i}"  # Argo CD edits the kustomization in its checkout
        shutil.copytree(root, theirs)
        env = argocd.env_of(app, app["spec"]["source"], REPO_URL)
        cases.append(root)
        requests.append({"repoRoot": str(theirs), "path": str(theirs / "apps" / "a"), "kustomize": opts,
                         "env": [{"name": k, "value": v} for k, v in env.items()]})
    answers = ask(binary, requests)
    agree = failed_both = 0
    for i, (root, answer) in enumerate(zip(cases, answers, strict=True)):
        mine, objs = _topogate(root, inv)
        theirs_fail = bool(answer.get("error"))
        where = f"seed {SEED} case {i} ({root}); Argo CD says: {answer.get('error') or 'ok'}"
        assert not mine.startswith("refused"), f"{where}: topogate {mine}"
        assert (mine == "fails") == theirs_fail, f"{where}: topogate {mine}"
        if theirs_fail:
            failed_both += 1
            continue
        expected = [normal(o) for o in answer["objects"] or []]
        assert objs == expected, f"{where}:\n{json.dumps(objs, indent=1)}\n!=\n{json.dumps(expected, indent=1)}"
        agree += 1
    assert agree > CASES // 3 and failed_both > 0, (agree, failed_both)


def test_the_oracle_sees_a_difference(tmp_path: Path) -> None:
    """The comparison can fail: Argo CD's render with one more name prefix differs."""
    binary = oracle("argocd")
    inv = inventory(tmp_path)
    root = tmp_path / "case"
    app, opts = _case(random.Random(SEED), root)
    opts2 = {k: v for k, v in opts.items() if k != "images"}
    opts2["namePrefix"] = "zz-"
    app["spec"]["source"]["kustomize"] = {k: v for k, v in opts2.items() if k != "namePrefix"}
    _dump(root / "app.yaml", [app])
    theirs = tmp_path / "oracle"
    shutil.copytree(root, theirs)
    env = argocd.env_of(app, app["spec"]["source"], REPO_URL)
    (answer,) = ask(binary, [{"repoRoot": str(theirs), "path": str(theirs / "apps" / "a"), "kustomize": opts2,
                              "env": [{"name": k, "value": v} for k, v in env.items()]}])
    mine, objs = _topogate(root, inv)
    if answer.get("error") or mine != "ok":
        assert (mine == "fails") == bool(answer.get("error"))
        return
    assert objs != [normal(o) for o in answer["objects"]]
