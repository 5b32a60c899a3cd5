"""kustomization fields as kustomize reads them (topogate.k8s.kustomization), held to the real
`kubectl kustomize`.

kustomize decodes a kustomization with Go's encoding/json after a YAML reader that expands merge
keys, so `Files:` is `files` and `<<:` adds fields no line shows. The differential here generates
kustomizations that spell one field of kustomize's types in many ways (case variants, the Kelvin
sign and the long s, characters that fold to nothing ASCII, separators, two spellings at once,
merge keys) at every depth that names a file or changes a build, and holds three things equal on
each: what kustomize read (observed in its output: the field's effect is there, or the build
says `unknown field`), what topogate's model of the decoder says it reads (`go_fold` against
the types' field names), and what topogate does (accept the canonical spelling, refuse every
other spelling kustomize reads as the field, at its line and column). TOPOGATE_KEY_CASES sets
how many cases run (default 160); `make fuzz` runs more.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from topogate.k8s import kustomization as kmodel
from topogate.safeio.repopaths import Roots
from topogate.safeio.saferead import InputError, InputErrors
from topogate.sources import kustomization
from topogate.sources.kustomization import check_tree

CASES = int(os.environ.get("TOPOGATE_KEY_CASES", "160"))
SEED = int(os.environ.get("TOPOGATE_KEY_SEED", "2033"))

BASE_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {a: b}\n"
PROBE_CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\ndata: {probe: read}\n"
SMP = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\ndata: {probe: read}\n"
JSON_ADD = '[{"op": "add", "path": "/data/probe", "value": "read"}]'
RENAME = '[{"op": "replace", "path": "/metadata/name", "value": "renamed"}]'
NO_HASH = "  options: {disableNameSuffixHash: true}\n"


@dataclass(frozen=True)
class Probe:
    """One field of kustomize's types at one place: `write(key)` gives the kustomization text with
    the field spelled `key`, `files` the files beside it, `marker` the text kustomize's output
    holds when it read the field. `struct` is the type the key is read in; `kustomization` False
    for a config file (`config` is its name), where an unknown key is ignored, not refused."""

    name: str  # the canonical field
    struct: str
    write: Callable[[str], str]
    marker: str = "probe: read"
    files: dict[str, str] = field(default_factory=dict)
    config: str | None = None  # the file, beside the kustomization, the key is written in
    failing: bool = False  # reading the field fails the build, whose error names `marker`


def _cm(extra: str = "") -> dict[str, str]:
    return {"cm.yaml": BASE_CM, "probe.yaml": PROBE_CM, "patch.yaml": SMP, "probe.txt": "read",
            "probe.env": "probe=read\n", **({"extra": extra} if extra else {})}


PROBES = (
    Probe("resources", "Kustomization", lambda k: f"{k}: [probe.yaml]\n", "name: probe", _cm()),
    Probe("bases", "Kustomization", lambda k: f"{k}: [probe]\n", "name: probe",
          {**_cm(), "probe/kustomization.yaml": "resources: [cm.yaml]\n", "probe/cm.yaml": PROBE_CM}),
    Probe("namePrefix", "Kustomization", lambda k: f"resources: [cm.yaml]\n{k}: pre-\n", "name: pre-base", _cm()),
    Probe("namespace", "Kustomization", lambda k: f"resources: [cm.yaml]\n{k}: probe-ns\n",
          "namespace: probe-ns", _cm()),
    Probe("commonLabels", "Kustomization", lambda k: f"resources: [cm.yaml]\n{k}: {{probe: read}}\n",
          files=_cm()),
    Probe("configMapGenerator", "Kustomization",
          lambda k: f"{k}:\n- name: gen\n  literals: [probe=read]\n{NO_HASH}", files=_cm()),
    Probe("files", "ConfigMapArgs",
          lambda k: f"configMapGenerator:\n- name: gen\n  {k}: [probe.txt]\n{NO_HASH}", "probe.txt: read", _cm()),
    Probe("literals", "ConfigMapArgs",
          lambda k: f"configMapGenerator:\n- name: gen\n  {k}: [probe=read]\n{NO_HASH}", files=_cm()),
    Probe("envs", "ConfigMapArgs",
          lambda k: f"configMapGenerator:\n- name: gen\n  {k}: [probe.env]\n{NO_HASH}", files=_cm()),
    Probe("env", "ConfigMapArgs",
          lambda k: f"configMapGenerator:\n- name: gen\n  {k}: probe.env\n{NO_HASH}", files=_cm()),
    Probe("disableNameSuffixHash", "GeneratorOptions",
          lambda k: f"configMapGenerator:\n- name: gen\n  literals: [a=b]\n  options: {{{k}: true}}\n",
          "name: gen\n", _cm()),
    Probe("files", "SecretArgs",
          lambda k: f"secretGenerator:\n- name: gen\n  {k}: [probe.txt]\n{NO_HASH}", "probe.txt: cmVhZA==", _cm()),
    Probe("patches", "Kustomization", lambda k: f"resources: [cm.yaml]\n{k}:\n- path: patch.yaml\n", files=_cm()),
    Probe("path", "Patch", lambda k: f"resources: [cm.yaml]\npatches:\n- {k}: patch.yaml\n", files=_cm()),
    Probe("patch", "Patch", lambda k: f"resources: [cm.yaml]\npatches:\n- {k}: |\n    {SMP.replace(chr(10), chr(10) + '    ')}\n",
          files=_cm()),
    Probe("target", "Patch",
          lambda k: f"resources: [cm.yaml]\npatches:\n- patch: '{JSON_ADD}'\n  {k}: {{kind: ConfigMap}}\n", files=_cm()),
    Probe("kind", "Selector",
          lambda k: f"resources: [cm.yaml]\npatches:\n- patch: '{JSON_ADD}'\n  target: {{{k}: ConfigMap}}\n",
          files=_cm()),
    Probe("allowNameChange", "PatchArgs",
          lambda k: (f"resources: [cm.yaml]\npatches:\n- patch: '{RENAME}'\n  target: {{kind: ConfigMap}}\n"
                     f"  options: {{{k}: true}}\n"), "name: renamed", _cm()),
    Probe("patchesJson6902", "Kustomization",
          lambda k: f"resources: [cm.yaml]\n{k}:\n- target: {{kind: ConfigMap, name: base}}\n  patch: '{JSON_ADD}'\n",
          files=_cm()),
    Probe("patchesStrategicMerge", "Kustomization",
          lambda k: f"resources: [cm.yaml]\n{k}: [patch.yaml]\n", files=_cm()),
    # openapi is a Go map: its `path` key is matched exactly, so a variant is never read
    Probe("path", "openapi", lambda k: f"resources: [cm.yaml]\nopenapi: {{{k}: missing.json}}\n",
          "missing.json", _cm(), failing=True),
    # builtin configs, decoded like a kustomization but without refusing unknown fields
    Probe("path", "PatchTransformer", lambda k: (
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: t}\n"
        f"{k}: patch.yaml\n"), files=_cm(), config="t.yaml"),
    Probe("files", "ConfigMapGenerator", lambda k: (
        "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: gen}\n"
        f"{k}: [probe.txt]\noptions: {{disableNameSuffixHash: true}}\n"), "probe.txt: read", _cm(), "g.yaml"),
)


def variants(name: str, rng: random.Random) -> str:
    """One spelling of `name`: itself, a case variant, a Go fold beyond ASCII, or a near miss
    that folds to nothing kustomize reads (dotted/dotless i, a separator, a fullwidth letter)."""
    how = rng.choice(["same", "upper", "title", "flip", "flip", "longs", "kelvin", "dotted-i",
                      "dotless-i", "underscore", "dash", "fullwidth"])
    if how == "upper":
        return name.upper()
    if how == "title":
        return name[:1].upper() + name[1:]
    if how == "flip":
        return "".join(c.swapcase() if rng.random() < 0.5 else c for c in name)
    for how_, plain, odd in (("longs", "s", "\u017f"), ("kelvin", "k", "\u212a"),
                             ("dotted-i", "i", "\u0130"), ("dotless-i", "i", "\u0131")):
        if how == how_ and plain in name.lower():
            i = name.lower().index(plain)
            return name[:i] + odd + name[i + 1:]
    if how == "underscore" and len(name) > 2:
        return name[:2] + "_" + name[2:]
    if how == "dash" and len(name) > 2:
        return name[:2] + "-" + name[2:]
    if how == "fullwidth":
        return chr(ord(name[0].upper()) + 0xFEE0) + name[1:]
    return name


def model_reads(probe: Probe, key: str) -> bool:
    """Whether topogate's model of Go's decoder says kustomize reads `key` as the field."""
    if probe.struct == "openapi":
        return key == probe.name
    return kmodel.go_fold(key) == kmodel.go_fold(probe.name)


@dataclass(frozen=True)
class Seen:
    """What one case did: kustomize's output or error, and topogate's answer."""

    kustomize_read: bool
    unknown_field: bool  # kustomize refused the key as a field of no name
    refused: InputError | None  # topogate's refusal, or None when it accepted the tree
    output: str


def _materialise(root: Path, probe: Probe, text: str) -> None:
    (root / ".git").mkdir(parents=True, exist_ok=True)  # the repository the reads stay in
    for name, body in probe.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(body)
    if probe.config is None:
        (root / "kustomization.yaml").write_text(text)
    else:
        (root / probe.config).write_text(text)
        lists = "generators" if "Generator" in probe.struct else "transformers"
        base = "resources: [cm.yaml]\n" if lists == "transformers" else ""
        (root / "kustomization.yaml").write_text(f"{base}{lists}: [{probe.config}]\n")


def run_case(root: Path, probe: Probe, text: str) -> Seen:
    _materialise(root, probe, text)
    proc = kustomization.run_kustomize(root)
    out = proc.stdout if proc.returncode == 0 else proc.stderr
    refused: InputError | None = None
    try:
        check_tree(root, Roots.of([str(root)]))
    except InputError as e:
        refused = e
    read = (proc.returncode != 0) == probe.failing and probe.marker in out
    return Seen(read, "unknown field" in out, refused, out)


def _cases(n: int, seed: int) -> list[tuple[int, Probe, str, str]]:
    """(case id, probe, the key written, the kustomization or config text)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        probe = PROBES[i % len(PROBES)] if i < 2 * len(PROBES) else rng.choice(PROBES)
        key = probe.name if i < len(PROBES) else variants(probe.name, rng)
        out.append((i, probe, key, probe.write(key)))
    return out


