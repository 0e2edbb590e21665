"""How much fast memory an input needs: what ``cadence-memplan size`` reports.

:func:`size_input` answers for memory 1, the fastest, with ``best``, every other memory
as given:

* ``all_fit_from``, the smallest size of memory 1 at which every tensor allowed there
  fits. Planned with room for all of them (memory 1 at least their aligned sizes added
  up), ``best`` keeps them all there and minimises memory 1's bufsize by its exact search,
  which also proves a lower bound (else the aligned peak live of those tensors bounds it).
* Below it, the curve of the most memory 1 keeps (the sizes of its tensors summed over the
  run, or with ``objective="traffic"`` on a model, their traffic) against its size, with
  capacity-first's proved ``kept_bound`` at each point. The points are where the answer
  changes, found from the top down, not a grid: a plan at size ``c`` whose memory 1 ends
  at ``u <= c`` holds at every size from ``u`` to ``c``, so the next size asked is ``u``
  less the alignment. A point reads "from this size up to the next point's, memory 1
  keeps ``kept``, and no plan keeps more than ``kept_bound``".

The curve is made monotone, as the truth is: a plan found at a smaller size holds at a
larger one, and a bound proved at a larger size holds below it. A point equal to the one
above it (the next larger size) is dropped, so that each remaining point sits at the
smallest size known to keep its amount. A plan below ``all_fit_from`` that keeps every
tensor lowers ``all_fit_from``; a bound below the total raises its lower bound.

The budget is ``best``'s work, split across the steps: half for ``all_fit_from``, then
what is left evenly over the points still to plan, so the answer is a function of the
input and the options, the same on every run. A wall-clock cap (``Budget.ms``) is split
the same way, and then the answer may depend on the machine (``Sizing.cut_short``).

A model is lowered once, as ``plan`` lowers it, and each size replays only its memory
planning (:func:`~cadence_memplan.workflow.plan.replanner`, as ``sweep`` does).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .._types import Budget
from .._validation import is_integer
from ..api import DEFAULT_WORK_BUDGET
from ..request import Hierarchy, Memory, PlanningOptions
from ..request.inputs import DoesNotFit, Input, InvalidPlan, LoadedInput, LoweringError
from ..request.sizing_results import CURVE_ENDS, CurvePoint, MemorySizing, Sizing
from ..stats import TensorTable, align_up, aligned_sizes, format_bytes, peak_live_bytes
from .model import model_failures, replanner
from .plan import check_plan, load_input, plan_input, quiet

__all__ = [
    "CURVE_ENDS",
    "DEFAULT_POINTS",
    "CurvePoint",
    "MemorySizing",
    "PlanAtSize",
    "Sizing",
    "memory_sizing",
    "size_input",
    "size_methods",
]

#: How many sizes below ``all_fit_from`` are planned at most, by default.
DEFAULT_POINTS = 32
# Of the work budget, the share of the plan with room for every tensor (all_fit_from).
_ALL_FIT_SHARE = 0.5

Progress = Callable[[str], None]


@dataclass(frozen=True)
class PlanAtSize:
    """What one plan of the input at a size of memory 1 (``capacity``) says: memory 1's
    bufsize (``used``), the aligned peak live of its tensors, what it keeps and
    capacity-first's bound on what any plan keeps there (None: none), ``best``'s lower
    bound on memory 1's bufsize when every tensor allowed there is kept (None: none), and
    the work it spent."""

    capacity: int
    used: int  # memory 1's bufsize: the aligned end of its highest tensor
    peak_live: int  # the aligned peak live of memory 1's tensors
    kept: int
    kept_bound: int | None
    lower_bound: int | None  # on memory 1's bufsize, when every tensor allowed there is kept
    work: int
    cut_short: bool


# Plans the input with memory 1 of a given size, within a budget; raises DoesNotFit.
_Planner = Callable[[int, Budget], PlanAtSize]


def _memory1_figures(table: TensorTable, alignment: int) -> tuple[int, int]:
    """Memory 1's bufsize in a plan (the aligned end of its highest tensor), and the
    aligned peak live of its tensors: no plan that keeps them all there uses less."""
    in_memory1 = table.mem_ids == 1
    if not in_memory1.any():
        return 0, 0
    ends = table.offsets[in_memory1] + table.sizes[in_memory1]
    own = in_memory1 & ~table.shares_storage
    live = peak_live_bytes(
        table.starts[own], table.ends[own], aligned_sizes(table.sizes[own], alignment)
    )
    return align_up(int(ends.max()), alignment), live


def _checked(table: TensorTable, memories: Sequence[Memory]) -> TensorTable:
    """The plan, when the validator accepts it (as sweep's); else :class:`InvalidPlan`."""
    problem = check_plan(table, memories)
    if problem is not None:
        at = ", ".join(format_bytes(memory.size) for memory in memories)
        raise InvalidPlan(f"the plan at {at} is invalid: {problem}")
    return table


def _arrays_prober(loaded: LoadedInput, memories: Hierarchy, options: PlanningOptions) -> _Planner:
    memory = memories[0]  # the memory sized
    alignment = memory.alignment

    def probe(capacity: int, budget: Budget) -> PlanAtSize:
        config = memories.with_size(0, capacity)
        planned = plan_input(loaded, config, options.with_budget(budget))
        table = _checked(planned.table, config)
        kept = int(table.sizes[table.mem_ids == 1].sum(dtype=object))
        return PlanAtSize(
            capacity, *_memory1_figures(table, alignment), kept, planned.kept_bound,
            planned.lower_bound, planned.spent.work, planned.spent.cut_short,
        )  # fmt: skip

    return probe


def _model_prober(
    loaded: LoadedInput, memories: Hierarchy, options: PlanningOptions, progress: Progress
) -> tuple[_Planner, int, Any]:
    """The prober of a model lowered once (with ``options.reorder``, in the order the
    reorder keeps), the room that holds all of its tensors, and the program that lowering
    made."""
    progress("lowering once with to_executorch" + (", reordered" if options.reorder else ""))
    # The one to_executorch: first fit, the cheapest placer; every size replays best.
    replayed = replanner(loaded, memories, options.for_placer("position"), "size")
    memory = memories[0]  # the memory sized
    alignment = memory.alignment
    specs = replayed.planned_specs
    room = max(int(aligned_sizes(specs.sizes, alignment).sum()), alignment)

    def probe(capacity: int, budget: Budget) -> PlanAtSize:
        config = memories.with_size(0, capacity)
        with model_failures():
            table = _checked(replayed.plan(config, options.with_budget(budget)), config)
        placer = replayed.last_placer
        result = placer.last_result
        if placer.calls == 1 and result is not None:
            kept, kept_bound = placer.last_kept, result.kept_bound
            lower_bound = result.lower_bound
            if lower_bound is not None:  # on the total bufsize: the others hold only
                lower_bound -= int(np.asarray(result.bufsizes)[2:].sum())  # pinned tensors
        else:  # no one call's bound covers the program
            weights = table.sizes if options.objective == "bytes" else specs.traffic()
            own = (table.mem_ids == 1) & ~table.shares_storage
            kept, kept_bound, lower_bound = int(weights[own].sum(dtype=object)), None, None
        return PlanAtSize(
            capacity, *_memory1_figures(table, alignment), kept, kept_bound, lower_bound,
            placer.spent.work, placer.spent.cut_short,
        )  # fmt: skip

    return probe, room, replayed.program


class _Spending:
    """The budget of the whole sizing, handed out step by step (module docstring)."""

    def __init__(self, budget: Budget, steps: int) -> None:
        self.work = DEFAULT_WORK_BUDGET if budget.work is None else budget.work
        self.ms = budget.ms
        self.steps_left = steps
        self.spent = 0
        self.cut_short = False
        self.began = time.perf_counter()

    def next(self, share: float | None = None) -> Budget:
        """The next step's budget: ``share`` of what is left, or its even part."""
        part = share if share is not None else 1 / max(self.steps_left, 1)
        self.steps_left -= share is None
        work = max(0, int((self.work - self.spent) * part))
        if self.ms is None:
            return Budget(work, None)
        elapsed = (time.perf_counter() - self.began) * 1000
        return Budget(work, max(0.0, (self.ms - elapsed) * part))

    def charge(self, probe: PlanAtSize) -> None:
        self.spent += probe.work
        self.cut_short |= probe.cut_short


def size_input(
    source: str | os.PathLike[str] | Input | LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    *,
    points: int = DEFAULT_POINTS,
    progress: Progress | None = None,
    reorder: bool = False,
) -> Sizing:
    """Size memory 1 of ``memories`` for an input (a name, a path, or one
    :func:`~cadence_memplan.workflow.plan.load_input` returned): ``all_fit_from``, its lower
    bound, and at most ``points`` points of the curve below it (module docstring). Only
    memory 1's name and alignment are read; the other memories are planned as given.
    ``options`` (:class:`~cadence_memplan.request.PlanningOptions`) are ``best``'s: its
    budget for the whole sizing, its ``objective`` ("traffic": models only) the curve's
    terms, the lowering and what is allocated as for
    :func:`~cadence_memplan.workflow.plan.plan_input`. Raises ValueError for bad options,
    :class:`~cadence_memplan.workflow.plan.DoesNotFit` when the input fits in no plan even
    with room for every tensor in memory 1, and
    :class:`~cadence_memplan.workflow.plan.InvalidPlan` when the validator refuses a plan."""
    if not is_integer(points) or points < 0:
        raise ValueError(f"points must be a whole number >= 0, got {points!r}")
    if options.algorithm != "best":
        raise ValueError(f"size plans with best: options.algorithm is {options.algorithm!r}")
    if options.stage:
        raise ValueError("stage applies to plan_input only, not to size")
    progress = progress or (lambda _: None)
    began = time.perf_counter()
    hierarchy = Hierarchy(memories)
    loaded = source if isinstance(source, LoadedInput) else None
    if loaded is None:
        loaded = load_input(source, lowering=options.lowering, progress=progress)  # type: ignore[arg-type]
    if options.reorder and not loaded.input.is_model:
        raise ValueError("reorder needs a model: a CSV or synthetic input has no node order")
    if options.objective != "bytes" and not loaded.input.is_model:
        raise ValueError("objective='traffic' needs a model: a CSV or synthetic input has no graph")
    memory = hierarchy[0]  # the memory sized
    if loaded.input.is_model:
        probe, room, program = _model_prober(loaded, hierarchy, options, progress)
    else:
        probe, program = _arrays_prober(loaded, hierarchy, options), None
        sizes = loaded.arrays()[2]
        room = max(int(aligned_sizes(sizes, memory.alignment).sum()), memory.alignment)
    spending = _Spending(options.budget, points)
    progress(f"planning with room for every tensor in {memory.name} ({format_bytes(room)})")
    everything = probe(room, spending.next(_ALL_FIT_SHARE))
    spending.charge(everything)
    single = len(hierarchy) == 1
    probes, ends, lowest = _probe_down(
        probe, memory, everything, spending, points, single, progress
    )
    sized = memory_sizing(memory, everything, probes, ends, lowest)
    reordered: int | None = None
    if loaded.input.is_model and not options.reorder:
        fits_from = _reordered_fits_from(loaded, hierarchy, options, spending, progress)
        reordered = fits_from if fits_from < sized.all_fit_from else None
    return Sizing(
        loaded.input, hierarchy, loaded.lowering if loaded.input.is_model else None,
        options.objective, (sized,), Budget(spending.work, options.budget_ms), spending.spent,
        spending.cut_short, time.perf_counter() - began, options.reorder, reordered, program,
    )  # fmt: skip


def size_methods(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    *,
    points: int = DEFAULT_POINTS,
    progress: Progress | None = None,
) -> tuple[dict[str, Sizing], list[str]]:
    """:func:`size_input` of each method of a program of several (``loaded.input.methods``),
    each planned alone, as a program of its own (each its own copy of the state: a
    program whose memory 1 holds every method's tensors is one of the largest method's
    ``all_fit_from``); ``best``'s work split evenly over the methods. Returns the sizings,
    by method, and the unshared-state warnings (an error with ``options.strict_sharing``:
    :class:`~cadence_memplan.request.inputs.LoweringError`). With
    ``share_mutable_buffers`` the methods are still sized alone (their bounds bound the
    program's: :func:`~cadence_memplan.workflow.size_shared.size_shared` sizes the program
    with its state at one place) and there is no warning: the program shares its state."""
    from .._boundary.mutable_state import UnsharedStateError
    from ..cadence.lowering import method_edge
    from ..cadence.methods import unshared_state

    progress = progress or (lambda _: None)
    count = len(loaded.input.methods)
    work = (options.work or DEFAULT_WORK_BUDGET) // count
    ms = None if options.budget_ms is None else options.budget_ms / count
    each = options.replace(work=max(work, 1), budget_ms=ms, share_mutable_buffers=False)
    sizings: dict[str, Sizing] = {}
    for name in loaded.input.methods:
        progress(f"sizing method {name}")
        what = replace(loaded.input, label=f"{loaded.input.label} method {name}", methods=())
        alone = LoadedInput(what, loaded.lowering, edge=method_edge(loaded.edge, name))
        sizings[name] = size_input(alone, memories, each, points=points, progress=progress)
    if options.share_mutable_buffers:
        # The program is sized with its state shared, where --reorder is refused: a
        # method's note on what its reordering would need points at no command that runs.
        return {
            name: replace(sizing, reordered_fits_from=None) for name, sizing in sizings.items()
        }, []
    programs = {name: sizing.program for name, sizing in sizings.items()}
    try:
        found = unshared_state(programs, options.strict_sharing, "size")
    except UnsharedStateError as error:
        raise LoweringError(f"cannot size {loaded.input.label}: {error}") from error
    return sizings, found


def _probe_down(
    probe: _Planner,
    memory: Memory,
    everything: PlanAtSize,
    spending: _Spending,
    points: int,
    single: bool,
    progress: Progress,
) -> tuple[list[PlanAtSize], str, int | None]:
    """The plans below ``everything``, largest size first, each just below the last's
    bufsize, until one of :data:`CURVE_ENDS`; why they ended, and the smallest size tried."""
    probes: list[PlanAtSize] = []
    ends = "one memory" if single else "complete"
    capacity = everything.used - memory.alignment
    while ends == "complete" and capacity >= 1:
        if len(probes) == points:
            ends = "points"
            break
        if len(probes) % 8 == 0:
            progress(
                f"planning with {memory.name} = {capacity:,} B ({len(probes) + 1} of at most {points})"
            )
        try:
            probes.append(probe(capacity, spending.next()))
        except DoesNotFit:
            ends = "no plan"
            break
        spending.charge(probes[-1])
        capacity = min(probes[-1].used, capacity) - memory.alignment
    lowest = probes[-1].capacity if probes else None
    if ends == "no plan":
        lowest = capacity
    return probes, ends, lowest


def _reordered_fits_from(
    loaded: LoadedInput,
    memories: Hierarchy,
    options: PlanningOptions,
    spending: _Spending,
    progress: Progress,
) -> int:
    """What memory 1 needs to keep every tensor of a model in the order ``reorder=True``
    keeps (best with room for all of them: every tensor kept there), for the note that
    reordering lowers the answer."""
    progress("planning in the order --reorder keeps, with room for every tensor")
    probe, room, _ = _model_prober(loaded, memories, replace(options, reorder=True), quiet)
    everything = probe(room, spending.next(_ALL_FIT_SHARE))
    spending.charge(everything)
    return everything.used


def memory_sizing(
    memory: Memory,
    everything: PlanAtSize,
    probes: Sequence[PlanAtSize],
    ends: str,
    lowest: int | None,
) -> MemorySizing:
    """``memory`` sized from its plans (module docstring): ``everything`` with room
    for every tensor, ``probes`` below that, largest size first; ``ends`` and ``lowest``
    as :class:`MemorySizing` has them. ``all_fit_from`` is the least bufsize of a plan
    that keeps every tensor, its lower bound the largest of best's, the peak live of
    those tensors and the sizes where a bound proved that not all of them fit; the curve
    is made monotone and each run of equal points kept at its smallest size."""
    alignment = memory.alignment
    total = everything.kept
    all_fit_from = min([everything.used, *(p.used for p in probes if p.kept >= total)])
    bounds = [align_up(everything.lower_bound or 0, alignment), everything.peak_live]
    # A bound below the total at size c: not every tensor fits there.
    bounds += [
        (probe.capacity // alignment + 1) * alignment
        for probe in probes
        if probe.kept_bound is not None and probe.kept_bound < total
    ]
    lower_bound = max(bounds)
    curve: list[CurvePoint] = []
    bound: int | None = None
    for index, probe in enumerate(probes):
        # Largest size first: a bound proved above holds here, a plan found below too.
        if probe.kept_bound is not None:
            bound = probe.kept_bound if bound is None else min(bound, probe.kept_bound)
        if probe.used >= all_fit_from:
            continue
        kept = max(other.kept for other in probes[index:])
        point = CurvePoint(probe.used, kept, bound)
        if curve and (curve[-1].kept, curve[-1].kept_bound) == (point.kept, point.kept_bound):
            curve[-1] = point  # the same answer from a smaller size up
        else:
            curve.append(point)
    return MemorySizing(memory, all_fit_from, lower_bound, total, tuple(curve), ends, lowest)
