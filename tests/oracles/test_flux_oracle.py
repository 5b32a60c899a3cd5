"""topogate's render of a Flux Kustomization equals Flux's own, on generated Kustomizations.

The oracle is tests/flux/main.go (flux-render): fluxcd/pkg/kustomize v1.41.0's generator,
SecureBuild and SubstituteVariables, kustomize-controller's v1 type and fluxcd/pkg/ssa's
SetCommonMetadata, run in the order kustomize-controller runs them, with the ConfigMaps and
Secrets of the case in a controller-runtime fake client (the only part of a cluster the render
reads; the fake client serves Get from memory as the API server does).

Each case is a scratch repository: a directory with or without a kustomization (its own prefix,
namespace, images, patches, legacy `bases`, components; without one, files and a
subdirectory with a kustomization for Flux to list), components (one missing), and a Flux
Kustomization with any of targetNamespace, namePrefix/nameSuffix, patches (strategic merge and
JSON 6902, targeted or not), images merged with the kustomization's, components with
ignoreMissingComponents, buildMetadata, postBuild (substitute, substituteFrom ConfigMaps and
Secrets present, absent or optional, substituteStrategy Always) over values written in every
envsubst form (defaults, escapes, substrings, case, replace, trims, nesting) and values YAML
retypes (yes, 0x1F, 017, 1e3), the opt-out label and annotation, commonMetadata, strict or not.
Both renders must fail together or give the same objects. Not in the same order: Flux builds
without kustomize's legacy reordering and kubectl kustomize with it; Flux applies in stages by
kind whatever the order, and no verdict depends on it.

TOPOGATE_FLUX_CASES (default 120) and TOPOGATE_FLUX_SEED (default fixed; `make fuzz` draws one)
choose the cases; a disagreement names its seed and case, whose repository is kept.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from gitops_support import REPO_URL, ask, inventory, normal, oracle, rendered_objects, topogate_render

from topogate.gitops.notes import FAILS, UNSET
from topogate.safeio.saferead import InputError

CASES = int(os.environ.get("TOPOGATE_FLUX_CASES", "120"))
SEED = int(os.environ.get("TOPOGATE_FLUX_SEED", "39"))

NAMES = ["ZONE", "TEAM", "N", "FLAG", "_X1", "Mixed9"]
VALUES = ["zone-a", "ml-team", "3", "yes", "0x1F", "017", "1e3", "a b", "true", "", "x-y", "~", "On",
          "line\nbreak", "8080", "-1", "y"]


def _template(rng: random.Random) -> str:
    v, w = rng.choice(NAMES), rng.choice(NAMES)
    forms = ["${V}", "${V:=dflt}", "${V:-dflt}", "${V=d}", "pre-${V}-post", "$${V}", "${V:0:2}", "${V:1}",
             "${V^^}", "${V,}", "${#V}", "${V/a/b}", "${V//-/_}", "${V%-*}", "${V##*-}", "${V#z}", "${V:-${W}}",
             "${V:+alt}", "plain", "cost $5", "${V:?x}", "a${V}b${W}"]
    return rng.choice(forms).replace("V", v).replace("W", w)


def _configmap(rng: random.Random, name: str, opt_out: str) -> dict[str, Any]:
    data = {f"k{i}": _template(rng) for i in range(rng.randint(1, 3))}
    if rng.random() < 0.2:
        data["${" + rng.choice(NAMES) + ":=key}"] = "v"
    md: dict[str, Any] = {"name": name}
    if opt_out:
        md[opt_out] = {"kustomize.toolkit.fluxcd.io/substitute": "disabled"}
    if rng.random() < 0.3:
        md["labels"] = {"team": _template(rng) if rng.random() < 0.5 else "ml"}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data}


def _deployment(rng: random.Random, name: str) -> dict[str, Any]:
    image = rng.choice(["nginx", "nginx:1.25", "registry.local:5000/busybox:1", "busybox@sha256:" + "a" * 64])
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": rng.choice([1, 2]), "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": image,
                                                           "env": [{"name": "Z", "value": _template(rng)}]}]}}}}


def _dump(path: Path, docs: list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump_all(docs, sort_keys=False))


def _patch(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.5:
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                "spec": {"template": {"metadata": {"annotations": {"patched": _template(rng)}}}}}
        p: dict[str, Any] = {"patch": yaml.safe_dump(body)}
        if rng.random() < 0.5:
            p["target"] = {"kind": "Deployment"}
        return p
    ops = [{"op": "add", "path": "/metadata/labels/patched", "value": rng.choice(["yes", "p-${ZONE}", "1"])}]
    target = rng.choice([{"kind": "ConfigMap"}, {"kind": "ConfigMap", "name": "cm-.*"}, {"labelSelector": "app=web"}])
    return {"patch": yaml.safe_dump(ops), "target": target}


def _case(rng: random.Random, root: Path) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """Write one case's repository; (the Flux Kustomization, the cluster's ConfigMaps and Secrets, strict)."""
    app = root / "apps" / "a"
    opt = lambda: rng.choice(["", "", "", "labels", "annotations"])  # noqa: E731
    files = {"cm.yaml": [_configmap(rng, "cm-one", opt())], "deploy.yaml": [_deployment(rng, "web")]}
    if rng.random() < 0.5:
        files["more.yml"] = [_configmap(rng, "cm-two", opt())]
    for name, docs in files.items():
        _dump(app / name, docs)
    (app / "README.md").write_text("not a manifest\n")
    _dump(app / "sub" / "kustomization.yaml", [{"resources": ["extra.yaml"]}])
    _dump(app / "sub" / "extra.yaml", [_configmap(rng, "cm-sub", opt())])
    _dump(root / "components" / "c1" / "kustomization.yaml", [{
        "apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Component",
        "patches": [{"target": {"kind": "Deployment"},
                     "patch": yaml.safe_dump([{"op": "add", "path": "/metadata/annotations",
                                               "value": {"component": "c1"}}])}]}])
    if rng.random() < 0.75:  # a kustomization of its own (else Flux generates one)
        k: dict[str, Any] = {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization"}
        listed = sorted(files)
        if rng.random() < 0.15:
            k["bases"] = ["sub"]
            k["resources"] = listed if rng.random() < 0.5 else []
        else:
            k["resources"] = [*listed, "sub"]
        if not k["resources"]:
            del k["resources"]
        for key, value in (("namePrefix", "own-"), ("namespace", "own-ns"), ("commonLabels", {"owner": "me"})):
            if rng.random() < 0.3:
                k[key] = value
        if rng.random() < 0.4:
            k["images"] = [{"name": "nginx", "newTag": "1.0"}]
        if rng.random() < 0.2:
            k["components"] = ["../../components/c1"]
        if rng.random() < 0.3:
            k["patches"] = [_patch(rng)]
        _dump(app / "kustomization.yaml", [k])
    spec: dict[str, Any] = {"interval": "5m", "prune": True, "path": "./apps/a",
                            "sourceRef": {"kind": "GitRepository", "name": "repo"}}
    if rng.random() < 0.4:
        spec["targetNamespace"] = rng.choice(["ml-team", "other"])
    if rng.random() < 0.3:
        spec["namePrefix"] = rng.choice(["fx-", "p"])
    if rng.random() < 0.2:
        spec["nameSuffix"] = "-s"
    if rng.random() < 0.4:
        spec["patches"] = [_patch(rng) for _ in range(rng.randint(1, 2))]
    if rng.random() < 0.4:
        spec["images"] = [rng.choice([{"name": "nginx", "newName": "mirror/nginx"}, {"name": "nginx", "newTag": "2"},
                                      {"name": "busybox", "digest": "sha256:" + "b" * 64},
                                      {"name": "nginx", "newName": "n2", "newTag": "3"}])]
    if rng.random() < 0.3:
        spec["components"] = rng.choice([["../../components/c1"], ["../../components/missing"],
                                         ["../../components/c1", "../../components/missing"]])
        spec["ignoreMissingComponents"] = rng.random() < 0.7
    if rng.random() < 0.1:
        spec["buildMetadata"] = ["originAnnotations"]
    if rng.random() < 0.2:
        spec["commonMetadata"] = {"labels": {"tenant": "t1"}, "annotations": {"owner": "flux"}}
    objects: list[dict[str, Any]] = []
    if rng.random() < 0.85:
        post: dict[str, Any] = {}
        if rng.random() < 0.8:
            post["substitute"] = {n: rng.choice(VALUES) for n in rng.sample(NAMES, rng.randint(1, len(NAMES)))}
        if rng.random() < 0.4:
            post["substituteFrom"] = []
            for kind in rng.sample(["ConfigMap", "Secret"], rng.randint(1, 2)):
                name = f"vars-{kind.lower()}"
                ref: dict[str, Any] = {"kind": kind, "name": name}
                if rng.random() < 0.3:
                    ref["optional"] = True
                post["substituteFrom"].append(ref)
                if rng.random() < 0.8:
                    data = {n: rng.choice(VALUES) for n in rng.sample(NAMES, 2)}
                    if rng.random() < 0.1:
                        data["bad-name"] = "x"
                    md = {"name": name, "namespace": "flux-system"}
                    objects.append({"apiVersion": "v1", "kind": kind, "metadata": md, "data": data} if kind == "ConfigMap"
                                   else {"apiVersion": "v1", "kind": kind, "metadata": md,
                                         "data": {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}})
        if rng.random() < 0.2:
            post["substituteStrategy"] = "Always"
        spec["postBuild"] = post
    ks = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
          "metadata": {"name": "app", "namespace": "flux-system"}, "spec": spec}
    git = {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
           "metadata": {"name": "repo", "namespace": "flux-system"}, "spec": {"interval": "5m", "url": REPO_URL}}
    _dump(root / "flux.yaml", [git, ks, *objects])
    return ks, objects, rng.random() < 0.7


def _identity(o: dict[str, Any]) -> tuple[str, str, str, str]:
    md = o.get("metadata") or {}
    return (str(o.get("apiVersion")), str(o.get("kind")), str(md.get("namespace", "")), str(md.get("name")))


def _topogate(root: Path, inv: Any, strict: bool) -> tuple[str, list[Any]]:
    """("ok", objects) or ("fails", []) as topogate renders the case."""
    try:
        r = topogate_render(root, ["flux.yaml"], inv, strict)
    except InputError as e:
        return "refused: " + str(e), []
    if any(n.kind == FAILS or n.kind == UNSET and n.severity == "error" for n in r.notes):
        return "fails", []
    assert not [n for n in r.notes if n.kind != UNSET], r.notes
    return "ok", [normal(o) for o in rendered_objects(r)]


def test_flux_render_equals_flux_own(tmp_path: Path) -> None:
    binary = oracle("flux")
    inv = inventory(tmp_path)
    rng = random.Random(SEED)
    cases = []
    requests = []
    for i in range(CASES):
        root = tmp_path / f"case{i}"
        ks, objects, strict = _case(rng, root)
        theirs = tmp_path / f"oracle{i}"  # Flux writes its kustomization into the source
        shutil.copytree(root, theirs)
        cases.append((root, strict))
        requests.append({"root": str(theirs), "kustomization": ks, "objects": objects, "strict": strict})
    answers = ask(binary, requests)
    agree = failed_both = 0
    for i, ((root, strict), answer) in enumerate(zip(cases, answers, strict=True)):
        mine, objs = _topogate(root, inv, strict)
        theirs_fail = bool(answer.get("error"))
        where = f"seed {SEED} case {i} ({root}); Flux says: {answer.get('error') or 'ok'}"
        assert not mine.startswith("refused"), f"{where}: topogate {mine}"
        assert (mine == "fails") == theirs_fail, f"{where}: topogate {mine}"
        if theirs_fail:
            failed_both += 1
            continue
        expected = sorted((normal(o) for o in answer["objects"] or []), key=_identity)
        objs = sorted(objs, key=_identity)
        assert objs == expected, f"{where}:\n{json.dumps(objs, indent=1)}\n!=\n{json.dumps(expected, indent=1)}"
        agree += 1
    # the cases must exercise both outcomes, or the property says little
    assert agree > CASES // 3 and failed_both > 0, (agree, failed_both)


def test_the_oracle_sees_a_difference(tmp_path: Path) -> None:
    """The comparison can fail: Flux's render of the same case with another targetNamespace
    differs from topogate's of the case."""
    binary = oracle("flux")
    inv = inventory(tmp_path)
    rng = random.Random(SEED + 1)
    root = tmp_path / "case"
    ks, objects, _ = _case(rng, root)
    ks["spec"]["postBuild"] = {}
    (root / "flux.yaml").write_text(yaml.safe_dump_all([*yaml.safe_load_all((root / "flux.yaml").read_text())][:1]
                                                       + [ks, *objects]))
    ks2 = copy.deepcopy(ks)
    ks2["spec"]["targetNamespace"] = "zz-other"
    theirs = tmp_path / "oracle"
    shutil.copytree(root, theirs)
    (answer,) = ask(binary, [{"root": str(theirs), "kustomization": ks2, "objects": objects, "strict": False}])
    mine, objs = _topogate(root, inv, False)
    assert mine == "ok" and objs and not answer.get("error")
    assert sorted(objs, key=_identity) != sorted((normal(o) for o in answer["objects"]), key=_identity)


@pytest.mark.parametrize("text, values, strict, expected", [
    ("${A}", {"A": "x"}, True, "x"),
    ("$${A}", {}, True, "${A}"),
    ("${A:=d}", {}, True, "d"),
    ("${A:-${B}}", {"A": "a"}, False, "a"),
    ("${A:0:2}", {"A": "abc"}, True, "ab"),
    ("${A%-*}", {"A": "zone-a"}, True, "zone"),
])
def test_envsubst_forms(text: str, values: dict[str, str], strict: bool, expected: str) -> None:
    """A few forms by hand, for reading; the property above is what holds them to Flux."""
    from topogate.gitops import envsubst

    assert envsubst.substitute(text, values, strict) == expected
