"""The array API: plan and validate tensors given as integer arrays, and order a
program's units for the smallest peak of live bytes (``schedule``). One of the two callers
of the C++ extension (``_core``; the other, ``exir/records.py``, hands it exir's record
arrays): it checks the public API's options, converts the input to int64 arrays and calls
the core (which releases the GIL) by keyword, reading its results by name. The core's
failures arrive as :class:`PlanningError`, the peak-live bound stated."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from . import _core
from ._types import (
    ALGORITHMS,
    OCCUPANCIES,
    Algorithm,
    Occupancy,
    PlanResult,
    Preplaced,
    ScheduleResult,
    SearchSpent,
)
from ._validation import (
    MAX_MEMORIES,
    as_int64,
    check_budget_ms,
    check_choice,
    check_threads,
    check_work_budget,
    is_integer,
)
from .capacity.capacity_first import plan_capacity_first

__all__ = [
    "DEFAULT_WORK_BUDGET",
    "allowed_mask",
    "blocked_masks",
    "plan",
    "plan_prepared",
    "schedule",
    "validate",
]

#: ``algorithm="best"``'s default work budget, in units of work (a node of the exact
#: search; docs/best.md, "Budget, threads, determinism"): what the old five-second default
#: spent (6.5 s on the hardest challenging instance here), spent only while the plan is not
#: proved optimal.
DEFAULT_WORK_BUDGET: int = _core.DEFAULT_BEST_WORK

IntArray = npt.NDArray[np.int64]
_EMPTY: IntArray = np.zeros(0, dtype=np.int64)
_NO_PREPLACED = Preplaced(_EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY)


def blocked_masks(
    blocked: npt.ArrayLike, tensor_count: int, memory_count: int
) -> npt.NDArray[np.uint64]:
    """Turn a (tensors, memories) boolean matrix into one bit mask per tensor (bit m = memory id m)."""
    matrix = np.asarray(blocked)
    if matrix.dtype != np.bool_:
        raise TypeError(f"blocked must be a boolean array, got dtype {matrix.dtype}")
    if matrix.shape != (tensor_count, memory_count):
        raise ValueError(
            f"blocked must have shape (tensors, memories) = {(tensor_count, memory_count)},"
            f" got {matrix.shape}"
        )
    bits = np.left_shift(np.uint64(1), np.arange(1, memory_count + 1, dtype=np.uint64))
    masks: npt.NDArray[np.uint64] = np.bitwise_or.reduce(
        np.where(matrix, bits, np.uint64(0)), axis=1
    ).astype(np.uint64)
    return masks


def allowed_mask(allowed: npt.ArrayLike | None, memory_count: int) -> int:
    """Turn a boolean per-memory vector (None: all allowed) into a bit mask of memory ids."""
    if allowed is None:
        return sum(1 << mem_id for mem_id in range(1, memory_count + 1))
    vector = np.asarray(allowed)
    if vector.dtype != np.bool_:
        raise TypeError(f"allowed must be a boolean array, got dtype {vector.dtype}")
    if vector.shape != (memory_count,):
        raise ValueError(
            f"allowed must have one entry per memory ({memory_count}), got shape {vector.shape}"
        )
    return sum(1 << (index + 1) for index, ok in enumerate(vector.tolist()) if ok)


def plan_prepared(
    algorithm: Algorithm,
    *,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    memory_sizes: npt.NDArray[np.int64],
    memory_alignments: npt.NDArray[np.int64],
    blocked: npt.NDArray[np.uint64],
    allowed: int,
    preplaced: Preplaced = _NO_PREPLACED,
    incoming_offsets: npt.NDArray[np.int64] = _EMPTY,
    keep_incoming_offset: bool = True,
    occupancy: Occupancy = "auto",
    work_budget: int = DEFAULT_WORK_BUDGET,
    budget_ms: float = math.inf,
    threads: int = 0,
    weights: npt.NDArray[np.int64] | None = None,
) -> PlanResult:
    """:func:`plan` on input already prepared (int64 arrays, bit masks, choices checked by
    the caller): the drop-in classes' way in. ``preplaced`` holds int64 arrays;
    ``incoming_offsets`` may be empty; ``weights`` is None (the sizes) or int64, one per
    tensor, for ``"best"`` only; ``budget_ms`` is ``math.inf`` for no cap. The core checks
    every value again and raises ValueError or :class:`PlanningError` (its message states
    the peak-live bound)."""
    placed_starts, placed_ends, placed_sizes, placed_mem_ids, placed_offsets = (
        np.asarray(column, dtype=np.int64) for column in preplaced
    )
    # Made once: the capacity-first loop may plan it several times.
    request = _core.PlanRequest(
        starts=starts,
        ends=ends,
        sizes=sizes,
        memory_sizes=memory_sizes,
        memory_alignments=memory_alignments,
        blocked=blocked,
        allowed=allowed,
        placed_starts=placed_starts,
        placed_ends=placed_ends,
        placed_sizes=placed_sizes,
        placed_mem_ids=placed_mem_ids,
        placed_offsets=placed_offsets,
        incoming_offsets=incoming_offsets,
        keep_incoming_offset=keep_incoming_offset,
        occupancy=occupancy,
    )
    if algorithm != "best" and weights is None:  # The placers take no options.
        return _plan_result(_core.plan(request=request, algorithm=algorithm))
    tensor_weights = _EMPTY if weights is None else weights

    def core_plan(keep_in_memory1: IntArray, work: int, cap_ms: float) -> _core.PlanOutput:
        options = _core.BestOptions(
            work_budget=work,
            budget_ms=cap_ms,
            threads=threads,
            keep_in_memory1=keep_in_memory1,
            weights=tensor_weights,
        )
        return _core.plan(request=request, algorithm=algorithm, options=options)

    if algorithm != "best" or len(memory_sizes) == 1:  # A placer here refuses the weights.
        return _plan_result(core_plan(_EMPTY, work_budget, budget_ms))
    capacity_plan = plan_capacity_first(
        core_plan,
        starts,
        ends,
        sizes,
        memory_sizes,
        memory_alignments,
        _may_use_memory1(blocked, allowed, len(starts)),
        preplaced,
        work_budget,
        budget_ms,
        sizes if weights is None else weights,
    )
    return _plan_result(
        capacity_plan.output,
        kept_bound=capacity_plan.kept_bound,
        memory1_proved_full=capacity_plan.memory1_proved_full,
        spent=capacity_plan.spent,
    )


def _plan_result(
    core: _core.PlanOutput,
    *,
    kept_bound: int | None = None,
    memory1_proved_full: bool = False,
    spent: SearchSpent | None = None,
) -> PlanResult:
    """The one place a :class:`PlanResult` is made from what the core decided; with
    capacity-first planning's bound, proof and spending over all its calls."""
    if spent is None:
        spent = SearchSpent(core.work, core.budget_exhausted, core.cut_short)
    return PlanResult(
        mem_ids=core.mem_ids,
        offsets=core.offsets,
        bufsizes=core.bufsizes,
        call_bufsizes=core.call_bufsizes,
        memory_order=core.memory_order,
        occupancy=core.occupancy,
        strategy=core.strategy,
        proved_optimal=core.proved_optimal or memory1_proved_full,
        lower_bound=core.lower_bound,
        progress=core.progress,
        kept_bound=kept_bound,
        work=spent.work,
        budget_exhausted=spent.budget_exhausted,
        cut_short=spent.cut_short,
    )


