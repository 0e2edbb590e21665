"""cadence_memplan: ExecuTorch Cadence memory planning in C++, same placements as upstream.

The array API (:func:`plan`, :func:`validate`) needs only numpy. The drop-in
algorithm classes need executorch (``pip install cadence-memplan[executorch]``) and
are imported on first use.
"""

from __future__ import annotations

from importlib.metadata import version as _version
from typing import TYPE_CHECKING, Any

from ._arrays import ALGORITHMS, Algorithm, PlanResult, Preplaced, plan, validate
from ._core import MAX_MEMORIES, PlanningError

if TYPE_CHECKING:
    from .algorithms import GreedyWithHeuristic, PositionBasedGreedyWithHierarchy

__version__ = _version("cadence-memplan")

__all__ = [
    "ALGORITHMS",
    "MAX_MEMORIES",
    "Algorithm",
    "GreedyWithHeuristic",
    "PlanResult",
    "PlanningError",
    "PositionBasedGreedyWithHierarchy",
    "Preplaced",
    "__version__",
    "plan",
    "validate",
]

_EXECUTORCH_NAMES = {"GreedyWithHeuristic", "PositionBasedGreedyWithHierarchy"}


def __getattr__(name: str) -> Any:
    # The drop-in classes subclass executorch's, so importing them needs executorch.
    if name in _EXECUTORCH_NAMES:
        from . import algorithms

        return getattr(algorithms, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
