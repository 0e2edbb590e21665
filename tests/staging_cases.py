"""Small staging problems and legal schedules for the staging tests (hypothesis)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from cadence_memplan.staging.cost_model import CostModel
from cadence_memplan.staging.problem import Copy, StagingProblem

# The built-in models the staging tests lower (name -> builder options), small to keep
# the default run short.
MODEL_OPTIONS: dict[str, dict[str, Any]] = {
    "decoder": {"layers": 2},
    "encoder": {"layers": 1, "width": 32, "tokens": 8},
    "inception": {"blocks": 2, "width": 8, "image": 16},
}

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
        elif draw(st.booleans()):  # changed in place, as a mutable buffer's write-back
            writes[draw(st.integers(0, ops - 1))].append(tensor)
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
        producer, readers = problem.producers[tensor], problem.readers[tensor]
        writers = problem.writers[tensor]
        if draw(st.booleans()) and readers:  # a load before some read
            read = draw(st.sampled_from(readers))
            if read in writers:
                continue
            low = max([producer + 1] + [w + 1 for w in writers if w < read])
            high = min([ops - 1] + [w - 1 for w in writers if w > read])
            start = draw(st.integers(low, read))
            first = min(op for op in readers if op >= start)
            end = draw(st.integers(start, first))
            until = draw(st.integers(read, high))
            schedule.append(Copy(tensor, "load", start, end, until))
        elif writers:  # a store of one of its writes
            written = draw(st.sampled_from(writers))
            following = min([w for w in writers if w > written], default=ops)
            start = draw(st.integers(written + 1, following))
            until = draw(st.integers(written, min(following, ops) - 1))
            bound = min([op for op in readers if op > until] + [following])
            if bound < start:  # a read from slow memory before the store could be done
                continue
            end = draw(st.integers(start, bound))
            schedule.append(Copy(tensor, "store", start, end, until))
    return problem, static, draw(st.permutations(schedule))
