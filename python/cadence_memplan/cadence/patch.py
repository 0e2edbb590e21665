"""Run a Cadence toolchain script unchanged, with cadence_memplan planning its memory.

    python -m cadence_memplan.cadence.patch SCRIPT [ARGS...]
    python -m cadence_memplan.cadence.patch -m MODULE [ARGS...]

Like ``python -m cProfile``: calls :func:`cadence_memplan.patch_cadence` (which reads
``CADENCE_MEMPLAN_ALGO``, ``CADENCE_MEMPLAN_REORDER``,
``CADENCE_MEMPLAN_SHARE_MUTABLE_BUFFERS`` and ``CADENCE_MEMPLAN_STRICT_SHARING``), then runs SCRIPT (or MODULE)
as ``__main__``, with ``sys.argv`` set to ``[SCRIPT, *ARGS]`` and SCRIPT's folder first on
``sys.path``, as ``python SCRIPT ARGS`` would (``cadence_memplan._boundary.script_runner``). Its exit code
is the script's. Importing this module needs numpy only; running it needs executorch.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from .._boundary.script_runner import run_with_patch
from . import (
    resolve_patch_algorithm,
    resolve_patch_reorder,
    resolve_patch_share,
    resolve_patch_strict_sharing,
)

__all__ = ["main"]

PROG = "python -m cadence_memplan.cadence.patch"
DESCRIPTION = (
    "Run a Cadence toolchain script (or module) with patch_cadence() on: every memory"
    " planner executorch's Cadence compiler builds is cadence_memplan's."
    " CADENCE_MEMPLAN_ALGO=best places every plan with best (the smallest of many plans);"
    " unset, each planner keeps its mem_algo (0 position, 1 heuristic: upstream's exact"
    " placements; 2 best). CADENCE_MEMPLAN_REORDER=1 also plans better node orders and"
    " keeps the best plan (off by default). CADENCE_MEMPLAN_SHARE_MUTABLE_BUFFERS=1 plans"
    " a program's methods together, their mutable state placed once;"
    " CADENCE_MEMPLAN_STRICT_SHARING=1 makes state methods do not share an error."
    " The exit code is the script's."
)


def _prepare(switches: set[str]) -> Callable[[], object]:
    # Bad values are refused before torch loads.
    algorithm = resolve_patch_algorithm(None)
    reorder = resolve_patch_reorder(None)
    share = resolve_patch_share(None)
    strict = resolve_patch_strict_sharing(None)

    def patch() -> object:
        from .patching import patch_cadence

        return patch_cadence(algorithm, reorder, share, strict)

    return patch


def main(argv: Sequence[str] | None = None) -> int:
    return run_with_patch(argv, prog=PROG, description=DESCRIPTION, prepare=_prepare)


if __name__ == "__main__":
    sys.exit(main())
