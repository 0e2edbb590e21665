"""exir's planning-algorithm signatures, named once.

``MemoryPlanningPass(memory_planning_algo=...)`` calls its algorithm as ``apply_algo``
does (exir 1.5.x's ``memory_planning.py``): ``algo(alignment, specs, graph_module,
graph_signature, extra_padding)``, positionally, and takes the per-memory bufsizes back
(index 0 is the constants'): :class:`MemoryPlanningAlgorithm`. Exir's own suite
(``MemoryPlanningAlgorithmSuite``), Cadence's ``MemoryPlanningAlgo`` and our wrappers
(the reorder's ``Reordering``, the sweep's recorder) are such algorithms. The suite's
members are called the same way and return a ``MemoryAlgoResult`` instead (exir's
``greedy``, ``BankedGreedy``, our :func:`cadence_memplan.exir.greedy` and ``best``):
:class:`SuiteAlgorithm`. Types only: importing this module needs neither torch nor
executorch.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

__all__ = ["MemoryPlanningAlgorithm", "SuiteAlgorithm"]


class MemoryPlanningAlgorithm(Protocol):
    """What ``MemoryPlanningPass(memory_planning_algo=...)`` calls: the specs (TensorSpecs
    with lifetimes) of ``graph_module`` placed at ``alignment``, each memory's bufsize
    returned (memory 0, the constants', first)."""

    def __call__(
        self,
        alignment: int,
        specs: Iterable[Any],
        graph_module: Any,
        graph_signature: Any,
        extra_padding: int,
        /,
    ) -> list[int]: ...


class SuiteAlgorithm(Protocol):
    """A member of ``MemoryPlanningAlgorithmSuite``'s ``algo_list``: called as
    :class:`MemoryPlanningAlgorithm` is, it returns exir's ``MemoryAlgoResult`` (the
    placements, which the suite writes to the specs of the smallest, and the bufsizes)."""

    def __call__(
        self,
        alignment: int,
        specs: Iterable[Any],
        graph_module: Any,
        graph_signature: Any,
        extra_padding: int,
        /,
    ) -> Any: ...
