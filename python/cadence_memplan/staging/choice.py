"""Which copies to make and when (docs/staging.md, "The choice").

:func:`choose_staging` starts from a static plan (the tensors kept in fast memory for
their whole lives) and adds copies for the other tensors, each accepted only when the
simulator (:mod:`.simulate`) says the whole schedule is legal at the fast memory's size and
its modelled cycles fall:

- a **load** (prefetch) of a tensor living in slow memory before a read, or a run of up
  to :data:`GROUP` reads: waited for just before the first, issued as late as the
  timeline so far lets it finish in time (its space is held from its issue);
- a **store** (evict): the producer writes the tensor into fast memory, which serves its
  reads up to some op, and the store writes it back to slow memory for later reads or
  because it outlives the graph; its space is released at the first op after the store
  is expected to be done;
- a **stay**: a tensor kept in fast memory for its whole life, as a static plan would.

The search: greedy passes over the candidates in two orders (most cycles saved per byte
and op of space held, and most cycles saved), each followed by a pass that re-times the
chosen copies on the new timeline and another greedy pass over those refused, from
several starts (sets of tensors kept whole); the best result is kept, then improved by
ruin and recreate (the tensors one to three consecutive ops keep in fast memory put back
in slow memory, the space refilled greedily; kept when cycles fall and access bytes from
fast memory do not). Work is counted (one unit per op simulated), never timed, so the
choice is a function of its arguments only. It never returns a schedule whose modelled
cycles exceed the static plan's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cost_model import CostModel
from .problem import Copy, StagingProblem
from .simulate import IllegalSchedule, Simulation, simulate

__all__ = ["DEFAULT_STAGING_WORK", "GROUP", "Candidate", "StagingChoice", "choose_staging"]

GROUP = 3  # the most reads one load serves
_ALTERNATIVES = 2  # other timings tried for a copy that does not fit
RUIN_WIDTH = 3  # the most consecutive ops whose tensors one ruin puts back in slow memory
IMPROVE_SHARE = 20  # percent of the work for ruin and recreate (_improve), at most
DEFAULT_STAGING_WORK = 4_000_000  # units: ops simulated


@dataclass(frozen=True)
class Candidate:
    """One option for a tensor: ``kind`` load, store or stay; ``first``/``last`` the ops of
    the reads it serves; ``gain`` the cycles its reads save if served from fast memory."""

    tensor: int
    kind: str
    first: int
    last: int
    gain: int
    space: int  # bytes times ops held, estimated


@dataclass(frozen=True)
class StagingChoice:
    """The static plan's tensors (``static_fast``), the staged plan's tensors kept in fast
    memory for their whole lives (``kept``), its copies, and what the simulator says of
    both plans."""

    static_fast: frozenset[int]
    kept: frozenset[int]
    schedule: tuple[Copy, ...]
    static: Simulation
    staged: Simulation
    work: int
    reasons: tuple[str, ...]  # per copy, why it was made


class _Budget:
    def __init__(self, units: int) -> None:
        self.left = units
        self.used = 0

    def charge(self, units: int) -> bool:
        if units > self.left:
            return False
        self.left -= units
        self.used += units
        return True


def _saved(problem: StagingProblem, model: CostModel, base: Simulation, op: int, size: int) -> int:
    """Cycles op ``op`` saves when ``size`` of its slow bytes come from fast memory."""
    fast, slow = _op_bytes(problem, base, op)
    moved = min(size, slow)
    before = model.op_cycles(problem.flops[op], fast, slow)
    return before - model.op_cycles(problem.flops[op], fast + moved, slow - moved)


def _op_bytes(problem: StagingProblem, base: Simulation, op: int) -> tuple[int, int]:
    return base.op_fast_bytes[op], base.op_slow_bytes[op]


def _candidates(
    problem: StagingProblem, model: CostModel, base: Simulation, kept: frozenset[int]
) -> list[Candidate]:
    """Every load, store and stay worth trying, with its estimated gain and space."""
    found = []
    for tensor, size in enumerate(problem.sizes):
        if tensor in kept or size == 0:
            continue
        readers, writers = problem.readers[tensor], problem.writers[tensor]
        copied = tensor not in problem.no_copies  # else only its stay
        for index, first in enumerate(readers if copied else ()):
            for last in readers[index : index + GROUP]:
                if any(first <= op <= last for op in writers):
                    break
                served = [op for op in readers[index:] if op <= last]
                gain = sum(_saved(problem, model, base, op, size) for op in served)
                span = last - max(problem.producers[tensor] + 1, first - 2) + 1
                found.append(Candidate(tensor, "load", first, last, gain, size * span))
        for written in writers if copied else ():
            following = min((op for op in writers if op > written), default=problem.num_ops)
            after = [op for op in readers if written < op < following]
            made = _saved(problem, model, base, written, size)
            for index, last in enumerate((written, *after)):
                gain = made + sum(_saved(problem, model, base, op, size) for op in after[:index])
                span = last - written + 3
                found.append(Candidate(tensor, "store", written, last, gain, size * span))
        first, last = problem.lifetimes[tensor]
        accesses = [op for op in readers + writers]
        gain = sum(_saved(problem, model, base, op, size) for op in accesses)
        found.append(Candidate(tensor, "stay", first, last, gain, size * (last - first + 1)))
    return [candidate for candidate in found if candidate.gain > 0]


def _issue_op(timeline: Simulation, earliest: int, ready_by: int, cycles: int) -> int:
    """The latest op at whose issue a transfer of ``cycles`` still ends before op
    ``ready_by`` begins on the timeline so far; ``earliest`` if none does."""
    deadline = timeline.begins[ready_by]
    op = ready_by
    while op > earliest:
        issued_at = timeline.ends[op - 1] if op > 0 else 0
        if issued_at + cycles <= deadline:
            return op
        op -= 1
    return earliest


def _release_op(timeline: Simulation, issued: int, until: int, limit: int, cycles: int) -> int:
    """The first op after ``until`` that begins after a transfer issued at op ``issued``
    is expected to be done, at most ``limit``."""
    ready = (timeline.ends[issued - 1] if issued > 0 else 0) + cycles
    op = until + 1
    while op < limit and timeline.begins[op] < ready:
        op += 1
    return min(op, limit)


@dataclass
class _State:
    stays: frozenset[int]
    schedule: tuple[Copy, ...]
    simulation: Simulation
    reasons: tuple[str, ...]


def _copies_for(
    problem: StagingProblem, model: CostModel, state: _State, candidate: Candidate
) -> list[Copy]:
    """The copies that may make ``candidate`` on the state's timeline, best timed first:
    then, if that one does not fit, ones that hold less space and may stall (a store
    waited for sooner, a load issued later); none when it would clash with the tensor's
    copies already chosen."""
    copy = _copy_for(problem, model, state, candidate)
    if copy is None:
        return []
    if copy.kind == "store":
        ends = range(copy.end - 1, max(copy.until + 1, copy.start) - 1, -1)
        others = [Copy(copy.tensor, "store", copy.start, end, copy.until) for end in ends]
    else:
        starts = range(copy.start + 1, copy.end + 1)
        others = [Copy(copy.tensor, "load", start, copy.end, copy.until) for start in starts]
    return [copy, *others[:_ALTERNATIVES]]


def _copy_for(
    problem: StagingProblem, model: CostModel, state: _State, candidate: Candidate
) -> Copy | None:
    """The copy that makes ``candidate`` on the state's timeline, or None when it would
    clash with the tensor's copies already chosen."""
    tensor, timeline = candidate.tensor, state.simulation
    mine = [copy for copy in state.schedule if copy.tensor == tensor]
    cycles = model.dma_cycles(problem.sizes[tensor])
    if candidate.kind == "store":
        if any(copy.kind == "store" for copy in mine):
            return None
        written = candidate.first
        writers = problem.writers[tensor]
        later = [op for op in problem.readers[tensor] if op > candidate.last]
        later += [op for op in writers if op > written]
        limit = min(later, default=problem.num_ops)
        if any(copy.start <= limit and copy.until >= written for copy in mine):
            return None
        end = _release_op(timeline, written + 1, candidate.last, limit, cycles)
        return Copy(tensor, "store", written + 1, end, candidate.last)
    earliest = problem.producers[tensor] + 1
    earliest = max([earliest] + [op + 1 for op in problem.writers[tensor] if op < candidate.first])
    for copy in mine:
        if copy.kind == "store":
            earliest = max(earliest, copy.end, copy.until + 1)
        elif copy.until >= candidate.first and copy.start <= candidate.last:
            return None
        elif copy.until < candidate.first:
            earliest = max(earliest, copy.until + 1)
    if earliest > candidate.first:
        return None
    start = _issue_op(timeline, earliest, candidate.first, cycles)
    return Copy(tensor, "load", start, candidate.first, candidate.last)


