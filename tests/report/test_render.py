"""Every mermaid picture the project produces goes through the real renderer (mermaid-cli with
chromium, tests/render_support.py): a picture that does not parse fails here, named by where it
came from. Pictures of hostile names must also show each name as written.

The negative control proves the renderer parses: a broken diagram among good ones is reported,
and only it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import render_support
from render_support import (
    Picture,
    Rendered,
    failure_text,
    project_pictures,
    render,
    require_renderer,
    svg_text,
)


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> list[Picture]:
    return project_pictures(tmp_path_factory.mktemp("pictures"))


@pytest.fixture(scope="module")
def rendered(pictures: list[Picture], tmp_path_factory: pytest.TempPathFactory) -> Rendered:
    require_renderer()
    return render(pictures, tmp_path_factory.mktemp("render"))


def test_every_kind_of_output_is_gathered(pictures: list[Picture]) -> None:
    # A producer that stops yielding pictures (a renamed fence, a changed command) must not
    # quietly shrink what is rendered.
    kinds = ("explain ", "check ", "MarkdownReporter(", "diff (door widened)", "diff (incident",
             "README.md:", "hostile ")
    for kind in kinds:
        assert any(p.origin.startswith(kind) for p in pictures), f"no picture from {kind!r}"
    assert all(p.source.lstrip().startswith("flowchart") for p in pictures), [
        p.origin for p in pictures if not p.source.lstrip().startswith("flowchart")]


def test_every_picture_renders(pictures: list[Picture], rendered: Rendered) -> None:
    assert not rendered.failures, "pictures mermaid cannot render:\n\n" + failure_text(rendered.failures)
    assert sorted(rendered.svgs) == sorted(p.origin for p in pictures)
    for origin, svg in rendered.svgs.items():
        assert "<svg" in svg and "Syntax error" not in svg, origin


def test_hostile_names_show_as_written(pictures: list[Picture], rendered: Rendered) -> None:
    hostile = [p for p in pictures if p.shows]
    assert len(hostile) == 3
    for p in hostile:
        text = svg_text(rendered.svgs[p.origin])
        missing = [s for s in p.shows if s not in text]
        assert not missing, f"{p.origin}: the picture does not show {missing}\nit shows: {text[:2000]}"
        # Nothing smuggled in as markup: a label's <img ...> is text, never an element.
        assert "<img" not in rendered.svgs[p.origin] and "onerror=" not in rendered.svgs[p.origin].replace(
            "onerror=alert", ""), p.origin


def test_a_broken_diagram_is_reported_and_only_it(tmp_path: Path) -> None:
    require_renderer()
    good = Picture("good", "flowchart LR\n  a --> b\n")
    broken = Picture("broken: a bracket left open", 'flowchart LR\n  a["x" --> b\n')
    out = render([good, broken], tmp_path)
    assert sorted(out.failures) == ["broken: a bracket left open"], out.failures
    assert "Parse error" in out.failures["broken: a bracket left open"]
    assert sorted(out.svgs) == ["good"]
    assert out.runs == 3  # the pair, then each alone: the parse error is not run again


def test_without_the_renderer_it_skips_saying_how_unless_required(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(render_support, "MMDC", tmp_path / "no-mmdc")
    monkeypatch.delenv("TOPOGATE_REQUIRE_RENDER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="make node-tools"):
        require_renderer()
    monkeypatch.setenv("TOPOGATE_REQUIRE_RENDER", "1")
    with pytest.raises(pytest.fail.Exception, match="TOPOGATE_REQUIRE_RENDER is set: run `make node-tools`"):
        require_renderer()
