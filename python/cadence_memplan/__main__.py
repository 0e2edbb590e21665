"""``python -m cadence_memplan``: the ``cadence-memplan`` command line (see cli/main.py)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
