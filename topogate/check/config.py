"""The configuration file: `.topogate.yaml`, or `[tool.topogate]` in pyproject.toml.

Found as ruff, yamllint and kube-linter find theirs: in the working directory, else in each
parent up to the repository's root (the first directory holding `.git`); in one directory
`.topogate.yaml` wins over pyproject.toml, and a pyproject.toml without `[tool.topogate]` is
passed over. `--config FILE` names one, `--no-config` uses none.

Settings (the same keys in both files):

    select: [TG1]                  # as --select; the command line's --select replaces it
    ignore: [TG120]                # as --ignore; the command line's --ignore adds to it
    strict: true                   # as --strict (either turns it on)
    cluster: gpu-east              # as --cluster (the command line's wins)
    format: text                   # as --format (the command line's wins)
    exclude: ["vendor/**"]         # PATH entries not to read (files or kustomization roots)
    per-path-ignores:              # rules not reported on findings in these files
      "legacy/**": [TG102]
    inventory: platform/inventory.yaml   # INVENTORY when `check` or `generate` is given none
    paths: [apps, teams]           # PATHs when `check` is given no argument at all
    baseline: .topogate-baseline.json    # findings reported as baselined (`topogate baseline`)

Globs, `inventory` and `paths` are relative to the directory of the file that sets them (`*`
within a path segment, `**` across segments; a pattern naming a directory covers what is under
it); `inventory` and `paths` must lie inside the file's repository.
Every problem is reported at once with its file:line:column, like the inventory's; nothing runs.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tomllib

from topogate.core.position import Position
from topogate.core.words import did_you_mean
from topogate.inventory.problems import Problem
from topogate.inventory.yamlpos import Located, YamlReadError, read_yaml
from topogate.safeio.repopaths import repo_root

YAML_NAME = ".topogate.yaml"
PYPROJECT = "pyproject.toml"
KEYS = ("select", "ignore", "strict", "cluster", "format", "exclude", "per-path-ignores", "inventory", "paths",
        "baseline")


class ConfigError(Exception):
    def __init__(self, file: str, problems: list[Problem]):
        self.file = file
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A path glob as a regex: `**` spans segments, `*` and `?` stay within one."""
    out = []
    i = 0
    pat = pattern.strip("/")
    while i < len(pat):
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif pat[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pat[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pat[i]))
            i += 1
    return re.compile("".join(out) + "(?:/.*)?")  # a directory covers what is under it


@dataclass(frozen=True)
class Globs:
    """Globs relative to `base` (the directory of the file, or of the command line, that set them)."""

    patterns: tuple[str, ...] = ()
    base: str = "."

    def matches(self, path: str | os.PathLike[str]) -> bool:
        return bool(self.matching(path))

    def matching(self, path: str | os.PathLike[str]) -> tuple[str, ...]:
        """The patterns that match `path`."""
        if not self.patterns:
            return ()
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(self.base)).replace(os.sep, "/")
        if rel.startswith("../"):
            return ()
        return tuple(p for p in self.patterns if glob_regex(p).fullmatch(rel))


# Where one setting is written: (the key's path in the file, the git ref the file was read at
# ("" for the working tree), its position). `per-path-ignores` has one per glob besides its own.
Origin = tuple[tuple[str, ...], str, Position]


@dataclass(frozen=True)
class Settings:
    file: str = ""  # where they came from; "" when no file was found
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    strict: bool = False
    cluster: str | None = None
    format: str | None = None
    exclude: Globs = field(default_factory=Globs)
    per_path_ignores: tuple[tuple[Globs, tuple[str, ...]], ...] = ()
    inventory: str | None = None  # absolute: the file's value joined to its directory
    paths: tuple[str, ...] = ()  # absolute, likewise
    baseline: str | None = None  # absolute, likewise
    path: str = ""  # the file's absolute path ("" none; for a file read at a git ref, where it would be)
    ref: str = ""  # the git ref the file was read at ("" the working tree)
    origins: tuple[Origin, ...] = ()  # where each setting present is written
    anchor: Position | None = None  # where an absent setting is pointed at: the file's start, or its table

    def origin(self, *key: str) -> tuple[str, Position]:
        """(git ref or "", position) of the setting `key` (a glob of per-path-ignores: the key
        and the glob); an absent one points at the file's start or its [tool.topogate] table."""
        for path, ref, pos in self.origins:
            if path == key:
                return ref, pos
        return self.ref, self.anchor or Position(self.file, 1, 1)

    def as_dict(self) -> dict[str, Any]:
        return {"select": list(self.select), "ignore": list(self.ignore), "strict": self.strict,
                "cluster": self.cluster, "format": self.format, "exclude": list(self.exclude.patterns),
                "per-path-ignores": {g.patterns[0]: list(r) for g, r in self.per_path_ignores},
                **({"inventory": shown(self.inventory)} if self.inventory else {}),
                **({"paths": [shown(p) for p in self.paths]} if self.paths else {}),
                **({"baseline": shown(self.baseline)} if self.baseline else {})}