def test_kustomize_reads_a_key_exactly_where_the_model_says_and_topogate_refuses_every_other_spelling(
        tmp_path: Path) -> None:
    cases = _cases(CASES, SEED)

    def one(case: tuple[int, Probe, str, str]) -> tuple[tuple[int, Probe, str, str], Seen]:
        i, probe, _, text = case
        return case, run_case(tmp_path / f"c{i}", probe, text)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(one, cases))
    disagreements = []
    kinds: dict[str, int] = {}
    for (i, probe, key, text), seen in results:
        expect = model_reads(probe, key)
        canonical = key == probe.name
        kind = "canonical" if canonical else "read-other-spelling" if expect else "not-read"
        kinds[kind] = kinds.get(kind, 0) + 1
        why = []
        if seen.kustomize_read != expect:
            why.append(f"kustomize read it: {seen.kustomize_read}, the model says {expect}")
        if (not expect and probe.config is None and probe.struct != "openapi"
                and not seen.unknown_field):
            why.append("kustomize did not refuse the key as an unknown field")
        refused_here = isinstance(seen.refused, InputErrors) and f"`{key}`" in str(seen.refused)
        if canonical and isinstance(seen.refused, InputErrors):
            why.append(f"topogate refused the canonical spelling: {seen.refused}")
        if not canonical and expect and not refused_here:
            why.append(f"topogate did not refuse `{key}`: {seen.refused}")
        if not expect and refused_here:
            why.append(f"topogate refused `{key}`, which kustomize does not read as `{probe.name}`")
        if why:
            disagreements.append(f"case {i} {probe.struct}.{probe.name} as {key!r}: {'; '.join(why)}\n"
                                 f"  {text!r}\n  kubectl: {seen.output[:200]!r}")
    assert not disagreements, f"{len(disagreements)} of {len(cases)} cases at TOPOGATE_KEY_SEED={SEED}:\n" + "\n".join(disagreements)
    # the generator reaches each class: the field read, another spelling read, one not read
    assert kinds.get("canonical", 0) >= len(PROBES)
    assert kinds.get("read-other-spelling", 0) >= CASES // 6, kinds
    assert kinds.get("not-read", 0) >= CASES // 12, kinds


