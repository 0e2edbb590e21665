"""Memory-planning reports for Cadence plans, vectorised with numpy.

The same functions as executorch 1.5.x's ``backends/cadence/aot/memory_planning.py``
(same signatures, same numbers), for plans made by upstream's placers or ours:
:func:`find_peak_memory_usages_per_memory`, :func:`find_peak_memory_usage` and
:func:`print_memory_planning_info`. Upstream walks the graph's specs once per report in
Python; here each spec is read once into arrays (:func:`read_spec_table`) and every report
is a few numpy operations, so they stay fast at 10^5 tensors.

New: :func:`find_peak_live_bytes_per_memory`, the most bytes alive at one time among the
tensors placed in each memory. No plan of those tensors in that memory can use fewer
bytes, so it is a lower bound to hold a memory's peak usage against. It sums the tensors'
sizes, so tensors that share storage on purpose (the relative placements of cat, slice
and view "nops") are counted once each; pass the ``MemConstraints`` that planned the graph
to leave those out, as the other reports do. :func:`print_memory_planning_info` has no
constraints to go by and leaves out the aliases of Cadence's nop ops itself.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import torch
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir import ExecutorchProgramManager, memory
from executorch.exir.memory_planning import collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec
from tabulate import tabulate
from torch.export.exported_program import ExportGraphSignature

from . import usage

__all__ = [
    "PER_MEMORY_HEADERS",
    "SpecTable",
    "find_peak_live_bytes_per_memory",
    "find_peak_memory_usage",
    "find_peak_memory_usages_per_memory",
    "peak_live_bytes_per_memory",
    "peak_memory_usage",
    "peak_memory_usages_per_memory",
    "print_memory_planning_info",
    "read_spec_table",
]

# Upstream's four columns, then ours.
PER_MEMORY_HEADERS = (
    "Memory Space",
    "Base Address",
    "Memory Size (Bytes)",
    "Peak Memory Usage (Bytes)",
    "Peak Live Bytes (Lower Bound)",
)

_UNSET = -1  # stands for None in the int64 columns


@dataclass(frozen=True)
class SpecTable:
    """One row per spec: where it was placed, its allocated bytes and its lifetime.

    ``mem_ids``/``offsets`` are -1 where the spec is not placed; ``has_lifetime`` is False
    where ``lifetime[0]`` is None (then ``starts``/``ends`` hold 0).
    """

    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    has_lifetime: npt.NDArray[np.bool_]
    specs: tuple[TensorSpec, ...]

    def require_placed(self) -> None:
        """Raise ``ValueError`` naming the first spec without a mem_id or mem_offset."""
        unplaced = np.flatnonzero((self.mem_ids == _UNSET) | (self.offsets == _UNSET))
        if unplaced.size:
            index = int(unplaced[0])
            raise ValueError(
                f"{unplaced.size} spec(s) are not memory planned, e.g. spec {index}:"
                f" {self.specs[index]!r}"
            )


def read_spec_table(
    specs: Iterable[TensorSpec], mem_constraints: MemConstraints | None = None
) -> SpecTable:
    """Read each spec once (``allocated_memory`` is computed on every access), leaving out
    the specs ``mem_constraints`` skips, as upstream's reports do."""
    kept: list[TensorSpec] = []
    rows: list[tuple[int, int, int, int, int, bool]] = []
    for spec in specs:
        if mem_constraints is not None and mem_constraints.skipped_spec(spec):
            continue
        mem_id, offset, (start, end) = spec.mem_id, spec.mem_offset, spec.lifetime
        has_lifetime = start is not None
        rows.append(
            (
                _UNSET if mem_id is None else mem_id,
                _UNSET if offset is None else offset,
                spec.allocated_memory,
                start if has_lifetime else 0,
                end if has_lifetime else 0,
                has_lifetime,
            )
        )
        kept.append(spec)
    columns = np.array(rows, dtype=np.int64).reshape(len(rows), 6).T
    return SpecTable(
        mem_ids=columns[0],
        offsets=columns[1],
        sizes=columns[2],
        starts=columns[3],
        ends=columns[4],
        has_lifetime=columns[5].astype(bool),
        specs=tuple(kept),
    )


def _graph_spec_table(
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    mem_constraints: MemConstraints | None,
) -> SpecTable:
    # The selection of upstream's collect_specs_from_graph_module.
    specs = collect_specs_from_nodes(
        graph_module.graph.nodes,
        graph_signature,
        ignore_graph_input=not alloc_graph_input,
        ignore_graph_output=not alloc_graph_output,
    )
    return read_spec_table(specs, mem_constraints)