def _try(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    state: _State,
    candidate: Candidate,
    budget: _Budget,
) -> _State | None:
    """The state with ``candidate`` added, if legal and fewer cycles; None otherwise."""
    if candidate.tensor in state.stays:
        return None
    if candidate.kind == "stay":
        if any(copy.tensor == candidate.tensor for copy in state.schedule):
            return None
        return _better(
            problem, model, capacity, state, state.stays | {candidate.tensor}, (), budget
        )
    for copy in _copies_for(problem, model, state, candidate):
        found = _better(problem, model, capacity, state, state.stays, (copy,), budget)
        if found is not None:
            why = f"{candidate.kind} {problem.name(candidate.tensor)} for ops {candidate.first}-{candidate.last}"
            return _State(found.stays, found.schedule, found.simulation, (*state.reasons, why))
    return None


def _better(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    state: _State,
    stays: frozenset[int],
    added: tuple[Copy, ...],
    budget: _Budget,
) -> _State | None:
    """The state with ``stays`` and the copies ``added``, if legal and fewer cycles."""
    schedule = (*state.schedule, *added)
    if not budget.charge(problem.num_ops + len(schedule)):
        return None
    try:
        simulation = simulate(problem, model, stays, schedule, capacity)
    except IllegalSchedule:
        return None
    if simulation.cycles >= state.simulation.cycles:
        return None
    return _State(stays, schedule, simulation, state.reasons)


