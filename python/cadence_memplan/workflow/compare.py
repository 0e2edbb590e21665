"""The same input planned by upstream's placers: what ``best`` changed
(:func:`upstream_placer_plans`: upstream's two placers as the core reproduces them) and
``--compare`` (:func:`compare_with_upstream`: upstream's own Python code). Imports torch
and executorch only for models.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._types import UPSTREAM_ALGORITHMS
from ..request import Memory, PlanningOptions
from ..request.inputs import DoesNotFit, InputPlan, LoadedInput, Progress, quiet
from ..stats import TensorTable
from .plan import plan_arrays, plan_input

__all__ = ["Comparison", "UpstreamPlan", "compare_with_upstream", "upstream_placer_plans"]


@dataclass(frozen=True)
class UpstreamPlan:
    """An input planned by one of upstream's placers (as the core reproduces it):
    ``table`` is None when it does not fit; ``seconds`` the placer's time, when timed."""

    algorithm: str
    table: TensorTable | None
    seconds: float | None = None


def upstream_placer_plans(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    *,
    timed: bool = False,
    progress: Progress | None = None,
) -> list[UpstreamPlan]:
    """The input planned with each of upstream's placers (``position``, ``heuristic``),
    to show what ``best`` changed (``options`` are ``best``'s: each placer takes what
    applies to it). A model's are replayed on one lowering, or with ``timed``, each a
    whole ``to_executorch`` (so its placer is timed); empty for a model whose graph
    cannot be replayed."""
    progress = progress or quiet
    # Upstream's placers plan the given order, unstaged (upstream's flow has no staging).
    options = options.replace(reorder=False, stage=False, cost_model=None)
    if not loaded.input.is_model:
        return [
            _arrays_plan(loaded, memories, options.for_placer(algorithm))
            for algorithm in UPSTREAM_ALGORITHMS
        ]
    if timed:
        plans = []
        for algorithm in UPSTREAM_ALGORITHMS:
            progress(f"planning again with upstream's {algorithm} placer")
            try:
                rival = plan_input(loaded, memories, options.for_placer(algorithm))
            except DoesNotFit:
                plans.append(UpstreamPlan(algorithm, None))
            else:
                plans.append(UpstreamPlan(algorithm, rival.table, rival.placer_seconds))
        return plans
    return _replayed_plans(loaded, memories, options, progress)


def _arrays_plan(
    loaded: LoadedInput, memories: Sequence[Memory], options: PlanningOptions
) -> UpstreamPlan:
    try:
        table, seconds, _ = plan_arrays(loaded, memories, options)
    except DoesNotFit:
        return UpstreamPlan(options.algorithm, None)
    return UpstreamPlan(options.algorithm, table, seconds)


def _replayed_plans(
    loaded: LoadedInput, memories: Sequence[Memory], options: PlanningOptions, progress: Progress
) -> list[UpstreamPlan]:
    """Upstream's placers replayed on one lowering (made with the first of them)."""
    from ..cadence.sweep import PLANNING_FAILURES, Replanner

    progress("planning again with upstream's two placers, to show what best changed")
    try:
        replanner = Replanner(loaded.edge_copy(), memories, options.for_placer("position"))
    except ValueError as error:  # to_executorch never called the planner
        progress(f"not compared with upstream's placers: {error}")
        return []
    plans = []
    for algorithm in UPSTREAM_ALGORITHMS:
        try:
            table = replanner.plan(memories, options.for_placer(algorithm))
            plans.append(UpstreamPlan(algorithm, table))
        except PLANNING_FAILURES:
            plans.append(UpstreamPlan(algorithm, None))
    return plans


@dataclass(frozen=True)
class Comparison:
    """The same input planned by upstream's Python code: for a model, upstream's
    ``CadenceMemoryPlanning`` (``same_program``: are the serialized programs identical);
    for arrays, :mod:`cadence_memplan.reference` (``same_program`` is None).
    ``by_design`` says why the two differ where they differ on purpose (a graph with
    control flow: docs/cadence.md#control-flow), None when they should not differ."""

    who: str
    table: TensorTable
    seconds: float
    same_program: bool | None
    by_design: str | None = None


def compare_with_upstream(
    ours: InputPlan,
    loaded: LoadedInput,
    options: PlanningOptions,
    *,
    progress: Progress | None = None,
) -> Comparison:
    """Plan ``loaded`` again as ``ours`` was planned (with ``options``, an upstream
    placer's), with upstream's Python placer, which plans the given order."""
    progress = progress or quiet
    if options.stage:
        raise ValueError(
            "a staged plan cannot be compared with upstream's placers, which plan the"
            " program unstaged"
        )
    options = options.replace(reorder=False)
    if not loaded.input.is_model:
        from .. import reference

        progress("planning again with cadence_memplan.reference (--compare)")
        table, seconds, _ = plan_arrays(loaded, ours.memories, options, placer=reference.plan)
        return Comparison("cadence_memplan.reference", table, seconds, None)
    from executorch.backends.cadence.aot.memory_planning import (
        CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
    )

    from ..cadence.lowering import lower_and_plan

    progress("planning again with upstream's CadenceMemoryPlanning (--compare)")
    theirs = lower_and_plan(
        loaded.edge_copy(), UpstreamCadenceMemoryPlanning, ours.memories, options,
        who="upstream Python",
    )  # fmt: skip
    same_program = theirs.program.buffer == ours.program.buffer
    return Comparison(
        "upstream's CadenceMemoryPlanning",
        theirs.table,
        theirs.timings["placer (upstream Python)"],
        same_program,
        None if same_program else _control_flow_difference(ours.program, theirs.program),
    )


def _control_flow_difference(ours: Any, theirs: Any) -> str | None:
    """Why two programs planned from one lowering differ, when by design: ours plans
    control flow around its submodules (docs/cadence.md#control-flow), so it differs from
    upstream's wherever upstream's lets a tensor overwrite one still needed, and may
    differ where upstream's happens to be right (its placers see the submodules' arenas
    as free). None (not by design) when the program has no control flow, or when our
    plan breaks the control-flow check."""
    from .._boundary.control_flow import has_control_flow
    from .._boundary.control_flow_check import validate_control_flow

    graph_module = ours.exported_program().graph_module
    if not has_control_flow(graph_module) or validate_control_flow(graph_module) is not None:
        return None
    problem = validate_control_flow(theirs.exported_program().graph_module)
    if problem is not None:
        return f"upstream's plan is wrong, ours is checked right: {problem}"
    return (
        "the program has control flow: ours places the graph's tensors around what its"
        " submodules hold, upstream's placers see those bytes as free (both pass the"
        " control-flow check)"
    )
