"""cadence_memplan: ExecuTorch Cadence memory planning in C++, same placements as upstream.

The array API (:func:`plan`, :func:`validate`) needs only numpy. The drop-in classes, the
reports and :func:`patch_cadence` (Cadence's compiler planned by us, no code change; docs/
cadence.md) need executorch (``pip install "cadence-memplan[executorch]"``) and are
imported on first use. docs/architecture.md maps the modules.
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING as _TYPE_CHECKING

from ._types import (
    ALGORITHMS,
    OCCUPANCIES,
    UPSTREAM_ALGORITHMS,
    Algorithm,
    Occupancy,
    PlanningError,
    PlanResult,
    Preplaced,
    ScheduleResult,
)
from ._validation import MAX_MEMORIES
from .api import plan, schedule, validate

if _TYPE_CHECKING:
    from .cadence.algorithms import (
        BestOfHierarchy,
        GreedyWithHeuristic,
        PositionBasedGreedyWithHierarchy,
    )
    from .cadence.compiler import import_cadence_compiler
    from .cadence.memory_planning import CadenceMemoryPlanning
    from .cadence.patching import patch_cadence, unpatch_cadence
    from .cadence.reports import print_memory_planning_info

__version__ = _version("cadence-memplan")

__all__ = [
    "ALGORITHMS",
    "MAX_MEMORIES",
    "OCCUPANCIES",
    "UPSTREAM_ALGORITHMS",
    "Algorithm",
    "BestOfHierarchy",
    "CadenceMemoryPlanning",
    "GreedyWithHeuristic",
    "Occupancy",
    "PlanResult",
    "PlanningError",
    "PositionBasedGreedyWithHierarchy",
    "Preplaced",
    "ScheduleResult",
    "__version__",
    "import_cadence_compiler",
    "patch_cadence",
    "plan",
    "print_memory_planning_info",
    "schedule",
    "unpatch_cadence",
    "validate",
]

# Names that need executorch, by the module that defines them; imported on first use.
_CADENCE_NAMES = {
    "BestOfHierarchy": "algorithms",
    "GreedyWithHeuristic": "algorithms",
    "PositionBasedGreedyWithHierarchy": "algorithms",
    "CadenceMemoryPlanning": "memory_planning",
    "import_cadence_compiler": "compiler",
    "patch_cadence": "patching",
    "unpatch_cadence": "patching",
    "print_memory_planning_info": "reports",
}


def __getattr__(name: str) -> object:
    if name in _CADENCE_NAMES:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.cadence.{_CADENCE_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
