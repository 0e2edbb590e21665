"""Run a Cadence toolchain script unchanged, with cadence_memplan planning its memory.

    python -m cadence_memplan.cadence.patch SCRIPT [ARGS...]
    python -m cadence_memplan.cadence.patch -m MODULE [ARGS...]

Like ``python -m cProfile``: calls :func:`cadence_memplan.patch_cadence` (which reads
``CADENCE_MEMPLAN_ALGO`` and ``CADENCE_MEMPLAN_REORDER``), then runs SCRIPT (or MODULE) as ``__main__``, with
``sys.argv`` set to ``[SCRIPT, *ARGS]`` and SCRIPT's folder first on ``sys.path``, as
``python SCRIPT ARGS`` would. Its exit code is the script's. Importing this module needs
numpy only; running it needs executorch.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Sequence

from . import resolve_patch_algorithm, resolve_patch_reorder

__all__ = ["main"]

PROG = "python -m cadence_memplan.cadence.patch"


def _parser() -> argparse.ArgumentParser:
    """For --help and errors only: arguments after SCRIPT (or -m MODULE) are the script's,
    whatever they look like, so main() splits the command line itself."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} [-h] (SCRIPT | -m MODULE) [ARGS ...]",
        description="Run a Cadence toolchain script (or module) with patch_cadence() on:"
        " every memory planner executorch's Cadence compiler builds is cadence_memplan's."
        " CADENCE_MEMPLAN_ALGO=best places every plan with best (the smallest of many plans);"
        " unset, each planner keeps its mem_algo (0 position, 1 heuristic: upstream's exact"
        " placements; 2 best). CADENCE_MEMPLAN_REORDER=1 also plans better node orders and"
        " keeps the best plan (off by default). The exit code is the script's.",
    )
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    parser.add_argument("script", nargs="?", metavar="SCRIPT", help="the script to run")
    parser.add_argument("args", nargs="*", metavar="ARGS", help="its arguments")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    if not argv:
        parser.error("give a SCRIPT to run, or -m MODULE")
    first = argv[0]
    if first in ("-h", "--help"):
        parser.print_help()
        return 0
    module: str | None = None
    if first == "-m":
        if len(argv) < 2:
            parser.error("-m needs a MODULE")
        module, target_args = argv[1], argv[2:]
    elif first.startswith("-"):
        parser.error(f"unknown option {first} (options go before SCRIPT; {PROG} has -m and -h)")
    elif not os.path.isfile(first):
        parser.error(f"can't open file {first!r}: no such file")
    else:
        target_args = argv[1:]

    try:
        algorithm = resolve_patch_algorithm(None)
        reorder = resolve_patch_reorder(None)
    except ValueError as error:
        parser.error(str(error))

    from .patching import patch_cadence

    patch_cadence(algorithm, reorder)

    if module is not None:
        sys.argv[:] = [module, *target_args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv[:] = [first, *target_args]
        # python SCRIPT puts the script's folder first on sys.path, where -m put the cwd.
        sys.path[0] = os.path.dirname(os.path.abspath(first))
        runpy.run_path(first, run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
