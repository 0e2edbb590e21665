"""exir's ``MemoryPlanningAlgorithmSuite``, with the submodules of control flow placed
where the parent's live tensors are safe.

exir's ``apply_algo`` calls the suite once per graph, submodules first. Where a graph has
cond, while, map or scan nodes, the suite first places their submodules' arenas at their
call sites (``_boundary/control_flow.py``: an arena moves past the outputs of earlier
conds that are still alive when it runs, both branches of a cond at one place), and sets
the graph's ``input_mem_buffer_sizes`` past them; then its algorithms plan the graph's
own tensors from there, as in exir. A graph without control flow is planned exactly as
exir's suite plans it, and so is one whose every arena stays at offset 0, which is
exactly where exir's plan keeps every output intact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from executorch.exir import memory_planning as exir_planning

from .._boundary.algorithm_protocols import SuiteAlgorithm
from .._boundary.control_flow import arrange_submodules
from .planners import greedy

__all__ = ["MemoryPlanningAlgorithmSuite"]


class MemoryPlanningAlgorithmSuite(exir_planning.MemoryPlanningAlgorithmSuite):
    """exir's suite (it keeps the algorithm whose total bufsize is smallest, the first on
    a tie, and writes its plan to the specs), defaulting to
    :func:`cadence_memplan.exir.greedy`, with control flow's arenas placed first (the
    module's docstring). A subclass, so it passes wherever exir's suite is expected."""

    def __init__(self, algo_list: Sequence[SuiteAlgorithm] | None = None) -> None:
        super().__init__([greedy] if algo_list is None else list(algo_list))

    def __call__(
        self,
        alignment: int,
        specs: Any,
        graph_module: torch.fx.GraphModule,
        graph_signature: Any,
        extra_padding: int,
    ) -> list[int]:
        arrange_submodules(graph_module, alignment)
        bufsizes: list[int] = super().__call__(
            alignment, specs, graph_module, graph_signature, extra_padding
        )
        return bufsizes
