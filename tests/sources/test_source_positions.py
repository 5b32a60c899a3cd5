"""Positions of built objects: traced to their source only when asked, reading only the files
that can declare them, and the same answers the full index of every source file gave."""

from __future__ import annotations

from pathlib import Path

from topogate.sources import located, manifests, sourceindex

KUST = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n{res}"


def _cm(name: str, pad: int = 0) -> str:
    return "# pad\n" * pad + f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n"


def _tree(tmp: Path) -> Path:
    (tmp / ".git").mkdir()  # the repository: the overlay may read its base beside it
    (tmp / "base").mkdir()
    (tmp / "base" / "a.yaml").write_text(_cm("a", pad=2))
    (tmp / "base" / "kustomization.yaml").write_text(KUST.format(res="- a.yaml\n"))
    root = tmp / "overlay"
    root.mkdir()
    (root / "b.yaml").write_text(_cm("b", pad=4) + "---\n" + _cm("c"))
    (root / "kustomization.yaml").write_text(
        KUST.format(res="- ../base\n- b.yaml\n") + "namePrefix: ''\nconfigMapGenerator:\n"
        "- name: generated\n  literals: [x=1]\n")
    return root


def test_built_positions_read_only_the_files_asked_about(tmp_path: Path, monkeypatch) -> None:
    parsed: list[str] = []
    real = located.parse_yaml

    def counting(text: str, file: str, src_file: str = "", **kw):  # type: ignore[no-untyped-def]
        if src_file:
            parsed.append(Path(src_file).name)
        return real(text, file, src_file, **kw)

    monkeypatch.setattr(located, "parse_yaml", counting)  # Sources parses the files asked about
    objs = {o.name: o for o in manifests.collect([str(_tree(tmp_path))])}
    assert parsed == []  # built, nothing traced yet
    assert (objs["a"].pos.file.endswith("base/a.yaml"), objs["a"].pos.line) == (True, 3)
    assert parsed == ["a.yaml"]
    data = objs["c"].locate(("data", "k"))
    assert parsed == ["a.yaml"]  # still lazy
    assert (data.file.endswith("overlay/b.yaml"), data.line, data.column) == (True, 17, 6)
    assert parsed == ["a.yaml", "b.yaml"]
    # generated: no source declares it, so every file is read once and it is at the
    # kustomization, as before
    gen = next(o for n, o in objs.items() if n.startswith("generated"))
    assert (gen.pos.file.endswith("overlay/kustomization.yaml"), gen.pos.line) == (True, 1)
    assert sorted(parsed) == ["a.yaml", "b.yaml"]


def test_lookup_agrees_with_a_full_index(tmp_path: Path) -> None:
    from topogate.safeio.repopaths import Roots

    root = _tree(tmp_path)
    dirs = (root, tmp_path / "base")  # the root, then the directories its tree references

    def index() -> sourceindex.SourceIndex:
        return sourceindex.SourceIndex(dirs, located.Sources(Roots.of([str(root)]), {}))

    lazy, full = index(), index()
    full._full_index()
    for key in [("ConfigMap", "a", ""), ("ConfigMap", "b", "x"), ("ConfigMap", "c", ""),
                ("ConfigMap", "nope", ""), ("Secret", "a", "")]:
        got, want = lazy.find(key), full.find(key)
        assert (got.pos if got else None) == (want.pos if want else None), key
