"""cadence_memplan: ExecuTorch Cadence memory planning in C++, same placements as upstream.

The array API (:func:`plan`, :func:`validate`) needs only numpy. The drop-in
algorithm classes need executorch (``pip install cadence-memplan[executorch]``) and
are imported on first use.
"""

from __future__ import annotations

import importlib
from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

from ._arrays import ALGORITHMS, Algorithm, PlanResult, Preplaced, plan, validate
from ._core import MAX_MEMORIES, PlanningError

if TYPE_CHECKING:
    from .algorithms import GreedyWithHeuristic, PositionBasedGreedyWithHierarchy
    from .cadence import CadenceMemoryPlanning
    from .reports import print_memory_planning_info

__version__ = _version("cadence-memplan")

__all__ = [
    "ALGORITHMS",
    "MAX_MEMORIES",
    "Algorithm",
    "CadenceMemoryPlanning",
    "GreedyWithHeuristic",
    "PlanResult",
    "PlanningError",
    "PositionBasedGreedyWithHierarchy",
    "Preplaced",
    "__version__",
    "plan",
    "print_memory_planning_info",
    "validate",
]

# Names that need executorch, by the module that defines them; imported on first use.
_EXECUTORCH_NAMES = {
    "GreedyWithHeuristic": "algorithms",
    "PositionBasedGreedyWithHierarchy": "algorithms",
    "CadenceMemoryPlanning": "cadence",
    "print_memory_planning_info": "reports",
}


def __getattr__(name: str) -> Any:
    if name in _EXECUTORCH_NAMES:
        module = importlib.import_module(f".{_EXECUTORCH_NAMES[name]}", __name__)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
