"""Planned tensor tables for the tests of what reads a plan (stats, the trace, explain,
diff, plan files): random graphs planned by the core (:func:`planned_tables`, a hypothesis
strategy), the brute-force count those tests hold every figure against
(:func:`live_bytes_by_node`), and small hand-made tables (:func:`small_table`); numpy and
hypothesis only.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import cadence_memplan
from cadence_memplan.io import Memory
from cadence_memplan.stats import TensorTable


@st.composite
def planned_tables(draw: st.DrawFn) -> tuple[TensorTable, list[Memory]]:
    """A random graph planned by the core on 1-3 memories, some rows sharing storage."""
    count = draw(st.integers(0, 30))
    starts = np.array(draw(st.lists(st.integers(1, 20), min_size=count, max_size=count)))
    lengths = draw(st.lists(st.integers(-1, 8), min_size=count, max_size=count))
    ends = starts + np.array(lengths, dtype=np.int64)  # -1: never alive
    sizes = np.array(draw(st.lists(st.integers(0, 300), min_size=count, max_size=count)))
    memory_count = draw(st.integers(1, 3))
    memories = [
        Memory(f"m{index}", size, alignment, base)
        for index, (size, alignment, base) in enumerate(
            zip(
                [*draw(st.lists(st.integers(1, 600), min_size=memory_count - 1,
                                max_size=memory_count - 1)), 1 << 20],
                draw(st.lists(st.sampled_from([1, 4, 16]), min_size=memory_count,
                              max_size=memory_count)),
                draw(st.lists(st.sampled_from([None, 0x1000]), min_size=memory_count,
                              max_size=memory_count)),
                strict=True,
            )
        )
    ]  # fmt: skip
    result = cadence_memplan.plan(
        starts.astype(np.int64),
        ends.astype(np.int64),
        sizes.astype(np.int64),
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
        algorithm=draw(st.sampled_from(["position", "heuristic"])),
    )
    shares = np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), dtype=bool)
    table = TensorTable(
        [f"t{index}" for index in range(count)],
        result.mem_ids,
        result.offsets,
        sizes,
        starts,
        ends,
        shares & (sizes > 0) & (np.arange(count) % 3 == 0),
    )
    return table, memories


def live_bytes_by_node(table: TensorTable, mem_id: int, nodes: int) -> np.ndarray:
    """Brute force: each node's bytes of live tensors in a memory (shared storage left out)."""
    live = np.zeros(nodes, dtype=np.int64)
    for row in range(len(table)):
        if table.mem_ids[row] == mem_id and not table.shares_storage[row]:
            live[table.starts[row] : table.ends[row] + 1] += table.sizes[row]
    return live


NODES = 40  # every lifetime above ends before this node


def small_table(
    offsets: list[int], mem_ids: list[int], names: list[str] | None = None
) -> TensorTable:
    count = len(offsets)
    return TensorTable(
        names or [f"t{index}" for index in range(count)],
        np.array(mem_ids),
        np.array(offsets),
        np.full(count, 16),
        np.arange(count),
        np.arange(count) + 1,
    )


TWO = [Memory("fast", 64, 16), Memory("slow", 1024, 16)]
