"""The editor's view of an inventory: the real yaml-language-server, with the schema path the docs
give a user's repository, puts its diagnostics where the loader puts its problems.

A scratch git repository gets `.topogate/inventory.schema.json` from `topogate schema -o` (run at
its root, as docs/inventory.md says) and a copy of fixtures/bad/, each case's inventory.yaml
headed by `# yaml-language-server: $schema=../../.topogate/inventory.schema.json`. The server
(pinned in tests/node, driven by tests/lsp_support.py) opens each file; the loader reads the
same bytes. LSP positions are 0-based, the loader's 1-based; lsp_support converts.

Every bad case is one of three kinds, and the test proves which:
  - schema cases: the loader's schema pass finds something; the editor must report exactly those
    positions (no fewer, no more), from the topogate schema;
  - YAML cases (PARSER below): the problem is in the text itself; the editor's own parser must
    flag it at the loader's position, or on its line where the two parsers point at different
    tokens of the same mistake;
  - loader-only cases (LOADER_ONLY below, each with why a JSON Schema cannot say it): the schema
    accepts the file, and the editor must stay quiet rather than say something else.

Past the corpus, MUTATIONS breaks fixtures/lab's inventory once per assertion keyword the schema
uses (the list is checked against the schema itself), with the same agreement required.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from topogate.inventory.loader import InventoryError
from topogate.inventory.schema import schema_problems
from topogate.inventory.yamlpos import YamlReadError, read_yaml
from topogate.sources.inventory import load_inventory

pytest.register_assert_rewrite("lsp_support")
from conftest import TOPOGATE  # noqa: E402
from lsp_support import Diagnostic, YamlLanguageServer, pinned_version, require_server  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
BAD = ROOT / "fixtures" / "bad"
CASES = sorted(p.name for p in BAD.iterdir() if p.is_dir() and not p.name.startswith("_"))
SCHEMA_HOME = ".topogate/inventory.schema.json"  # the path docs/inventory.md gives
TITLE = json.loads((ROOT / "topogate/schemas/inventory.schema.json").read_text())["title"]
SCHEMA_SOURCE = f"yaml-schema: {TITLE}"  # how the server names the schema a diagnostic came from

# Problems in the YAML text itself, which the editor's parser (the `yaml` npm package) sees too.
PARSER: dict[str, str] = {
    "duplicate-key": "position",
    # libyaml stops at the ':' after `clusters` (4:9), the npm parser at `clusters` (4:1): both
    # on the line where the unclosed flow mapping of line 3 breaks
    "yaml-syntax": "line",
    # The loader refuses to expand the aliases at all; the editor expands them and reports the
    # result is no inventory (missing apiVersion, ...) at the document's start, the same place.
    "billion-laughs": "position",
}

# Cases whose every problem only the loader can find, and why a JSON Schema cannot say it.
_BASE = "the problem is in the base's files on disk, which the inventory only names"
_REFERENCE = "a name that must match something defined elsewhere in the inventory"
LOADER_ONLY: dict[str, str] = {
    "admission-deny-and-warn": "two values of one list that must not occur together; the loader "
                               "says why Kubernetes refuses the pair",
    "base-api-group": _BASE,
    "base-bad-yaml": _BASE,
    "base-cluster-scoped": _BASE,
    "base-dup-key": _BASE,
    "base-escapes-repo": "where the base path resolves on disk",
    "base-escaping-file": _BASE,
    "base-metadata-list": _BASE,
    "base-missing": "whether the base directory exists",
    "base-missing-resource": _BASE,
    "base-remote": _BASE,
    "base-two-jobs": _BASE,
    "door-refs": _REFERENCE + "; endPort compared with port; unique door names per cluster; the "
                 "shape of `to` (namespace with labels, or networkZone), which as a schema oneOf "
                 "would reach the editor only as 'matches multiple schemas'",
    "egress-bad-cidr-and-range": "a CIDR's octets and prefix length checked as numbers; endPort "
                                 "compared with port",
    "gitops-repo-url": "a URL parsed into scheme, host and path, as Argo CD and Flux read it",
    "gpu-over-capacity": "GPU arithmetic across the workload's replicas and the zones' pools",
    "job-not-in-base": _BASE,
    "kueue-problems": "rules across a cluster's pools and between a workload and its cluster",
    "pin-without-zone": "the number of zones in the network zone the workload names",
    "unknown-cluster": _REFERENCE,
    "unknown-network-zone": _REFERENCE,
    "unknown-zone-in-network-zone": _REFERENCE,
    "zone-in-two-network-zones": "a zone listed in two network zones: uniqueness across lists",
    "zone-outside-network-zone": _REFERENCE,
}
SCHEMA_CASES = [c for c in CASES if c not in PARSER and c not in LOADER_ONLY]


def track(repo: Path) -> None:
    """`git add -N` what the test wrote: in a git work tree the loader reads only tracked files."""
    subprocess.run(["git", "add", "-N", "."], cwd=repo, check=True, timeout=60)


def topogate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed CLI, run in the user's repository as the docs tell the user to run it."""
    return subprocess.run([*TOPOGATE, *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("editor") / "repo"
    root.mkdir()
    # a repository of its own: the loader confines bases to the nearest .git upward
    subprocess.run(["git", "init", "-q", str(root)], check=True, timeout=60)
    made = topogate("schema", "-o", SCHEMA_HOME, cwd=root)
    assert made.returncode == 0, made.stderr
    shutil.copytree(BAD, root / "bad")
    for case in CASES:
        f = root / "bad" / case / "inventory.yaml"
        f.write_text(f"# yaml-language-server: $schema=../../{SCHEMA_HOME}\n" + f.read_text())
    track(root)
    return root


@pytest.fixture(scope="module")
def lsp(repo: Path) -> Iterator[YamlLanguageServer]:
    server = YamlLanguageServer(repo, require_server())
    try:
        info = server.start()
        assert info["serverInfo"] == {"name": "yaml-language-server", "version": pinned_version()}
        yield server
    finally:
        server.close()


def loader_positions(inventory: Path) -> set[tuple[int, int]]:
    """(line, column) of every problem the loader reports in the inventory file itself."""
    with contextlib.chdir(inventory.parent):
        try:
            load_inventory(inventory.name)
        except InventoryError as e:
            return {(p.pos.line, p.pos.column) for p in e.problems if p.pos.file == inventory.name}
    return set()


def schema_positions(inventory: Path) -> set[tuple[int, int]]:
    """Where the loader's schema pass (the same schema file the editor reads) finds problems."""
    try:
        loc = read_yaml(inventory.read_text(), inventory.name)
    except YamlReadError:
        return set()
    return {(p.pos.line, p.pos.column) for p in schema_problems(loc, set())}


def at(diags: list[Diagnostic]) -> set[tuple[int, int]]:
    return {(d.line, d.column) for d in diags}


def test_every_case_is_classified_by_what_finds_it(repo: Path) -> None:
    # The tables above cannot go stale: a listed case the schema can see, or an unlisted case
    # it cannot, fails here.
    found = {c: schema_positions(repo / "bad" / c / "inventory.yaml") for c in CASES}
    assert set(PARSER) | set(LOADER_ONLY) | set(SCHEMA_CASES) == set(CASES)
    assert not set(PARSER) & set(LOADER_ONLY)
    assert {c for c in CASES if not found[c]} == set(PARSER) | set(LOADER_ONLY)
    assert len(SCHEMA_CASES) >= 10


@pytest.mark.parametrize("case", SCHEMA_CASES)
def test_schema_problems_land_where_the_loader_reports_them(case: str, repo: Path,
                                                            lsp: YamlLanguageServer) -> None:
    inventory = repo / "bad" / case / "inventory.yaml"
    expected = schema_positions(inventory)
    assert expected and expected <= loader_positions(inventory)
    diags = lsp.diagnostics(inventory)
    assert {d.source for d in diags} == {SCHEMA_SOURCE}, diags
    assert at(diags) == expected, diags


@pytest.mark.parametrize("case", sorted(PARSER))
def test_yaml_problems_are_flagged_by_the_editors_parser(case: str, repo: Path,
                                                         lsp: YamlLanguageServer) -> None:
    inventory = repo / "bad" / case / "inventory.yaml"
    loader = loader_positions(inventory)
    assert loader
    got = at(lsp.diagnostics(inventory))
    if PARSER[case] == "position":
        assert loader <= got
    else:
        assert {line for line, _ in loader} <= {line for line, _ in got}, (loader, got)


@pytest.mark.parametrize("case", sorted(LOADER_ONLY))
def test_what_only_the_loader_can_judge_leaves_the_editor_quiet(case: str, repo: Path,
                                                                lsp: YamlLanguageServer) -> None:
    inventory = repo / "bad" / case / "inventory.yaml"
    with contextlib.chdir(inventory.parent), pytest.raises(InventoryError):
        load_inventory(inventory.name)
    assert lsp.diagnostics(inventory) == []


def _lab_at_root(repo: Path, modeline_target: str, provider: str = "aws") -> Path:
    """fixtures/lab's inventory at the repository's root under the given modeline."""
    body = (ROOT / "fixtures/lab/inventory.yaml").read_text().split("\n", 1)[1]
    assert "\n  provider: aws\n" in body
    f = repo / "inventory.yaml"
    f.write_text(f"# yaml-language-server: $schema={modeline_target}\n"
                 + body.replace("\n  provider: aws\n", f"\n  provider: {provider}\n"))
    shutil.copytree(ROOT / "fixtures/lab/bases", repo / "bases", dirs_exist_ok=True)
    track(repo)
    return f


def _where(f: Path, needle: str) -> tuple[int, int]:
    """1-based (line, column) of the one line holding needle, and of needle in it."""
    (found,) = [(i, text.index(needle) + 1) for i, text in enumerate(f.read_text().splitlines(), 1)
                if needle in text]
    return found


def test_the_documented_modeline_is_resolved_in_the_users_repository(repo: Path,
                                                                     lsp: YamlLanguageServer) -> None:
    # A good inventory is quiet and a bad one is not: a schema the server failed to find would
    # make both quiet, so the pair proves `.topogate/inventory.schema.json` was read.
    good = _lab_at_root(repo, SCHEMA_HOME)
    assert loader_positions(good) == set()
    assert lsp.diagnostics(good) == []
    bad = _lab_at_root(repo, SCHEMA_HOME, provider="openstack")
    diags = lsp.diagnostics(bad)
    assert [(d.line, d.column, d.source) for d in diags] == [(*_where(bad, "openstack"), SCHEMA_SOURCE)]
    assert at(diags) == loader_positions(bad)


def test_the_modeline_import_writes_is_resolved(repo: Path, lsp: YamlLanguageServer) -> None:
    # `topogate import` in a subdirectory writes a `../` path to the repository's copy
    (repo / "clusters").mkdir()
    made = topogate("import", "--from-file", str(ROOT / "fixtures/live/eks-nodes.json"),
                    "-o", "clusters/eks.yaml", cwd=repo)
    assert made.returncode == 0, made.stderr
    track(repo)
    imported = repo / "clusters" / "eks.yaml"
    text = imported.read_text()
    assert text.startswith(f"# yaml-language-server: $schema=../{SCHEMA_HOME}\n")
    assert lsp.diagnostics(imported) == []
    assert "gpusPerNode: 8\n" in text
    imported.write_text(text.replace("gpusPerNode: 8\n", "gpusPerNode: eight\n", 1))
    diags = lsp.diagnostics(imported)
    assert [(d.line, d.column) for d in diags] == [_where(imported, "eight")]
    assert at(diags) == loader_positions(imported)


def test_a_modeline_to_a_missing_file_is_reported_and_checks_nothing(repo: Path,
                                                                     lsp: YamlLanguageServer) -> None:
    missing = ".topogate/no-such.schema.json"
    bad = _lab_at_root(repo, missing, provider="openstack")
    (diag,) = lsp.diagnostics(bad)
    # one diagnostic, from the server itself, naming the path resolved against the document's
    # directory; `provider: openstack`, which the loader refuses, goes unreported
    assert diag.source == "YAML"
    assert f"Unable to load schema from '{repo / missing}'" in diag.message
    assert loader_positions(bad) == {_where(bad, "openstack")}


# Beyond the corpus: fixtures/lab's inventory (with a door) broken once per assertion keyword
# the schema uses, each mutation (old text, new text) named by the keyword it trips.
LAB_DOOR = ("doors:\n- name: metrics\n  cluster: lab\n  from: {networkZone: gpu}\n"
            "  to: {namespace: monitoring, labels: {app: prometheus}}\n  ports: [{port: 9090}]\n")
MUTATIONS: dict[str, tuple[str, str]] = {
    "type": ("      gpusPerNode: 4\n", "      gpusPerNode: 4.5\n"),
    "additionalProperties": ("effect: NoSchedule}", "effect: NoSchedule, operator: Exists}"),
    "required": ("  region: us-east-1\n", ""),
    "pattern": ("labels: {node-type: cpu}", "labels: {node-type: 'c p u'}"),
    "minLength": ("  region: us-east-1\n", "  region: ''\n"),
    "minItems": ("{name: general, zones: [zone-b]}", "{name: general, zones: []}"),
    "enum": ("  provider: aws\n", "  provider: openstack\n"),
    "const": ("kind: Inventory\n", "kind: Inventry\n"),
    "minimum": ("      gpusPerNode: 4\n", "      gpusPerNode: -4\n"),
    "maximum": ("ports: [{port: 9090}]", "ports: [{port: 90900}]"),
    "maxLength": ("labels: {node-type: cpu}", "labels: {node-type: " + "c" * 64 + "}"),
    "not": ("{name: general, zones: [zone-b]}", "{name: kustomization, zones: [zone-b]}"),
    "uniqueItems": ("  region: us-east-1\n", "  region: us-east-1\n  trainingRuntimes: [a/b, a/b]\n"),
    "propertyNames": ("labels: {node-type: cpu}", "labels: {node-type: cpu, Node Type: cpu}"),
    "minProperties": ("labels: {app: prometheus}", "labels: {}"),
}
# Keywords that only describe, name or lead to other schemas: nothing to trip on their own.
NOT_ASSERTIONS = {"$schema", "$id", "$defs", "$ref", "title", "description", "default",
                  "properties", "items", "allOf"}


def _keywords(schema: object) -> set[str]:
    """Every keyword used anywhere in a schema (not the names of properties or definitions)."""
    if not isinstance(schema, dict):
        return set()
    found = set(schema)
    for k, v in schema.items():
        if k in ("properties", "$defs"):
            found |= set().union(*(_keywords(sub) for sub in v.values()))
        elif k in ("allOf", "anyOf", "oneOf"):
            found |= set().union(*(_keywords(sub) for sub in v))
        elif k in ("items", "additionalProperties", "propertyNames", "not"):
            found |= _keywords(v)
    return found


def _lab(repo: Path, name: str, old: str = "", new: str = "") -> Path:
    """fixtures/lab's inventory with LAB_DOOR, old replaced by new (once: old occurs once)."""
    body = (ROOT / "fixtures/lab/inventory.yaml").read_text().split("\n", 1)[1] + LAB_DOOR
    assert not old or body.count(old) == 1, old
    f = repo / "lab" / f"{name}.yaml"
    f.parent.mkdir(exist_ok=True)
    f.write_text(f"# yaml-language-server: $schema=../{SCHEMA_HOME}\n" + (body.replace(old, new) if old else body))
    shutil.copytree(ROOT / "fixtures/lab/bases", f.parent / "bases", dirs_exist_ok=True)
    track(repo)
    return f


def test_every_assertion_keyword_of_the_schema_has_its_mutation(repo: Path) -> None:
    import jsonschema
    import yaml

    schema = json.loads((repo / SCHEMA_HOME).read_text())
    assert set(MUTATIONS) == _keywords(schema) - NOT_ASSERTIONS
    validator = jsonschema.Draft202012Validator(schema)
    assert loader_positions(_lab(repo, "unmutated")) == set()  # each problem is its mutation's
    for keyword, (old, new) in MUTATIONS.items():
        data = yaml.safe_load(_lab(repo, keyword, old, new).read_text())
        tripped = {e.validator for e in validator.iter_errors(data)} | {
            "propertyNames" for e in validator.iter_errors(data) if "propertyNames" in e.schema_path}
        assert keyword in tripped, (keyword, tripped)


@pytest.mark.parametrize("keyword", sorted(MUTATIONS))
def test_each_schema_keyword_lands_where_the_loader_reports_it(keyword: str, repo: Path,
                                                               lsp: YamlLanguageServer) -> None:
    inventory = _lab(repo, keyword, *MUTATIONS[keyword])
    expected = schema_positions(inventory)
    assert expected and expected <= loader_positions(inventory)
    diags = lsp.diagnostics(inventory)
    assert {d.source for d in diags} == {SCHEMA_SOURCE}, diags
    assert at(diags) == expected, diags


def test_the_docs_name_the_version_tested_here() -> None:
    # the pin lives in tests/node/package.json; the pages that promise editor support say which
    for page in ("docs/inventory.md", "README.md"):
        assert f"yaml-language-server {pinned_version()}" in (ROOT / page).read_text(), page