def discover(start: str | None = None) -> str | None:
    """The configuration file that applies in `start` (default: the working directory), or None."""
    d = Path(start or os.getcwd()).resolve()
    for here in (d, *d.parents):
        if (here / YAML_NAME).is_file():
            return str(here / YAML_NAME)
        py = here / PYPROJECT
        if py.is_file() and _has_tool_table(py):
            return str(py)
        if (here / ".git").exists():
            return None  # the repository's root: a file above it belongs to someone else
    return None


def _has_tool_table(py: Path) -> bool:
    try:
        text = py.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True  # unreadable: chosen, so that load() reports why instead of passing it over
    return has_tool_table(text)


def has_tool_table(text: str) -> bool:
    """A pyproject.toml's text holds [tool.topogate] (or cannot be parsed: then it is chosen, so
    that loading it says why instead of passing it over)."""
    try:
        return "topogate" in tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return True


def shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def load(path: str, formats: Sequence[str], rule_names: Sequence[str]) -> Settings:
    """Read and validate one configuration file; ConfigError lists every problem."""
    file = shown(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(file, [Problem(Position(file, 1, 1), f"cannot read the configuration: {err}")]) from None
    return load_text(text, os.path.abspath(path), file, formats, rule_names)


def load_text(text: str, path: str, file: str, formats: Sequence[str], rule_names: Sequence[str],
              ref: str = "") -> Settings:
    """The settings of one file's text: `path` is where the file is (or would be) on disk, which
    its name and its globs' base come from; `file` names it in problems and positions (for a
    file read at a git ref, `REF:path`); ConfigError lists every problem."""
    if os.path.basename(path) == PYPROJECT:
        data, where = _toml(text, file)
    else:
        data, where = _yaml(text, file)
    s = _settings(data, where, file, os.path.dirname(path), formats, rule_names)
    origins: list[Origin] = []
    if isinstance(data, dict):
        for key in data:
            if key in KEYS:
                origins.append(((str(key),), ref, where.key(key)))
        if isinstance(data.get("per-path-ignores"), dict):
            origins += [(("per-path-ignores", str(g)), ref, where.key("per-path-ignores", g))
                        for g in data["per-path-ignores"]]
    return dataclasses.replace(s, path=path, ref=ref, origins=tuple(origins), anchor=where.anchor())


class _Where:
    """Positions of the keys of one file (YAML: exact; TOML: the line naming the key)."""

    def __init__(self, file: str, located: Located | None = None, text: str = "") -> None:
        self.file, self.located, self.text = file, located, text

    def key(self, *path: str | int) -> Position:
        if self.located is not None:
            return self.located.key_at(path)
        return self._toml_line(path)

    def value(self, *path: str | int) -> Position:
        if self.located is not None:
            return self.located.at(path)
        return self._toml_line(path)

    def anchor(self) -> Position:
        """Where a setting the file leaves out is pointed at: its [tool.topogate] table, or its start."""
        return self._toml_line(()) if self.located is None else Position(self.file, 1, 1)

    def _toml_line(self, path: tuple[str | int, ...]) -> Position:
        # tomllib keeps no positions: the line that names the key inside [tool.topogate] (or
        # its sub-table), else the table's header.
        lines = self.text.splitlines()
        header = next((i for i, ln in enumerate(lines) if re.match(r"\s*\[\s*tool\.topogate\s*\]", ln)), 0)
        names = [p for p in path if isinstance(p, str)]
        for name in reversed(names):
            pat = re.compile(rf"\s*(\"{re.escape(name)}\"|'{re.escape(name)}'|{re.escape(name)})\s*=")
            for i in range(header, len(lines)):
                m = pat.match(lines[i])
                if m:
                    return Position(self.file, i + 1, m.start(1) + 1)
        return Position(self.file, header + 1, 1)


def _yaml(text: str, file: str) -> tuple[Any, _Where]:
    try:
        located = read_yaml(text, file)
    except YamlReadError as err:
        raise ConfigError(file, [Problem(p.pos, p.message) for p in err.problems]) from None
    if located.problems:
        raise ConfigError(file, [Problem(p.pos, p.message) for p in located.problems])
    data = located.data if located.data is not None else {}
    return data, _Where(file, located)


def _toml(text: str, file: str) -> tuple[Any, _Where]:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        m = re.search(r"\(at line (\d+), column (\d+)\)", str(err))
        pos = Position(file, int(m.group(1)), int(m.group(2))) if m else Position(file, 1, 1)
        raise ConfigError(file, [Problem(pos, f"not valid TOML: {err}")]) from None
    return doc.get("tool", {}).get("topogate", {}), _Where(file, text=text)


def _strings(value: Any, at: Position, what: str, problems: list[Problem]) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v for v in value.split(",")]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        problems.append(Problem(at, f"{what} must be a list of strings"))
        return ()
    return tuple(v.strip() for v in value if v.strip())


