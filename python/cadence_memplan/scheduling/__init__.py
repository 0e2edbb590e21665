"""Memory-aware scheduling before planning: the node order of an exir graph changed,
within the rules that keep what it computes, so that fewer bytes are alive at once
(needs executorch). ``reorder=True`` on :func:`cadence_memplan.exir.memory_planning_pass`
and on Cadence's drop-in runs it; docs/exir.md shows the figures.

Modules: ``rules.py`` (the legal-order rules, written once: units, and the orderings
between them), ``problem.py`` (a graph's units as :func:`cadence_memplan.api.schedule`'s
arrays, the structural order, an order put into the graph), ``reordering.py``
(:class:`Reordering`: the planning algorithm that plans each candidate order and keeps
the best plan; :class:`Reorder`, what it did). The search itself is the C++ core's
(``csrc/core/schedule/``). ``cadence/`` and ``exir/`` both use this package, and it
imports neither: it reads specs through ``_boundary/`` and Cadence's storage-sharing ops
from ``_boundary/storage_sharing.py`` (numpy-free, no executorch).
"""

from .reordering import Moves, Reorder, Reordering
from .rules import ALL_RULES, UnitGraph, unit_graph

__all__ = ["ALL_RULES", "Moves", "Reorder", "Reordering", "UnitGraph", "unit_graph"]
