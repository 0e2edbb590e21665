"""The cost model run on a static plan and a staging schedule (docs/staging.md).

:func:`simulate` computes when each op begins and ends, when each copy runs on the one
DMA engine, where each access is served from, and the fast memory held at each op; it
raises :class:`IllegalSchedule`, saying why, for a schedule the hardware could not run.
The rules it enforces beyond the schedule's own shape are named in :data:`RULES`, so that
a test can drop one and see a bad schedule pass (tests/test_staging_rules.py):

- ``prefetch_before_use``: a load is waited for no later than the first read it serves.
- ``space_from_copy_start``: a load holds its fast space from the moment it is issued.
- ``write_back_before_reuse``: a store's fast space is held until the store is done.
- ``write_back_before_slow_read``: nothing reads a stored tensor from slow memory, or
  loads it again, before its store is done.
- ``one_dma_queue``: the engine runs one transfer at a time, in the order issued.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from .cost_model import CostModel
from .problem import Copy, StagingProblem

__all__ = ["RULES", "IllegalSchedule", "Simulation", "fast_windows", "simulate", "store_write"]

RULES = frozenset(
    {
        "prefetch_before_use",
        "space_from_copy_start",
        "write_back_before_reuse",
        "write_back_before_slow_read",
        "one_dma_queue",
    }
)


class IllegalSchedule(ValueError):
    """A schedule the hardware could not run; the message says why."""


@dataclass(frozen=True)
class Simulation:
    """What a plan and schedule cost under the model. ``begins``/``ends``: each op's
    cycles; ``copy_times``: each copy's ``(begin, done)`` cycles, in the schedule's order;
    ``fast_held``: fast bytes held at each op; ``op_fast_bytes``, ``op_slow_bytes``: the
    bytes each op's accesses move from each memory."""

    cycles: int
    fast_access_bytes: int
    slow_access_bytes: int
    dma_bytes: int
    transfers: int
    stall_cycles: int
    begins: tuple[int, ...]
    ends: tuple[int, ...]
    copy_times: tuple[tuple[int, int], ...]
    fast_held: tuple[int, ...]
    op_fast_bytes: tuple[int, ...]
    op_slow_bytes: tuple[int, ...]

    @property
    def fast_fraction(self) -> float:
        """The share of access bytes served from fast memory."""
        total = self.fast_access_bytes + self.slow_access_bytes
        return self.fast_access_bytes / total if total else 1.0


def _check_shape(problem: StagingProblem, static_fast: Collection[int], copy: Copy) -> None:
    ops = problem.num_ops
    if not 0 <= copy.tensor < problem.num_tensors:
        raise IllegalSchedule(f"{copy}: no such tensor")
    if copy.tensor in static_fast:
        raise IllegalSchedule(f"{copy}: the static plan already keeps it in fast memory")
    if not 0 <= copy.start <= copy.end <= ops:
        raise IllegalSchedule(f"{copy}: needs 0 <= start <= end <= {ops} ops")
    producer = problem.producers[copy.tensor]
    if copy.kind == "load":
        if copy.start <= producer:
            raise IllegalSchedule(f"{copy}: issued before op {producer} makes the tensor")
        if not copy.start <= copy.until < ops:
            raise IllegalSchedule(f"{copy}: needs start <= until < {ops}")
        if not _served_reads(problem, copy):
            raise IllegalSchedule(f"{copy}: serves no read")
        if any(copy.start <= op <= copy.until for op in problem.writers[copy.tensor]):
            raise IllegalSchedule(f"{copy}: the tensor is written while its fast copy serves")
    elif copy.kind == "store":
        written = store_write(problem, copy)
        if written < 0:
            raise IllegalSchedule(f"{copy}: no op writes the tensor before the store")
        if not written <= copy.until < ops:
            raise IllegalSchedule(f"{copy}: needs op {written} (its write) <= until < {ops}")
        last = max(copy.until, copy.end - 1)
        if any(written < op <= last for op in problem.writers[copy.tensor]):
            raise IllegalSchedule(f"{copy}: the tensor is written again before its store is done")
    else:
        raise IllegalSchedule(f"{copy}: kind must be 'load' or 'store'")


