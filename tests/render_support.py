"""The real mermaid renderer for the tests: mermaid-cli (pinned by tests/node's package-lock.json,
installed by `make node-tools`) driving Debian's chromium, never a downloaded browser.

A browser start costs seconds, so pictures are rendered in batches: one markdown file holding
every picture as a ```mermaid block, one `mmdc` run that writes an SVG per block. mmdc stops at
the first block that does not parse without saying which one it was, so a failed batch is split
in halves until each failure is one block, named by where its picture came from. A batch that
parses is one run, whatever its size.

Without mermaid-cli or chromium the calling test skips with how to get them, unless
TOPOGATE_REQUIRE_RENDER=1 (CI), where that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from html import unescape
from pathlib import Path

import pytest
from conftest import GIT_ENV, TOPOGATE
from node_tools import BIN, missing

REPO = Path(__file__).resolve().parents[1]
MMDC = BIN / "mmdc"
HOW = "run `make node-tools` (npm ci of tests/node; chromium from Debian's package)"
# A browser start plus a second per picture is ample; a hung chromium fails, it does not hang CI.
TIMEOUT_BASE = 90
TIMEOUT_PER_PICTURE = 3
PARSER_SAYS = re.compile(r"(Parse|Lexical|Syntax) error")


@dataclass(frozen=True)
class Picture:
    """One mermaid source the project produced, and where it came from (for the failure)."""

    origin: str  # "explain fixtures/multi/inventory.yaml llama-ft", "README.md:309", ...
    source: str  # mermaid text, without a fence
    shows: tuple[str, ...] = ()  # words the rendered picture must show, as a reader reads them


@dataclass(frozen=True)
class Rendered:
    svgs: dict[str, str]  # origin -> SVG text, for every picture that rendered
    failures: dict[str, str]  # origin -> the renderer's error, for every one that did not
    runs: int  # mmdc runs it took


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def renderer_problem() -> str | None:
    if not MMDC.is_file():
        return "mermaid-cli is not installed in tests/node/node_modules"
    if chromium() is None:
        return "no chromium on PATH for mermaid-cli"
    return None


def require_renderer() -> None:
    """Skip the calling test when the renderer is missing (fail it under TOPOGATE_REQUIRE_RENDER)."""
    problem = renderer_problem()
    if problem is not None:
        missing(problem, HOW)


def _fence(source: str) -> str:
    return f"```mermaid\n{source.rstrip(chr(10))}\n```\n"


def _run(batch: Sequence[Picture], work: Path, n: int) -> tuple[list[str] | None, str]:
    """Render `batch` in one mmdc run: (SVG per picture, "") or (None, the error)."""
    run_dir = work / f"run{n}"
    run_dir.mkdir(parents=True)
    config = run_dir / "puppeteer.json"
    # --no-sandbox: chromium's sandbox needs user namespaces a CI container may not grant.
    config.write_text(json.dumps({"executablePath": chromium(), "args": ["--no-sandbox", "--disable-gpu"]}))
    md = run_dir / "pictures.md"
    md.write_text("\n".join(f"picture {i}\n\n{_fence(p.source)}" for i, p in enumerate(batch)))
    out = run_dir / "out" / "pictures.md"
    out.parent.mkdir()
    timeout = TIMEOUT_BASE + TIMEOUT_PER_PICTURE * len(batch)
    try:
        proc = subprocess.run([str(MMDC), "-q", "-p", str(config), "-i", str(md), "-o", str(out)],
                              capture_output=True, text=True, timeout=timeout, cwd=run_dir,
                              env={**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"mmdc did not finish {len(batch)} pictures in {timeout}s", pytrace=False)
    if proc.returncode != 0:
        return None, (proc.stderr.strip() or proc.stdout.strip() or f"mmdc exited {proc.returncode}")
    svgs = [out.with_name(f"pictures-{i + 1}.svg") for i in range(len(batch))]
    missing = [s.name for s in svgs if not s.is_file()]
    if missing:
        return None, f"mmdc exited 0 but wrote no {', '.join(missing)}"
    return [s.read_text() for s in svgs], ""


def render(pictures: Sequence[Picture], work: Path) -> Rendered:
    """Every picture through the real renderer, in as few runs as the failures allow."""
    origins = [p.origin for p in pictures]
    dupes = sorted({o for o in origins if origins.count(o) > 1})
    assert not dupes, f"two pictures claim one origin: {dupes}"
    svgs: dict[str, str] = {}
    failures: dict[str, str] = {}
    runs = 0
    pending: list[list[Picture]] = [list(pictures)] if pictures else []
    while pending:
        batch = pending.pop(0)
        runs += 1
        out, error = _run(batch, work, runs)
        if out is not None:
            svgs.update((p.origin, svg) for p, svg in zip(batch, out, strict=True))
        elif len(batch) == 1:
            # Once more before blaming the picture, unless mermaid said why it rejects it:
            # under load a chromium page can time out, the machine's failure, not the diagram's.
            again = None
            if not PARSER_SAYS.search(error):
                runs += 1
                again, error = _run(batch, work, runs)
            if again is not None:
                svgs[batch[0].origin] = again[0]
            else:
                failures[batch[0].origin] = error
        else:
            half = len(batch) // 2
            pending += [batch[:half], batch[half:]]
    return Rendered(svgs, failures, runs)


def failure_text(failures: dict[str, str]) -> str:
    """One paragraph per failing picture: where it came from, then the parser's first lines."""
    return "\n\n".join(f"{origin}:\n  " + "\n  ".join(err.splitlines()[:4]) for origin, err in sorted(failures.items()))


