"""A model's own path from input to plan (``planning.py`` dispatches here for models):
a whole ``to_executorch`` with our ``CadenceMemoryPlanning`` in the backend config of the
model's lowering (:func:`plan_model`), and its memory planning replayed at other
memories on one lowering (:func:`replanner`, what ``sweep`` and ``size`` plan with).
Imports torch and executorch only when a model is planned; a placer's failure in a model
is raised as :class:`~cadence_memplan.planning.DoesNotFit` (:func:`model_failures`).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ._types import DEFAULT_BUDGET, Budget, Objective, PlanningError
from .analysis.sweep import Planned
from .io.memories import Memory
from .planning import DoesNotFit, InputPlan, LoadedInput, LoweringError, Progress
from .stats import format_bytes

__all__ = ["model_failures", "plan_model", "replanner", "sweep_planner"]


def plan_model(
    loaded: LoadedInput,
    memories: tuple[Memory, ...],
    algorithm: str,
    *,
    alloc_inputs: bool,
    alloc_outputs: bool,
    budget: Budget,
    objective: Objective,
    reorder: bool,
    progress: Progress,
) -> InputPlan:
    """:func:`~cadence_memplan.planning.plan_input` of a model (its arguments)."""
    from .cadence.lowering import lower_and_plan
    from .cadence.memory_planning import CadenceMemoryPlanning

    progress("planning memory in to_executorch with our CadenceMemoryPlanning")
    with model_failures():
        ours = lower_and_plan(
            loaded.edge_copy(), CadenceMemoryPlanning, memories, algorithm, alloc_inputs,
            alloc_outputs, "C++ core", budget, lowering=loaded.lowering, objective=objective,
            reorder=reorder,
        )  # fmt: skip
    kept, kept_bound = ours.kept if ours.kept is not None else (None, None)
    return InputPlan(
        loaded.input, memories, algorithm, loaded.lowering, ours.table, ours.timings,
        ours.node_names, ours.program, ours.strategy, kept_bound=kept_bound, kept=kept,
        objective=objective, reorder=ours.reorder, spent=ours.spent,
        weights=ours.weights,
    )  # fmt: skip


@contextlib.contextmanager
def model_failures() -> Iterator[None]:
    """Our placers' failure in a model (and upstream's MemoryError for a pinned spec)
    raised as :class:`DoesNotFit`, naming the tensor by dtype and shape."""
    from .cadence.sweep import PLANNING_FAILURES

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
    from ._boundary.tensorspecs import allocated_sizes

    size = int(allocated_sizes([spec])[0])
    # Within one plan() call the core counts tensors by index: name this one instead.
    headline = f"cannot place {name} ({size:,} bytes) in any memory:"
    reason = "; ".join([headline, *lines[1:]]).replace(":; ", ": ")
    return DoesNotFit(name, size, reason, None)


def sweep_planner(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    varied: int,
    sizes: Sequence[int],
    algorithm: str,
    alloc_inputs: bool,
    alloc_outputs: bool,
    budget: Budget,
    progress: Progress,
) -> Callable[[Sequence[Memory]], Planned | str]:
    """``sweep``'s ``plan_at`` for a model: lower it once (at the largest size of memory
    ``varied``), and each call re-runs only its memory planning."""
    progress("lowering once with to_executorch (the largest size)")
    largest = list(memories)
    largest[varied] = dataclasses.replace(memories[varied], size=sizes[-1])
    replayed = replanner(
        loaded, largest, algorithm, alloc_inputs=alloc_inputs, alloc_outputs=alloc_outputs,
        budget=budget, purpose="sweep",
    )  # fmt: skip
    from .cadence.sweep import PLANNING_FAILURES

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
    algorithm: str,
    *,
    alloc_inputs: bool = True,
    alloc_outputs: bool = True,
    budget: Budget = DEFAULT_BUDGET,
    objective: Objective = "bytes",
    purpose: str = "plan again",
    reorder: bool = False,
) -> Any:
    """A model lowered once, by one ``to_executorch`` at ``memories`` with ``algorithm`` in
    its lowering's backend config, whose memory planning ``plan`` replays at any memories
    (``cadence_memplan.cadence.sweep.Replanner``): what ``sweep`` and ``size`` plan
    with; with ``reorder``, in the node order ``reorder=True`` keeps. Raises
    :class:`LoweringError` when to_executorch never calls the planner, naming
    ``purpose`` ("cannot sweep ...")."""
    from .cadence.sweep import Replanner

    try:
        return Replanner(
            loaded.edge_copy(), memories, algorithm, alloc_inputs, alloc_outputs, budget,
            lowering=loaded.lowering, objective=objective, reorder=reorder,
        )  # fmt: skip
    except ValueError as error:  # to_executorch never called the planner
        raise LoweringError(f"cannot {purpose} {loaded.input.label}: {error}") from error
