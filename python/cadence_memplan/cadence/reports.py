"""Memory-planning reports for Cadence plans, vectorised with numpy.

The same functions as executorch 1.5.x's ``backends/cadence/aot/memory_planning.py``
(same signatures, same numbers), for plans made by upstream's placers or ours:
:func:`find_peak_memory_usages_per_memory`, :func:`find_peak_memory_usage` and
:func:`print_memory_planning_info`. Upstream walks the graph's specs once per report in
Python; here each spec is read once into arrays (:func:`read_spec_table`) and every report
is a few numpy operations, so they stay fast at 10^5 tensors.

New: :func:`find_peak_live_bytes_per_memory`, the most bytes alive at one time among the
tensors placed in each memory. No placement of those tensors in that memory can use fewer
bytes, so it is a lower bound to hold the memory's peak usage against; it bounds that
plan's tensors, not the memory (another plan may put fewer there), except with one memory,
where it bounds every plan. It sums the tensors' sizes, so tensors that share storage on
purpose (the relative placements of cat, slice and view "nops") are counted once each;
pass the ``MemConstraints`` that planned the graph to leave those out, as the other
reports do. :func:`print_memory_planning_info` has no constraints to go by and leaves them
out by the package's one definition of "shares storage",
:func:`~cadence_memplan._boundary.storage_sharing.storage_sharing_spec_ids`, as the command line does.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import numpy as np
import torch
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir import ExecutorchProgramManager
from executorch.exir.memory_planning import collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec
from tabulate import tabulate
from torch.export import ExportGraphSignature

from .. import stats
from .._boundary.storage_sharing import storage_sharing_spec_ids
from .._boundary.tensorspecs import allocated_sizes, read_placements
from ..stats import TensorTable

__all__ = [
    "PER_MEMORY_HEADERS",
    "find_peak_live_bytes_per_memory",
    "find_peak_memory_usage",
    "find_peak_memory_usages_per_memory",
    "peak_live_bytes_per_memory",
    "peak_memory_usage",
    "peak_memory_usages_per_memory",
    "print_memory_planning_info",
    "read_spec_table",
    "require_placed",
]

# Upstream's four columns, then ours.
PER_MEMORY_HEADERS = (
    "Memory Space",
    "Base Address",
    "Memory Size (Bytes)",
    "Peak Memory Usage (Bytes)",
    "Peak Live Bytes of Its Tensors",
    "Usage / Peak Live",
)

_UNSET = -1  # stands for None in the int64 columns (the boundary's read_placements)


def require_placed(table: TensorTable) -> None:
    """Raise ``ValueError`` naming the first spec without a mem_id or mem_offset."""
    unplaced = np.flatnonzero((table.mem_ids == _UNSET) | (table.offsets == _UNSET))
    if unplaced.size:
        index = int(unplaced[0])
        raise ValueError(
            f"{unplaced.size} spec(s) are not memory planned, e.g. spec {index}:"
            f" {table.labels[index]!r}"
        )


def read_spec_table(
    specs: Iterable[TensorSpec], mem_constraints: MemConstraints | None = None
) -> TensorTable:
    """Read each spec once (``allocated_memory`` is computed on every access), leaving out
    the specs ``mem_constraints`` skips, as upstream's reports do. An unplaced spec gets
    -1 for mem_id/offset; a spec without a lifetime gets the never-alive ``[0, -1]``. Read
    through the TensorSpec boundary: a value that is not an integer raises TypeError."""
    kept = [
        spec for spec in specs if mem_constraints is None or not mem_constraints.skipped_spec(spec)
    ]
    placements = read_placements(kept)
    return TensorTable(
        kept,
        placements.mem_ids,
        placements.offsets,
        allocated_sizes(kept),
        placements.starts,
        placements.ends,
    )


def _graph_spec_table(
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    mem_constraints: MemConstraints | None,
) -> TensorTable:
    # The selection of upstream's collect_specs_from_graph_module.
    specs = collect_specs_from_nodes(
        graph_module.graph.nodes,
        graph_signature,
        ignore_graph_input=not alloc_graph_input,
        ignore_graph_output=not alloc_graph_output,
    )
    return read_spec_table(specs, mem_constraints)


# --------------------------------------------------------------------------- on arrays


def peak_memory_usages_per_memory(table: TensorTable) -> list[int]:
    """Per memory id 1..(largest mem_id), the end of its last byte in use (upstream's number)."""
    require_placed(table)
    if not len(table):
        return []
    memory_count = int(table.mem_ids.max())
    usages: list[int] = stats.peak_usage_per_memory(
        table.mem_ids, table.offsets, table.sizes, memory_count
    )[1:].tolist()
    return usages


def peak_memory_usage(table: TensorTable, node_count: int) -> tuple[int, int]:
    """Most bytes alive at one node across all memories, and the first node where it occurs.

    Lifetimes are inclusive node indices in ``0..node_count-1``; specs without one count
    nowhere. The same arithmetic as upstream, so the same numbers.
    """
    return stats.peak_usage_over_time(table.sizes, table.starts, table.ends, node_count)


def peak_live_bytes_per_memory(table: TensorTable) -> list[int]:
    """Per memory id 1..(largest mem_id), the most bytes alive at one node among its tensors,
    leaving out the rows marked ``shares_storage``.

    A tensor is alive over its inclusive lifetime; one with start > end or no lifetime is
    never alive.
    """
    require_placed(table)
    if not len(table):
        return []
    memory_count = int(table.mem_ids.max())
    return [stat.peak_live_bytes for stat in stats.memory_stats(table, memory_count)]


# --------------------------------------------------------------------------- upstream's API


def find_peak_memory_usages_per_memory(
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    mem_constraints: MemConstraints | None = None,
) -> list[int]:
    """Upstream's function: each memory's peak usage (offset + size of its highest tensor),
    as a list for memory ids 1..(largest mem_id in the plan)."""
    return peak_memory_usages_per_memory(
        _graph_spec_table(
            graph_module, graph_signature, alloc_graph_input, alloc_graph_output, mem_constraints
        )
    )


def find_peak_memory_usage(
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    mem_constraints: MemConstraints | None = None,
) -> tuple[int, int]:
    """Upstream's function: (peak bytes alive across all memories, node index of the peak)."""
    table = _graph_spec_table(
        graph_module, graph_signature, alloc_graph_input, alloc_graph_output, mem_constraints
    )
    return peak_memory_usage(table, len(graph_module.graph.nodes))


def find_peak_live_bytes_per_memory(
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    mem_constraints: MemConstraints | None = None,
) -> list[int]:
    """Each memory's peak live of its tensors (:func:`peak_live_bytes_per_memory`), indexed
    like :func:`find_peak_memory_usages_per_memory`."""
    return peak_live_bytes_per_memory(
        _graph_spec_table(
            graph_module, graph_signature, alloc_graph_input, alloc_graph_output, mem_constraints
        )
    )


def print_memory_planning_info(
    executorch_prog: ExecutorchProgramManager,
    memory_config: MemoryConfig,
    mode: CompileMode,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    log_level: int = logging.INFO,
) -> None:
    """Upstream's function: log the per-memory table and the total-peak table.

    The per-memory table has upstream's four columns with upstream's numbers, then a fifth,
    "Peak Live Bytes of Its Tensors" (:func:`peak_live_bytes_per_memory`), leaving out the
    tensors that Cadence's nop ops (cat, slice, select, memory.view, idma_wait) put inside
    another tensor's storage, so that it stays a lower bound on placing those tensors
    there, and a sixth, the peak usage over it (1.000x: no gap, no placement of those
    tensors there uses less; another plan may put fewer there). The total table is
    upstream's exactly. The specs are read once for both tables.
    """
    # Upstream's reports use a fresh MemConstraints, which skips no spec; kept for fidelity.
    mem_constraints = MemConstraints(
        mode=mode, alloc_graph_input=alloc_graph_input, alloc_graph_output=alloc_graph_output
    )
    program = executorch_prog.exported_program()
    table = _graph_spec_table(
        program.graph_module,
        program.graph_signature,
        alloc_graph_input,
        alloc_graph_output,
        mem_constraints,
    )
    usages = peak_memory_usages_per_memory(table)
    shared = storage_sharing_spec_ids(program.graph_module)
    table.shares_storage = np.array([id(spec) in shared for spec in table.labels], dtype=bool)
    live_bounds = peak_live_bytes_per_memory(table)
    names, base_addrs = memory_config.memory_names, memory_config.base_addrs
    per_memory_rows = [
        [
            f"{(i + 1) if names is None else names[i]}",
            None if base_addrs is None else hex(base_addrs[i]),
            memory_config.memory_sizes[i],
            usages[i],
            live_bounds[i],
            f"{usages[i] / live_bounds[i]:.3f}x" if live_bounds[i] > 0 else "-",
        ]
        for i in range(len(usages))
    ]
    # The root logger, as upstream: whoever reads upstream's tables finds ours there.
    logging.log(  # noqa: LOG015
        log_level, "\n" + tabulate(per_memory_rows, headers=PER_MEMORY_HEADERS, tablefmt="outline")
    )

    peak_bytes, peak_node = peak_memory_usage(table, len(program.graph_module.graph.nodes))
    total_rows = [
        ["Peak memory usage across all spaces", f"{peak_bytes} bytes", f"Node {peak_node}"]
    ]
    logging.log(log_level, "\n" + tabulate(total_rows, tablefmt="outline"))  # noqa: LOG015
