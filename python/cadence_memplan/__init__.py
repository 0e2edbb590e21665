"""cadence_memplan: ExecuTorch Cadence memory planning in C++, same placements as upstream.

The array API (:func:`plan`, :func:`validate`) needs only numpy. The drop-in classes, the
reports, :func:`patch_cadence` (Cadence's compiler planned by us, no code change; docs/
cadence.md), :func:`patch_exir` (every exir export, likewise; docs/exir.md) and
:func:`validate_control_flow` (a planned program's submodules against its live tensors)
need executorch (``pip install "cadence-memplan[executorch]"``) and are imported on first
use. docs/architecture.md maps the modules.
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
from .api import DEFAULT_WORK_BUDGET, plan, schedule, validate

if _TYPE_CHECKING:
    from ._boundary.control_flow_check import validate_control_flow
    from ._boundary.mutable_state import UnsharedStateError, UnsharedStateWarning
    from .cadence.algorithms import (
        BestOfHierarchy,
        GreedyWithHeuristic,
        PositionBasedGreedyWithHierarchy,
    )
    from .cadence.compiler import import_cadence_compiler
    from .cadence.memory_planning import CadenceMemoryPlanning
    from .cadence.patching import patch_cadence, unpatch_cadence
    from .cadence.reports import print_memory_planning_info
    from .exir.patching import patch_exir, unpatch_exir

__version__ = _version("cadence-memplan")

__all__ = [
    "ALGORITHMS",
    "DEFAULT_WORK_BUDGET",
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
    "UnsharedStateError",
    "UnsharedStateWarning",
    "__version__",
    "import_cadence_compiler",
    "patch_cadence",
    "patch_exir",
    "plan",
    "print_memory_planning_info",
    "schedule",
    "unpatch_cadence",
    "unpatch_exir",
    "validate",
    "validate_control_flow",
]

# Names that need executorch, by the module that defines them; imported on first use.
_EXECUTORCH_NAMES = {
    "BestOfHierarchy": "cadence.algorithms",
    "GreedyWithHeuristic": "cadence.algorithms",
    "PositionBasedGreedyWithHierarchy": "cadence.algorithms",
    "CadenceMemoryPlanning": "cadence.memory_planning",
    "import_cadence_compiler": "cadence.compiler",
    "patch_cadence": "cadence.patching",
    "unpatch_cadence": "cadence.patching",
    "print_memory_planning_info": "cadence.reports",
    "patch_exir": "exir.patching",
    "unpatch_exir": "exir.patching",
    "validate_control_flow": "_boundary.control_flow_check",
    "UnsharedStateWarning": "_boundary.mutable_state",
    "UnsharedStateError": "_boundary.mutable_state",
}


def __getattr__(name: str) -> object:
    if name in _EXECUTORCH_NAMES:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_EXECUTORCH_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