def _may_use_memory1(
    blocked: npt.NDArray[np.uint64], allowed: int, tensor_count: int
) -> npt.NDArray[np.bool_]:
    """Which tensors may go to memory 1 under the prepared masks."""
    if not allowed & 2:
        return np.zeros(tensor_count, dtype=np.bool_)
    if len(blocked) == 0:
        return np.ones(tensor_count, dtype=np.bool_)
    may_use: npt.NDArray[np.bool_] = (np.asarray(blocked, dtype=np.uint64) & np.uint64(2)) == 0
    return may_use


def plan(
    starts: npt.ArrayLike,
    ends: npt.ArrayLike,
    sizes: npt.ArrayLike,
    memory_sizes: Sequence[int] | npt.ArrayLike,
    memory_alignments: Sequence[int] | npt.ArrayLike,
    *,
    algorithm: Algorithm = "position",
    blocked: npt.ArrayLike | None = None,
    allowed: npt.ArrayLike | None = None,
    preplaced: Preplaced | None = None,
    incoming_offsets: npt.ArrayLike | None = None,
    keep_incoming_offset: bool = True,
    occupancy: Occupancy = "auto",
    work_budget: int | None = None,
    budget_ms: float | None = None,
    threads: int = 0,
    weights: npt.ArrayLike | None = None,
) -> PlanResult:
    """Place tensors in a hierarchy of memories, exactly as upstream's Cadence placers do,
    or in less fast memory than they do (``algorithm="best"``).

    Tensor ``i`` lives over the inclusive node range ``[starts[i], ends[i]]`` (empty when
    start > end) and needs ``sizes[i]`` bytes. Memory id ``m`` (1 = fastest) has
    ``memory_sizes[m-1]`` bytes and alignment ``memory_alignments[m-1]`` (any positive
    value).

    ``algorithm``: ``"position"`` (the default, as upstream's ``mem_algo=0``) is upstream's
    PositionBasedGreedyWithHierarchy (first fit), ``"heuristic"`` its GreedyWithHeuristic
    (best fit, arXiv 2001.03288). ``"best"`` (``mem_algo=2``) keeps the plan with the
    fewest tensor bytes outside memory 1, then outside memories 1-2, and so on, then the
    smallest total bufsize; with one memory, the smallest bufsize. It tries both placers
    on several visit orders; when nothing lies outside memory 1 it then minimises memory
    1's bufsize by an exact search (docs/best.md) until it proves the plan optimal,
    otherwise it improves the best order (squeaky wheel) and packs more tensors into
    memory 1 with the exact search. It is never worse than both upstream placers.
    ``PlanResult.proved_optimal`` and ``PlanResult.lower_bound`` say what it proved,
    ``PlanResult.strategy`` what found the plan, ``PlanResult.progress`` how the plan
    improved over time. ``work_budget`` (None: :data:`DEFAULT_WORK_BUDGET`, a few
    seconds) caps the search in counted units of work, never in time, so the plan is a
    function of the arguments alone: the same on every run, whatever the load of the
    machine or ``threads`` (docs/best.md, "Budget, threads, determinism"). It is spent
    only while the plan is not proved optimal, so plans already at their bound return in
    milliseconds; ``PlanResult.work`` says how much was spent. ``budget_ms`` (None: no
    cap) adds a wall-clock cap: when it ends the search, ``PlanResult.cut_short`` is set,
    the one case where the plan may change from run to run (never its validity).
    ``threads`` (0: one per core) runs its candidates and the exact search's members in
    threads, with the GIL released; the plan does not depend on it.
    ``weights`` (``"best"`` only; default: each tensor's size): what a tensor costs outside
    a fast memory, integers >= 0, one per tensor. The objective's byte terms and
    ``kept_bound`` then sum weights instead of bytes, e.g. a tensor's traffic (bytes times
    accesses) to keep the most-used tensors in fast memory.
    ``blocked``: boolean (tensors, memories) matrix, True where a tensor must not go.
    ``allowed``: boolean per memory, False to keep every tensor out of it in this call.
    ``preplaced``: tensors already placed, which the new ones must avoid.
    ``incoming_offsets``: each tensor's ``mem_offset`` before the call, -1 for None. The
    heuristic keeps it when no gap fits (an upstream quirk); ``keep_incoming_offset=False``
    turns the quirk off.
    ``occupancy``: how each memory finds the tensors alive with the one being placed. Every
    choice gives the same plan, only the time differs. ``"scan"`` checks every tensor of
    the memory (the naive baseline, and the fastest for a few thousand tensors),
    ``"interval"`` lists the overlapping tensors from a time-bucketed index (long graphs
    with few tensors alive at once), ``"tree"`` keeps merged free space in a segment tree
    over time (thousands alive at once). ``"auto"``, the default, picks by a cost model
    from the tensor count and the number of lifetime-overlapping pairs;
    ``PlanResult.occupancy`` says which.

    Raises ValueError or TypeError for bad input and :class:`PlanningError` when a tensor
    fits nowhere; the error names the tensor, every memory tried, and the peak-live bound.
    """
    check_choice("algorithm", algorithm, ALGORITHMS)
    check_choice("occupancy", occupancy, OCCUPANCIES)
    work = check_work_budget(work_budget, DEFAULT_WORK_BUDGET)
    cap = check_budget_ms(budget_ms)
    thread_count = check_threads(threads)
    starts_array = as_int64("starts", starts)
    tensor_count = len(starts_array)
    memory_sizes_array = as_int64("memory_sizes", memory_sizes)
    memory_count = len(memory_sizes_array)
    if not 1 <= memory_count <= MAX_MEMORIES:
        raise ValueError(f"the number of memories must be in 1..{MAX_MEMORIES}, got {memory_count}")
    masks = (
        np.zeros(0, dtype=np.uint64)
        if blocked is None
        else blocked_masks(blocked, tensor_count, memory_count)
    )
    weight_array = None
    if weights is not None:
        weight_array = as_int64("weights", weights)
        if len(weight_array) != tensor_count:
            raise ValueError(f"weights has {len(weight_array)} entries for {tensor_count} tensors")
        if (weight_array < 0).any():
            raise ValueError("weights must be >= 0")
    given = _NO_PREPLACED if preplaced is None else preplaced
    placed = Preplaced(
        *(as_int64(f"preplaced.{field}", getattr(given, field)) for field in Preplaced._fields)
    )
    return plan_prepared(
        algorithm,
        starts=starts_array,
        ends=as_int64("ends", ends),
        sizes=as_int64("sizes", sizes),
        memory_sizes=memory_sizes_array,
        memory_alignments=as_int64("memory_alignments", memory_alignments),
        blocked=masks,
        allowed=allowed_mask(allowed, memory_count),
        preplaced=placed,
        incoming_offsets=(
            _EMPTY if incoming_offsets is None else as_int64("incoming_offsets", incoming_offsets)
        ),
        keep_incoming_offset=keep_incoming_offset,
        occupancy=occupancy,
        work_budget=work,
        budget_ms=cap,
        threads=thread_count,
        weights=weight_array,
    )


