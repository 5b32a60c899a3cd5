"""One report pipeline: one SARIF writer, one exit decision, one registry of formats, options
objects instead of long parameter lists, and no import cycle among the command modules.

Each scan is a function run on topogate's sources and, as a control, on the code it replaced
(quoted below): a scan that found nothing there would prove nothing here.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator

import click
import pytest
from conftest import REPO

from topogate.cli.app import main
from topogate.cli.options import CheckOptions, DriftOptions, ReportOptions, takes

PACKAGE = REPO / "topogate"


def _sources() -> dict[str, ast.Module]:
    return {p.relative_to(REPO).as_posix(): ast.parse(p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))}


# --- one SARIF writer ------------------------------------------------------------------------

def sarif_logs(tree: ast.AST) -> list[int]:
    """Lines where a SARIF log is put together: a dict display with a "runs" or "$schema" key,
    or SARIF's version string."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Constant) and k.value in ("runs", "$schema") for k in node.keys):
            found.append(node.lineno)
        elif isinstance(node, ast.Constant) and node.value == "2.1.0":
            found.append(node.lineno)
    return found


OLD_DIFF_SARIF = '''
def sarif_dict(d):
    return {"$schema": SCHEMA_URI, "version": "2.1.0",
            "runs": [{"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}]}
'''


def test_one_sarif_writer() -> None:
    writers = {path for path, tree in _sources().items() if sarif_logs(tree)}
    assert writers == {"topogate/report/sarif.py"}


def test_the_sarif_scan_finds_the_second_writer_it_replaced() -> None:
    assert sarif_logs(ast.parse(OLD_DIFF_SARIF))


# --- one exit decision -----------------------------------------------------------------------

ENDS = {"Exit", "done", "exit", "exit_now"}


def _called(node: ast.Call) -> str:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _zero_or_one(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value in (0, 1)


def _chooses_zero_or_one(node: ast.AST) -> bool:
    return any(isinstance(n, ast.IfExp) and _zero_or_one(n.body) and _zero_or_one(n.orelse)
               for n in ast.walk(node))


def _names(node: ast.AST) -> set[str]:
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, (ast.Name, ast.Attribute))}


def exit_decisions(tree: ast.AST) -> list[int]:
    """Lines deciding an exit code or whether a finding fails the run, which is
    topogate.core.exitcodes' alone: `Exit(1 if ... else 0)`, `Exit(1)`, an `exit_code` that
    returns 0 or 1 itself, and `severity == "warning"` weighed against `strict`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _called(node) in ENDS and node.args and (
                _chooses_zero_or_one(node.args[0]) or (_zero_or_one(node.args[0]) and node.args[0].value == 1)):
            found.append(node.lineno)
        elif (isinstance(node, ast.FunctionDef) and "exit" in node.name
              and any(isinstance(r, ast.Return) and r.value is not None and _chooses_zero_or_one(r.value)
                      for r in ast.walk(node))):
            found.append(node.lineno)
        elif isinstance(node, ast.BoolOp) and "strict" in _names(node) and any(
                isinstance(c, ast.Compare) and any(isinstance(x, ast.Constant) and x.value == "warning"
                                                   for x in c.comparators) for c in ast.walk(node)):
            found.append(node.lineno)
    return found


# What the scan replaced, each quoted from where it was: cli/diff, cli/explain, trace/model,
# report/junit, cli/generate.
OLD_DECISIONS = [
    "done(1 if failed(result, fail_on) else 0)",
    "raise click.exceptions.Exit(1 if findings or job.blocked or not job.colocated else 0)",
    "class T:\n    @property\n    def exit_code(self) -> int:\n        return 0 if self.verdict == 'allowed' else 1",
    "def _fails(self, f):\n    return f.severity == 'error' or (self.strict and f.severity == 'warning')",
    "raise click.exceptions.Exit(1)",
]


def test_one_exit_decision() -> None:
    found = {f"{path}:{line}" for path, tree in _sources().items() if path != "topogate/core/exitcodes.py"
             for line in exit_decisions(tree)}
    assert not found, f"exit decided outside topogate/core/exitcodes.py: {sorted(found)}"


@pytest.mark.parametrize("code", OLD_DECISIONS)
def test_the_exit_scan_finds_each_decision_it_replaced(code: str) -> None:
    assert exit_decisions(ast.parse(code))


def test_the_exit_scan_leaves_alone_what_is_no_decision() -> None:
    # the verbosity of -q/-v, and a code handed on, are no verdict
    assert not exit_decisions(ast.parse("v = -1 if quiet else 1 if verbose else 0\ndone(outcome.exit_code)"))


# --- every report through the registry -------------------------------------------------------

# Where a format name may still be compared: the registry itself, the escape each format needs,
# the header check's text puts on stdout, the reporter factory, and `rules`/`clusters` (commands
# that print the rule list and a CI matrix, not a report: counted here so a new one is seen).
FORMAT_COMPARISONS_ALLOWED = {
    "topogate/report/formats.py", "topogate/core/escape.py", "topogate/cli/output.py",
    "topogate/report/__init__.py", "topogate/report/rules.py", "topogate/cli/rules.py",
    "topogate/cli/clusters.py",
}


def format_choices(tree: ast.AST) -> list[int]:
    """Lines comparing a format variable (`fmt`, `format`) with a string: a dispatcher."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id in ("fmt", "format")
                and any(isinstance(c, ast.Constant) and isinstance(c.value, str) for c in node.comparators)):
            found.append(node.lineno)
    return found