def store_write(problem: StagingProblem, copy: Copy) -> int:
    """The op whose write a store copies out: the last that writes its tensor before the
    store is issued (its producer, or an op that changes it in place); -1 if none."""
    return max((op for op in problem.writers[copy.tensor] if op < copy.start), default=-1)


def _served_reads(problem: StagingProblem, copy: Copy) -> list[int]:
    low = copy.start if copy.kind == "load" else store_write(problem, copy) + 1
    return [op for op in problem.readers[copy.tensor] if low <= op <= copy.until]


def fast_windows(
    problem: StagingProblem, copy: Copy, rules: Collection[str] = RULES
) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(held, served)``: the inclusive ops over which the copy holds fast space, and
    those at which it serves accesses from fast memory."""
    if copy.kind == "load":
        first = copy.start if "space_from_copy_start" in rules else min(copy.end, copy.until)
        return (first, copy.until), (copy.start, copy.until)
    written = store_write(problem, copy)
    last = copy.until
    if "write_back_before_reuse" in rules:
        last = max(last, min(copy.end, problem.num_ops) - 1)
    return (written, last), (written + 1, copy.until)


def _check_rules(problem: StagingProblem, schedule: Sequence[Copy], rules: Collection[str]) -> None:
    served: dict[int, list[tuple[int, int]]] = {}
    stores = {copy.tensor: copy for copy in schedule if copy.kind == "store"}
    if len(stores) < sum(copy.kind == "store" for copy in schedule):
        raise IllegalSchedule("a tensor is stored twice")
    for copy in schedule:
        _, window = fast_windows(problem, copy, rules)
        for low, high in served.get(copy.tensor, []):
            if low <= window[1] and window[0] <= high:
                raise IllegalSchedule(f"{copy}: two fast copies serve at once")
        served.setdefault(copy.tensor, []).append(window)
        reads = _served_reads(problem, copy)
        if copy.kind == "load" and "prefetch_before_use" in rules and copy.end > reads[0]:
            raise IllegalSchedule(f"{copy}: not waited for before op {reads[0]} reads it")
    if "write_back_before_slow_read" not in rules:
        return
    for copy in schedule:
        store = stores.get(copy.tensor)
        if store is None or copy is store:
            continue
        if copy.start < store.end:  # a load reads the slow copy
            raise IllegalSchedule(f"{copy}: loads from slow memory before {store} is done")
    for tensor, store in stores.items():
        for op in problem.readers[tensor]:
            if store.until < op < store.end and not _served(served[tensor], op):
                raise IllegalSchedule(
                    f"op {op} reads {problem.name(tensor)} from slow memory before {store} is done"
                )


def _served(windows: list[tuple[int, int]], op: int) -> bool:
    return any(low <= op <= high for low, high in windows)


def _fast_held(
    problem: StagingProblem,
    static_fast: Collection[int],
    schedule: Sequence[Copy],
    rules: Collection[str],
) -> list[int]:
    change = [0] * (problem.num_ops + 1)
    spans = [problem.lifetimes[tensor] for tensor in static_fast]
    sizes = [problem.sizes[tensor] for tensor in static_fast]
    for copy in schedule:
        spans.append(fast_windows(problem, copy, rules)[0])
        sizes.append(problem.sizes[copy.tensor])
    for (first, last), size in zip(spans, sizes, strict=True):
        change[first] += size
        change[last + 1] -= size
    held, running = [], 0
    for op in range(problem.num_ops):
        running += change[op]
        held.append(running)
    return held


def _access_bytes(
    problem: StagingProblem,
    static_fast: Collection[int],
    schedule: Sequence[Copy],
    rules: Collection[str],
) -> tuple[list[int], list[int]]:
    """Per op, the bytes its accesses move from fast and from slow memory."""
    served: dict[int, list[tuple[int, int]]] = {}
    made_fast = set()
    for copy in schedule:
        served.setdefault(copy.tensor, []).append(fast_windows(problem, copy, rules)[1])
        if copy.kind == "store":
            made_fast.add((copy.tensor, store_write(problem, copy)))
    fast, slow = [], []
    for op in range(problem.num_ops):
        fast_bytes = slow_bytes = 0
        for tensor in problem.reads[op]:
            in_fast = tensor in static_fast or _served(served.get(tensor, []), op)
            if in_fast:
                fast_bytes += problem.sizes[tensor]
            else:
                slow_bytes += problem.sizes[tensor]
        for tensor in problem.writes[op]:
            if tensor in static_fast or (tensor, op) in made_fast:
                fast_bytes += problem.sizes[tensor]
            else:
                slow_bytes += problem.sizes[tensor]
        fast.append(fast_bytes)
        slow.append(slow_bytes)
    return fast, slow


def _timeline(
    problem: StagingProblem,
    model: CostModel,
    schedule: Sequence[Copy],
    op_cycles: Sequence[int],
    one_queue: bool,
) -> tuple[list[int], list[int], list[tuple[int, int]], int]:
    """Each op's begin and end, each copy's ``(begin, done)``, and the cycles to the end."""
    issued: dict[int, list[int]] = {}
    waited: dict[int, list[int]] = {}
    for index, copy in enumerate(schedule):
        issued.setdefault(copy.start, []).append(index)
        waited.setdefault(copy.end, []).append(index)
    times: list[tuple[int, int]] = [(0, 0)] * len(schedule)
    begins: list[int] = []
    ends: list[int] = []
    engine_free = previous_end = 0
    for op in range(problem.num_ops + 1):
        for index in issued.get(op, []):
            begin = max(previous_end, engine_free) if one_queue else previous_end
            done = begin + model.dma_cycles(problem.sizes[schedule[index].tensor])
            times[index] = (begin, done)
            engine_free = max(engine_free, done)
        begin = max([previous_end] + [times[index][1] for index in waited.get(op, [])])
        if op == problem.num_ops:
            return begins, ends, times, begin
        begins.append(begin)
        previous_end = begin + op_cycles[op]
        ends.append(previous_end)
    raise AssertionError("unreachable")


def simulate(
    problem: StagingProblem,
    model: CostModel,
    static_fast: Collection[int],
    schedule: Sequence[Copy] = (),
    capacity: int | None = None,
    rules: Collection[str] = RULES,
) -> Simulation:
    """The modelled cost of keeping ``static_fast`` (tensor ids) in fast memory for their
    whole lives and running ``schedule``'s copies; ``capacity`` (None: unlimited) is the
    fast memory's size in bytes, checked at every op. Raises :class:`IllegalSchedule`."""
    static = frozenset(static_fast)
    unknown = sorted(set(rules) - RULES)
    if unknown:
        raise ValueError(f"unknown rules {unknown}; known: {sorted(RULES)}")
    for copy in schedule:
        _check_shape(problem, static, copy)
    _check_rules(problem, schedule, rules)
    held = _fast_held(problem, static, schedule, rules)
    if capacity is not None:
        for op, size in enumerate(held):
            if size > capacity:
                raise IllegalSchedule(f"op {op} needs {size} bytes of fast memory, > {capacity}")
    fast, slow = _access_bytes(problem, static, schedule, rules)
    op_cycles = [
        model.op_cycles(flops, fast_bytes, slow_bytes)
        for flops, fast_bytes, slow_bytes in zip(problem.flops, fast, slow, strict=True)
    ]
    begins, ends, times, cycles = _timeline(
        problem, model, schedule, op_cycles, "one_dma_queue" in rules
    )
    return Simulation(
        cycles=cycles,
        fast_access_bytes=sum(fast),
        slow_access_bytes=sum(slow),
        dma_bytes=sum(problem.sizes[copy.tensor] for copy in schedule),
        transfers=len(schedule),
        stall_cycles=cycles - sum(op_cycles),
        begins=tuple(begins),
        ends=tuple(ends),
        copy_times=tuple(times),
        fast_held=tuple(held),
        op_fast_bytes=tuple(fast),
        op_slow_bytes=tuple(slow),
    )
