"""Run a script unchanged, with cadence_memplan planning every exir export's memory.

    python -m cadence_memplan.exir.patch [--smallest] SCRIPT [ARGS...]
    python -m cadence_memplan.exir.patch [--smallest] -m MODULE [ARGS...]

Calls :func:`cadence_memplan.patch_exir` (``smallest=True`` with ``--smallest``), then
runs SCRIPT (or MODULE) as ``__main__``, with ``sys.argv`` set to ``[SCRIPT, *ARGS]``
and SCRIPT's folder first on ``sys.path``, as ``python SCRIPT ARGS`` would
(``cadence_memplan._boundary.script_runner``). Its exit code is the script's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from .._boundary.script_runner import run_with_patch

__all__ = ["main"]

PROG = "python -m cadence_memplan.exir.patch"
DESCRIPTION = (
    "Run a script (or module) with patch_exir() on: every to_executorch() in it plans"
    " memory with cadence_memplan's exir planners (exir's .pte byte for byte where the"
    " program has no control flow; submodules placed so that none overwrites a live"
    " output where it has). The exit code is the script's."
)
SWITCHES = {"--smallest": "plan with [greedy, best]: never larger than exir's plan"}


def _prepare(switches: set[str]) -> Callable[[], object]:
    def patch() -> object:
        from .patching import patch_exir

        return patch_exir(smallest="--smallest" in switches)

    return patch


def main(argv: Sequence[str] | None = None) -> int:
    return run_with_patch(
        argv, prog=PROG, description=DESCRIPTION, prepare=_prepare, switches=SWITCHES
    )


if __name__ == "__main__":
    sys.exit(main())