def validate(
    starts: npt.ArrayLike,
    ends: npt.ArrayLike,
    sizes: npt.ArrayLike,
    mem_ids: npt.ArrayLike,
    offsets: npt.ArrayLike,
    memory_sizes: Sequence[int] | npt.ArrayLike,
    memory_alignments: Sequence[int] | npt.ArrayLike,
) -> str | None:
    """Check a finished plan independently of the placers; return the first violation or None.

    A plan is valid when each tensor sits in memory ``1..N`` at an aligned, non-negative
    offset, inside the memory, and shares no byte with a tensor of the same memory whose
    inclusive lifetime overlaps its own.
    """
    problem = _core.validate(
        starts=as_int64("starts", starts),
        ends=as_int64("ends", ends),
        sizes=as_int64("sizes", sizes),
        mem_ids=as_int64("mem_ids", mem_ids),
        offsets=as_int64("offsets", offsets),
        memory_sizes=as_int64("memory_sizes", memory_sizes),
        memory_alignments=as_int64("memory_alignments", memory_alignments),
    )
    return problem or None


def schedule(
    num_units: int,
    edges: npt.ArrayLike,
    buffer_sizes: npt.ArrayLike,
    buffer_producers: npt.ArrayLike,
    buffer_user_offsets: npt.ArrayLike,
    buffer_users: npt.ArrayLike,
    buffer_live_to_end: npt.ArrayLike | None = None,
    *,
    work_budget: int | None = None,
    budget_ms: float | None = None,
) -> ScheduleResult:
    """Order a program's units so that the fewest bytes are alive at once, never more
    than in the given order (docs/scheduling.md).

    Units ``0..num_units-1`` are given in a legal order. ``edges`` (shape ``(k, 2)``)
    lists ``(before, after)`` pairs, ``before < after``, that every order must keep.
    Buffer ``b`` takes ``buffer_sizes[b]`` bytes from the step its producer
    ``buffer_producers[b]`` runs (``-1``: from the program's start) to the step the last
    of its users runs, inclusive; its users are
    ``buffer_users[buffer_user_offsets[b]:buffer_user_offsets[b + 1]]``, and every user
    runs after the producer. ``buffer_live_to_end[b]`` keeps it to the last step (a graph
    output). A buffer nobody reads is alive at its producer's step only.

    The search (csrc/core/schedule/schedule.h) spends at most ``work_budget`` units of
    work (None: the default, ``DEFAULT_SCHEDULE_WORK``), so the result depends only on
    the arguments; ``budget_ms`` adds a wall-clock cap, after which the result may vary
    (``ScheduleResult.cut_short``). The GIL is released while it runs, and Ctrl-C stops it
    with KeyboardInterrupt. Raises ValueError or TypeError for bad input (a cycle shows
    as an edge or a user that goes backwards in the given order).
    """
    if not is_integer(num_units):
        raise TypeError(f"num_units must be an integer, got {num_units!r}")
    edge_array = np.asarray(edges)
    if edge_array.size == 0:
        edge_array = np.zeros((0, 2), dtype=np.int64)
    if edge_array.ndim != 2 or edge_array.shape[1] != 2:
        raise ValueError(f"edges must have shape (k, 2), got {edge_array.shape}")
    sizes = as_int64("buffer_sizes", buffer_sizes)
    live_to_end = (
        np.zeros(0, dtype=np.bool_)
        if buffer_live_to_end is None
        else np.ascontiguousarray(buffer_live_to_end)
    )
    if live_to_end.dtype != np.bool_:
        raise TypeError(
            f"buffer_live_to_end must be a boolean array, got dtype {live_to_end.dtype}"
        )
    work = check_work_budget(work_budget, _core.DEFAULT_SCHEDULE_WORK)
    cap = check_budget_ms(budget_ms)
    core = _core.schedule(
        num_units=int(num_units),
        edge_before=as_int64("edges[:, 0]", edge_array[:, 0]),
        edge_after=as_int64("edges[:, 1]", edge_array[:, 1]),
        buffer_sizes=sizes,
        buffer_producers=as_int64("buffer_producers", buffer_producers),
        buffer_user_offsets=as_int64("buffer_user_offsets", buffer_user_offsets),
        buffer_users=as_int64("buffer_users", buffer_users),
        buffer_live_to_end=live_to_end,
        work_budget=work,
        budget_ms=cap,
    )
    return ScheduleResult(
        order=core.order,
        peak_live=core.peak_live,
        given_peak_live=core.given_peak_live,
        lower_bound=core.lower_bound,
        proved_optimal=core.proved_optimal,
        strategy=core.strategy,
        work=core.work,
        cut_short=core.cut_short,
    )
