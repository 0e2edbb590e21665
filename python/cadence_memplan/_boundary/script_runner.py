"""Running a script unchanged with one of the package's patches on: what the ``-m``
runners ``cadence_memplan.cadence.patch`` and ``cadence_memplan.exir.patch`` share.

Like ``python -m cProfile``: the runner's own switches come first, then SCRIPT (or ``-m
MODULE``) and its arguments, whatever they look like. The patch goes on, then SCRIPT runs
as ``__main__`` with ``sys.argv`` set to ``[SCRIPT, *ARGS]`` and SCRIPT's folder first on
``sys.path``, as ``python SCRIPT ARGS`` would. Numpy-only: the patch itself imports
torch, after the command line is checked.
"""

from __future__ import annotations

import argparse
import os
import runpy
import sys
from collections.abc import Callable, Sequence

__all__ = ["run_with_patch"]


def _parser(prog: str, description: str, switches: dict[str, str]) -> argparse.ArgumentParser:
    """For --help and errors only: arguments after SCRIPT (or -m MODULE) are the script's,
    so run_with_patch splits the command line itself."""
    options = "".join(f" [{switch}]" for switch in switches)
    parser = argparse.ArgumentParser(
        prog=prog,
        usage=f"{prog} [-h]{options} (SCRIPT | -m MODULE) [ARGS ...]",
        description=description,
    )
    for switch, help_text in switches.items():
        parser.add_argument(switch, action="store_true", help=help_text)
    parser.add_argument("-m", dest="module", metavar="MODULE", help="run a module, as python -m")
    parser.add_argument("script", nargs="?", metavar="SCRIPT", help="the script to run")
    parser.add_argument("args", nargs="*", metavar="ARGS", help="its arguments")
    return parser


def run_with_patch(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str,
    prepare: Callable[[set[str]], Callable[[], object]],
    switches: dict[str, str] | None = None,
) -> int:
    """Run the script (or module) ``argv`` names with a patch on. ``prepare(switches
    given)`` checks the options (ValueError: a usage error, exit 2) before anything is
    imported, and returns the call that puts the patch on. ``switches``: the runner's own
    ``--name`` options and their help. Returns 0 once the script returns; its
    ``sys.exit`` ends the process with its code."""
    known = switches or {}
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = _parser(prog, description, known)
    given: set[str] = set()
    while argv and argv[0] in known:
        given.add(argv.pop(0))
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
        options = ", ".join([*known, "-m"]) + " and -h"
        parser.error(f"unknown option {first} (options go before SCRIPT; {prog} has {options})")
    elif not os.path.isfile(first):
        parser.error(f"can't open file {first!r}: no such file")
    else:
        target_args = argv[1:]

    try:
        patch = prepare(given)
    except ValueError as error:
        parser.error(str(error))
    patch()

    if module is not None:
        sys.argv[:] = [module, *target_args]
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    else:
        sys.argv[:] = [first, *target_args]
        # python SCRIPT puts the script's folder first on sys.path, where -m put the cwd.
        sys.path[0] = os.path.dirname(os.path.abspath(first))
        runpy.run_path(first, run_name="__main__")
    return 0
