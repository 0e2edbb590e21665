"""A ``MemoryPlanningPass`` that plans with :func:`cadence_memplan.exir.greedy`, or with
``greedy`` and :func:`cadence_memplan.exir.best` (``smallest=True``).

exir's ``MemoryPlanningPass.run`` runs its O(n^2) Python ``Verifier.verify_storage_reuse``
whenever its algorithm callable is *named* ``greedy`` (``_callable_name``), and whenever
DEBUG logging is on. A ``MemoryPlanningAlgorithmSuite`` has no ``__name__``, so wrapping the
planner in one, as exir's default does and this helper does, never triggers it. Ask for
``verify_storage_reuse=True`` to run the same check, in C++, after planning.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from executorch.exir.memory_planning import Verifier
from executorch.exir.pass_base import PassResult
from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass
from executorch.exir.tensor import ALIGNMENT

from .._types import Occupancy
from .planners import greedy
from .search import best
from .suite import MemoryPlanningAlgorithmSuite
from .verifier import verify_storage_reuse as fast_verify_storage_reuse

__all__ = ["memory_planning_pass"]


class _VerifyingMemoryPlanningPass(MemoryPlanningPass):
    """exir's pass, then the storage-reuse check exir runs for ``greedy``, in C++."""

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> PassResult:
        result = super().run(graph_module, graph_signature)
        verifier = Verifier(
            graph_module,
            self.alloc_graph_input,
            self.alloc_graph_output,
            self.alloc_mutable_buffers and not self.share_mutable_buffers,
            graph_signature,
        )
        fast_verify_storage_reuse(verifier, self.allow_lifetime_and_storage_overlap)
        return result


def memory_planning_pass(
    *,
    alignment: int = ALIGNMENT,
    allow_overlapping_allocations: bool = True,
    verify_storage_reuse: bool = False,
    occupancy: Occupancy = "auto",
    smallest: bool = False,
    **kwargs: Any,
) -> MemoryPlanningPass:
    """exir's ``MemoryPlanningPass`` with :func:`cadence_memplan.exir.greedy` as its only
    algorithm: the same ``.pte`` as exir's default pass, planned in C++. Give it to
    ``ExecutorchBackendConfig(memory_planning_pass=...)``. Other keyword arguments
    (``alloc_graph_input`` and friends) go to ``MemoryPlanningPass``.

    ``smallest=True`` runs exir's suite with ``[greedy, best]``: the suite keeps the
    algorithm with the smallest total bufsize, the first one on a tie, so the program
    is greedy's unless :func:`cadence_memplan.exir.best` found a smaller plan, and
    never larger. ``best`` has no counterpart of ``allow_overlapping_allocations=False``,
    which is refused with it.

    ``verify_storage_reuse=True`` checks the plan afterwards as exir does for its own
    ``greedy`` (same errors), with the C++ check, and across control flow's submodules.

    Programs with control flow get each submodule's arena placed at its call site
    (:class:`cadence_memplan.exir.MemoryPlanningAlgorithmSuite`), and compute the right
    values where exir's plan lets a later submodule overwrite a live output."""
    if smallest and not allow_overlapping_allocations:
        raise ValueError(
            "smallest=True plans lifetime-overlapping allocations side by side in one"
            " arena; it cannot honour allow_overlapping_allocations=False"
        )
    algorithm: Callable[..., Any] = greedy
    if not allow_overlapping_allocations or occupancy != "auto":
        algorithm = functools.partial(
            greedy,
            allow_overlapping_allocations=allow_overlapping_allocations,
            occupancy=occupancy,
        )
    algorithms = [algorithm, best] if smallest else [algorithm]
    pass_type = _VerifyingMemoryPlanningPass if verify_storage_reuse else MemoryPlanningPass
    return pass_type(
        memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=algorithms),
        alignment=alignment,
        **kwargs,
    )