# --------------------------------------------------------------------------- on arrays


def peak_memory_usages_per_memory(table: SpecTable) -> list[int]:
    """Per memory id 1..(largest mem_id), the end of its last byte in use (upstream's number)."""
    table.require_placed()
    if not table.mem_ids.size:
        return []
    memory_count = int(table.mem_ids.max())
    return usage.peak_usage_per_memory(table.mem_ids, table.offsets, table.sizes, memory_count)[
        1:
    ].tolist()


def peak_memory_usage(table: SpecTable, node_count: int) -> tuple[int, int]:
    """Most bytes alive at one node across all memories, and the first node where it occurs.

    Lifetimes are inclusive node indices in ``0..node_count-1``; specs without one count
    nowhere. The same arithmetic as upstream, so the same numbers.
    """
    timed = table.has_lifetime
    return usage.peak_usage_over_time(
        table.sizes[timed], table.starts[timed], table.ends[timed], node_count
    )


def peak_live_bytes_per_memory(table: SpecTable) -> list[int]:
    """Per memory id 1..(largest mem_id), the most bytes alive at one node among its tensors.

    A tensor is alive over its inclusive lifetime; one with start > end or no lifetime is
    never alive.
    """
    table.require_placed()
    if not table.mem_ids.size:
        return []
    memory_count = int(table.mem_ids.max())
    timed = table.has_lifetime
    return usage.peak_live_bytes_per_memory(
        table.mem_ids[timed],
        table.sizes[timed],
        table.starts[timed],
        table.ends[timed],
        memory_count,
    )[1:].tolist()


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
    """Each memory's peak-live lower bound, indexed like
    :func:`find_peak_memory_usages_per_memory`."""
    return peak_live_bytes_per_memory(
        _graph_spec_table(
            graph_module, graph_signature, alloc_graph_input, alloc_graph_output, mem_constraints
        )
    )


# Ops whose output shares its input's storage once Cadence has planned them (upstream's
# memory_constraints.py places them relative to their source); _cat_nop is the other way
# round: its inputs live inside its output.
_ALIAS_OUTPUT_OPS = frozenset(
    {"aten._slice_copy_nop.Tensor_out", "aten._select_copy_nop.int_out", "cadence.idma_wait.out"}
)
_ALIAS_INPUT_OPS = frozenset({"aten._cat_nop.out"})


def _alias_spec_ids(graph_module: torch.fx.GraphModule) -> set[int]:
    """ids of the specs that share another spec's storage on purpose in a planned graph."""
    aliases: set[int] = set()
    for node in graph_module.graph.nodes:
        if node.op != "call_function":
            continue
        target = str(node.target)
        if node.target is memory.view or target in _ALIAS_OUTPUT_OPS:
            aliases.add(id(node.meta.get("spec")))
        elif target in _ALIAS_INPUT_OPS:
            inputs = node.args[0] if node.args else node.kwargs.get("tensors", ())
            aliases.update(id(arg.meta.get("spec")) for arg in inputs)
    return aliases


def _subset(table: SpecTable, keep: npt.NDArray[np.bool_]) -> SpecTable:
    return SpecTable(
        mem_ids=table.mem_ids[keep],
        offsets=table.offsets[keep],
        sizes=table.sizes[keep],
        starts=table.starts[keep],
        ends=table.ends[keep],
        has_lifetime=table.has_lifetime[keep],
        specs=tuple(spec for spec, kept in zip(table.specs, keep.tolist(), strict=True) if kept),
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
    "Peak Live Bytes (Lower Bound)" (:func:`peak_live_bytes_per_memory`), leaving out the
    tensors that Cadence's nop ops (cat, slice, select, memory.view, idma_wait) put inside
    another tensor's storage, so that it stays a lower bound. The total table is upstream's
    exactly. The specs are read once for both tables.
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
    aliases = _alias_spec_ids(program.graph_module)
    live_bounds = peak_live_bytes_per_memory(
        _subset(table, np.array([id(spec) not in aliases for spec in table.specs], dtype=bool))
    )
    names, base_addrs = memory_config.memory_names, memory_config.base_addrs
    per_memory_rows = [
        [
            f"{(i + 1) if names is None else names[i]}",
            None if base_addrs is None else hex(base_addrs[i]),
            memory_config.memory_sizes[i],
            usages[i],
            live_bounds[i],
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
