"""Capacity-first planning: ``algorithm="best"`` on a hierarchy, memory 1 filled to a proved
limit.

The core's ``best`` (csrc/core/best/best.h) improves the plans of upstream's placers and, "fit
first", asks its exact search whether every tensor allowed in memory 1 fits there. When
they cannot all fit, which tensors to keep is a choice the placers make greedily. This
module makes it with a proved bound (docs/best.md, "Tight memory"):

1. An integer program (:mod:`._selection`, HiGHS) chooses the tensors that keep the most
   bytes in memory 1 subject to every instant's capacity. It ignores fragmentation, so its
   optimum bounds what any valid plan keeps there: ``PlanResult.kept_bound``.
2. The core packs the choice into memory 1 by its exact search (``keep_in_memory1``), fills
   the holes with more tensors, places the rest in memories 2..N, and keeps the result only
   when it beats its own plans under its objective.
3. Anytime: while memory 1 keeps less than the bound and the budget lasts, a choice the
   exact search proved not to pack is cut off (no superset packs, so the bound stays
   valid), one it could not pack within its work is retried with a little slack in the
   capacity, and the program is solved again. The best plan so far is kept at every moment.

The budget is ``best``'s work budget, shared between the solves (what HiGHS reports,
``capacity/highs.py``) and the core's calls (the work each says it spent),
so the plan is a function of the input and the options; a wall-clock cap, when given, is
shared the same way, and is the one thing that can make the plan vary.

Plans whose every tensor fits in memory 1 never reach the solver: the core's fit first
answers them, in milliseconds where they pack at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .. import _core
from .._types import Preplaced, SearchSpent
from ..stats import peak_live_bytes
from .highs import NONZEROS_PER_WORK
from .selection import CapacitySelection, Selection

__all__ = ["CapacityPlan", "plan_capacity_first"]

IntArray = npt.NDArray[np.int64]
# One call of the core's best: the tensors to keep in memory 1 (empty: none), the work it
# may spend and its wall-clock cap in milliseconds (math.inf: none).
CorePlan = Callable[[IntArray, int, float], _core.PlanOutput]

# Of the budget, what the first solve of the integer program may take; later solves take
# at most this share of what is left. The rest goes to the core's packing of each choice.
_SOLVE_SHARE = 0.3
# The slack of a retried choice: the program is solved again at this fraction of memory 1
# (compounded at each retry), down to _MIN_SLACK.
_SLACK = 0.99
_MIN_SLACK = 0.8
# Of the budget left, what one round of the core may take.
_ROUND_SHARE = 0.5
# Below this much work left (about 20 ms), no further round is started.
_MIN_ROUND_WORK = 1000
_INT64_MAX = (1 << 63) - 1


class _Budget:
    """What the loop may still spend: counted work, and the wall-clock cap when one is
    set. ``ran_out`` says whether it ended the loop, ``cut_short`` whether the cap ended a
    step."""

    def __init__(self, work: int, cap_ms: float) -> None:
        self.work = work
        self.spent = 0
        self.deadline = time.perf_counter() + cap_ms / 1000 if math.isfinite(cap_ms) else math.inf
        self.ran_out = False
        self.cut_short = False

    def left(self, share: float = 1.0) -> int:
        return max(0, int((self.work - self.spent) * share))

    def left_ms(self, share: float = 1.0) -> float:
        if self.deadline == math.inf:
            return math.inf
        return max(0.0, (self.deadline - time.perf_counter()) * 1000 * share)

    def charge(self, work: int, cut_short: bool) -> None:
        self.spent += work
        self.cut_short |= cut_short

    def exhausted(self) -> bool:
        """Too little left for another round: work, or time to the cap (which then says
        it ended the search)."""
        if self.left() < _MIN_ROUND_WORK:
            self.ran_out = True
        elif self.left_ms() < 20.0:
            self.ran_out = self.cut_short = True
        return self.ran_out


@dataclass(frozen=True)
class CapacityPlan:
    """The core's best plan and ``kept_bound``, proved: no valid plan keeps more weight in
    memory 1 (the integer program's bound, or, when it was too large to build, the
    live-bytes bound); ``memory1_proved_full`` when the plan spills and keeps that much;
    ``spent``: the work of the solves and the core's calls in all, whether the budget ended
    the loop (or the core's one call), whether the wall-clock cap ended a step."""

    output: _core.PlanOutput
    kept_bound: int
    # Bytes lie outside memory 1 and it keeps kept_bound: no valid plan keeps more there.
    memory1_proved_full: bool
    spent: SearchSpent


def _outside_costs(
    output: _core.PlanOutput, weights: IntArray, memory_count: int
) -> tuple[int, ...]:
    """The core's objective (PlanCost): the weights outside memory 1, 1..2, ..., then the
    total bufsize. Python integers: sums past 2**63 stay exact."""
    mem_ids = np.asarray(output.mem_ids)
    costs = [int(weights[mem_ids > m].sum(dtype=object)) for m in range(1, memory_count)]
    costs.append(int(np.asarray(output.bufsizes)[1:].sum(dtype=object)))
    return tuple(costs)


def plan_capacity_first(
    core_plan: CorePlan,
    starts: IntArray,
    ends: IntArray,
    sizes: IntArray,
    memory_sizes: IntArray,
    memory_alignments: IntArray,
    may_use_memory1: npt.NDArray[np.bool_],
    preplaced: Preplaced,
    work_budget: int,
    budget_ms: float,
    weights: IntArray,
) -> CapacityPlan:
    """Plan with the core's ``best`` (``core_plan``) and, when not every tensor allowed in
    memory 1 fits there, choose what to keep there by the integer program (module
    docstring), within ``work_budget`` units of work and the cap ``budget_ms`` (math.inf:
    none). ``may_use_memory1`` marks the tensors allowed in memory 1; ``weights`` (the
    sizes, unless the caller gave others) is what a tensor kept there is worth. Raises what
    ``core_plan`` raises; ImportError when highspy is missing."""
    search = _Search(core_plan, _Budget(work_budget, budget_ms), sizes, weights)
    placed_mem_ids = np.asarray(preplaced.mem_ids, dtype=np.int64)
    in_memory1 = placed_mem_ids == 1
    capacity, alignment = int(memory_sizes[0]), int(memory_alignments[0])
    total = int(weights[may_use_memory1].sum(dtype=object))
    takes_room = may_use_memory1 & (sizes > 0) & (starts <= ends)
    lightest = int(weights[takes_room].min()) if takes_room.any() else 0
    no_selection = np.zeros(0, dtype=np.int64)
    units = -(-sizes[takes_room] // alignment)  # Each tensor's aligned size, in units.
    peak_units = peak_live_bytes(starts[takes_room], ends[takes_room], units)
    if not in_memory1.any() and peak_units <= capacity // alignment:
        # Nothing can be over memory 1 at any instant: everything allowed may fit, which
        # the core's fit first asks; nothing less than all of it is proved.
        output = search.plan_core(no_selection)
        return search.finish(output, _bound_after_core(total, output, total, lightest))
    selector = CapacitySelection(
        starts,
        ends,
        sizes,
        weights,
        may_use_memory1,
        capacity,
        alignment,
        obstacle_starts=np.asarray(preplaced.starts, dtype=np.int64)[in_memory1],
        obstacle_ends=np.asarray(preplaced.ends, dtype=np.int64)[in_memory1],
        obstacle_sizes=np.asarray(preplaced.sizes, dtype=np.int64)[in_memory1],
        obstacle_offsets=np.asarray(preplaced.offsets, dtype=np.int64)[in_memory1],
    )
    _, nonzeros = selector.model_size()
    first = None
    if nonzeros // NONZEROS_PER_WORK <= search.budget.left(_SOLVE_SHARE):
        first = search.solve(selector)
    if first is None or first.value == total:
        # The program would take more than its share of the budget to build (HiGHS does
        # not stop while it builds), or keeps everything: the core alone, with the bound
        # that needs no solver where the program gave none.
        output = search.plan_core(no_selection)
        bound = (
            _live_bytes_bound(starts, ends, sizes, weights, may_use_memory1, capacity)
            if first is None
            else first.bound
        )
        return search.finish(output, _bound_after_core(bound, output, total, lightest))
    best = _best_of_choices(
        search, selector, first, may_use_memory1, capacity, len(memory_sizes), total
    )
    if best is None:  # No choice was planned (a solve found none): the core alone.
        best = search.plan_core(no_selection)
    proved = total if selector.bound is None else selector.bound
    return search.finish(best, _bound_after_core(proved, best, total, lightest))


class _Search:
    """What the steps of :func:`plan_capacity_first` share: the budget, spent by the
    core's plans (``core_plan``) and the program's solves, and what a plan is worth."""

    def __init__(
        self, core_plan: CorePlan, budget: _Budget, sizes: IntArray, weights: IntArray
    ) -> None:
        self.core_plan = core_plan
        self.budget = budget
        self.sizes = sizes
        self.weights = weights

    def plan_core(self, chosen: IntArray, share: float = 1.0) -> _core.PlanOutput:
        """The core's plan keeping ``chosen`` in memory 1, on ``share`` of what is left."""
        output = self.core_plan(chosen, self.budget.left(share), self.budget.left_ms(share))
        self.budget.charge(output.work, output.cut_short)
        return output

    def solve(self, selector: CapacitySelection, **options: object) -> Selection | None:
        """The program solved on its share of what is left (None: no choice found)."""
        selection = selector.solve(
            self.budget.left(_SOLVE_SHARE),
            time_limit_s=self.budget.left_ms(_SOLVE_SHARE) / 1000,
            **options,  # type: ignore[arg-type]
        )
        if selection is not None:
            self.budget.charge(selection.work, selection.cut_short)
        return selection

    def finish(self, output: _core.PlanOutput, bound: int) -> CapacityPlan:
        """The plan with its bound, whether memory 1 keeps it, and what all cost."""
        spills = bool((self.sizes[np.asarray(output.mem_ids) != 1] > 0).any())
        full = spills and _kept(output, self.weights) >= bound
        exhausted = self.budget.ran_out or (output.budget_exhausted and not full)
        spent = SearchSpent(self.budget.spent, exhausted, self.budget.cut_short)
        return CapacityPlan(output, bound, full, spent)


def _best_of_choices(
    search: _Search,
    selector: CapacitySelection,
    first: Selection,
    may_use_memory1: npt.NDArray[np.bool_],
    capacity: int,
    memory_count: int,
    total: int,
) -> _core.PlanOutput | None:
    """The program's choices planned by the core, from ``first``, each next one cut off,
    solved again or given slack (module docstring) until memory 1 keeps its bound or the
    budget ends; the best plan (None: no choice was planned)."""
    budget, weights = search.budget, search.weights
    best: _core.PlanOutput | None = None
    best_cost: tuple[int, ...] = ()
    selection: Selection | None = first
    slack = 1.0  # The capacity of the next choice with slack, as a share of memory 1's.
    start: npt.NDArray[np.bool_] | None = None  # The best plan's memory 1, to solve on from.
    tried: set[bytes] = set()
    # The first round runs whatever the budget left: the core always returns a plan.
    while selection is not None and (best is None or not budget.exhausted()):
        chosen = np.flatnonzero(selection.chosen & may_use_memory1).astype(np.int64)
        if chosen.tobytes() in tried:
            # The core would plan it as before: ask for a choice with more slack.
            slack *= _SLACK
            if slack < _MIN_SLACK:
                break
            selection = search.solve(selector, capacity=int(capacity * slack), start=start)
            continue
        tried.add(chosen.tobytes())
        # Half of what is left: a choice the search cannot pack with that leaves room for
        # one with slack.
        output = search.plan_core(chosen, _ROUND_SHARE)
        cost = _outside_costs(output, weights, memory_count)
        if best is None or cost < best_cost:
            best, best_cost = output, cost
        start = np.asarray(best.mem_ids) == 1
        proved = total if selector.bound is None else selector.bound
        if _kept(best, weights) >= proved or budget.exhausted():
            break
        # The next choice: after one the exact search proved not to pack, cut it off (the
        # bound stays valid) and solve again; after one that packed, solve again from the
        # best plan's memory 1 (the program had not been solved to the end); after one the
        # search could not pack within its work, ask for one with slack, which packs more
        # easily.
        if output.selection_fit == "does not fit":
            selector.forbid_together(chosen)
            selection = search.solve(selector, start=start)
        elif output.selection_fit == "fits":
            selection = search.solve(selector, start=start)
        else:
            slack *= _SLACK
            selection = search.solve(selector, capacity=int(capacity * slack), start=start)
    return best


def _kept(output: _core.PlanOutput, weights: IntArray) -> int:
    """The weight a plan keeps in memory 1."""
    return int(weights[np.asarray(output.mem_ids) == 1].sum(dtype=object))


def _bound_after_core(bound: int, output: _core.PlanOutput, total: int, lightest: int) -> int:
    """``bound`` tightened by what the core proved: when its exact search proved that the
    tensors allowed in memory 1 do not all fit, one that takes room (``lightest``: the
    least weight of those) stays out."""
    if output.all_in_memory1 == "proved impossible":
        bound = min(bound, total - lightest)
    return bound


def _live_bytes_bound(
    starts: IntArray,
    ends: IntArray,
    sizes: IntArray,
    weights: IntArray,
    candidates: npt.NDArray[np.bool_],
    capacity: int,
) -> int:
    """A bound on the weight memory 1 keeps that needs no solver. At any instant, the tensors
    kept there and alive then hold at most ``capacity`` bytes (each takes at least its
    size). Take instants ``t_1 < t_2 < ...`` that every candidate's lifetime contains one of
    (greedily by ends: the fewest such instants) and count each candidate at the first one
    it contains: the kept ones counted at ``t_j`` hold at most ``capacity`` bytes, so their
    weight is at most the fractional knapsack of that group (heaviest weight per byte first,
    the last one in part). The sum over the groups bounds what is kept; with weights equal
    to the sizes, also the total less the bytes over ``capacity`` at the worst instant."""
    alive = candidates & (starts <= ends) & (sizes > 0)
    total = int(weights[candidates].sum(dtype=object))
    bound = total - int(weights[alive].sum(dtype=object))  # Never alive: no instant holds them.
    if not alive.any():
        return total
    by_end = np.argsort(ends[alive], kind="stable")
    group_starts = starts[alive][by_end].tolist()
    group_ends = ends[alive][by_end].tolist()
    group_sizes = sizes[alive][by_end].tolist()
    group_weights = weights[alive][by_end].tolist()
    point: int | None = None
    group: list[tuple[int, int]] = []
    for start, end, size, weight in zip(
        group_starts, group_ends, group_sizes, group_weights, strict=True
    ):
        if point is None or start > point:
            bound += _fractional_knapsack(group, capacity)
            point, group = end, []
        group.append((size, weight))
    bound += _fractional_knapsack(group, capacity)
    # stats' live bytes sum in int64: exact while all the candidates' bytes are.
    if np.array_equal(weights, sizes) and total <= _INT64_MAX:
        peak = peak_live_bytes(starts[alive], ends[alive], sizes[alive])
        bound = min(bound, total - max(0, peak - capacity))
    return bound


def _fractional_knapsack(items: list[tuple[int, int]], capacity: int) -> int:
    """The most weight of ``(size, weight)`` items in ``capacity`` bytes when items may be
    taken in part, rounded up: a bound on taking them whole."""
    value, room = 0, capacity
    for size, weight in sorted(items, key=lambda item: -item[1] / item[0]):
        if size <= room:
            value += weight
            room -= size
        else:
            value += -(-weight * room // size)
            break
    return value
