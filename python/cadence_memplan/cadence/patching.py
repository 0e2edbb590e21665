"""``patch_cadence()``: Cadence's compiler plans memory with cadence_memplan, no code change.

In the style of scikit-learn-intelex's ``patch_sklearn()``: executorch's Cadence modules
build their memory planning from a few module-level names, and the patch points each of
them at ours, in every loaded module of ``executorch.backends.cadence`` that holds
upstream's object under that name:

- ``CadenceMemoryPlanning`` (``memory_planning``; ``compiler`` imports it by name and
  builds it in ``export_to_executorch_gen_etrecord`` / ``_lower_ep_to_cadence_gen_etrecord``):
  ours, :class:`~cadence_memplan.cadence.memory_planning.CadenceMemoryPlanning`;
- ``PositionBasedGreedyWithHierarchy`` and ``GreedyWithHeuristic`` (``memory_planning``,
  where upstream's own ``CadenceMemoryPlanning.get_mem_algos`` finds them): ours;
- ``print_memory_planning_info`` (``memory_planning``, ``compiler``): ours, the same
  tables read in one pass, with each memory's peak live of its tensors added.

Modules imported later that take those names from ``memory_planning`` get ours too. Names
a script took before the patch keep upstream's objects, so patch first (or run the script
with ``python -m cadence_memplan.cadence.patch``).

``mem_algo`` keeps its meaning: 0 first fit, 1 best fit (both upstream's placements,
exactly), 2 ``best``. ``algorithm="best"`` (or ``CADENCE_MEMPLAN_ALGO=best``) makes every
planner place with ``best``, for ``mem_algo`` 0/1 callers who want smaller plans.
``reorder=True`` (or ``CADENCE_MEMPLAN_REORDER=1``) makes every ``CadenceMemoryPlanning``
the compiler builds reorder (``reorder=True``: better node orders, the best plan kept).
``share_mutable_buffers=True`` (or ``CADENCE_MEMPLAN_SHARE_MUTABLE_BUFFERS=1``) makes it
plan a program's methods together, their mutable state placed once; ``strict_sharing=True``
(or ``CADENCE_MEMPLAN_STRICT_SHARING=1``) makes state that methods use without sharing it an
error instead of a warning.

``unpatch_cadence()`` puts upstream's exact objects back wherever ours are. Both are
idempotent. The patch changes module attributes, so it is process-wide, not per thread.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from executorch.backends.cadence.aot import memory_planning as upstream_memory_planning
from executorch.backends.cadence.aot.memory_constraints import ConstraintsGenPass
from executorch.backends.cadence.aot.memory_planning_algo import MemoryPlanningAlgo
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig

from .._boundary.module_names import PatchHandle, point_names_at
from . import (
    ALGORITHM_ENV,
    PATCH_ALGORITHMS,
    REORDER_ENV,
    SHARE_ENV,
    STRICT_SHARING_ENV,
    reports,
    resolve_patch_algorithm,
    resolve_patch_reorder,
    resolve_patch_share,
    resolve_patch_strict_sharing,
)
from .algorithms import BestOfHierarchy, GreedyWithHeuristic, PositionBasedGreedyWithHierarchy
from .compiler import import_cadence_compiler
from .memory_planning import CadenceMemoryPlanning

__all__ = [
    "ALGORITHM_ENV",
    "PATCH_ALGORITHMS",
    "REORDER_ENV",
    "SHARE_ENV",
    "STRICT_SHARING_ENV",
    "BestCadenceMemoryPlanning",
    "CadencePatch",
    "patch_cadence",
    "patched_algorithm",
    "patched_reorder",
    "patched_sharing",
    "unpatch_cadence",
]

_PACKAGE = "executorch.backends.cadence"


class BestCadenceMemoryPlanning(CadenceMemoryPlanning):
    """Our ``CadenceMemoryPlanning`` placing with ``best`` whatever ``mem_algo`` (0, 1 or
    2) says: what ``patch_cadence(algorithm="best")`` installs."""

    @staticmethod
    def get_mem_algos(
        memory_config: MemoryConfig,
        mode: CompileMode,
        alloc_graph_input: bool,
        alloc_graph_output: bool,
        additional_constraint_gen_passes: Sequence[ConstraintsGenPass] | None,
    ) -> list[MemoryPlanningAlgo]:
        best = CadenceMemoryPlanning.get_mem_algos(
            memory_config,
            mode,
            alloc_graph_input,
            alloc_graph_output,
            additional_constraint_gen_passes,
        )[2]
        return [best, best, best]


class ReorderingCadenceMemoryPlanning(CadenceMemoryPlanning):
    """Our ``CadenceMemoryPlanning`` with ``reorder=True`` unless told otherwise: what
    ``patch_cadence(reorder=True)`` installs."""

    reorder_by_default = True


class ReorderingBestCadenceMemoryPlanning(BestCadenceMemoryPlanning):
    """:class:`BestCadenceMemoryPlanning` with ``reorder=True`` unless told otherwise."""

    reorder_by_default = True


def _upstream_objects() -> dict[str, Any]:
    return {
        "CadenceMemoryPlanning": upstream_memory_planning.CadenceMemoryPlanning,
        "PositionBasedGreedyWithHierarchy": upstream_memory_planning.PositionBasedGreedyWithHierarchy,
        "GreedyWithHeuristic": upstream_memory_planning.GreedyWithHeuristic,
        "print_memory_planning_info": upstream_memory_planning.print_memory_planning_info,
    }


_REORDERING: dict[tuple[str, bool], type[CadenceMemoryPlanning]] = {
    ("mem_algo", False): CadenceMemoryPlanning,
    ("best", False): BestCadenceMemoryPlanning,
    ("mem_algo", True): ReorderingCadenceMemoryPlanning,
    ("best", True): ReorderingBestCadenceMemoryPlanning,
}


def _planning_class(
    algorithm: str, reorder: bool, share: bool, strict: bool
) -> type[CadenceMemoryPlanning]:
    """The class a patch installs: with sharing (or strict sharing) on by default, a
    subclass that says so."""
    base = _REORDERING[algorithm, reorder]
    if not share and not strict:
        return base
    name = f"{base.__name__}{'Sharing' if share else ''}{'Strict' if strict else ''}"
    attributes = {"share_by_default": share, "strict_by_default": strict, "__module__": __name__}
    return type(name, (base,), attributes)


Options = tuple[str, bool, bool, bool]  # algorithm, reorder, share, strict
_SWITCHES = (False, True)
# What each name becomes, per patch algorithm, reorder, share and strict.
_OURS: dict[Options, dict[str, Any]] = {
    (algorithm, reorder, share, strict): {
        "CadenceMemoryPlanning": _planning_class(algorithm, reorder, share, strict),
        "PositionBasedGreedyWithHierarchy": (
            PositionBasedGreedyWithHierarchy if algorithm == "mem_algo" else BestOfHierarchy
        ),
        "GreedyWithHeuristic": GreedyWithHeuristic if algorithm == "mem_algo" else BestOfHierarchy,
        "print_memory_planning_info": reports.print_memory_planning_info,
    }
    for algorithm in PATCH_ALGORITHMS
    for reorder in _SWITCHES
    for share in _SWITCHES
    for strict in _SWITCHES
}

# Upstream's objects, read before anything is patched (module import time).
_UPSTREAM = _upstream_objects()
_active: Options | None = None


def _all_ours() -> dict[str, set[int]]:
    return {name: {id(ours[name]) for ours in _OURS.values()} for name in _UPSTREAM}


class CadencePatch(PatchHandle):
    """What :func:`patch_cadence` returns; as a context manager, leaving the block puts back
    the state from before the call (unpatched, or patched with another algorithm)."""

    def __init__(self, algorithm: str, reorder: bool, previous: Options | None) -> None:
        super().__init__(
            unpatch_cadence if previous is None else functools.partial(patch_cadence, *previous)
        )
        self.algorithm = algorithm
        self.reorder = reorder

    def __repr__(self) -> str:
        return f"CadencePatch(algorithm={self.algorithm!r}, reorder={self.reorder!r})"


def patch_cadence(
    algorithm: str | None = None,
    reorder: bool | None = None,
    share_mutable_buffers: bool | None = None,
    strict_sharing: bool | None = None,
) -> CadencePatch:
    """Make every memory planner executorch's Cadence compiler builds ours.

    ``algorithm``: ``"mem_algo"`` keeps each caller's ``mem_algo`` (0 position, 1
    heuristic, both upstream's placements exactly; 2 best); ``"best"`` places every plan
    with ``best``. ``None`` reads ``CADENCE_MEMPLAN_ALGO`` (unset or empty: ``"mem_algo"``).
    ``reorder``: every ``CadenceMemoryPlanning`` the compiler builds also plans better
    node orders and keeps the best plan (``reorder=True`` on the class); ``None`` reads
    ``CADENCE_MEMPLAN_REORDER`` (1 or 0; unset or empty: off).
    ``share_mutable_buffers``: every ``CadenceMemoryPlanning`` plans a program's methods
    together, their mutable state placed once (``None``:
    ``CADENCE_MEMPLAN_SHARE_MUTABLE_BUFFERS``); ``strict_sharing``: state methods use
    without sharing it is an error, not a warning (``None``:
    ``CADENCE_MEMPLAN_STRICT_SHARING``). Anything else raises ``ValueError`` and changes
    nothing.

    Imports Cadence's compiler (on Python 3.11 through
    :func:`~cadence_memplan.cadence.compiler.import_cadence_compiler`, which supplies
    ``typing.override``), so that its names are patched too. Calling it again switches the
    algorithm; use the result as a context manager to undo it on leaving a block.
    """
    global _active
    algorithm = resolve_patch_algorithm(algorithm)
    reorder = resolve_patch_reorder(reorder)
    share = resolve_patch_share(share_mutable_buffers)
    strict = resolve_patch_strict_sharing(strict_sharing)
    import_cadence_compiler()
    previous = _active
    current = {name: {id(upstream)} | _all_ours()[name] for name, upstream in _UPSTREAM.items()}
    point_names_at(_PACKAGE, _OURS[algorithm, reorder, share, strict], current)
    _active = (algorithm, reorder, share, strict)
    return CadencePatch(algorithm, reorder, previous)


def unpatch_cadence() -> None:
    """Put upstream's objects back wherever ``patch_cadence`` put ours (a no-op when not
    patched)."""
    global _active
    point_names_at(_PACKAGE, _UPSTREAM, _all_ours())
    _active = None


def patched_algorithm() -> str | None:
    """The algorithm of the patch in force (``"mem_algo"`` or ``"best"``), or None."""
    return None if _active is None else _active[0]


def patched_reorder() -> bool | None:
    """Whether the patch in force reorders, or None when not patched."""
    return None if _active is None else _active[1]


def patched_sharing() -> tuple[bool, bool] | None:
    """The patch in force's ``(share_mutable_buffers, strict_sharing)``, or None when not
    patched."""
    return None if _active is None else (_active[2], _active[3])