def svg_text(svg: str) -> str:
    """The words a rendered picture shows (its labels), whitespace collapsed: what a reader sees."""
    no_style = re.sub(r"<style.*?</style>", " ", svg, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", no_style)).split())


def mermaid_blocks(markdown: str) -> list[str]:
    """The bodies of the ```mermaid blocks of a markdown text, in order."""
    return re.findall(r"^```mermaid\n(.*?)^```$", markdown, flags=re.S | re.M)


# ---------------------------------------------------------------------------------------------
# Every picture the project produces
# ---------------------------------------------------------------------------------------------

FIXTURES = REPO / "fixtures"
LAB = FIXTURES / "lab" / "inventory.yaml"
MULTI = FIXTURES / "multi" / "inventory.yaml"
INCIDENT = FIXTURES / "incident"
# (inventory, workload, PATHs) of every `explain --format mermaid` drawn: the incident both ways,
# and every job of the inventory that has doors, scrapers and egress.
EXPLAINED = [
    (LAB, "train", (INCIDENT / "broken",)),
    (LAB, "train", (INCIDENT / "fixed",)),
    *((MULTI, job, ()) for job in ("llama-ft", "bert-mpi", "resnet", "gpt-sft")),
]


def topogate(*args: str, cwd: Path = REPO) -> tuple[int, str]:
    """The CLI as a user runs it: (exit code, stdout)."""
    proc = subprocess.run([*TOPOGATE, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**os.environ, **GIT_ENV, "NO_COLOR": "1"})
    assert proc.returncode in (0, 1), (args, proc.stderr)
    return proc.returncode, proc.stdout


def rel(p: Path) -> str:
    return p.relative_to(REPO).as_posix()


def explained(inventory: Path, job: str, paths: Sequence[Path] = ()) -> str:
    return topogate("explain", str(inventory), job, *map(str, paths), "--format", "mermaid")[1]


def door_widened_repo(tmp: Path) -> Path:
    """fixtures/multi committed in a git repository, then its `datasets` door widened in the
    work tree from TCP 9000 to 9000-9100: what a pull request that widens a door looks like."""
    repo = tmp / "door-widened"
    shutil.copytree(FIXTURES / "multi", repo)
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-qm", "base")):
        subprocess.run(["git", *args], cwd=repo, check=True, env={**os.environ, **GIT_ENV})
    inv = repo / "inventory.yaml"
    text = inv.read_text()
    assert text.count("ports: [{port: 9000}]") == 1
    inv.write_text(text.replace("ports: [{port: 9000}]", "ports: [{port: 9000, endPort: 9100}]"))
    return repo


SPLIT = FIXTURES / "rules" / "TG102-may-split" / "fail" / "manifests.yaml"  # lab's train, may split


def lab_with_openings(tmp: Path) -> Path:
    """The lab inventory with a scraper and a CIDR egress on its `train`: checked against SPLIT,
    a job in trouble (so the markdown report draws it) that has openings."""
    repo = tmp / "lab-openings"
    shutil.copytree(FIXTURES / "lab", repo)
    inv = repo / "inventory.yaml"
    inv.write_text(inv.read_text() + "  metrics: {port: 9090}\n  egress:\n  - cidrs: [10.9.0.0/16]\n"
                   "    ports: [{port: 443}]\n")
    return inv


def incident_repo(tmp: Path) -> Path:
    """The lab inventory with the broken incident (as m/) committed, the fixed one in the work tree."""
    repo = tmp / "incident"
    shutil.copytree(FIXTURES / "lab", repo)
    shutil.copytree(INCIDENT / "broken", repo / "m")
    for args in (("init", "-q", "-b", "main"), ("add", "-A"), ("commit", "-qm", "broken")):
        subprocess.run(["git", *args], cwd=repo, check=True, env={**os.environ, **GIT_ENV})
    shutil.rmtree(repo / "m")
    shutil.copytree(INCIDENT / "fixed", repo / "m")
    return repo


def _doc_pictures() -> list[Picture]:
    """Every ```mermaid block of the docs, and the mermaid a console block shows as a command's
    output (`explain --format mermaid`, a markdown report). An abridged block leaves lines out,
    so it is no diagram: the command it abridges is rendered whole among the project's outputs."""
    from test_docs import PAGES, console_blocks

    out: list[Picture] = []
    for page in PAGES:
        path = REPO / page
        if not path.exists():
            continue
        text = path.read_text()
        # Top-level blocks only: one inside a longer fence (````) is part of that block.
        lines = text.splitlines()
        fence = ""
        for i, ln in enumerate(lines):
            m = re.match(r"^(`{3,})(\S*)\s*$", ln)
            if not m:
                continue
            if not fence:
                fence = m[1]
                if m[2] == "mermaid":
                    end = next(j for j in range(i + 1, len(lines)) if lines[j] == fence)
                    out.append(Picture(f"{page}:{i + 1}", "\n".join(lines[i + 1:end])))
            elif m[1] == fence and not m[2]:
                fence = ""
        for b in console_blocks(page):
            if b.abridged:
                continue
            for cmd, shown in b.commands:
                body = "\n".join(shown)
                if "--format mermaid" in cmd:
                    out.append(Picture(f"{b.where()} `{cmd}`", body))
                out += [Picture(f"{b.where()} `{cmd}` block {k}", m) for k, m in enumerate(mermaid_blocks(body + "\n"))]
    return out


def _golden_pictures() -> list[Picture]:
    """Mermaid in any golden or fixture file: a ```mermaid block, or a whole .mmd file."""
    out: list[Picture] = []
    for f in sorted(FIXTURES.rglob("*")):
        if not f.is_file() or f.suffix not in (".md", ".mmd", ".txt", ".golden"):
            continue
        text = f.read_text(errors="replace")
        if f.suffix == ".mmd":
            out.append(Picture(rel(f), text))
        out += [Picture(f"{rel(f)} block {k}", m) for k, m in enumerate(mermaid_blocks(text))]
    return out


def project_pictures(tmp: Path) -> list[Picture]:
    """Every mermaid output of the project: explain, check --format markdown (the CLI's, and the
    reporter's with an inventory that gives the job doors, a scraper and egress), diff's markdown,
    the docs, the goldens, and the hostile-name cases (hostile_pictures)."""
    from report_support import result

    from topogate.inventory.loader import load_inventory
    from topogate.report.markdown import MarkdownReporter

    out = [Picture(f"explain {rel(inv)} {job} {' '.join(rel(p) for p in paths)}".rstrip(), explained(inv, job, paths))
           for inv, job, paths in EXPLAINED]
    md = topogate("check", str(LAB), str(INCIDENT / "broken"), "--format", "markdown")[1]
    out += [Picture(f"check {rel(LAB)} fixtures/incident/broken --format markdown block {k}", m)
            for k, m in enumerate(mermaid_blocks(md))]
    md = topogate("check", str(lab_with_openings(tmp)), str(SPLIT), "--format", "markdown")[1]
    out += [Picture(f"check (lab with openings) {rel(SPLIT)} --format markdown block {k}", m)
            for k, m in enumerate(mermaid_blocks(md))]
    md = MarkdownReporter(inventory=load_inventory(str(MULTI))).render(result())
    out += [Picture(f"MarkdownReporter(inventory={rel(MULTI)}) block {k}", m) for k, m in enumerate(mermaid_blocks(md))]
    repo = door_widened_repo(tmp)
    md = topogate("diff", "inventory.yaml", "--base", "HEAD", "--format", "markdown", cwd=repo)[1]
    out += [Picture(f"diff (door widened) block {k}", m) for k, m in enumerate(mermaid_blocks(md))]
    repo = incident_repo(tmp)
    md = topogate("diff", "inventory.yaml", "m", "--base", "HEAD", "--format", "markdown", cwd=repo)[1]
    out += [Picture(f"diff (incident broken to fixed) block {k}", m) for k, m in enumerate(mermaid_blocks(md))]
    out += _doc_pictures() + _golden_pictures() + hostile_pictures()
    return out


# ---------------------------------------------------------------------------------------------
# Hostile names: everything a label may carry from an inventory or a manifest
# ---------------------------------------------------------------------------------------------

HOSTILE = (
    'q"uote', "br]ack[et ((round))", "ang<b>le</b><img src=x onerror=alert(1)>", "ha#sh #quot; #35;",
    "semi;colon; end", "back`tick```", "new\nline\r\nand\ttab", "uni é 漢 😀", "pipe|x|", "brace{x}",
    '%%{init: {"theme":"forest"}}%%', "amp&lt;script&gt;", "rlo\u202eevil\u200b", "click o0 call alert(1)",
    "x --> y", "subgraph", "\\back\\slash",
)


def shown(s: str) -> str:
    """How a hostile name reads in the picture: whitespace runs as one space, non-printing
    characters spelled U+XXXX (topogate.report.mermaid.escape_label's promise)."""
    return "".join(c if c.isprintable() else f"U+{ord(c):04X}" for c in " ".join(s.split()))


def hostile_pictures() -> list[Picture]:
    """A job, a markdown report and a diff drawn from hostile names: every name of HOSTILE
    through every producer, and each of a picture's roles (group, zone, flow purpose, door,
    labels, scraper, FQDN, diff endpoint) filled by one. Few pictures, since each costs the
    renderer a second or two; each must render and show every name as written."""
    from dataclasses import replace

    from report_support import BROKEN, RULES

    from topogate.analysis.netpolicy import External
    from topogate.analysis.result import CheckResult
    from topogate.diff.compare import Decision, DiffResult, Row
    from topogate.diff.members import Member
    from topogate.diff.render import render_markdown
    from topogate.inventory.model import (
        Door,
        DoorEnd,
        EgressRule,
        Inventory,
        Metrics,
        PortSpec,
        Workload,
    )
    from topogate.report.markdown import MarkdownReporter
    from topogate.report.mermaid import job_diagram
    from topogate.report.openings import workload_openings

    h = HOSTILE
    rename = {"Master": f"{h[0]} A", "Worker": f"{h[1]} B", "kube-dns": f"{h[2]} dns"}
    zone = {"us-east-1a": f"{h[3]} zone"}
    g0 = replace(BROKEN.groups[0], name=rename["Master"], zones=(zone["us-east-1a"], "us-east-1b"))
    g1 = replace(BROKEN.groups[1], name=rename["Worker"], zones=(zone["us-east-1a"],))
    flows = tuple(replace(f, src=rename.get(f.src, f.src), dst=rename.get(f.dst, f.dst),
                          src_zone=zone.get(f.src_zone, f.src_zone), dst_zone=zone.get(f.dst_zone, f.dst_zone),
                          purpose=f"{h[4]} purpose") for f in BROKEN.flows)
    job = replace(BROKEN, groups=(g0, g1), flows=flows, cluster="c", namespace=f"{h[5]} ns", name=f"{h[6]} job",
                  object=f"PyTorchJob/{h[5]} ns/{h[6]} job")
    w = Workload(job.name, job.namespace, "c", "PyTorchJob", "b", f"{h[7]} nz",
                 metrics=Metrics(9090, f"{h[8]} monitoring"),
                 egress=tuple(EgressRule(fqdns=(f"{x}.example.com",), cidrs=("10.0.0.0/8",),
                                         ports=(PortSpec(443), PortSpec(1000, "UDP", 2000))) for x in h))
    doors = tuple(Door(f"{x} out", "c", DoorEnd(workloads=(w.name,)),
                       DoorEnd(namespace=f"{h[9]} storage", labels=((f"{h[10]} key", f"{x} value"),)),
                       (PortSpec(9000),)) for x in h)
    inv = Inventory("i", "i.yaml", workloads=(w,), doors=(
        *doors, Door(f"{h[11]} in", "c", DoorEnd(workloads=(f"{h[12]} other",)),
                     DoorEnd(network_zone=w.network_zone), (PortSpec(8443),))))
    openings = workload_openings(inv, w)
    assert len(openings) == 2 * len(h) + 2, openings
    names = (*rename.values(), *zone.values(), f"{h[4]} purpose", f"{h[9]} storage", f"{h[10]} key",
             f"{h[11]} in", f"{h[12]} other", f"{h[8]} monitoring", *(f"{x} out" for x in h),
             *(f"{x} value" for x in h), *(f"{x}.example.com" for x in h))
    out = [Picture("hostile job_diagram", job_diagram(job, openings), tuple(map(shown, names)))]
    md = MarkdownReporter(inventory=inv).render(CheckResult((), (job,), RULES))
    (block,) = mermaid_blocks(md)
    out.append(Picture("hostile markdown report", block, tuple(map(shown, names))))
    allow, deny = Decision(True, "allowed"), Decision(False, "denied")
    rows = []
    for i, x in enumerate(h):
        a = Member(f"a{i}", f"{x} src", External(entity="world"), f"{h[(i + 1) % len(h)]} nz")
        b = Member(f"b{i}", f"{x} dst", External(entity="world"), "")
        rows += [Row("c", a, b, "TCP", 1, 9, deny, allow), Row("c", b, a, "UDP", 5, 5, allow, deny)]
    (block,) = mermaid_blocks(render_markdown(DiffResult("base", tuple(rows), ("c",), 2)))
    names = (*(f"{x} src" for x in h), *(f"{x} dst" for x in h), *(f"{x} nz" for x in h))
    out.append(Picture("hostile diff", block, tuple(map(shown, names))))
    return out
