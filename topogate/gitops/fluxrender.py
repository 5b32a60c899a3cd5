"""A Flux Kustomization rendered as kustomize-controller renders it (topogate.gitops.flux holds
the generator and post-build steps; this module runs them over the repository): the path, the
generated kustomization built in a scratch mirror, then substitution and common metadata, with
what cannot be known said."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from topogate.core import redact
from topogate.gitops import envsubst, flux, goyaml, scratch
from topogate.gitops.engines import Target, secure_join
from topogate.gitops.notes import FAILS, NOT_RENDERED, UNSET
from topogate.gitops.objects import RenderedObject, Via
from topogate.gitops.session import Out, Session, one_line, with_
from topogate.gitops.values import mapping
from topogate.gitops.vias import substitution_vias
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, display
from topogate.safeio.saferead import read_text
from topogate.sources.kustomization import check_tree


def render_flux(s: Session, t: Target) -> Out | None:
    """The objects Flux applies for the Kustomization `t` (module doc); None, and a note, where it
    applies nothing."""
    spec = t.spec
    roots = s.sources_of(t.repo).roots
    d = os.path.realpath(secure_join(t.base or t.repo, t.path))
    if not roots.holds(d) or not os.path.isdir(d):
        s.note(FAILS, t, (
            f"kustomization path not found: {spec.get('path') or './'} is no directory of this repository, "
            f"so {t.info.ref} fails and applies nothing"), t.locate(("path",)))
        return None
    kfile = next((n for n in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(d, n))), None)
    dirs = [d]
    existing: dict[str, Any] | None = None
    scanned: list[str] = []
    if kfile is not None:
        tree = check_tree(Path(d), roots, s.checked)
        dirs += [str(x) for x in tree.dirs]
        shown = display(Path(d) / kfile)
        existing = flux.read_existing(read_text(os.path.join(d, kfile), shown), shown)
    else:
        scanned = flux.scan(d, roots)
        for r in scanned:
            sub = os.path.join(d, r)
            if os.path.isdir(sub):
                dirs += [str(x) for x in (Path(os.path.realpath(sub)),
                                          *check_tree(Path(sub), roots, s.checked).dirs)]

    def exists(c: str) -> bool:
        p = os.path.realpath(os.path.join(d, c))
        return roots.holds(p) and os.path.exists(p)

    gen = flux.generate(spec, existing, kfile, scanned, exists)
    for c in gen.kustomization.get("components") or []:
        cdir = os.path.join(d, c)
        if exists(c) and os.path.isdir(cdir):
            dirs += [str(x) for x in (Path(os.path.realpath(cdir)), *check_tree(Path(cdir), roots, s.checked).dirs)]
    output = s.build(t, d, gen.kfile, gen.kustomization, scratch.FLUX_OPTIONS, copies=False)
    strip = (str(spec.get("namePrefix") or ""), str(spec.get("nameSuffix") or ""))
    built = s.built(t, d, dirs, output, strip)
    return _post_build(s, t, built, dirs, d, scanned)


def _post_build(s: Session, t: Target, built: list[tuple[str, RenderedObject]], dirs: list[str], d: str,
                scanned: Sequence[str]) -> Out | None:
    spec = t.spec
    post = spec.get("postBuild")
    pending: flux.FluxError | None = None  # Flux reads the variables for the first object it substitutes
    try:
        values, known, unknown = _variables(s, t, post if isinstance(post, dict) else {})
    except flux.FluxError as e:
        values, known, unknown, pending = {}, {}, [], e
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
            if pending is not None:
                raise pending
            try:
                refs = envsubst.references(envsubst.parse(text)) if (run or "${" in text) else []
            except envsubst.TooMuch as e:
                _too_much(s, t, o, e)
                continue
            except envsubst.SubstError as e:
                if run:
                    raise flux.FluxError(f"post build failed for '{o.ref}': envsubst error: {e}",
                                         ("spec", "postBuild")) from None
                refs = []
            missing = sorted({r.param for r in refs if r.param not in values and r.op not in envsubst.DEFAULT_OPS})
            if unknown:
                maybe = sorted({r.param for r in refs if r.param not in values})
                if maybe:
                    s.note(NOT_RENDERED, t, (
                        f"{o.ref} reads {', '.join('${' + v + '}' for v in maybe)}, which may come from "
                        f"{', '.join(unknown)}, not among the inputs: its value is unknown, so {o.ref} is not "
                        "analysed (a split or block in it goes unreported)"), o.pos)
                    continue
            if not run:
                for v in missing:
                    s.note(UNSET, t, (
                        f"{o.ref} reads ${{{v}}} but {t.info.ref} defines no variable, so Flux substitutes "
                        f"nothing and applies `${{{v}}}` as written"), o.pos, severity="warning")
            elif missing:
                unset += [f"${{{v}}} in {o.ref}" for v in missing]
                if s.strict:
                    continue
            if run:
                flux.check_names(values)  # per object substituted, as Flux checks them
                try:
                    obj = flux.substitute_doc(text, values, s.strict)
                except envsubst.Unset:
                    continue  # reported as unset below
                except (envsubst.TooMuch, goyaml.Unsafe) as e:
                    _too_much(s, t, o, e)
                    continue
                except (envsubst.SubstError, goyaml.JSONError, yaml.YAMLError) as e:
                    raise flux.FluxError(f"post build failed for '{o.ref}': {one_line(e)}",
                                         ("spec", "postBuild")) from None
                if not isinstance(obj, dict):
                    raise flux.FluxError(f"post build failed for '{o.ref}': not an object after substitution",
                                         ("spec", "postBuild"))
        vias = list(o.vias)
        if obj is not o.obj and obj != o.obj:
            vias += substitution_vias(o.obj, obj, known, t.locate(("postBuild",)))
        if labels or annotations:
            obj = copy.deepcopy(obj) if obj is o.obj else obj
            flux.set_common_metadata(obj, labels, annotations)
            vias += [Via(("metadata", "labels", k), t.locate(("commonMetadata", "labels", k)),
                         f"spec.commonMetadata.labels.{k}") for k in labels]
            vias += [Via(("metadata", "annotations", k), t.locate(("commonMetadata", "annotations", k)),
                         f"spec.commonMetadata.annotations.{k}") for k in annotations]
        out.append(with_(o, obj=obj, vias=tuple(vias)))
    if unset:
        where = t.locate(("postBuild",)) if isinstance(post, dict) else t.obj.pos
        if s.strict:
            s.note(UNSET, t, (
                f"{'; '.join(unset)}: no value and no default, and kustomize-controller substitutes "
                "strictly (its default since v1.9), so it fails the build and applies nothing of "
                f"{t.info.ref}; set the variable in postBuild.substitute or give it a default "
                "(${VAR:=value})"), where, severity="error")
            return None
        s.note(UNSET, t, (
            f"{'; '.join(unset)}: no value and no default; with strict substitution turned off Flux "
            "substitutes an empty string, which is what is checked"), where, severity="warning")
    files = {os.path.realpath(os.path.join(d, r)) for r in scanned}
    return Out(out, ({d} if not scanned else set()) | s.covered(dirs[1:]), files)


def _too_much(s: Session, t: Target, o: RenderedObject, e: Exception) -> None:
    s.note(NOT_RENDERED, t, (
        f"{o.ref} is not substituted here ({one_line(e)}): topogate does not evaluate that much of a "
        f"pull request, so {o.ref} is not analysed (a split or block in it goes unreported)"), o.pos)


def _variables(s: Session, t: Target, post: Mapping[str, Any]) -> tuple[dict[str, str], dict[str, Via], list[str]]:
    """(values, where each comes from, the sources not among the inputs)."""
    values: dict[str, str] = {}
    known: dict[str, Via] = {}
    unknown: list[str] = []
    ns = t.obj.namespace or "default"
    for i, src in enumerate(post.get("substituteFrom") or []):
        if not isinstance(src, dict):
            continue
        kind, name = str(src.get("kind") or ""), str(src.get("name") or "")
        o = s.values.get((kind, ns, name))
        if o is None and s.closed:
            if src.get("optional") is True:
                continue
            raise flux.FluxError(f"substitute from '{kind}/{name}' error: {kind.lower()}s \"{name}\" not found",
                                 ("spec", "postBuild", "substituteFrom", i))
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
        if not isinstance(v, str):
            raise flux.FluxError(f"spec.postBuild.substitute.{k}: the API server refuses a {type(v).__name__} "
                                 "here (the v1 API takes strings only); quote it",
                                 ("spec", "postBuild", "substitute", k))
        values[str(k)] = v.replace("\n", "")
        known[str(k)] = Via((), t.locate(("postBuild", "substitute", k)), f"spec.postBuild.substitute.{k}")
    return values, known, unknown


__all__ = ["render_flux"]
