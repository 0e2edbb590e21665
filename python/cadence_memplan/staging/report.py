"""Staging end to end on a problem: the static plan, the choice, the check that the fast
copies pack, and the figures docs/staging.md reports (:class:`StagingReport`).

The static plan is ``best``'s on two memories (fast memory of the given size, slow memory
unbounded) keeping the most access bytes in fast memory (its ``weights``); its fast
tensors keep their whole lives there. The staged plan adds the copies of
:func:`~.choice.choose_staging`; the fast copies are tensors with short lives pinned to
fast memory, and ``best`` must pack them, with the static plan's fast tensors, into the
fast memory's size: if it cannot, the last copies chosen are dropped until it can, so the
figures are those of a plan the planners make.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np

from .. import api
from .choice import DEFAULT_STAGING_WORK, StagingChoice, choose_staging
from .cost_model import CostModel
from .problem import Copy, StagingProblem
from .simulate import Simulation, fast_windows, simulate

__all__ = [
    "NOT_REALISED",
    "StagingReport",
    "dma_bound",
    "free_dma_ceiling",
    "packs_in_fast",
    "peak_live",
    "stage_problem",
    "staging_json",
    "static_fast_set",
]

_SLOW = 1 << 40  # slow memory: never full
PACKING_WORK = 60_000  # best's work on each check that the fast copies pack


def peak_live(problem: StagingProblem) -> int:
    """The most bytes alive at once when every tensor lives its static lifetime."""
    change = np.zeros(problem.num_ops + 1, dtype=np.int64)
    for (first, last), size in zip(problem.lifetimes, problem.sizes, strict=True):
        change[first] += size
        change[last + 1] -= size
    return int(np.cumsum(change).max(initial=0))


def static_fast_set(problem: StagingProblem, capacity: int, alignment: int = 16) -> frozenset[int]:
    """The tensors ``best`` keeps in a fast memory of ``capacity`` bytes, weighted by the
    bytes their accesses move."""
    if problem.num_tensors == 0 or capacity <= 0:
        return frozenset()
    spans = np.array(problem.lifetimes, dtype=np.int64).reshape(-1, 2)
    result = api.plan(
        spans[:, 0],
        spans[:, 1],
        np.array(problem.sizes, dtype=np.int64),
        [capacity, _SLOW],
        [alignment, alignment],
        algorithm="best",
        weights=np.array(problem.access_bytes, dtype=np.int64),
        threads=1,
    )
    return frozenset(int(t) for t in np.flatnonzero(result.mem_ids == 1))


def packs_in_fast(
    problem: StagingProblem,
    fast: frozenset[int],
    schedule: Sequence[Copy],
    capacity: int,
    alignment: int = 16,
) -> bool:
    """Whether ``best`` places the fast tensors and the copies' fast tensors (each over
    the ops it holds its space) in one memory of ``capacity`` bytes."""
    spans = [problem.lifetimes[t] for t in sorted(fast)]
    sizes = [problem.sizes[t] for t in sorted(fast)]
    for copy in schedule:
        spans.append(fast_windows(problem, copy)[0])
        sizes.append(problem.sizes[copy.tensor])
    if capacity <= 0 or not spans:
        return not any(sizes)
    array = np.array(spans, dtype=np.int64)
    # Two memories, the second unbounded: best keeps all in the first when it can, and
    # says so quickly (one memory that cannot hold them all costs it far more to refuse).
    result = api.plan(
        array[:, 0],
        array[:, 1],
        sizes,
        [capacity, _SLOW],
        [alignment, alignment],
        algorithm="best",
        threads=1,
        work_budget=PACKING_WORK,
    )
    return bool((result.mem_ids == 1).all())


def free_dma_ceiling(problem: StagingProblem, model: CostModel, capacity: int) -> Simulation:
    """Staging's ceiling: copies cost nothing, so each op may have any of its tensors in
    fast memory that fit there together (the subset that moves the most bytes)."""
    fast_ops, slow_ops = [], []
    for op in range(problem.num_ops):
        touched = sorted(set(problem.reads[op]) | set(problem.writes[op]))
        moved = {
            t: problem.sizes[t] * ((t in problem.reads[op]) + (t in problem.writes[op]))
            for t in touched
        }
        best = _best_subset(touched, problem.sizes, moved, capacity)
        fast_ops.append(best)
        slow_ops.append(sum(moved.values()) - best)
    return _figures(problem, model, fast_ops, slow_ops)


def dma_bound(problem: StagingProblem, model: CostModel, capacity: int) -> int:
    """A floor under the modelled cycles of every legal staging schedule at ``capacity``
    bytes of fast memory, tighter than :func:`free_dma_ceiling`: it also counts what a
    copy costs in time and space. The larger of two floors, each a dynamic programme:

    - reads held ahead (every model): op ``k`` serves a set of its tensors from fast
      memory; a read in it either was in fast memory at op ``k - 1`` (it then held space
      there, beside what op ``k - 1`` served) or was loaded at op ``k``, which then waits
      for the whole transfer;
    - residency (:func:`_residency_bound`), when the states stay few: the set of tensors
      held at each op, which serve the op's accesses; one that appears without being
      written was loaded then, one written into fast memory and dropped at the next op
      while its value is still needed was stored then, and the op waits for both; a load
      issued for the next op's read runs beside this op, which may not hide it.

    Each leaves the rest out (stores after longer stays, the queue beyond two ops, the
    graph's end), so no schedule does better; it is not the optimum."""
    if problem.num_ops == 0:
        return 0
    # Per set of op k's reads held at op k - 1, the least cycles to there; the graph's
    # inputs may be in fast memory from the start (a static plan keeps them there free).
    inputs = frozenset(t for t in problem.reads[0] if problem.producers[t] < 0)
    held_ahead: dict[frozenset[int], int] = {inputs: 0}
    for op in range(problem.num_ops):
        upcoming = problem.reads[op + 1] if op + 1 < problem.num_ops else ()
        held_ahead = _bound_step(problem, model, capacity, op, set(upcoming), held_ahead)
    loose = min(held_ahead.values())
    return max(loose, _residency_bound(problem, model, capacity) or 0)


_BOUND_STATES = 100_000  # the most state pairs per op _residency_bound tries


def _residency_bound(problem: StagingProblem, model: CostModel, capacity: int) -> int | None:
    """The residency floor of :func:`dma_bound`, or None when the states grow too many or
    fast memory is not the faster (then serving from it need not help). The queue across
    two ops is counted on disjoint pairs of ops (those starting at even ops, or at odd);
    the larger of the two."""
    if model.fast_bytes_per_cycle < model.slow_bytes_per_cycle:
        return None
    found = []
    for parity in (0, 1):
        inputs = frozenset(t for t, producer in enumerate(problem.producers) if producer < 0)
        states: dict[tuple[frozenset[int], int, frozenset[int]], int] = {
            (inputs, 0, frozenset()): 0
        }
        for op in range(problem.num_ops):
            held_sets = _fitting(problem, sorted(_holdable(problem, op)), capacity)
            if held_sets is None or len(states) * len(held_sets) > _BOUND_STATES:
                return None
            states = _residency_step(problem, model, op, parity, held_sets, states)
        found.append(min(states.values()))
    return max(found)


def _residency_step(
    problem: StagingProblem,
    model: CostModel,
    op: int,
    parity: int,
    held_sets: list[frozenset[int]],
    states: dict[tuple[frozenset[int], int, frozenset[int]], int],
) -> dict[tuple[frozenset[int], int, frozenset[int]], int]:
    """Per (tensors held at ``op``, the op's cycles if it starts a pair, the loads issued
    at it for the next op's reads), the least cycles to the end of ``op``."""
    sizes, reads, writes = problem.sizes, set(problem.reads[op]), set(problem.writes[op])
    moved = {t: sizes[t] * ((t in reads) + (t in writes)) for t in reads | writes}
    total = sum(moved.values())
    pairs = op % 2 == parity and op + 1 < problem.num_ops
    upcoming = set(problem.reads[op + 1]) - reads if pairs else set()
    following: dict[tuple[frozenset[int], int, frozenset[int]], int] = {}
    for (before, previous_cycles, ahead), so_far in states.items():
        dirty = _needed_writes(problem, op, before)
        for held in held_sets:
            fast = sum(moved[t] for t in held & moved.keys())
            cycles = model.op_cycles(problem.flops[op], fast, total - fast)
            loaded = held - before - writes
            waited = sum(model.dma_cycles(sizes[t]) for t in (loaded & reads) | (dirty - held))
            queued = sum(model.dma_cycles(sizes[t]) for t in ahead & held)
            spent = so_far + cycles + waited + max(0, queued - previous_cycles)
            key = (held, cycles if pairs else 0, frozenset(loaded & upcoming))
            if spent < following.get(key, spent + 1):
                following[key] = spent
    return following


def _needed_writes(problem: StagingProblem, op: int, before: frozenset[int]) -> set[int]:
    """The tensors op ``op - 1`` wrote into fast memory (held there) whose value is read
    later (before the next write, or it outlives the graph): dropped at ``op``, a store
    must be done before ``op`` begins."""
    if op == 0:
        return set()
    needed = set()
    for tensor in set(problem.writes[op - 1]) & before:
        rewrite = min((w for w in problem.writers[tensor] if w >= op), default=None)
        last = problem.num_ops if rewrite is None else rewrite  # reads up to it see this value
        outlived = rewrite is None and problem.outlives[tensor]
        if outlived or any(op <= r <= last for r in problem.readers[tensor]):
            needed.add(tensor)
    return needed


def _holdable(problem: StagingProblem, op: int) -> set[int]:
    """The tensors worth holding at ``op``: those it accesses, and those alive then that
    are read later or outlive the graph."""
    found = set(problem.reads[op]) | set(problem.writes[op])
    for tensor, (first, last) in enumerate(problem.lifetimes):
        if first <= op <= last and (
            problem.outlives[tensor] or problem.readers[tensor][-1:] > (op,)
        ):
            found.add(tensor)
    return found


def _fitting(
    problem: StagingProblem, tensors: list[int], capacity: int
) -> list[frozenset[int]] | None:
    """Every subset of ``tensors`` that fits in ``capacity`` bytes; None past
    :data:`_BOUND_STATES` of them."""
    found: list[frozenset[int]] = [frozenset()]
    spaces = [0]
    for tensor in tensors:
        size = problem.sizes[tensor]
        grown = [
            (subset | {tensor}, space + size)
            for subset, space in zip(found, spaces, strict=True)
            if space + size <= capacity
        ]
        found += [subset for subset, _ in grown]
        spaces += [space for _, space in grown]
        if len(found) > _BOUND_STATES:
            return None
    return found


def _bound_step(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    op: int,
    upcoming: set[int],
    held_ahead: dict[frozenset[int], int],
) -> dict[frozenset[int], int]:
    reads, writes = set(problem.reads[op]), set(problem.writes[op])
    accessed = reads | writes
    if len(accessed) > _BOUND_TENSORS or len(upcoming) > _BOUND_TENSORS:
        # Rare: many operands. Every access from fast memory, every next read held ahead:
        # cheaper than any schedule, so still a floor.
        moved = sum(problem.sizes[t] * ((t in reads) + (t in writes)) for t in accessed)
        least = min(held_ahead.values()) + model.op_cycles(problem.flops[op], moved, 0)
        return {frozenset(upcoming): least}
    options = []
    for served in _subsets(accessed):
        space = sum(problem.sizes[t] for t in served)
        if space > capacity:
            continue
        fast = sum(problem.sizes[t] * ((t in reads) + (t in writes)) for t in served)
        total = sum(problem.sizes[t] * ((t in reads) + (t in writes)) for t in accessed)
        options.append((served, space, model.op_cycles(problem.flops[op], fast, total - fast)))
    following: dict[frozenset[int], int] = {}
    for ahead, cycles_so_far in held_ahead.items():
        for served, space, cycles in options:
            loaded = (served & reads) - ahead  # loaded at this op: it waits for them
            waited = sum(model.dma_cycles(problem.sizes[t]) for t in loaded)
            total = cycles_so_far + cycles + waited
            for kept in _subsets(upcoming):
                if space + sum(problem.sizes[t] for t in kept - served) > capacity:
                    continue
                if total < following.get(kept, total + 1):
                    following[kept] = total
    return following


_BOUND_TENSORS = 10  # the most tensors of one op whose subsets dma_bound tries


def _subsets(tensors: set[int]) -> list[frozenset[int]]:
    ordered = sorted(tensors)
    return [
        frozenset(subset)
        for count in range(len(ordered) + 1)
        for subset in combinations(ordered, count)
    ]


def _best_subset(
    tensors: list[int], sizes: Sequence[int], moved: dict[int, int], capacity: int
) -> int:
    if sum(sizes[t] for t in tensors) <= capacity:
        return sum(moved.values())
    if len(tensors) > 12:  # rare: many operands; the largest movers that fit, greedily
        total = room = 0
        for t in sorted(tensors, key=lambda t: (-moved[t], t)):
            if room + sizes[t] <= capacity:
                room += sizes[t]
                total += moved[t]
        return total
    best = 0
    for count in range(len(tensors) + 1):
        for subset in combinations(tensors, count):
            if sum(sizes[t] for t in subset) <= capacity:
                best = max(best, sum(moved[t] for t in subset))
    return best


def _figures(
    problem: StagingProblem, model: CostModel, fast: list[int], slow: list[int]
) -> Simulation:
    cycles = [model.op_cycles(f, a, b) for f, a, b in zip(problem.flops, fast, slow, strict=True)]
    ends = tuple(int(x) for x in np.cumsum(cycles))
    return Simulation(
        cycles=ends[-1] if ends else 0,
        fast_access_bytes=sum(fast),
        slow_access_bytes=sum(slow),
        dma_bytes=0,
        transfers=0,
        stall_cycles=0,
        begins=(0, *ends[:-1]) if ends else (),
        ends=ends,
        copy_times=(),
        fast_held=(),
        op_fast_bytes=tuple(fast),
        op_slow_bytes=tuple(slow),
    )


NOT_REALISED = "staging not realised by the placer: planned unstaged"


@dataclass(frozen=True)
class StagingReport:
    """The figures of one problem at one fast-memory size (docs/staging.md, "Reports")."""

    capacity: int
    choice: StagingChoice
    all_in_fast: Simulation
    ceiling: Simulation
    dropped: int  # copies dropped because ``best`` could not pack them
    problem: StagingProblem
    # What a placer made of the staging (Cadence's drop-in): its plan, modelled (None:
    # none modelled), and, when that is worse than the static plan, its plan of the
    # unstaged program; ``realised`` False when the staging was not kept, so the program
    # was planned unstaged and ``choice`` is the static plan.
    placed: Simulation | None = None
    placed_unstaged: Simulation | None = None
    realised: bool = True

    def not_realised(self, placed: Simulation | None, unstaged: Simulation | None) -> StagingReport:
        """The report of a program planned unstaged, its staging not realised by the placer."""
        static = _static_choice(self.choice)
        return replace(self, choice=static, placed=placed, placed_unstaged=unstaged, realised=False)

    def placer_line(self) -> str:
        """What the placer made of the staging, one line ("" when no placer was asked)."""
        other = self.placed_unstaged
        unstaged = f"its plan of the unstaged program {other.cycles:,}" if other else ""
        if self.realised:
            line = (
                f"  the placer's plan models {self.placed.cycles:,} cycles" if self.placed else ""
            )
            return f"{line} ({unstaged})" if line and unstaged else line
        why = "the placer could not plan it"
        if self.placed:
            why = f"the placer's plan of it models {self.placed.cycles:,} cycles"
        rest = f", {unstaged}" if unstaged else ""
        return f"  {NOT_REALISED} ({why}, the static plan's {self.static.cycles:,}{rest})"

    @property
    def static(self) -> Simulation:
        return self.choice.static

    @property
    def staged(self) -> Simulation:
        return self.choice.staged

    def lines(self) -> list[str]:
        """The report's text, one line each."""
        static, staged = self.static, self.staged
        rows = [
            ("static plan", static),
            ("staged plan", staged),
            ("all in fast memory", self.all_in_fast),
            ("free-DMA ceiling", self.ceiling),
        ]
        lines = [f"staging at fast memory {self.capacity:,} bytes:"]
        for label, figures in rows:
            lines.append(
                f"  {label:<19} {figures.cycles:>12,} cycles, {figures.fast_fraction:6.1%} of"
                f" {figures.fast_access_bytes + figures.slow_access_bytes:,} access bytes from"
                f" fast ({figures.fast_access_bytes:,} fast, {figures.slow_access_bytes:,} slow)"
            )
        ratio = staged.cycles / static.cycles if static.cycles else 1.0
        lines.append(
            f"  DMA: {staged.dma_bytes:,} bytes in {staged.transfers} transfers;"
            f" staged / static cycles {ratio:.3f}; {len(self.choice.kept)} tensors kept whole"
        )
        return lines + [line for line in (self.placer_line(),) if line]

    def explain(self, limit: int = 6) -> list[str]:
        """What was staged and why, a few lines (``plan --explain``): the gain, then each
        copy (the first ``limit``; ``--stage-out`` lists them all) with the reads it
        serves and the life its tensor has outside fast memory."""
        problem, choice = self.problem, self.choice
        if not self.realised:
            return ["explain staging:" + self.placer_line()[1:]]
        if not choice.schedule:
            nothing = (
                "explain staging: nothing staged: no copy the fast memory holds models fewer"
                f" cycles than the static plan's {self.static.cycles:,}"
            )
            return [nothing]
        gain = (
            f"explain staging: {len(choice.schedule)} copies model {self.staged.cycles:,} cycles"
            f" against the static plan's {self.static.cycles:,}: {self.staged.fast_fraction:.1%}"
            f" of access bytes from fast memory instead of {self.static.fast_fraction:.1%}"
            f" ({len(choice.kept)} tensors kept whole, {self.staged.stall_cycles:,} cycles"
            " waiting for the DMA)"
        )
        lines = [gain]
        for copy in choice.schedule[:limit]:
            first, last = problem.lifetimes[copy.tensor]
            readers = problem.readers[copy.tensor]
            if copy.kind == "load":
                served = [op for op in readers if copy.start <= op <= copy.until]
                what = f"issued at op {copy.start}, ready by op {copy.end}"
            else:
                served = [op for op in readers if op > copy.until]
                what = f"written out from op {copy.start}, done by op {copy.end}"
            reads = ", ".join(_op_label(problem, op) for op in served) or "none"
            lines.append(
                f"  {copy.kind} {problem.name(copy.tensor)} ({problem.sizes[copy.tensor]:,}"
                f" bytes): {what}; serves {reads} from fast memory; not kept whole there,"
                f" where it would hold its bytes over ops {first}-{last}"
            )
        if len(choice.schedule) > limit:
            lines.append(
                f"  ... {len(choice.schedule) - limit} more copies (--stage-out lists all)"
            )
        return lines


def _op_label(problem: StagingProblem, op: int) -> str:
    """An op by the tensor it makes (its node's name), or by its index."""
    made = [t for t in problem.writes[op] if problem.producers[t] == op]
    if made:
        return f"{problem.name(made[0])} (op {op})"
    written = problem.writes[op]
    return f"the write-back of {problem.name(written[0])} (op {op})" if written else f"op {op}"


def stage_problem(
    problem: StagingProblem,
    model: CostModel,
    capacity: int,
    alignment: int = 16,
    work_budget: int = DEFAULT_STAGING_WORK,
) -> StagingReport:
    """The static plan at ``capacity`` bytes of fast memory, the staging chosen on it (also
    searched from the static plans of a half, a quarter and an eighth of the memory, which
    leave room for copies), and the figures; the staged plan is the static one when
    nothing packs or helps."""
    static = static_fast_set(problem, capacity, alignment)
    smaller = [static_fast_set(problem, capacity // part, alignment) for part in (2, 4, 8)]
    choice = choose_staging(problem, model, static, capacity, work_budget, smaller)
    count = _packed_prefix(problem, choice, capacity, alignment)
    dropped = len(choice.schedule) - count
    if count < 0:  # what is kept whole does not pack alone: the static plan
        choice, dropped = _static_choice(choice), len(choice.schedule)
    elif dropped:
        schedule = choice.schedule[:count]
        staged = simulate(problem, model, choice.kept, schedule, capacity)
        if staged.cycles > choice.static.cycles:
            choice = _static_choice(choice)
        else:
            choice = _replace(choice, schedule, staged, choice.reasons[:count])
    every = frozenset(range(problem.num_tensors))
    return StagingReport(
        capacity=capacity,
        choice=choice,
        all_in_fast=simulate(problem, model, every),
        ceiling=free_dma_ceiling(problem, model, capacity),
        dropped=dropped,
        problem=problem,
    )


def _packed_prefix(
    problem: StagingProblem, choice: StagingChoice, capacity: int, alignment: int
) -> int:
    """How many of the copies, in the order chosen, ``best`` packs with what is kept
    whole (the longest such prefix, by bisection); -1 if not even none."""
    schedule = choice.schedule
    if packs_in_fast(problem, choice.kept, schedule, capacity, alignment):
        return len(schedule)
    low, high = -1, len(schedule)  # packs at low (or none does), not at high
    while high - low > 1:
        middle = (low + high) // 2
        if packs_in_fast(problem, choice.kept, schedule[:middle], capacity, alignment):
            low = middle
        else:
            high = middle
    return low


def _static_choice(choice: StagingChoice) -> StagingChoice:
    return StagingChoice(
        choice.static_fast, choice.static_fast, (), choice.static, choice.static, choice.work, ()
    )


def _replace(
    choice: StagingChoice, schedule: tuple[Copy, ...], staged: Simulation, reasons: tuple[str, ...]
) -> StagingChoice:
    return StagingChoice(
        choice.static_fast, choice.kept, schedule, choice.static, staged, choice.work, reasons
    )


def staging_json(
    problem: StagingProblem, report: StagingReport, model: CostModel
) -> dict[str, Any]:
    """What ``--out`` writes (docs/formats.md, "Staging"): enough to recompute the figures."""
    staged = report.staged
    return {
        "version": 1,
        "cost_model": {name: getattr(model, name) for name in model.__dataclass_fields__},
        "fast_memory_bytes": report.capacity,
        "tensors": [
            {
                "name": problem.name(t),
                "bytes": problem.sizes[t],
                "producer": problem.producers[t],
                "outlives": problem.outlives[t],
            }
            for t in range(problem.num_tensors)
        ],
        "ops": [
            {
                "flops": problem.flops[op],
                "reads": [problem.name(t) for t in problem.reads[op]],
                "writes": [problem.name(t) for t in problem.writes[op]],
            }
            for op in range(problem.num_ops)
        ],
        "static_fast": [problem.name(t) for t in sorted(report.choice.static_fast)],
        "kept": [problem.name(t) for t in sorted(report.choice.kept)],
        "copies": [
            {
                "tensor": problem.name(copy.tensor),
                "kind": copy.kind,
                "bytes": problem.sizes[copy.tensor],
                "start_op": copy.start,
                "end_op": copy.end,
                "until_op": copy.until,
                "begin_cycle": begin,
                "done_cycle": done,
                "why": why,
            }
            for copy, (begin, done), why in zip(
                report.choice.schedule, staged.copy_times, report.choice.reasons, strict=True
            )
        ],
        "cycles": {
            "static": report.static.cycles,
            "staged": staged.cycles,
            "all_in_fast": report.all_in_fast.cycles,
            "free_dma_ceiling": report.ceiling.cycles,
        },
        "access_bytes": {
            name: {"fast": figures.fast_access_bytes, "slow": figures.slow_access_bytes}
            for name, figures in (
                ("static", report.static),
                ("staged", staged),
                ("free_dma_ceiling", report.ceiling),
            )
        },
        "dma": {"bytes": staged.dma_bytes, "transfers": staged.transfers},
    }
