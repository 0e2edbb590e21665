"""Small staging problems and legal schedules for the staging tests (hypothesis)."""

from __future__ import annotations

from hypothesis import strategies as st

from cadence_memplan.staging.cost_model import CostModel
from cadence_memplan.staging.problem import Copy, StagingProblem

# Small figures, so that a cycle-by-cycle brute force stays quick.
SMALL_MODEL = CostModel(
    op_overhead=3,
    flops_per_cycle=4,
    fast_bytes_per_cycle=4,
    slow_bytes_per_cycle=1,
    dma_bytes_per_cycle=2,
    dma_overhead=2,
)


@st.composite
def problems(draw: st.DrawFn, max_ops: int = 5, max_tensors: int = 5) -> StagingProblem:
    ops = draw(st.integers(1, max_ops))
    tensors = draw(st.integers(1, max_tensors))
    sizes, producers, outlives = [], [], []
    reads: list[list[int]] = [[] for _ in range(ops)]
    writes: list[list[int]] = [[] for _ in range(ops)]
    for tensor in range(tensors):
        sizes.append(draw(st.integers(0, 24)))
        producer = draw(st.integers(-1, ops - 1))
        producers.append(producer)
        if producer >= 0:
            writes[producer].append(tensor)
        for op in range(producer + 1, ops):
            if draw(st.booleans()):
                reads[op].append(tensor)
        outlives.append(draw(st.booleans()))
    return StagingProblem(
        flops=tuple(draw(st.integers(0, 40)) for _ in range(ops)),
        sizes=tuple(sizes),
        producers=tuple(producers),
        reads=tuple(tuple(r) for r in reads),
        writes=tuple(tuple(w) for w in writes),
        outlives=tuple(outlives),
    )


@st.composite
def staged(draw: st.DrawFn) -> tuple[StagingProblem, frozenset[int], list[Copy]]:
    """A problem, a static plan and a legal schedule: at most one copy per tensor."""
    problem = draw(problems())
    ops = problem.num_ops
    static = frozenset(t for t in range(problem.num_tensors) if draw(st.booleans()))
    schedule = []
    for tensor in range(problem.num_tensors):
        if tensor in static or not draw(st.booleans()):
            continue
        producer = problem.producers[tensor]
        readers = problem.readers[tensor]
        if draw(st.booleans()) and readers:  # a load before some read
            read = draw(st.sampled_from(readers))
            start = draw(st.integers(producer + 1, read))
            end = draw(st.integers(start, read))
            first = min(op for op in readers if op >= start)
            end = min(end, first)
            until = draw(st.integers(read, ops - 1))
            schedule.append(Copy(tensor, "load", start, end, until))
        elif producer >= 0 and producer + 1 <= ops:
            start = draw(st.integers(producer + 1, ops))
            until = draw(st.integers(producer, ops - 1))
            later = [op for op in readers if op > until]
            end = draw(st.integers(start, max(start, min(later, default=ops))))
            if later and end > later[0]:
                continue
            schedule.append(Copy(tensor, "store", start, end, until))
    return problem, static, draw(st.permutations(schedule))