def test_no_command_chooses_among_its_formats_itself() -> None:
    found = {f"{path}:{line}" for path, tree in _sources().items() if path not in FORMAT_COMPARISONS_ALLOWED
             for line in format_choices(tree)}
    assert not found, f"a format chosen outside the registry (topogate.report.formats): {sorted(found)}"
    assert format_choices(ast.parse('if fmt == "json":\n    pass'))  # the control


def _command(path: str) -> click.Command:
    cmd: click.Command = main
    for name in path.split():
        assert isinstance(cmd, click.Group)
        cmd = cmd.commands[name]
    return cmd


def _format_choices(cmd: click.Command) -> list[str]:
    opt = next(p for p in cmd.params if "--format" in p.opts)
    assert isinstance(opt.type, click.Choice)
    return list(opt.type.choices)


def _tables() -> Iterator[tuple[str, tuple[str, ...]]]:
    from topogate.audit.report import REPORT as AUDIT
    from topogate.diff.render import REPORT as DIFF
    from topogate.replay import REPORT as REPLAY
    from topogate.report import FORMATS
    from topogate.report.explain import REPORT as EXPLAIN
    from topogate.trace.text import REPORT as TRACE

    yield "check", ("auto", *FORMATS)
    yield "drift", ("auto", *FORMATS)
    yield "diff", DIFF.names
    yield "replay", tuple(n for n in REPLAY.names if n != "suggest")  # --suggest is its own flag
    yield "trace", TRACE.names
    yield "audit egress", AUDIT.names
    yield "explain", EXPLAIN.names


@pytest.mark.parametrize(("command", "names"), list(_tables()))
def test_each_command_offers_what_its_table_renders(command: str, names: tuple[str, ...]) -> None:
    assert _format_choices(_command(command)) == list(names)


def test_check_formats_render_through_the_reporters() -> None:
    from report_support import CLEAN_RESULT

    from topogate.report import FORMATS, check_formats, get_reporter

    table = check_formats()
    assert table.names == FORMATS
    for name in FORMATS:
        assert table.render(CLEAN_RESULT, name) == get_reporter(name).render(CLEAN_RESULT)


# --- options objects -------------------------------------------------------------------------

HANDFUL = 5


def _commands(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Command]]:
    for name, cmd in sorted(group.commands.items()):
        if isinstance(cmd, click.Group):
            yield from _commands(cmd, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", cmd


def test_a_command_of_many_options_takes_an_options_object() -> None:
    long = {}
    for name, cmd in _commands(main):
        assert cmd.callback is not None
        params = inspect.signature(inspect.unwrap(cmd.callback)).parameters
        if len(cmd.params) > HANDFUL and len(params) > 2:
            long[name] = len(params)
    assert not long, f"commands taking a parameter per option: {long}"


def test_an_options_object_holds_the_report_options_instead_of_repeating_them() -> None:
    import dataclasses

    shared = {f.name for f in dataclasses.fields(ReportOptions)}
    for cls in (CheckOptions, DriftOptions):
        names = {f.name for f in dataclasses.fields(cls)}
        assert not names & shared, cls
        assert "report" in names


def test_takes_refuses_an_option_no_object_has_a_field_for() -> None:
    @takes(ReportOptions)
    def cmd(opts: ReportOptions) -> None:
        raise AssertionError("not reached")

    with pytest.raises(TypeError, match="no options object takes colour"):
        cmd(quiet=True, colour=True)


def test_takes_builds_the_nested_options() -> None:
    got: list[CheckOptions] = []

    @takes(CheckOptions)
    def cmd(opts: CheckOptions) -> None:
        got.append(opts)

    cmd(inventory=None, paths=("a",), select=("TG1",), quiet=True)
    assert got == [CheckOptions("", ("a",), report=ReportOptions(select=("TG1",), quiet=True))]


# --- no import cycle among the command modules -----------------------------------------------

def _imports(tree: ast.AST) -> set[str]:
    """Every module imported anywhere in `tree`: at the top, lazily, or only for the type checker."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import cycle of `graph` (module -> modules it imports), once, from its smallest module."""
    found = []
    for start in sorted(graph):
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph.get(node, ())):
                if nxt == start:
                    found.append(path)
                elif nxt > start and nxt not in path:
                    stack.append((nxt, [*path, nxt]))
    return found


def test_no_import_cycle_among_the_command_modules() -> None:
    cli = {path.removesuffix(".py").replace("/", "."): tree for path, tree in _sources().items()
           if path.startswith("topogate/cli/")}
    graph = {mod: {m for m in _imports(tree) if m in cli} for mod, tree in cli.items()}
    assert not cycles(graph)


def test_the_cycle_scan_finds_the_cycle_it_replaced() -> None:
    # cli/check imported cli/check_live (lazily), which imported report_only from cli/check
    graph = {"topogate.cli.check": {"topogate.cli.check_live"}, "topogate.cli.check_live": {"topogate.cli.check"}}
    assert cycles(graph) == [["topogate.cli.check", "topogate.cli.check_live"]]
