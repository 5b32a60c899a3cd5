"""The command line: click commands, one module per command, one output path, one exit rule.

The console script is `topogate.cli:main`; `python -m topogate.cli` runs the same.
"""

from topogate.cli.app import main

__all__ = ["main"]
