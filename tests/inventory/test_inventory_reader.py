"""The inventory reader (libyaml underneath): typing, positions, and hostile input that used to
crash the loader. Each hostile case is the minimal input of a crash found by fuzzing (issue 10):
it must end as problems with file:line:column, never as a traceback."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest
from conftest import invoke

from topogate.inventory.loader import InventoryError
from topogate.inventory.yamlpos import YamlReadError, read_yaml
from topogate.k8s import kinds
from topogate.sources.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab"


@pytest.mark.parametrize(("text", "want"), [
    ("yes", "yes"), ("on", "on"), ("n", "n"), ("True", True), ("FALSE", False),
    ("~", None), ("", None), ("Null", None), ("0o17", 15), ("017", 17), ("0x1F", 31),
    ("0b101", 5), ("1_000", 1000), ("1:20", "1:20"), ("1.5", 1.5), ("1e3", 1000.0),
    (".5", 0.5), ("-.inf", -math.inf), ("2026-01-01", "2026-01-01"), ("'3'", "3"),
    ("!!str 3", "3"), ("!!int '3'", 3), ("!custom x", "x"), ("_", "_"), ("+", "+"),
])
def test_scalars_are_typed_by_yaml_1_2(text: str, want: object) -> None:
    got = read_yaml(f"k: {text}\n", "f").data["k"]
    assert got == want and type(got) is type(want)


@pytest.mark.parametrize(("text", "path", "where"), [
    ("a: 1\nb:\n  c: x\n", ("b", "c"), (3, 6)),
    ("k:\nj: 1\n", ("k",), (2, 1)),                   # empty value: at the next token
    ("a:\n  k:   # note\n  j: 1\n", ("a", "k"), (2, 5)),  # ... after the colon if commented
    ("a:\n  k:   # note\nb: 1\n", ("a", "k"), (3, 1)),    # ... unless the mapping ends there
    ("- \n- x\n", (0,), (1, 2)),                       # empty sequence entry: after the dash
    ("{a: , b: 1}\n", ("a",), (1, 4)),                 # flow style: after the colon
    ("k:\n", ("k",), (2, 1)),
])
def test_positions_are_where_they_always_were(text: str, path: tuple[str | int, ...],
                                              where: tuple[int, int]) -> None:
    pos = read_yaml(text, "f").at(path)
    assert (pos.line, pos.column) == where


def test_syntax_errors_keep_their_words() -> None:
    with pytest.raises(YamlReadError) as e:
        read_yaml("metadata: {name: acme\nclusters:\n", "f")
    assert [f"{p.pos}: {p.message}" for p in e.value.problems] == [
        "f:2:9: YAML syntax error: expected ',' or '}', but got ':' (while parsing a flow mapping "
        "started at line 1, column 11)"]


def _lab(tmp: Path, edit: tuple[str, str] | None = None, append: str = "") -> Path:
    shutil.copytree(LAB / "bases", tmp / "bases")
    (tmp / ".git").mkdir()
    text = (LAB / "inventory.yaml").read_text()
    if edit:
        assert edit[0] in text
        text = text.replace(*edit)
    (tmp / "inventory.yaml").write_text(text + append)
    return tmp / "inventory.yaml"


def _problems(inv: Path) -> list[str]:
    with pytest.raises(InventoryError) as e:
        load_inventory(inv)
    lines = [str(p) for p in e.value.problems]
    for line in lines:
        file, ln, col, _ = line.split(":", 3)
        assert file and int(ln) >= 1 and int(col) >= 1, line
    return lines


HOSTILE = {
    # wrong container types after a schema error used to be iterated anyway
    "clusters-int": (("clusters:\n- name: lab", "clusters: 5\nx:\n- name: lab"), ""),
    "zones-int": (("  zones:\n  - name: zone-a", "  zones: 5\n  x:\n  - name: zone-a"), ""),
    "pools-int": (("    pools:\n    - name: gpu", "    pools: 5\n    x:\n    - name: gpu"), ""),
    "taints-int": (("taints: [{key: gpu, value: present, effect: NoSchedule}]", "taints: 7"), ""),
    "network-zone-zones-int": (("{name: gpu, zones: [zone-a]}", "{name: gpu, zones: 3}"), ""),
    "network-zones-int": (("  networkZones:\n", "  networkZones: 4\n  x:\n"), ""),
    "workloads-int": (("workloads:\n- name: train", "workloads: 3\nx:\n- name: train"), ""),
    "egress-ints": (None, "  egress: [{fqdns: 5, cidrs: 6, ports: 7}]\n"),
    "metadata-list": (("metadata:\n  name: lab", "metadata: [1]"), ""),
    # the base path itself unusable: too long, a NUL byte, a mapping
    "base-too-long": (("base: bases/train", "base: " + "a" * 5000), ""),
    "base-nul": (("base: bases/train", 'base: "a\\0b"'), ""),
    "base-mapping": (("base: bases/train", "base: {a: {b: {c: d}}}"), ""),
    # the reader: control characters, nesting past what any inventory needs
    "control-character": (("name: lab\nclusters", "name: l\x01ab\nclusters"), ""),
    "nested-500": (None, "x: " + "[" * 500 + "]" * 500 + "\n"),
    "nested-990": (None, "x: " + "[" * 990 + "]" * 990 + "\n"),
    "nested-block": (None, "x:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(600))),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_inventory_is_problems_not_a_crash(case: str, tmp_path: Path) -> None:
    edit, append = HOSTILE[case]
    assert _problems(_lab(tmp_path, edit, append))


def test_hostile_inventory_through_the_cli_exits_2(tmp_path: Path) -> None:
    inv = _lab(tmp_path, ("base: bases/train", "base: " + "a" * 5000))
    r = invoke("generate", str(inv), "-o", str(tmp_path / "out"))
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert "cannot be read (File name too long)" in r.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("name", "content", "message"), [
    ("control-character", 'x: "\x01"\n', "unacceptable character #x0001"),
    ("nested", "x: " + "[" * 600 + "]" * 600 + "\n", "a base manifest is nested too deeply"),
    ("duplicate-key", "kind: X\n", "duplicate key 'kind' in a base manifest"),
])
def test_hostile_base_manifest_is_a_problem_at_its_line(tmp_path: Path, name: str, content: str,
                                                        message: str) -> None:
    inv = _lab(tmp_path)
    job = tmp_path / "bases" / "train" / "pytorchjob.yaml"
    job.write_text(job.read_text() + content)
    lines = _problems(inv)
    assert len(lines) == 1 and message in lines[0]
    assert lines[0].split(":")[0].endswith("pytorchjob.yaml") and lines[0].split(":")[1] != "1"


def test_superscript_digit_is_not_a_gpu_count() -> None:
    # "²".isdigit() is true and int("²") fails: the quantity must be refused, not crash
    assert kinds.container_gpus({"resources": {"limits": {"nvidia.com/gpu": "²"}}}) == 0
    assert kinds.container_gpus({"resources": {"limits": {"nvidia.com/gpu": " 2 "}}}) == 2
