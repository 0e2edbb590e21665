"""The ``cadence-memplan`` command line: main.py (arguments, the run), report.py (the text
report), plot.py (the memory map), models.py (the model zoo, shared with tests and bench)."""

from .main import main

__all__ = ["main"]
