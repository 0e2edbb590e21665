"""What one planning request is made of, below every flow that plans one (``planning``,
``sizing``, ``comparisons``, ``cadence/``, ``cli/``): numpy only, importing nothing above it.

``options.py`` holds :class:`PlanningOptions`, how to plan (placer, ``best``'s budget and
objective, what a model allocates, the reorder, the lowering), built once and checked
there once; ``hierarchy.py`` holds :class:`Hierarchy`, the memories planned into, and its
conversions; ``inputs.py`` the words the flows share (an input, what it was planned into,
the typed failures, progress); ``sizing_results.py`` what ``size`` finds.
"""

from __future__ import annotations

from .hierarchy import Hierarchy, Memory
from .options import LOWERINGS, BestOnlyOption, PlanningOptions

__all__ = ["LOWERINGS", "BestOnlyOption", "Hierarchy", "Memory", "PlanningOptions"]
