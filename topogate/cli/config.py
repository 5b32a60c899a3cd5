"""`topogate config`: the configuration file that applies here, and the settings it makes.

The file is found as topogate.check.config says (`.topogate.yaml`, or `[tool.topogate]` in
pyproject.toml, from the working directory up to the repository's root); `check` reads the same
one, and `check --show-settings` prints what a run would use once its options are merged in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import click

from topogate.cli.common import formats
from topogate.core.escape import lines, one_line

if TYPE_CHECKING:
    from topogate.check.config import ConfigError, Settings


def config_options(f: click.decorators.FC) -> click.decorators.FC:
    """--config FILE / --no-config, for every command that reads the configuration."""
    f = click.option("--no-config", is_flag=True, help="Read no configuration file.")(f)
    return click.option("--config", "config_file", type=click.Path(dir_okay=False), metavar="FILE",
                        help="The configuration file (default: .topogate.yaml or pyproject.toml's "
                             "[tool.topogate], from here up to the repository root).")(f)


def load_settings(config_file: str | None, no_config: bool) -> Settings:
    """The Settings (topogate.check.config) that apply; every problem of the file, then exit 2."""
    # lazy: start-up time (the rule registry is read to validate rule names)
    from topogate.check.config import ConfigError, Settings, discover, load
    from topogate.policies.engine import all_rules

    if no_config:
        if config_file:
            raise click.UsageError("--config and --no-config contradict each other")
        return Settings()
    path = config_file or discover()
    if path is None:
        return Settings()
    infos = all_rules()
    try:
        return load(path, formats(), [r.id for r in infos] + [r.name for r in infos])
    except ConfigError as err:
        _fail_config(err)


def settings_inventory(settings: Settings, command: str) -> str:
    """INVENTORY from the settings, for a command given none: as a path from here."""
    from topogate.check.config import shown  # lazy: start-up time

    if settings.inventory is None:
        where = f"{settings.file} sets no `inventory`" if settings.file else "no configuration file names one"
        raise click.UsageError(f"Missing argument 'INVENTORY': {where}; pass the inventory, or set "
                               f"`inventory:` in .topogate.yaml so `topogate {command}` needs none")
    return shown(settings.inventory)


def settings_scope(settings: Settings, command: str) -> tuple[str, tuple[str, ...]]:
    """INVENTORY and PATHs from the settings, for a command given neither: paths from here."""
    from topogate.check.config import shown  # lazy: start-up time

    return settings_inventory(settings, command), tuple(shown(p) for p in settings.paths)


def scope_or_settings(inventory: str | None, paths: tuple[str, ...], command: str, config_file: str | None,
                      no_config: bool) -> tuple[str, tuple[str, ...]]:
    """The INVENTORY and PATHs given, or (given no INVENTORY) the ones the configuration names."""
    if inventory is not None:
        return inventory, paths
    return settings_scope(load_settings(config_file, no_config), command)


def _fail_config(err: ConfigError) -> NoReturn:
    for p in err.problems:
        click.echo(one_line(str(p)), err=True)
    n = len(err.problems)
    click.echo(f"topogate: {n} problem{'s' if n != 1 else ''} in the configuration "
               f"{one_line(err.file)}; nothing was checked.", err=True)
    raise click.exceptions.Exit(2)


def settings_text(settings: Settings, note: str = "") -> str:
    """The settings as YAML, headed by a comment naming their file."""
    import yaml  # lazy: start-up time

    head = f"# {settings.file}" if settings.file else "# no configuration file: the defaults"
    body = yaml.safe_dump(settings.as_dict(), sort_keys=False, default_flow_style=None, allow_unicode=True)
    return lines("\n".join(x for x in (head, note, body) if x))


@click.command("config")
@config_options
def config(config_file: str | None, no_config: bool) -> None:
    """Print the configuration file that applies here and its settings (exit 2 if invalid).

    Exit codes: 0 printed, 2 the file is invalid (every problem, with its file:line:column).
    """
    click.echo(settings_text(load_settings(config_file, no_config)), nl=False)


__all__ = ["config", "config_options", "load_settings", "scope_or_settings", "settings_inventory", "settings_scope",
           "settings_text"]