def test_refused_keys_name_their_line_and_column_all_at_once(tmp_path: Path) -> None:
    text = ("resources: [cm.yaml]\nPatches:\n- Path: patch.yaml\n  options: {AllowNameChange: true}\n"
            "configMapGenerator:\n- name: g\n  Files: [probe.txt]\n")
    root = tmp_path / "r"
    _materialise(root, PROBES[0], text)
    with pytest.raises(InputErrors) as e:
        check_tree(root, Roots.of([str(root)]))
    shown = str(root / "kustomization.yaml").lstrip("/")
    lines = [line.replace(str(root), "ROOT") for line in str(e.value).splitlines()]
    assert lines == [
        "ROOT/kustomization.yaml:2:1: kustomize reads `Patches` as `patches` (Go's JSON decoder matches "
        "field names without regard to case); write it as `patches`",
        "ROOT/kustomization.yaml:3:3: kustomize reads `Path` as `path` (Go's JSON decoder matches field "
        "names without regard to case); write it as `path`",
        "ROOT/kustomization.yaml:4:13: kustomize reads `AllowNameChange` as `allowNameChange` (Go's JSON "
        "decoder matches field names without regard to case); write it as `allowNameChange`",
        "ROOT/kustomization.yaml:7:3: kustomize reads `Files` as `files` (Go's JSON decoder matches "
        "field names without regard to case); write it as `files`"], shown