def _greedy(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    state: _State,
    candidates: Sequence[Candidate],
    budget: _Budget,
) -> tuple[_State, list[Candidate]]:
    """One pass: each candidate in turn, kept when it helps; those refused, in order."""
    refused = []
    for candidate in candidates:
        better = _try(problem, model, capacity, state, candidate, budget)
        if better is None:
            refused.append(candidate)
        else:
            state = better
        if budget.left <= 0:
            break
    return state, refused


def _retimed(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    state: _State,
    budget: _Budget,
) -> _State:
    """Each load issued again as late as the final timeline allows, kept where it helps."""
    for index, copy in enumerate(state.schedule):
        if copy.kind != "load":
            continue
        cycles = model.dma_cycles(problem.sizes[copy.tensor])
        start = _issue_op(state.simulation, copy.start, copy.end, cycles)
        for moved_start in sorted({start, (start + copy.start) // 2} - {copy.start}):
            moved = Copy(copy.tensor, "load", moved_start, copy.end, copy.until)
            schedule = (*state.schedule[:index], moved, *state.schedule[index + 1 :])
            if not budget.charge(problem.num_ops + len(schedule)):
                return state
            try:
                simulation = simulate(problem, model, state.stays, schedule, capacity)
            except IllegalSchedule:
                continue
            if simulation.cycles < state.simulation.cycles:
                state = _State(state.stays, schedule, simulation, state.reasons)
                break
    return state


def _search(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    start: _State,
    candidates: Sequence[Candidate],
    budget: _Budget,
) -> _State:
    state, refused = _greedy(problem, model, capacity, start, candidates, budget)
    state = _retimed(problem, model, capacity, state, budget)
    state, _ = _greedy(problem, model, capacity, state, refused, budget)
    return state


def _without(
    problem: StagingProblem,
    model: CostModel,
    state: _State,
    tensors: frozenset[int],
    budget: _Budget,
) -> _State | None:
    """The state with ``tensors`` neither kept whole nor copied (in slow memory for their
    whole lives), whatever that costs; None when the work is spent."""
    kept = [index for index, copy in enumerate(state.schedule) if copy.tensor not in tensors]
    schedule = tuple(state.schedule[index] for index in kept)
    if not budget.charge(problem.num_ops + len(schedule)):
        return None
    stays = state.stays - tensors
    simulation = simulate(problem, model, stays, schedule)  # less held: still legal
    reasons = tuple(state.reasons[index] for index in kept)
    return _State(stays, schedule, simulation, reasons)


def _ruins(problem: StagingProblem, state: _State) -> list[frozenset[int]]:
    """The sets of tensors :func:`_improve` puts back in slow memory, one at a time: those
    kept whole or copied that each op accesses (the space its neighbours compete for), then
    each such tensor alone; in a fixed order, without repeats."""
    chosen = state.stays | {copy.tensor for copy in state.schedule}
    found: dict[frozenset[int], None] = {}
    for width in range(RUIN_WIDTH):
        for op in range(problem.num_ops - width):
            window = range(op, op + width + 1)
            accessed = frozenset(t for o in window for t in problem.reads[o] + problem.writes[o])
            if accessed & chosen:
                found.setdefault(accessed & chosen)
    for tensor in sorted(chosen):
        found.setdefault(frozenset({tensor}))
    return list(found)


def _improve(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    state: _State,
    orders: Sequence[Sequence[Candidate]],
    budget: _Budget,
) -> _State:
    """Ruin and recreate: the tensors of each of :func:`_ruins` are put back in slow
    memory, and a greedy pass without their candidates, then one with them, refills the
    space they freed (only candidates whose tensors live beside them), the candidates in
    each of ``orders`` in turn; the result replaces the state when it :func:`_improves` on
    it. Goes round until a whole round finds nothing or the work is spent. A stay of the
    static plan may go this way, and two tensors that must go together to make room, which
    a greedy pass that only adds never does."""
    moves, index, failed = _moves(problem, state, len(orders)), 0, 0
    floor = state.simulation.fast_access_bytes
    while failed < len(moves) and budget.left > 0:
        tensors, order = moves[index % len(moves)]
        index, failed = index + 1, failed + 1
        ruined = _without(problem, model, state, tensors, budget)
        if ruined is None:
            break
        low = min(problem.lifetimes[tensor][0] for tensor in tensors)
        high = max(problem.lifetimes[tensor][1] for tensor in tensors)
        near = [c for c in orders[order] if _overlaps(problem.lifetimes[c.tensor], low, high)]
        others = [candidate for candidate in near if candidate.tensor not in tensors]
        mine = [candidate for candidate in near if candidate.tensor in tensors]
        found, refused = _greedy(problem, model, capacity, ruined, others, budget)
        found, _ = _greedy(problem, model, capacity, found, mine + refused, budget)
        if _improves(found.simulation, state.simulation, floor):
            state, failed = found, 0
            moves = _moves(problem, state, len(orders))
    return state


def _moves(problem: StagingProblem, state: _State, orders: int) -> list[tuple[frozenset[int], int]]:
    """Each ruin with the first order of the candidates, then each with the second..."""
    ruins = _ruins(problem, state)
    return [(tensors, order) for order in range(orders) for tensors in ruins]


def _improves(found: Simulation, current: Simulation, floor: int) -> bool:
    """Fewer cycles, and at least ``floor`` access bytes from fast memory: a plan no worse
    on either figure than the one the step started from."""
    return found.cycles < current.cycles and found.fast_access_bytes >= floor


def _overlaps(span: tuple[int, int], low: int, high: int) -> bool:
    return span[0] <= high and low <= span[1]


def choose_staging(
    problem: StagingProblem,
    model: CostModel,
    static_fast: frozenset[int],
    capacity: int,
    work_budget: int = DEFAULT_STAGING_WORK,
    other_starts: Sequence[frozenset[int]] = (),
) -> StagingChoice:
    """The copies that cut the modelled cycles of the static plan ``static_fast`` most, as
    found within ``work_budget`` units; none when nothing helps (docs/staging.md).

    The search starts from the static plan, from each of ``other_starts`` (other sets of
    tensors kept whole, e.g. a static plan for a smaller memory, which leaves room for
    copies) and from nothing kept (every tensor's stay then competes with its copies);
    on each, the candidates in two orders (:func:`_search`). The best found is then
    improved by ruin and recreate (:func:`_improve`), with :data:`IMPROVE_SHARE` of the
    work."""
    if work_budget < 0:
        raise ValueError(f"work_budget must be >= 0, not {work_budget}")
    base = simulate(problem, model, static_fast)
    best = _State(static_fast, (), base, ())
    budget = _Budget(work_budget)
    starts = [static_fast, *other_starts, frozenset[int]()]
    searches = [(kept, order) for kept in starts for order in range(2)]
    improve_work = work_budget * IMPROVE_SHARE // 100
    search_work = work_budget - improve_work
    for index, (kept, order) in enumerate(searches):
        start = _State(kept, (), simulate(problem, model, kept), ())
        candidates = _candidates(problem, model, start.simulation, kept)
        key = _by_density if order == 0 else _by_gain
        share = _Budget((search_work - budget.used) // (len(searches) - index))
        found = _search(problem, model, capacity, start, sorted(candidates, key=key), share)
        budget.charge(share.used)
        if found.simulation.cycles < best.simulation.cycles:
            best = found
    nothing_kept = simulate(problem, model, frozenset())
    every = _candidates(problem, model, nothing_kept, frozenset())
    orders = [sorted(every, key=_by_density), sorted(every, key=_by_gain)]
    share = _Budget(min(budget.left, improve_work))
    best = _improve(problem, model, capacity, best, orders, share)
    budget.charge(share.used)
    return StagingChoice(
        static_fast=static_fast,
        kept=best.stays,
        schedule=best.schedule,
        static=base,
        staged=best.simulation,
        work=budget.used,
        reasons=best.reasons,
    )


def _by_density(candidate: Candidate) -> tuple[float, int, int, int, str]:
    """Most cycles saved per byte and op of space held first; ties in a fixed order."""
    density = -candidate.gain / max(candidate.space, 1)
    return density, candidate.tensor, candidate.first, candidate.last, candidate.kind


def _by_gain(candidate: Candidate) -> tuple[int, int, int, int, int, str]:
    """Most cycles saved first."""
    return (
        -candidate.gain,
        candidate.space,
        candidate.tensor,
        candidate.first,
        candidate.last,
        candidate.kind,
    )