def _rules(value: Any, where: _Where, path: tuple[str, ...], what: str, names: Sequence[str],
           problems: list[Problem]) -> tuple[str, ...]:
    at = where.value(*path)
    items = _strings(value, at, what, problems)
    ids = {n for n in names if n.upper().startswith("TG")}
    for i, item in enumerate(items):
        if not any(r.startswith(item.upper()) for r in ids) and item.lower() not in names:
            item_at = where.value(*path, i) if isinstance(value, list) else at
            problems.append(Problem(item_at, f"{what}: {item} is no rule{did_you_mean(item, names)} "
                                             "(`topogate rules` lists them)"))
    return items


def _settings(data: Any, where: _Where, file: str, base: str, formats: Sequence[str],
              names: Sequence[str]) -> Settings:
    problems: list[Problem] = []
    if not isinstance(data, dict):
        raise ConfigError(file, [Problem(where.value(), "the configuration must be a mapping of settings")])
    for key in data:
        if key not in KEYS:
            problems.append(Problem(where.key(key), f"unknown setting '{key}'{did_you_mean(str(key), KEYS)}; "
                                                    f"known: {', '.join(KEYS)}"))
    s: dict[str, Any] = {}
    if "select" in data:
        s["select"] = _rules(data["select"], where, ("select",), "select", names, problems)
    if "ignore" in data:
        s["ignore"] = _rules(data["ignore"], where, ("ignore",), "ignore", names, problems)
    if "strict" in data:
        if isinstance(data["strict"], bool):
            s["strict"] = data["strict"]
        else:
            problems.append(Problem(where.value("strict"), "strict must be true or false"))
    for key in ("cluster", "format"):
        if key in data:
            v = data[key]
            if not isinstance(v, str) or not v:
                problems.append(Problem(where.value(key), f"{key} must be a string"))
            elif key == "format" and v not in formats:
                problems.append(Problem(where.value(key), f"format: '{v}' is not one of {', '.join(formats)}"
                                                          f"{did_you_mean(v, formats)}"))
            else:
                s[key] = v
    if "exclude" in data:
        s["exclude"] = Globs(_strings(data["exclude"], where.value("exclude"), "exclude", problems), base)
    if "per-path-ignores" in data:
        s["per_path_ignores"] = _per_path(data["per-path-ignores"], where, base, names, problems)
    if "inventory" in data:
        v = data["inventory"]
        if not isinstance(v, str) or not v.strip():
            problems.append(Problem(where.value("inventory"), "inventory must be a path (a string)"))
        else:
            s["inventory"] = _inside(v.strip(), base, where.value("inventory"), "inventory", problems)
    if "baseline" in data:
        v = data["baseline"]
        if not isinstance(v, str) or not v.strip():
            problems.append(Problem(where.value("baseline"), "baseline must be a path (a string)"))
        else:
            s["baseline"] = _inside(v.strip(), base, where.value("baseline"), "baseline", problems)
    if "paths" in data:
        v = data["paths"]
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v):
            problems.append(Problem(where.value("paths"), "paths must be a list of paths (strings)"))
        else:
            s["paths"] = tuple(_inside(x.strip(), base, where.value("paths", i), "paths", problems)
                               for i, x in enumerate(v))
    if problems:
        raise ConfigError(file, problems)
    return Settings(file=file, **s)


def _inside(value: str, base: str, at: Position, what: str, problems: list[Problem]) -> str:
    """`value` joined to the file's directory; a problem when it leaves the file's repository (a
    settings file a pull request edits may not point the check at a file elsewhere)."""
    joined = os.path.normpath(os.path.join(base, value))
    top = os.path.realpath(repo_root(os.path.join(base, ".")))
    real = os.path.realpath(joined)
    if real != top and not real.startswith(top.rstrip(os.sep) + os.sep):
        problems.append(Problem(at, f"{what}: '{value}' resolves outside the repository ({top}); "
                                    "name a file or directory inside it"))
    return joined


def _per_path(value: Any, where: _Where, base: str, names: Sequence[str],
              problems: list[Problem]) -> tuple[tuple[Globs, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        problems.append(Problem(where.value("per-path-ignores"),
                                "per-path-ignores must map a glob to a list of rules"))
        return ()
    out = []
    for glob, rules in sorted(value.items()):
        out.append((Globs((str(glob),), base),
                    _rules(rules, where, ("per-path-ignores", glob), f"per-path-ignores {glob}", names, problems)))
    return tuple(out)


__all__ = ["KEYS", "PYPROJECT", "YAML_NAME", "ConfigError", "Globs", "Origin", "Settings", "discover", "glob_regex",
           "has_tool_table", "load", "load_text", "shown"]
