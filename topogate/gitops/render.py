"""The objects Argo CD and Flux apply, in place of the objects read from the directories they
render: every engine object among the inputs whose source is this repository is rendered as its
engine renders it (topogate.gitops.flux, topogate.gitops.argocd), engine objects a render
produces are rendered in turn, and what cannot be read is said (topogate.gitops.notes).

The rendered objects replace the objects read from the same directory (a kustomization root
among the PATHs that an Application or a Flux Kustomization renders, a plain file a directory
source or a generated Flux kustomization lists). The same object applied twice to one cluster
(two engines pointing at one directory: the generated tree has an Argo CD Application and a
Flux Kustomization for each cluster, for whichever the user runs) is kept once when both copies
agree apart from Argo CD's own annotations; copies that differ stay, and TG007 reports them.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from topogate.core import redact
from topogate.core.position import Position
from topogate.gitops import argocd, envsubst, flux, goyaml, scratch
from topogate.gitops.engines import (
    Finder,
    Target,
    group_of,
    is_application,
    is_engine,
    is_flux_kustomization,
    ref,
    secure_join,
)
from topogate.gitops.notes import FAILS, NOT_RENDERED, UNSET, Note
from topogate.gitops.objects import RenderedObject, RenderInfo, Via, cited
from topogate.gitops.values import mapping
from topogate.inventory.model import Inventory
from topogate.k8s import kustomization as kmodel
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, MANIFEST_SUFFIXES, Roots, display
from topogate.safeio.saferead import documents, read_text
from topogate.sources.kustomization import CONFIG_LISTS, NotLocal, check_tree, config_references, references
from topogate.sources.manifests import K8sObject, Sources, TreePatches, parse_yaml
from topogate.sources.overlay_blame import changed_paths
from topogate.sources.positions import Path_
from topogate.sources.sourceindex import DeclarationRef, SourceIndex, SourcePosition

# Engine objects rendered by renders, rendered in turn, this many levels deep at most.
MAX_DEPTH = 8

# Kinds a real API server serves cluster-scoped: Argo CD leaves their namespace empty.
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "PriorityClass", "RuntimeClass", "IngressClass",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "CSIDriver", "CSINode",
    "VolumeAttachment", "CertificateSigningRequest", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "DeviceClass", "ResourceSlice",
    "CiliumClusterwideNetworkPolicy", "CiliumClusterwideEnvoyConfig", "CiliumNode", "CiliumIdentity",
    "ClusterNetworkPolicy", "AdminNetworkPolicy", "BaselineAdminNetworkPolicy", "ClusterTrainingRuntime",
    "ClusterQueue", "ResourceFlavor", "Topology", "AdmissionCheck", "WorkloadPriorityClass", "Cohort",
    "ClusterIssuer", "FlowSchema", "PriorityLevelConfiguration"})


@dataclass(frozen=True)
class Rendered:
    """The objects to check, what the render says about them, and the renders made."""

    objects: tuple[K8sObject, ...]
    notes: tuple[Note, ...] = ()
    renders: tuple[RenderInfo, ...] = ()


@dataclass
class _Out:
    objects: list[RenderedObject]
    roots: set[str]  # real directories whose read objects these replace
    files: set[str]  # real files whose read objects these replace


def render(objects: Sequence[K8sObject], inv: Inventory | None, strict: bool = True,
           also_inside: Sequence[str] = ()) -> Rendered:
    """The module doc. `strict`: kustomize-controller's StrictPostBuildSubstitutions (on by
    default since v1.9): a variable without a value or a default fails the Kustomization.
    `also_inside`: paths whose repositories may be read besides each engine object's own (the
    PATHs and the inventory, as for the check's own reads)."""
    if not any(is_engine(o) for o in objects):
        return Rendered(tuple(objects))
    return _Run(objects, inv, strict, tuple(p for p in also_inside if p != "-")).run()


