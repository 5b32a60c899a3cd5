"""The GitOps engine objects among the inputs, and what each of them renders.

A Flux Kustomization (kustomize.toolkit.fluxcd.io/v1) renders `spec.path` of the source its
`sourceRef` names; an Argo CD Application (argoproj.io/v1alpha1) renders each of its
`spec.source(s)`; an ApplicationSet yields Applications from its list generator. Only a source
that is this repository is rendered: the inventory's `gitops.repoURL` says which that is, and
a Flux GitRepository's `spec.url` or an Application's `repoURL` must name it (compared as Argo
CD compares repository URLs: scheme, user, `.git` and case aside). Everything else is said
(topogate.gitops.notes): another repository, a Helm chart, a plugin, an OCI or bucket source, a
GitRepository that is not among the inputs, an inventory without `gitops.repoURL`, an
ApplicationSet generator other than a list.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.core.labels import CLUSTER_LABEL, MANAGED_BY_LABEL
from topogate.core.position import Position
from topogate.gitops import notes
from topogate.gitops.objects import RenderedObject, RenderInfo
from topogate.gitops.values import mapping
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import repo_root
from topogate.safeio.saferead import InputError, documents
from topogate.sources.positions import Path_

FLUX_GROUP = "kustomize.toolkit.fluxcd.io"
FLUX_SOURCE_GROUP = "source.toolkit.fluxcd.io"
ARGO_GROUP = "argoproj.io"
# Fields of a Flux Kustomization's spec its v1 API does not have: the API server drops them,
# so kustomize-controller never sees them (its generator would read them).
FLUX_V1_DROPPED = ("patchesStrategicMerge", "patchesJson6902")


def normalize_url(url: str) -> str:
    """A repository URL as Argo CD compares them (git.NormalizeGitURL, case folded): no scheme,
    user or password, `host:path` as `host/path`, no `.git` or trailing slash."""
    u = url.strip().lower()
    u = re.sub(r"^[a-z][a-z0-9+.-]*://", "", u)
    u = re.sub(r"^[^@/]*@", "", u)
    if re.match(r"^[^/:]+:(?!\d+/)", u):  # scp-like host:path (not host:port/)
        u = u.replace(":", "/", 1)
    u = re.sub(r":\d+/", "/", u, count=1)
    u = u.rstrip("/")
    return u[:-4] if u.endswith(".git") else u


def group_of(o: K8sObject) -> str:
    return o.api_version.rpartition("/")[0]


def is_flux_kustomization(o: K8sObject) -> bool:
    return o.kind == "Kustomization" and group_of(o) == FLUX_GROUP


def is_application(o: K8sObject) -> bool:
    return o.kind in ("Application", "ApplicationSet") and group_of(o) == ARGO_GROUP


def is_engine(o: K8sObject) -> bool:
    return is_flux_kustomization(o) or is_application(o)


def ref(o: K8sObject) -> str:
    return f"{o.kind}/{o.namespace}/{o.name}" if o.namespace else f"{o.kind}/{o.name}"


@dataclass(frozen=True)
class Target:
    """One render to do: a Flux Kustomization's path, or one source of an Application. `base`:
    the directory its path is relative to (the repository's root; for an object `generate`
    wrote into a tree checked elsewhere than `gitops.path`, that tree's place, see generated_base)."""

    engine: str  # "flux" | "argocd"
    obj: K8sObject  # the engine object as read (an ApplicationSet for its Applications)
    spec: Mapping[str, Any]  # the Flux spec (pruned), or the Application's source
    app: Mapping[str, Any]  # the Application (generated for an ApplicationSet); {} for Flux
    repo: str  # the repository's root (real path)
    info: RenderInfo
    locate: Callable[[Path_], Position]  # where a field of the spec (or source) is written
    app_locate: Callable[[Path_], Position]  # where a field of the Application is written
    base: str = ""  # the directory `path` is relative to ("": the repository's root)
    path: str = ""  # the path, relative to base

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return (self.info.kind, self.info.namespace, self.info.name + "#" + self.info.path, self.info.cluster)


class Finder:
    """The engine objects of one set of inputs, resolved against one inventory."""

    def __init__(self, objects: Sequence[K8sObject], inv: Inventory | None):
        self.inv = inv
        self.clusters = [c.name for c in inv.clusters] if inv is not None else []
        self.repo_url = inv.gitops.repo_url if inv is not None and inv.gitops is not None else None
        self.git_repos: dict[tuple[str, str], list[K8sObject]] = {}
        self.notes: list[notes.Note] = []
        self.add_sources(objects)

    def add_sources(self, objects: Sequence[K8sObject]) -> None:
        """The GitRepositories among the inputs, and those a render produced (a Flux
        Kustomization applying them)."""
        for o in objects:
            if o.kind == "GitRepository" and group_of(o) == FLUX_SOURCE_GROUP:
                self.git_repos.setdefault((o.namespace or "default", o.name), []).append(o)

    def git_repository(self, ns: str, name: str, cluster: str | None) -> K8sObject | None:
        """The GitRepository a Kustomization names: the one of its own cluster where each
        cluster's directory defines its own (flux-system/flux-system in every one), else the first."""
        found = self.git_repos.get((ns, name), [])
        return next((g for g in found if self.cluster_of(g) == cluster), found[0] if found else None)

    def note(self, kind: str, o: K8sObject, message: str, pos: Position | None = None, severity: str = "") -> None:
        self.notes.append(notes.Note(kind, ref(o), message, pos if pos is not None else o.pos, severity))

    # -- which cluster ----------------------------------------------------------------------

    def cluster_of(self, o: K8sObject) -> str | None:
        """The cluster an engine object itself is applied to: the render that produced it, its
        topogate.dev/cluster label, a `clusters/<name>/` in where it was read, the only one."""
        if isinstance(o, RenderedObject) and o.cluster is not None:
            return o.cluster
        md = mapping(o.obj.get("metadata"))
        label = (md.get("labels") or {}).get(CLUSTER_LABEL) if isinstance(md.get("labels"), dict) else None
        if isinstance(label, str) and label in self.clusters:
            return label
        for text in (o.built_from, o.src_file):
            parts = text.replace("\\", "/").split("/")
            for i, p in enumerate(parts[:-1]):
                if p == "clusters" and parts[i + 1] in self.clusters:
                    return parts[i + 1]
        return self.clusters[0] if len(self.clusters) == 1 else None

    def argo_cluster(self, o: K8sObject, app: Mapping[str, Any]) -> str | None:
        dest = (app.get("spec") or {}).get("destination") or {}
        name = dest.get("name") if isinstance(dest, dict) else None
        if isinstance(name, str) and name in self.clusters:
            return name
        server = dest.get("server") if isinstance(dest, dict) else None
        if (isinstance(server, str) and self.inv is not None and self.inv.gitops is not None
                and server == self.inv.gitops.destination_server and len(self.clusters) == 1):
            return self.clusters[0]
        return self.cluster_of(o)

    # -- the repository ----------------------------------------------------------------------

    def _repo_of(self, o: K8sObject) -> str | None:
        where = o.built_from or o.src_file
        if not where or where == "-":
            return None
        return str(repo_root(where))

    def _ours(self, o: K8sObject, url: str, at: Position, what: str) -> bool:
        """Whether `url` is this repository; a note saying why not, when not."""
        if self.repo_url is None:
            self.note(notes.NOT_RENDERED, o, (
                f"{what} fetches {url}, and the inventory has no `gitops.repoURL` to tell whether that is "
                "this repository: not rendered, so nothing it applies is checked (a job it deploys may be "
                "split or blocked with no finding); set gitops.repoURL"), at)
            return False
        if normalize_url(url) != normalize_url(self.repo_url):
            self.note(notes.NOT_RENDERED, o, (
                f"{what} fetches {url}, another repository than this one ({self.repo_url}): what it "
                "applies is not checked here, so a job it deploys may be split or blocked with no "
                "finding; check that repository too"), at)
            return False
        return True

    def generated_base(self, o: K8sObject, repo: str, path: str) -> tuple[str, str]:
        """(the directory `path` is relative to, the path from there). `generate` writes its
        Applications and Flux Kustomizations with paths under `gitops.path`; a tree it wrote and
        that is checked elsewhere (`generate -o OUT` with OUT not `gitops.path`, a scratch copy)
        stands for `gitops.path`: its engine objects' paths resolve inside it."""
        plain = (repo, path)
        gitops = self.inv.gitops if self.inv is not None else None
        md = mapping(o.obj.get("metadata"))
        if gitops is None or mapping(md.get("labels")).get(MANAGED_BY_LABEL) != "topogate":
            return plain
        if os.path.exists(secure_join(repo, path)):
            return plain
        prefix = [p for p in gitops.path.replace("\\", "/").split("/") if p not in ("", ".")]
        parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
        if parts[:len(prefix)] != prefix:
            return plain
        rest = "/".join(parts[len(prefix):])
        here = os.path.realpath(o.built_from or os.path.dirname(o.src_file) or repo)
        while here.startswith(repo.rstrip("/") + "/") or here == repo:
            if os.path.isdir(secure_join(here, rest)):
                return here, rest
            if here == repo:
                break
            here = os.path.dirname(here)
        return plain

    # -- Flux --------------------------------------------------------------------------------

    def flux(self, o: K8sObject) -> Iterator[Target]:
        version = o.api_version.rpartition("/")[2]
        if version != "v1":
            self.note(notes.NOT_RENDERED, o, (
                f"{o.api_version} is not served by current Flux (only kustomize.toolkit.fluxcd.io/v1): "
                "not rendered, nothing it would apply is checked; move it to v1"))
            return
        spec = mapping(o.obj.get("spec"))
        spec = dict(spec)
        for f in FLUX_V1_DROPPED:
            if f in spec:
                del spec[f]
                self.note(notes.NOT_RENDERED, o, (
                    f"spec.{f} is no field of kustomize.toolkit.fluxcd.io/v1: the API server drops it and "
                    "Flux applies the objects without it; move it to spec.patches"),
                    o.locate(("spec", f)))
        src = mapping(spec.get("sourceRef"))
        kind = str(src.get("kind") or "")
        name = str(src.get("name") or "")
        ns = str(src.get("namespace") or o.namespace or "default")
        at = o.locate(("spec", "sourceRef"))
        if kind != "GitRepository":
            self.note(notes.NOT_RENDERED, o, (
                f"its source is {kind or 'not named'} {ns}/{name}, not a GitRepository of this repository: "
                "not rendered, so nothing it applies is checked (a job it deploys may be split or blocked "
                "with no finding)"), at)
            return
        repo_obj = self.git_repository(ns, name, self.cluster_of(o))
        if repo_obj is None:
            self.note(notes.NOT_RENDERED, o, (
                f"GitRepository {ns}/{name} is not among the inputs, so which repository it fetches cannot "
                "be told: not rendered, nothing it applies is checked (a job it deploys may be split or "
                "blocked with no finding); pass the file that defines it"), at)
            return
        rspec = mapping(repo_obj.obj.get("spec"))
        url = str(rspec.get("url") or "")
        if not self._ours(o, url, repo_obj.locate(("spec", "url")), f"GitRepository {ns}/{name}"):
            return
        if rspec.get("include"):
            self.note(notes.NOT_RENDERED, o, (
                f"GitRepository {ns}/{name} includes other repositories (spec.include): files they add "
                "are not read, so the render may miss what they bring (the verdict may be too lenient)"),
                repo_obj.locate(("spec", "include")))
        repo = self._repo_of(o)
        if repo is None:
            self.note(notes.NOT_RENDERED, o, "read from standard input: no repository to render its path in", at)
            return
        cluster = None if spec.get("kubeConfig") else self.cluster_of(o)
        deps = tuple(f"{d.get('namespace') or o.namespace}/{d.get('name')}" for d in spec.get("dependsOn") or []
                     if isinstance(d, dict) and d.get("name"))
        path = str(spec.get("path") or "")
        base, rel = self.generated_base(o, repo, path)
        info = RenderInfo("Flux", "Kustomization", o.namespace, o.name, o.pos, path or "./", cluster, deps)
        yield Target("flux", o, spec, {}, repo, info, lambda p: o.locate(("spec", *p)), o.locate, base, rel)

    # -- Argo CD -----------------------------------------------------------------------------

    def argo(self, o: K8sObject) -> Iterator[Target]:
        if o.kind == "ApplicationSet":
            for app, locate in self._appset(o):
                yield from self._app(o, app, locate)
            return
        yield from self._app(o, o.obj, o.locate)

    def _app(self, o: K8sObject, app: Mapping[str, Any], locate: Callable[[Path_], Position]) -> Iterator[Target]:
        spec = mapping(app.get("spec"))
        md = mapping(app.get("metadata"))
        name = str(md.get("name") or o.name)
        multi = isinstance(spec.get("sources"), list) and spec.get("sources")
        sources = [(("spec", "sources", i), s) for i, s in enumerate(spec["sources"])] if multi else (
            [(("spec", "source"), spec.get("source"))] if isinstance(spec.get("source"), dict) else [])
        cluster = self.argo_cluster(o, app)
        for at, s in sources:
            if not isinstance(s, dict):
                continue
            where = locate(at)
            if s.get("ref") and not s.get("path"):
                continue  # a values reference of a multi-source Application: renders nothing itself
            what = f"source of Application {name}"
            if s.get("chart") or s.get("helm") is not None:
                self.note(notes.NOT_RENDERED, o, (
                    f"the {what} is a Helm chart ({s.get('chart') or s.get('path')}), which topogate does not "
                    "render: nothing it applies is checked (a job it deploys may be split or blocked with no "
                    "finding); render it with `helm template` into the repository and check that"), where)
                continue
            if s.get("plugin") is not None:
                self.note(notes.NOT_RENDERED, o, (
                    f"the {what} is a Config Management Plugin, whose output only Argo CD knows: nothing it "
                    "applies is checked (a job it deploys may be split or blocked with no finding); check "
                    "the plugin's output instead (for topogate's own plugin: the generated tree)"), where)
                continue
            if not self._ours(o, str(s.get("repoURL") or ""), locate((*at, "repoURL")), f"the {what}"):
                continue
            repo = self._repo_of(o)
            if repo is None:
                self.note(notes.NOT_RENDERED, o, "read from standard input: no repository to render its path in",
                          where)
                continue
            info = RenderInfo("Argo CD", "Application", str(md.get("namespace") or o.namespace), name, o.pos,
                              str(s.get("path") or "."), cluster)
            base, rel = self.generated_base(o, repo, str(s.get("path") or ""))
            yield Target("argocd", o, s, app, repo, info, _under(locate, at), locate, base, rel)

    def _appset(self, o: K8sObject) -> Iterator[tuple[dict[str, Any], Callable[[Path_], Position]]]:
        spec = mapping(o.obj.get("spec"))
        template = spec.get("template")
        if not isinstance(template, dict):
            self.note(notes.NOT_RENDERED, o, "no spec.template: no Application to render")
            return
        if spec.get("templatePatch"):
            self.note(notes.NOT_RENDERED, o, (
                "spec.templatePatch is a Go template over the whole Application, which topogate does not "
                "evaluate: its Applications are not rendered, nothing they apply is checked"),
                o.locate(("spec", "templatePatch")))
            return
        go = spec.get("goTemplate") is True
        options = [str(x) for x in spec.get("goTemplateOptions") or []]

        def locate(p: Path_) -> Position:
            return o.locate(("spec", "template", *p))

        for i, gen in enumerate(spec.get("generators") or []):
            at = o.locate(("spec", "generators", i))
            kinds = [k for k in gen if k != "selector"] if isinstance(gen, dict) else []
            if kinds != ["list"] or not isinstance(gen.get("list"), dict):
                self.note(notes.NOT_RENDERED, o, (
                    f"generator {', '.join(kinds) or '?'} yields Applications only Argo CD can list (topogate "
                    "reads list generators): they are not rendered, nothing they apply is checked"), at)
                continue
            lst = gen["list"]
            if lst.get("template") or gen.get("selector"):
                self.note(notes.NOT_RENDERED, o, (
                    "a list generator with its own template or a selector is not read: its Applications are "
                    "not rendered, nothing they apply is checked"), at)
                continue
            elements = list(lst.get("elements") or [])
            if lst.get("elementsYaml"):
                try:  # a pull request's text: read with the checks every file gets
                    extra = next((v for _, _, v in documents(str(lst["elementsYaml"]), "elementsYaml")), None)
                except InputError as e:
                    self.note(notes.NOT_RENDERED, o, (
                        f"its list generator's elementsYaml is not read ({e.message}): the Applications it "
                        "yields are not rendered, nothing they apply is checked"), at)
                    extra = None
                elements += extra if isinstance(extra, list) else []
            for el in elements:
                try:
                    params = _params(el, go)
                    app = _render_template(template, params, go, options)
                except _TemplateError as e:
                    self.note(notes.NOT_RENDERED, o, (
                        f"an element of its list generator cannot be applied to the template ({e}): its "
                        "Application is not rendered, nothing it applies is checked"), at)
                    continue
                yield app, locate


def _under(locate: Callable[[Path_], Position], at: Path_) -> Callable[[Path_], Position]:
    return lambda p: locate((*at, *p))


class _TemplateError(Exception):
    pass


def _params(el: Any, go: bool) -> dict[str, Any]:
    if not isinstance(el, dict):
        raise _TemplateError("an element is no mapping")
    if go:
        return el
    params: dict[str, Any] = {}
    for k, v in el.items():
        if k == "values":
            if not isinstance(v, dict):
                raise _TemplateError("error parsing values map")
            for vk, vv in v.items():
                if not isinstance(vv, str):
                    raise _TemplateError("error parsing value as string")
                params[f"values.{vk}"] = vv
        elif not isinstance(v, str):
            raise _TemplateError("error parsing value as string")
        else:
            params[str(k)] = v
    return params


_FAST_TAG = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_GO_FIELD = re.compile(r"\{\{-?\s*((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*-?\}\}")
_TEMPLATED = re.compile(r".*\{\{.*\}\}.*")


def _replace(text: str, params: Mapping[str, Any], go: bool, options: Sequence[str]) -> str:
    if go:
        def field(m: re.Match[str]) -> str:
            v: Any = params
            for part in m.group(1).split(".")[1:]:
                if not isinstance(v, dict) or part not in v:
                    if "missingkey=error" in options:
                        raise _TemplateError(f"map has no entry for key {part!r}")
                    return "<no value>"
                v = v[part]
            return v if isinstance(v, str) else str(v)

        out = _GO_FIELD.sub(field, text)
        if "{{" in out:
            raise _TemplateError("a Go template beyond field references is not evaluated")
        return out
    if not _TEMPLATED.search(text):
        return text
    if text.count("{{") and "}}" not in text[text.index("{{"):]:
        raise _TemplateError("invalid template: cannot find end tag")

    def tag(m: re.Match[str]) -> str:
        key = m.group(1).strip()
        v = params.get(key)
        return v if key and isinstance(v, str) else m.group(0)

    return _FAST_TAG.sub(tag, text)


def _render_template(tmpl: Any, params: Mapping[str, Any], go: bool, options: Sequence[str]) -> Any:
    if isinstance(tmpl, dict):
        return {(_replace(k, params, go, options) if isinstance(k, str) else k): _render_template(v, params, go, options)
                for k, v in tmpl.items()}
    if isinstance(tmpl, list):
        return [_render_template(v, params, go, options) for v in tmpl]
    if isinstance(tmpl, str):
        return _replace(tmpl, params, go, options)
    return copy.deepcopy(tmpl)


def secure_join(root: str, path: str) -> str:
    """securejoin.SecureJoin(root, path) for a path of text: `..` stops at the root (links are
    resolved by the reads that follow, which stay inside the repository)."""
    parts: list[str] = []
    for p in path.replace("\\", "/").split("/"):
        if p in ("", "."):
            continue
        if p == "..":
            if parts:
                parts.pop()
            continue
        parts.append(p)
    return os.path.join(root, *parts) if parts else root


__all__ = ["Finder", "Target", "group_of", "is_application", "is_engine", "is_flux_kustomization", "ref",
           "secure_join"]
