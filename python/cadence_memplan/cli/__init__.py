"""The ``cadence-memplan`` command line: ``main.py`` (the parser and the dispatch), one
module per command (``*_command.py``), what they share (``common.py``), what they print
(``printing.py``) and draw (``memory_map.py``, ``sweep_plot.py``). docs/cli.md is its
manual; the work itself is in the library modules (``workflow/plan.py`` and friends)."""

from .main import main

__all__ = ["main"]
