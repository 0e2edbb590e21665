"""A model's own path from input to plan (``workflow/plan.py`` dispatches here for models):
a whole ``to_executorch`` with our ``CadenceMemoryPlanning`` in the backend config of the
model's lowering (:func:`plan_model`), and its memory planning replayed at other
memories on one lowering (:func:`replanner`, what ``sweep`` and ``size`` plan with).
Imports torch and executorch only when a model is planned; a placer's failure in a model
is raised as :class:`~cadence_memplan.workflow.plan.DoesNotFit` (:func:`model_failures`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .._types import PlanningError
from ..analysis.sweep import Planned
from ..request import Hierarchy, Memory, PlanningOptions
from ..request.inputs import (
    DoesNotFit,
    InputError,
    InputPlan,
    LoadedInput,
    LoweringError,
    ProgramPlan,
    Progress,
)
from ..stats import format_bytes

__all__ = [
    "model_failures",
    "plan_model",
    "plan_model_methods",
    "replanner",
    "sweep_planner",
]


def plan_model(
    loaded: LoadedInput, memories: Hierarchy, options: PlanningOptions, progress: Progress
) -> InputPlan:
    """:func:`~cadence_memplan.workflow.plan.plan_input` of a model (its arguments)."""
    from ..cadence.lowering import lower_and_plan
    from ..cadence.memory_planning import CadenceMemoryPlanning

    progress("planning memory in to_executorch with our CadenceMemoryPlanning")
    with model_failures():
        ours = lower_and_plan(
            loaded.edge_copy(), CadenceMemoryPlanning, memories, options, who="C++ core"
        )
    kept, kept_bound = ours.kept if ours.kept is not None else (None, None)
    return InputPlan(
        loaded.input, memories, options.algorithm, loaded.lowering, ours.table, ours.timings,
        ours.node_names, ours.program, ours.strategy, kept_bound=kept_bound, kept=kept,
        objective=options.objective, reorder=ours.reorder, spent=ours.spent,
        weights=ours.weights, staging=ours.staging,
    )  # fmt: skip


def plan_model_methods(
    loaded: LoadedInput, memories: Hierarchy, options: PlanningOptions, progress: Progress
) -> ProgramPlan:
    """A program of several methods (a multi-method ``.pt2``, ``loaded.input.methods``)
    planned by one ``to_executorch`` with our ``CadenceMemoryPlanning``, its methods
    together (``cadence_memplan.cadence.methods.plan_methods``): each method's plan, the
    state's buffers and the unshared-state warnings. With ``options.strict_sharing``,
    state two methods use unshared is a :class:`LoweringError`; a tensor that fits
    nowhere, :class:`DoesNotFit`."""
    names = loaded.input.methods
    if not names:
        raise InputError(f"{loaded.input.label} is one program: plan it with plan_input")
    from .._boundary.mutable_state import UnsharedStateError
    from ..cadence.methods import plan_methods

    how = "their state shared" if options.share_mutable_buffers else "each on its own"
    progress(f"planning {len(names)} methods in to_executorch, {how}")
    try:
        with model_failures():
            planned = plan_methods(loaded.edge_copy(), names, memories, options)
    except UnsharedStateError as error:
        raise LoweringError(f"cannot plan {loaded.input.label}: {error}") from error
    methods = {
        name: InputPlan(
            loaded.input,
            memories,
            options.algorithm,
            loaded.lowering,
            table,
            {},
            node_names,
            objective=options.objective,
        )
        for name, (table, node_names) in planned.tables.items()
    }
    return ProgramPlan(
        loaded.input, memories, options.algorithm, loaded.lowering, methods, planned.program,
        options.share_mutable_buffers, planned.state, planned.warnings, planned.timings,
    )  # fmt: skip


@contextlib.contextmanager
def model_failures() -> Iterator[None]:
    """Our placers' failure in a model (and upstream's MemoryError for a pinned spec)
    raised as :class:`DoesNotFit`, naming the tensor by dtype and shape."""
    from ..cadence.sweep import PLANNING_FAILURES

    try:
        yield
    except PLANNING_FAILURES as error:
        raise _model_failure(error) from error


def _model_failure(error: BaseException) -> DoesNotFit:
    cause = error.__cause__
    lines = [
        line.strip()
        for line in str(cause if isinstance(cause, PlanningError) else error).splitlines()
        if line.strip()
    ]
    spec = getattr(error, "spec", None)
    if spec is None:
        return DoesNotFit("a tensor", 0, "; ".join(lines).replace(":; ", ": "), None)
    shape = "x".join(str(size) for size in spec.shape)
    name = f"a {spec.dtype} tensor [{shape}]"
    # A spec exists only once executorch is loaded: the boundary imports it then.
    from .._boundary.tensorspecs import allocated_sizes

    size = int(allocated_sizes([spec])[0])
    # Within one plan() call the core counts tensors by index: name this one instead.
    headline = f"cannot place {name} ({size:,} bytes) in any memory:"
    reason = "; ".join([headline, *lines[1:]]).replace(":; ", ": ")
    return DoesNotFit(name, size, reason, None)


def sweep_planner(
    loaded: LoadedInput,
    memories: Hierarchy,
    varied: int,
    sizes: Sequence[int],
    options: PlanningOptions,
    progress: Progress,
) -> Callable[[Sequence[Memory]], Planned | str]:
    """``sweep``'s ``plan_at`` for a model: lower it once (at the largest size of memory
    ``varied``), and each call re-runs only its memory planning."""
    progress("lowering once with to_executorch (the largest size)")
    replayed = replanner(loaded, memories.with_size(varied, sizes[-1]), options, "sweep")
    from ..cadence.sweep import PLANNING_FAILURES

    def plan_at(config: Sequence[Memory]) -> Planned | str:
        try:
            return Planned(replayed.plan(config))
        except PLANNING_FAILURES as error:
            failure = _model_failure(error)
            if failure.tensor_size:
                return f"{failure.tensor} ({format_bytes(failure.tensor_size)}) fits nowhere"
            return failure.reason.split("; ")[0]

    return plan_at


def replanner(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    purpose: str = "plan again",
) -> Any:
    """A model lowered once, by one ``to_executorch`` at ``memories`` as ``options`` say,
    in its lowering's backend config, whose memory planning ``plan`` replays at any
    memories (``cadence_memplan.cadence.sweep.Replanner``): what ``sweep`` and ``size``
    plan with; with ``options.reorder``, in the node order ``reorder=True`` keeps. Raises
    :class:`LoweringError` when to_executorch never calls the planner, naming
    ``purpose`` ("cannot sweep ...")."""
    from ..cadence.sweep import Replanner

    try:
        return Replanner(loaded.edge_copy(), memories, options)
    except ValueError as error:  # to_executorch never called the planner
        raise LoweringError(f"cannot {purpose} {loaded.input.label}: {error}") from error