class _Run:
    def __init__(self, objects: Sequence[K8sObject], inv: Inventory | None, strict: bool,
                 also_inside: Sequence[str] = ()):
        self.objects = list(objects)
        self.also_inside = also_inside
        self.finder = Finder(self.objects, inv)
        self.strict = strict
        self.checked: dict[str, bool] = {}
        self.sources: dict[str, Sources] = {}
        self.values: dict[tuple[str, str, str], K8sObject] = {}
        self._index_values(self.objects)
        self.read_roots: dict[str, list[K8sObject]] = {}
        for o in self.objects:
            if o.built_from:
                self.read_roots.setdefault(os.path.realpath(o.built_from), []).append(o)
        self.renders: list[RenderInfo] = []

    def _index_values(self, objs: Iterable[K8sObject]) -> None:
        for o in objs:
            if o.kind in ("ConfigMap", "Secret") and o.api_version == "v1":
                self.values.setdefault((o.kind, o.namespace or "default", o.name), o)

    def note(self, kind: str, t: Target, message: str, pos: Position | None = None, severity: str = "") -> None:
        self.finder.notes.append(Note(kind, ref(t.obj), message, pos if pos is not None else t.obj.pos, severity))

    # -- the run -----------------------------------------------------------------------------

    def run(self) -> Rendered:
        outs: list[tuple[Target, _Out]] = []
        done: set[tuple[str, str, str, str | None]] = set()
        engines = [o for o in self.objects if is_engine(o)]
        for _ in range(MAX_DEPTH):
            targets = [t for o in engines for t in self._targets(o)]
            engines = []
            for t in targets:
                if t.key in done:
                    continue
                done.add(t.key)
                out = self._render(t)
                if out is None:
                    continue
                self.renders.append(t.info)
                outs.append((t, out))
                self.finder.add_sources(out.objects)
                self._index_values(out.objects)
                engines += [o for o in out.objects if is_engine(o)]
            if not engines:
                break
        merged = [cited(o) if isinstance(o, RenderedObject) else o for o in _merge(self.objects, outs)]
        return Rendered(tuple(merged), tuple(sorted(set(self.finder.notes))), tuple(self.renders))

    def _targets(self, o: K8sObject) -> Iterable[Target]:
        if is_flux_kustomization(o):
            return self.finder.flux(o)
        if is_application(o):
            return self.finder.argo(o)
        return ()

    def _render(self, t: Target) -> _Out | None:
        try:
            return self._flux(t) if t.engine == "flux" else self._argo(t)
        except NotLocal as e:
            self.note(NOT_RENDERED, t, (
                f"{t.info.ref} renders {t.info.path}, which needs what topogate never fetches ({e.message}): "
                "not rendered, nothing it applies is checked (a job it deploys may be split or blocked with "
                "no finding)"), e.pos)
        except flux.FluxError as e:
            self.note(FAILS, t, f"kustomize-controller fails on {t.info.ref}: {e}; it applies nothing of it",
                      t.locate(e.at[1:]) if e.at[:1] == ("spec",) else t.obj.pos)
        except argocd.ArgoError as e:
            self.note(FAILS, t, f"Argo CD's repo-server fails on {t.info.ref}: {e}; it applies nothing of it",
                      t.locate(e.at) if e.at else t.obj.pos)
        except scratch.BuildFailed as e:
            self.note(FAILS, t, (
                f"the build of {t.info.path} as {t.info.ref} edits it fails: {e}; "
                f"{'Flux' if t.engine == 'flux' else 'Argo CD'} applies nothing of it"), t.obj.pos)
        return None

    def _sources(self, repo: str) -> Sources:
        if repo not in self.sources:
            self.sources[repo] = Sources(Roots.of([repo, *self.also_inside]), {})
        return self.sources[repo]

    # -- Flux --------------------------------------------------------------------------------

    def _flux(self, t: Target) -> _Out | None:
        spec = t.spec
        roots = self._sources(t.repo).roots
        d = os.path.realpath(secure_join(t.repo, str(spec.get("path") or "")))
        if not roots.holds(d) or not os.path.isdir(d):
            self.note(FAILS, t, (
                f"kustomization path not found: {spec.get('path') or './'} is no directory of this repository, "
                f"so {t.info.ref} fails and applies nothing"), t.locate(("path",)))
            return None
        kfile = next((n for n in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(d, n))), None)
        dirs = [d]
        existing: dict[str, Any] | None = None
        scanned: list[str] = []
        if kfile is not None:
            tree = check_tree(Path(d), roots, self.checked)
            dirs += [str(x) for x in tree.dirs]
            shown = display(Path(d) / kfile)
            existing = flux.read_existing(read_text(os.path.join(d, kfile), shown), shown)
        else:
            scanned = flux.scan(d, roots)
            for r in scanned:
                sub = os.path.join(d, r)
                if os.path.isdir(sub):
                    dirs += [str(x) for x in (Path(os.path.realpath(sub)),
                                              *check_tree(Path(sub), roots, self.checked).dirs)]

        def exists(c: str) -> bool:
            p = os.path.realpath(os.path.join(d, c))
            return roots.holds(p) and os.path.exists(p)

        gen = flux.generate(spec, existing, kfile, scanned, exists)
        for c in gen.kustomization.get("components") or []:
            cdir = os.path.join(d, c)
            if exists(c) and os.path.isdir(cdir):
                dirs += [str(x) for x in (Path(os.path.realpath(cdir)), *check_tree(Path(cdir), roots, self.checked).dirs)]
        output = self._build(t, d, gen.kfile, gen.kustomization, scratch.FLUX_OPTIONS, copies=False)
        strip = (str(spec.get("namePrefix") or ""), str(spec.get("nameSuffix") or ""))
        built = self._built(t, d, dirs, output, strip)
        return self._post_build(t, built, dirs, d, scanned)

    def _post_build(self, t: Target, built: list[tuple[str, RenderedObject]], dirs: list[str], d: str,
                    scanned: Sequence[str]) -> _Out | None:
        spec = t.spec
        post = spec.get("postBuild")
        values, known, unknown = self._variables(t, post if isinstance(post, dict) else {})
        always = isinstance(post, dict) and post.get("substituteStrategy") == "Always"
        run = isinstance(post, dict) and (bool(values) or always)
        meta = mapping(spec.get("commonMetadata"))
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
        out: list[RenderedObject] = []
        unset: list[str] = []
        for text, o in built:
            obj = o.obj
            if isinstance(post, dict) and not flux.opted_out(obj):
                try:
                    refs = envsubst.references(envsubst.parse(text)) if (run or "${" in text) else []
                except envsubst.SubstError as e:
                    if run:
                        raise flux.FluxError(f"post build failed for '{o.ref}': envsubst error: {e}",
                                             ("spec", "postBuild")) from None
                    refs = []
                missing = sorted({r.param for r in refs if r.param not in values and r.op not in envsubst.DEFAULT_OPS})
                if unknown:
                    maybe = sorted({r.param for r in refs if r.param not in values})
                    if maybe:
                        self.note(NOT_RENDERED, t, (
                            f"{o.ref} reads {', '.join('${' + v + '}' for v in maybe)}, which may come from "
                            f"{', '.join(unknown)}, not among the inputs: its value is unknown, so {o.ref} is not "
                            "analysed (a split or block in it goes unreported)"), o.pos)
                        continue
                if not run:
                    for v in missing:
                        self.note(UNSET, t, (
                            f"{o.ref} reads ${{{v}}} but {t.info.ref} defines no variable, so Flux substitutes "
                            f"nothing and applies `${{{v}}}` as written"), o.pos, severity="warning")
                elif missing:
                    unset += [f"${{{v}}} in {o.ref}" for v in missing]
                    if self.strict:
                        continue
                if run:
                    flux.check_names(values)  # per object substituted, as Flux checks them
                    try:
                        obj = flux.substitute_doc(text, values, self.strict)
                    except envsubst.Unset:
                        continue  # reported as unset below
                    except (envsubst.SubstError, goyaml.JSONError, yaml.YAMLError) as e:
                        raise flux.FluxError(f"post build failed for '{o.ref}': {_one_line(e)}",
                                             ("spec", "postBuild")) from None
                    if not isinstance(obj, dict):
                        raise flux.FluxError(f"post build failed for '{o.ref}': not an object after substitution",
                                             ("spec", "postBuild"))
            vias = list(o.vias)
            if obj is not o.obj and obj != o.obj:
                vias += _substitution_vias(o.obj, obj, known, t.locate(("postBuild",)))
            if labels or annotations:
                obj = copy.deepcopy(obj) if obj is o.obj else obj
                flux.set_common_metadata(obj, labels, annotations)
                vias += [Via(("metadata", "labels", k), t.locate(("commonMetadata", "labels", k)),
                             f"spec.commonMetadata.labels.{k}") for k in labels]
                vias += [Via(("metadata", "annotations", k), t.locate(("commonMetadata", "annotations", k)),
                             f"spec.commonMetadata.annotations.{k}") for k in annotations]
            out.append(_with(o, obj=obj, vias=tuple(vias)))
        if unset:
            where = t.locate(("postBuild",)) if isinstance(post, dict) else t.obj.pos
            if self.strict:
                self.note(UNSET, t, (
                    f"{'; '.join(unset)}: no value and no default, and kustomize-controller substitutes "
                    "strictly (its default since v1.9), so it fails the build and applies nothing of "
                    f"{t.info.ref}; set the variable in postBuild.substitute or give it a default "
                    "(${VAR:=value})"), where, severity="error")
                return None
            self.note(UNSET, t, (
                f"{'; '.join(unset)}: no value and no default; with strict substitution turned off Flux "
                "substitutes an empty string, which is what is checked"), where, severity="warning")
        files = {os.path.realpath(os.path.join(d, r)) for r in scanned}
        return _Out(out, {d} if not scanned else set(), files)

    def _variables(self, t: Target, post: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Via], list[str]]:
        """(values, where each comes from, the sources not among the inputs)."""
        values: dict[str, str] = {}
        known: dict[str, Via] = {}
        unknown: list[str] = []
        ns = t.obj.namespace or "default"
        for i, s in enumerate(post.get("substituteFrom") or []):
            if not isinstance(s, dict):
                continue
            kind, name = str(s.get("kind") or ""), str(s.get("name") or "")
            o = self.values.get((kind, ns, name))
            if o is None:
                unknown.append(f"{kind} {ns}/{name}")
                continue
            data = flux.secret_values(o.obj) if kind == "Secret" else {
                str(k): str(v) for k, v in (o.obj.get("data") or {}).items() if isinstance(v, str)}
            if kind == "Secret":
                redact.register(data.values())
            for k, v in data.items():
                values[k] = v.replace("\n", "")
                field = "stringData" if kind == "Secret" and k in (o.obj.get("stringData") or {}) else "data"
                known[k] = Via((), o.locate((field, k)),
                               f"postBuild.substituteFrom[{i}] {kind} {ns}/{name} {field}.{k}")
        for k, v in (post.get("substitute") or {}).items():
            values[str(k)] = str(v).replace("\n", "")
            known[str(k)] = Via((), t.locate(("postBuild", "substitute", k)), f"spec.postBuild.substitute.{k}")
        return values, known, unknown

    # -- Argo CD -----------------------------------------------------------------------------

    def _argo(self, t: Target) -> _Out | None:
        source = dict(t.spec)
        roots = self._sources(t.repo).roots
        path = str(source.get("path") or "")
        d = os.path.realpath(os.path.join(t.repo, path))
        if not roots.holds(d) or not os.path.isdir(d):
            self.note(FAILS, t, (
                f"app path does not exist: {path or '.'} is no directory of this repository, so Argo CD "
                f"cannot render {t.info.ref} and applies nothing"), t.locate(("path",)))
            return None
        source = self._overrides(t, d, source)
        kind = _source_type(source, d)
        if kind == "Helm":
            self.note(NOT_RENDERED, t, (
                f"{path} holds a Helm chart, which Argo CD renders with helm and topogate does not: nothing "
                f"{t.info.ref} applies is checked (a job it deploys may be split or blocked with no finding)"),
                t.locate(("path",)))
            return None
        if kind == "Kustomize":
            out = self._argo_kustomize(t, source, d)
        else:
            out = self._argo_directory(t, source, d)
        return _destination(t, out)

    def _overrides(self, t: Target, d: str, source: dict[str, Any]) -> dict[str, Any]:
        """.argocd-source.yaml and .argocd-source-<app>.yaml merged over the source."""
        roots = self._sources(t.repo).roots
        merged: Any = source
        for name in (".argocd-source.yaml", f".argocd-source-{t.info.name}.yaml"):
            p = os.path.join(d, name)
            if not os.path.isfile(p) or roots.untracked(os.path.realpath(p)) is not None:
                continue
            shown = display(Path(p))
            docs = [obj for _, _, obj in documents(read_text(p, shown), shown)]
            if docs and isinstance(docs[0], dict):
                merged = argocd.merge_patch(merged, docs[0])
        for f in ("chart", "path", "repoURL", "targetRevision"):
            if f in source:
                merged[f] = source[f]
            else:
                merged.pop(f, None)
        return dict(merged)

    def _argo_kustomize(self, t: Target, source: Mapping[str, Any], d: str) -> _Out:
        roots = self._sources(t.repo).roots
        kfile = next((n for n in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(d, n))), None)
        opts = mapping(source.get("kustomize"))
        if kfile is None:
            if any(opts.get(f) for f in _EDITS):
                raise argocd.ArgoError("Missing kustomization file 'kustomization.yaml'", ("path",))
            raise argocd.ArgoError("kustomization file not found in the path", ("path",))
        if not any(opts.get(f) for f in _EDITS) and d in self.read_roots:
            # No edit: what Argo CD builds is what was read (and checked) from this root already.
            return _Out([_with(o) for o in self.read_roots[d]], {d}, set())
        tree = check_tree(Path(d), roots, self.checked)
        dirs = [d, *(str(x) for x in tree.dirs)]
        shown = display(Path(d) / kfile)
        text = read_text(os.path.join(d, kfile), shown)
        kmodel.read(text, shown)  # every spelling kustomize reads otherwise refused, as for kubectl
        try:
            kus: dict[str, Any] = goyaml.yaml_to_json(text) or {}
        except (goyaml.JSONError, yaml.YAMLError) as e:
            raise argocd.ArgoError(f"invalid Kustomization: {_one_line(e)}") from None
        kus = self._edits(t, opts, kus, d, kfile)
        for c in kus.get("components") or []:
            cdir = os.path.join(d, str(c))
            if os.path.isdir(cdir):
                dirs += [str(x) for x in (Path(os.path.realpath(cdir)), *check_tree(Path(cdir), roots, self.checked).dirs)]
        output = self._build(t, d, kfile, kus, (), copies=True)
        built = self._built(t, d, dirs, output, (str(opts.get("namePrefix") or ""), str(opts.get("nameSuffix") or "")))
        objs = []
        for _, o in built:
            vias = list(o.vias) + _option_vias(o.obj, t, opts)
            objs.append(_with(o, vias=tuple(vias)))
        return _Out(objs, {d}, set())

    def _edits(self, t: Target, opts: Mapping[str, Any], kus: dict[str, Any], d: str, kfile: str) -> dict[str, Any]:
        """Argo CD's Build sequence (module doc of topogate.gitops.argocd)."""
        env = argocd.env_of(t.app, t.spec, str(t.spec.get("repoURL") or ""))

        def edit(step: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
            nonlocal kus
            if any(k not in kmodel.STRUCTS["Kustomization"] for k in kus):
                bad = next(k for k in kus if k not in kmodel.STRUCTS["Kustomization"])
                raise argocd.ArgoError(f"kustomize edit: invalid Kustomization: json: unknown field \"{bad}\"")
            kus = step(argocd.fix(kus))

        for f in ("namePrefix", "nameSuffix"):
            if opts.get(f):
                value = str(opts[f])
                edit(lambda k, f=f, value=value: {**k, f: value})  # type: ignore[misc]
        if opts.get("images"):
            images = [str(i) for i in opts["images"]]
            self._revision(t, images, ("kustomize", "images"))
            edit(lambda k: argocd.set_image(k, [argocd.expand(i, env) for i in images]))
        if opts.get("replicas"):
            reps = [(str(r.get("name", "")), argocd.int_count(r.get("count")))
                    for r in opts["replicas"] if isinstance(r, dict)]
            if any("=" in n for n, _ in reps):
                raise argocd.ArgoError("kustomize edit set replicas: invalid format of replicas", ("kustomize", "replicas"))
            edit(lambda k: argocd.set_replicas(k, reps))
        if opts.get("commonLabels"):
            labels = {str(k): str(v) for k, v in opts["commonLabels"].items()}
            self._revision(t, list(labels.values()), ("kustomize", "commonLabels"))
            labels = {k: argocd.expand(v, env) for k, v in labels.items()}
            edit(lambda k: argocd.add_metadata(k, "label", labels, bool(opts.get("forceCommonLabels")),
                                               bool(opts.get("labelWithoutSelector")),
                                               bool(opts.get("labelIncludeTemplates"))))
        if opts.get("commonAnnotations"):
            annotations = {str(k): str(v) for k, v in opts["commonAnnotations"].items()}
            if opts.get("commonAnnotationsEnvsubst"):
                self._revision(t, list(annotations.values()), ("kustomize", "commonAnnotations"))
                annotations = {k: argocd.expand(v, env) for k, v in annotations.items()}
            edit(lambda k: argocd.add_metadata(k, "annotation", annotations, bool(opts.get("forceCommonAnnotations"))))
        if opts.get("namespace"):
            edit(lambda k: {**k, "namespace": str(opts["namespace"])})
        if opts.get("patches"):
            kus = argocd.add_patches(kus, [p for p in opts["patches"] if isinstance(p, dict)])
        if opts.get("components"):
            found = self._components(t, opts, d, kfile)
            if found:
                edit(lambda k: argocd.add_components(k, found, kfile))
        return kus

    def _revision(self, t: Target, texts: Sequence[str], at: Path_) -> None:
        if any(argocd.REVISION_VARS.search(x) for x in texts):
            self.note(NOT_RENDERED, t, (
                "${ARGOCD_APP_REVISION...} is the commit Argo CD syncs, unknown before it does: rendered as "
                "empty, so a value built from it is not what is applied"), t.locate(at))

    def _components(self, t: Target, opts: Mapping[str, Any], d: str, kfile: str) -> list[str]:
        """`edit add component`'s arguments and their glob; with ignoreMissingComponents only those
        holding a kustomization file inside the repository."""
        comps = [str(c) for c in opts.get("components") or []]
        if opts.get("ignoreMissingComponents"):
            keep = []
            for c in comps:
                cdir = os.path.realpath(os.path.join(d, c))
                if cdir.startswith(t.repo.rstrip("/") + "/") and any(
                        os.path.isfile(os.path.join(cdir, k)) and not os.path.islink(os.path.join(cdir, k))
                        for k in KUSTOMIZATION_FILES):
                    keep.append(c)
            comps = keep
        found: list[str] = []
        for c in comps:
            matches = _go_glob(d, c)
            if matches:
                found += matches
            elif os.path.isdir(os.path.join(d, c)):
                found.append(c)
            else:
                raise argocd.ArgoError(f"kustomize edit add component: {c} has no match: must build at directory: "
                                       "not a valid directory", ("kustomize", "components"))
        return found

    def _argo_directory(self, t: Target, source: Mapping[str, Any], d: str) -> _Out:
        roots = self._sources(t.repo).roots
        directory = mapping(source.get("directory"))
        recurse = directory.get("recurse") is True
        include, exclude = str(directory.get("include") or ""), str(directory.get("exclude") or "")
        no_filter = directory.get("disableExtensionFilter") is True
        objs: list[RenderedObject] = []
        files: set[str] = set()
        jsonnet: list[str] = []
        for f in _walk(d, recurse):
            rel = os.path.relpath(f, d)
            name = os.path.basename(f)
            if not no_filter and not argocd.MANIFEST.match(name):
                continue
            real = os.path.realpath(f)
            if not roots.holds(real):
                raise argocd.ArgoError(f"illegal filepath in symlink at {rel!r}", ("path",))
            if not os.path.isfile(real) or roots.untracked(real) is not None:
                continue
            if exclude and argocd.glob_match(exclude, rel) or include and not argocd.glob_match(include, rel):
                continue
            shown = display(Path(f))
            text = read_text(f, shown)
            if argocd.SKIP_MARKER in text:
                continue
            if name.endswith(".jsonnet"):
                jsonnet.append(rel)
                continue
            if not name.endswith(MANIFEST_SUFFIXES) and not no_filter:
                continue
            files.add(real)
            for o in parse_yaml(text, shown, str(f)):
                objs.append(_with(o))
        if jsonnet:
            self.note(NOT_RENDERED, t, (
                f"{', '.join(jsonnet)}: jsonnet, which Argo CD evaluates and topogate does not: what it yields "
                "is not checked (a job it deploys may be split or blocked with no finding); render it into "
                "YAML and check that"), t.locate(("path",)))
        return _Out(objs, set(), files)

    # -- building ----------------------------------------------------------------------------

    def _build(self, t: Target, d: str, kfile: str, kus: Mapping[str, Any], options: tuple[str, ...],
               copies: bool) -> str:
        """kubectl kustomize of d with `kus` as its kustomization, in a scratch mirror."""
        text = json.dumps(kus, sort_keys=True, ensure_ascii=False)
        shown = display(Path(d) / kfile)
        k = kmodel.read(text, shown)
        wanted: set[str] = set()
        refs = list(references(k))
        while refs:
            fld, r, where = refs.pop()
            scratch.refuse_above(r, d, t.repo, t.obj.pos, fld)
            real = os.path.realpath(os.path.join(d, r))
            if copies and os.path.isfile(real) and real.startswith(d.rstrip("/") + "/"):
                wanted.add(real)
                if fld in CONFIG_LISTS:
                    refs += list(config_references(read_text(real, display(Path(real))), display(Path(real))))
        with tempfile.TemporaryDirectory(prefix="topogate-gitops-") as tmp:
            app = scratch.mirror(t.repo, d, kfile, text, wanted, tmp)
            return scratch.build(app, t.repo, tmp, options)

    def _built(self, t: Target, d: str, dirs: Sequence[str], output: str,
               strip: tuple[str, str]) -> list[tuple[str, RenderedObject]]:
        """Each object of a build's output with its text and its place in the sources."""
        sources = self._sources(t.repo)
        index = SourceIndex([Path(x) for x in dirs], sources)
        kfile = next((Path(d) / n for n in KUSTOMIZATION_FILES if (Path(d) / n).is_file()), None)
        fallback = Position(display(kfile) if kfile is not None else display(Path(d)), 1, 1)
        patches = TreePatches([Path(x) for x in dirs])
        shown = f"{display(Path(d))} ({t.info.ref})"
        prefix, suffix = strip
        out: list[tuple[str, RenderedObject]] = []
        for doc in flux.split_documents(output):
            for o in parse_yaml(doc, shown, guard=False):
                name = o.name
                if prefix and name.startswith(prefix):
                    name = name[len(prefix):]
                if suffix and name.endswith(suffix):
                    name = name[:len(name) - len(suffix)]
                key = (o.kind, name, o.namespace)
                dref = DeclarationRef(index, key, fallback)
                base = K8sObject(o.obj, SourcePosition(dref), display(Path(d)), source=dref, patches=patches)
                out.append((doc, _with(base, render=t.info, cluster=t.info.cluster,
                                       vias=tuple(_option_vias(o.obj, t, t.spec) if t.engine == "flux" else ()))))
                if o.kind == "Secret":
                    redact.register(flux.secret_values(o.obj).values())
        return out


_EDITS = ("namePrefix", "nameSuffix", "images", "replicas", "commonLabels", "commonAnnotations", "namespace",
          "patches", "components")


def _one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def _with(o: K8sObject, **changes: Any) -> RenderedObject:
    """o as a RenderedObject (keeping what it has), with `changes`."""
    base = {f.name: getattr(o, f.name) for f in fields(K8sObject) if f.init}
    if isinstance(o, RenderedObject):
        base.update(render=o.render, vias=o.vias, cluster=o.cluster)
    base["_blamed"] = None
    base.update(changes)
    return RenderedObject(**base)


def _source_type(source: Mapping[str, Any], d: str) -> str:
    explicit = [k for k, name in (("kustomize", "Kustomize"), ("helm", "Helm"), ("directory", "Directory"),
                                  ("plugin", "Plugin")) if source.get(k) is not None]
    if len(explicit) > 1:
        raise argocd.ArgoError(f"multiple application sources defined: {','.join(explicit)}")
    if explicit:
        return {"kustomize": "Kustomize", "helm": "Helm", "directory": "Directory", "plugin": "Plugin"}[explicit[0]]
    names = os.listdir(d)
    if any(n in KUSTOMIZATION_FILES and os.path.isfile(os.path.join(d, n)) for n in names):
        return "Kustomize"
    if any(n.endswith("Chart.yaml") for n in names):
        return "Helm"
    return "Directory"


def _walk(d: str, recurse: bool) -> Iterable[str]:
    """filepath.Walk's files of d (lexical; links not followed into), its subtree with recurse."""
    stack = [[os.path.join(d, n) for n in reversed(sorted(os.listdir(d)))]]
    while stack:
        if not stack[-1]:
            stack.pop()
            continue
        p = stack[-1].pop()
        if os.path.basename(p) == ".git":
            continue
        if os.path.isdir(p) and not os.path.islink(p):
            if recurse:
                stack.append([os.path.join(p, n) for n in reversed(sorted(os.listdir(p)))])
            continue
        yield p


_GLOB_META = re.compile(r"[*?\[\\]")


def _go_glob(d: str, pattern: str) -> list[str]:
    """filepath.Glob(pattern) from directory d: matches as written, sorted per directory."""
    if not _GLOB_META.search(pattern):
        return [pattern] if os.path.lexists(os.path.join(d, pattern)) else []
    import fnmatch  # lazy: only a component glob needs it

    parts = pattern.split("/")
    found = [""]
    for part in parts:
        nxt: list[str] = []
        for base in found:
            here = os.path.join(d, base) if base else d
            if not _GLOB_META.search(part):
                cand = os.path.join(base, part) if base else part
                if os.path.lexists(os.path.join(d, cand)):
                    nxt.append(cand)
                continue
            try:
                names = sorted(os.listdir(here))
            except OSError:
                continue
            nxt += [os.path.join(base, n) if base else n for n in names if fnmatch.fnmatchcase(n, part)]
        found = nxt
    return found


# -- where a field was changed ----------------------------------------------------------------


def _get(obj: Any, path: Path_) -> Any:
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        elif isinstance(obj, list) and isinstance(p, int) and 0 <= p < len(obj):
            obj = obj[p]
        else:
            return None
    return obj


def _substitution_vias(before: Mapping[str, Any], after: Mapping[str, Any], known: Mapping[str, Via],
                       fallback: Position) -> list[Via]:
    """Per changed field: the line that set the variable it read (a default in the object itself
    is the postBuild that ran the substitution)."""
    out: list[Via] = []
    for path in changed_paths(before, after):
        old = _get(before, path)
        names: list[str] = []
        if isinstance(old, str):
            try:
                names = [r.param for r in envsubst.references(envsubst.parse(old))]
            except envsubst.SubstError:
                names = []
        src = next((known[n] for n in names if n in known), None)
        if src is not None:
            out.append(Via(path, src.pos, src.what))
        else:
            out.append(Via(path, fallback, "spec.postBuild (a default written in the object)"))
    return out


def _option_vias(obj: Mapping[str, Any], t: Target, opts: Mapping[str, Any]) -> list[Via]:
    """Fields of a rendered object the engine object's own kustomize options changed (Flux's
    spec, an Application source's `kustomize`), each with the option's line."""
    flux_side = t.engine == "flux"
    at: Callable[[Path_], Position] = (lambda p: t.locate(p)) if flux_side else (
        lambda p: t.locate(("kustomize", *p)))
    name = "spec" if flux_side else "spec.source.kustomize"
    md = mapping(obj.get("metadata"))
    out: list[Via] = []
    ns_key = "targetNamespace" if flux_side else "namespace"
    if opts.get(ns_key) and md.get("namespace") == opts.get(ns_key):
        out.append(Via(("metadata", "namespace"), at((ns_key,)), f"{name}.{ns_key}"))
    for key in ("namePrefix", "nameSuffix"):
        if opts.get(key):
            out.append(Via(("metadata", "name"), at((key,)), f"{name}.{key}"))
    for i, p in enumerate(opts.get("patches") or []):
        if isinstance(p, dict):
            for path in _patch_paths(p, obj):
                out.append(Via(path, at(("patches", i)), f"{name}.patches[{i}]"))
    images = opts.get("images") or []
    for path, image in _images(obj):
        img_name = argocd.split_image(image)[0]
        for i, im in enumerate(images):
            if isinstance(im, dict):
                want = {str(im.get("newName") or im.get("name") or "")}
            else:
                key, _, value = str(im).partition("=") if "=" in str(im) else ("", "", str(im))
                want = {argocd.split_image(value)[0], key} - {""}
            if img_name in want:
                out.append(Via(path, at(("images", i)), f"{name}.images[{i}]"))
    if not flux_side:
        for i, r in enumerate(opts.get("replicas") or []):
            if isinstance(r, dict) and r.get("name") == md.get("name"):
                out.append(Via(("spec", "replicas"), at(("replicas", i)), f"{name}.replicas[{i}]"))
        for key, field in (("commonLabels", "labels"), ("commonAnnotations", "annotations")):
            for k in (opts.get(key) or {}):
                out += [Via(p, at((key, k)), f"{name}.{key}.{k}") for p in _label_paths(obj, field, str(k))]
    return out


def _images(obj: Any, at: Path_ = ()) -> Iterable[tuple[Path_, str]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("containers", "initContainers") and isinstance(v, list):
                for i, c in enumerate(v):
                    if isinstance(c, dict) and isinstance(c.get("image"), str):
                        yield (*at, k, i, "image"), c["image"]
            yield from _images(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _images(v, (*at, i))


def _label_paths(obj: Any, field: str, key: str, at: Path_ = ()) -> Iterable[Path_]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in (field, "matchLabels", "selector") and isinstance(v, dict) and key in v:
                yield (*at, k, key)
            yield from _label_paths(v, field, key, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _label_paths(v, field, key, (*at, i))


def _patch_paths(p: Mapping[str, Any], obj: Mapping[str, Any]) -> list[Path_]:
    """The fields an inline patch writes in obj, when its target is obj (a JSON patch: its
    operations' paths; a strategic merge patch: its fields, lists as a whole)."""
    try:
        docs = [x for x in yaml.safe_load_all(str(p.get("patch") or "")) if x is not None]
    except yaml.YAMLError:
        return []
    if not docs:
        return []
    body = docs[0]
    target = p.get("target") if isinstance(p.get("target"), dict) else None
    if target is None and isinstance(body, dict):
        md = mapping(body.get("metadata"))
        target = {"kind": body.get("kind"), "name": md.get("name")}
    if not _selects(target or {}, obj):
        return []
    if isinstance(body, list):
        out: list[Path_] = []
        for op in body:
            if isinstance(op, dict) and isinstance(op.get("path"), str):
                out.append(tuple(int(s) if s.isdigit() else s.replace("~1", "/").replace("~0", "~")
                                 for s in op["path"].split("/")[1:]))
        return out
    if isinstance(body, dict):
        return [q for q in _leaves(body) if q[:1] not in (("apiVersion",), ("kind",))
                and q[:2] not in (("metadata", "name"), ("metadata", "namespace"))]
    return []


def _leaves(v: Any, at: Path_ = ()) -> list[Path_]:
    if isinstance(v, dict) and v:
        return [q for k, x in v.items() if k != "$patch" for q in _leaves(x, (*at, str(k)))]
    return [at]


def _selects(target: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """kustomize's Selector against an object: group, version and kind exact, name and
    namespace as anchored regular expressions (label and annotation selectors: taken to match)."""
    api = str(obj.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    md = mapping(obj.get("metadata"))
    for key, have in (("group", group), ("version", version), ("kind", str(obj.get("kind") or ""))):
        if target.get(key) and target[key] != have:
            return False
    for key in ("name", "namespace"):
        want = target.get(key)
        if want:
            try:
                if not re.fullmatch(str(want), str(md.get(key) or "")):
                    return False
            except re.error:
                return False
    return True


def _destination(t: Target, out: _Out) -> _Out:
    """Argo CD's DeduplicateTargetObjects: the destination namespace on every namespaced object
    without one (an unknown kind counts as namespaced), none on a cluster-scoped one."""
    dest = (t.app.get("spec") or {}).get("destination") or {}
    ns = dest.get("namespace") if isinstance(dest, dict) else None
    objs: list[RenderedObject] = []
    for o in out.objects:
        obj = o.obj
        vias = o.vias
        md = mapping(obj.get("metadata"))
        if o.kind in CLUSTER_SCOPED and md.get("namespace"):
            obj = {**obj, "metadata": {k: v for k, v in md.items() if k != "namespace"}}
        elif o.kind not in CLUSTER_SCOPED and not md.get("namespace") and isinstance(ns, str) and ns:
            obj = {**obj, "metadata": {**md, "namespace": ns}}
            vias = (*vias, Via(("metadata", "namespace"), t.app_locate(("spec", "destination", "namespace")),
                               "spec.destination.namespace"))
        objs.append(_with(o, obj=obj, render=t.info, cluster=t.info.cluster, vias=vias))
    return _Out(objs, out.roots, out.files)


# -- replacing what was read -------------------------------------------------------------------


def _plain(obj: Mapping[str, Any]) -> str:
    """An object's content without Argo CD's own annotations (sync waves): what two engines
    applying it must agree on."""
    md = mapping(obj.get("metadata"))
    ann = md.get("annotations") if isinstance(md.get("annotations"), dict) else None
    if ann:
        kept = {k: v for k, v in ann.items() if not str(k).startswith("argocd.argoproj.io/")}
        md = {**md, "annotations": kept} if kept else {k: v for k, v in md.items() if k != "annotations"}
        obj = {**obj, "metadata": md}
    return json.dumps(obj, sort_keys=True, default=str)


def _identity(o: K8sObject) -> tuple[str, str, str, str]:
    return group_of(o) if "/" in o.api_version else "", o.kind, o.namespace, o.name


def _merge(read: Sequence[K8sObject], outs: Sequence[tuple[Target, _Out]]) -> list[K8sObject]:
    """The read objects, each render's objects in place of those they replace (at the first of
    them, else at the end), later agreeing copies left out (_dedupe)."""
    real: dict[str, str] = {}

    def replaced(o: K8sObject, roots: set[str], files: set[str]) -> bool:
        where = o.built_from or o.src_file
        if not where:
            return False
        if where not in real:
            real[where] = os.path.realpath(where)
        return real[where] in (roots if o.built_from else files)

    roots = {r for _, out in outs for r in out.roots}
    files = {f for _, out in outs for f in out.files}
    slot: dict[int, list[int]] = {}
    for i, (_, out) in enumerate(outs):
        at = next((j for j, o in enumerate(read) if replaced(o, out.roots, out.files)), len(read))
        slot.setdefault(at, []).append(i)
    result: list[K8sObject] = []
    for j, o in enumerate(read):
        for i in slot.get(j, ()):
            result.extend(outs[i][1].objects)
        if not replaced(o, roots, files):
            result.append(o)
    for i in slot.get(len(read), ()):
        result.extend(outs[i][1].objects)
    return _dedupe(result)


def _dedupe(objs: Sequence[K8sObject]) -> list[K8sObject]:
    """Later copies of an object that agree with an earlier one in the same cluster (module doc)."""
    by_id: dict[tuple[str, str, str, str], list[K8sObject]] = {}
    drop: set[int] = set()
    for o in objs:
        if not o.kind or not o.name:
            continue
        same = by_id.setdefault(_identity(o), [])
        c = o.cluster if isinstance(o, RenderedObject) else None
        for earlier in same:
            ec = earlier.cluster if isinstance(earlier, RenderedObject) else None
            if (c is None or ec is None or c == ec) and _plain(earlier.obj) == _plain(o.obj):
                if isinstance(o, RenderedObject) and not isinstance(earlier, RenderedObject):
                    drop.add(id(earlier))  # the read copy goes: the rendered one says who applies it
                    same.remove(earlier)
                    same.append(o)
                else:
                    drop.add(id(o))
                break
        else:
            same.append(o)
    return [o for o in objs if id(o) not in drop]


__all__ = ["CLUSTER_SCOPED", "MAX_DEPTH", "Rendered", "render"]
