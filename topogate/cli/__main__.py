"""`python -m topogate.cli`: the console script's entry point, run as a module."""

from topogate.cli.app import main

if __name__ == "__main__":  # pragma: no cover
    main()