MERGES = (
    ("top level", "<<: {resources: [probe.yaml]}\n", "name: probe"),
    ("an anchor from another field", "commonLabels: &l {probe: read}\nresources: [cm.yaml]\n"
     "commonAnnotations:\n  <<: *l\n", "probe: read"),
    ("a patch entry", "resources: [cm.yaml]\npatches:\n- <<: {path: patch.yaml}\n", "probe: read"),
    ("a generator", "configMapGenerator:\n- name: gen\n  <<: {files: [probe.txt]}\n" + NO_HASH, "probe.txt: read"),
)


@pytest.mark.parametrize("where,text,marker", MERGES, ids=[m[0] for m in MERGES])
def test_kustomize_expands_merge_keys_and_topogate_refuses_them(tmp_path: Path, where: str, text: str,
                                                                marker: str) -> None:
    root = tmp_path / "r"
    seen = run_case(root, Probe("<<", "Kustomization", lambda _: text, marker, _cm()), text)
    assert seen.kustomize_read, seen.output  # kustomize reads what the merge key adds
    assert isinstance(seen.refused, InputErrors)
    assert "expands the merge key `<<`" in str(seen.refused)


def test_a_merge_key_in_a_transformer_config_is_refused(tmp_path: Path) -> None:
    text = "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: t}\n<<: {path: patch.yaml}\n"
    probe = Probe("path", "PatchTransformer", lambda _: text, files=_cm(), config="t.yaml")
    seen = run_case(tmp_path / "r", probe, text)
    assert seen.kustomize_read, seen.output
    assert isinstance(seen.refused, InputErrors)
    assert "t.yaml:4:1: kustomize's YAML reader expands the merge key" in str(seen.refused)


def test_two_spellings_of_one_field_are_refused_whichever_kustomize_takes(tmp_path: Path) -> None:
    # kustomize's YAML-to-JSON step writes keys sorted, and encoding/json keeps the last: the
    # lower-case spelling wins here, in either order; topogate names the other one
    for text in ("resources: [cm.yaml]\nResources: [probe.yaml]\n", "Resources: [probe.yaml]\nresources: [cm.yaml]\n"):
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        seen = run_case(root, Probe("resources", "Kustomization", lambda _, t=text: t, "name: probe", _cm()), text)
        assert "name: base" in seen.output and "name: probe" not in seen.output
        assert isinstance(seen.refused, InputErrors) and "`Resources` as `resources`" in str(seen.refused)


@pytest.fixture
def listener() -> tuple[int, list[bytes]]:
    """A TCP listener on 127.0.0.1 recording every connection: what kustomize would fetch."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    got: list[bytes] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            got.append(conn.recv(1024))
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], got
    stop.set()
    t.join()
    srv.close()


def test_a_remote_resource_spelled_otherwise_is_refused_before_kubectl(tmp_path: Path, listener: tuple[int, list[bytes]],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    port, got = listener
    root = tmp_path / "r"
    text = f"RESOURCES: [http://127.0.0.1:{port}/x.yaml]\n"
    _materialise(root, PROBES[0], text)
    ran: list[Path] = []
    monkeypatch.setattr(kustomization, "run_kustomize", lambda d, exe=None: ran.append(d))  # never reached
    with pytest.raises(InputErrors, match="kustomize reads `RESOURCES` as `resources`"):
        check_tree(root, Roots.of([str(root)]))
    assert ran == [] and got == []


def test_the_differential_would_catch_a_model_that_ignores_case(monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """The control: with a fold that ignores nothing, the case above is a disagreement."""
    monkeypatch.setattr(kmodel, "_FOLDED", {s: {f: f for f in fs} for s, fs in kmodel.STRUCTS.items()})
    seen = run_case(tmp_path / "r", PROBES[6], PROBES[6].write("Files"))
    assert seen.kustomize_read and seen.refused is None


def test_kubectl_is_the_one_the_model_was_read_from() -> None:
    out = subprocess.run([kustomization.kubectl(), "version", "--client"], capture_output=True, text=True,
                         timeout=60).stdout
    assert "Kustomize Version: v5.8.1" in out, out  # api v0.21.1: its types are STRUCTS
