"""``cadence-memplan`` / ``python -m cadence_memplan``: plan a model or an instance, report it.

    cadence-memplan plan [INPUT] [--memory 256KiB:16,4MiB:64,1GiB:64] [--algo heuristic]
                         [--plot map.png] [--out plan.json] [--pte model.pte] [--compare]

INPUT is a ``torch.export`` archive (``.pt2``), a MiniMalloc CSV instance (``.csv``) or a
built-in name (``--list-models``). Models go ``torch.export`` -> ``to_edge`` ->
``to_executorch`` with :class:`cadence_memplan.cadence.CadenceMemoryPlanning` as the memory
planning pass, so the reported plan is exactly the program's; CSV instances and the
synthetic graphs are planned with the array API (numpy only, no torch needed).

Exit codes: 0 planned, 1 planning failed (a tensor fits nowhere, lowering failed, an
output could not be written), 2 usage error (bad option, missing or unreadable input).
Errors are one line on stderr, ``cadence-memplan: error: ...``; ``--debug`` adds the
traceback.

Memory config files (``--memory-config``), JSON or TOML, list memories fastest first::

    {"memories": [
        {"name": "dtcm", "size": "256KiB", "alignment": 16, "base_address": "0x10000000"},
        {"name": "sram", "size": 4194304, "alignment": 64},
        {"name": "dram", "size": "1GiB", "alignment": 64, "base_address": 2147483648}
    ]}

    # TOML
    [[memories]]
    name = "dtcm"
    size = "256KiB"
    alignment = 16
    base_address = "0x10000000"

``size`` (required) and ``alignment`` (default 1, as upstream's ``MemoryConfig``) are
integers or strings with a unit (B, KiB, MiB, GiB); ``name`` defaults to the memory id;
``base_address`` is an integer or a ``0x`` string and is only printed.

Plan files (``--out``; read back with :func:`read_plan`) hold one row per tensor: ``name``
(the node, with ``[i]`` for the i-th output of a multi-output node, or the CSV id),
``mem_id`` (1 = fastest), ``offset``, ``size`` (bytes) and the inclusive lifetime
``start``, ``end`` (node indices). JSON also records the memories and the algorithm.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import csv
import json
import logging
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from . import ALGORITHMS, MAX_MEMORIES, PlanningError, __version__, plan, validate
from .minimalloc import read_minimalloc_csv
from .synthetic import synthetic_graph
from .usage import peak_live_bytes_per_memory, peak_usage_over_time, peak_usage_per_memory

__all__ = [
    "BUILTIN_INPUTS",
    "DEFAULT_MEMORY_SPEC",
    "CliError",
    "Memory",
    "MemoryStats",
    "PlannedTensors",
    "main",
    "memory_stats",
    "overall_peak",
    "parse_memory_spec",
    "parse_size",
    "plot_memory_map",
    "read_memory_config",
    "read_plan",
    "write_plan",
]

PROG = "cadence-memplan"
DEFAULT_MEMORY_SPEC = "256KiB:16,4MiB:64,1GiB:64"
# Names for the default hierarchy (the one __main__ used to print): fastest first.
DEFAULT_MEMORY_NAMES = ("fast", "near", "far")
DEFAULT_INPUT = "encoder"
EXIT_PLANNING_FAILED = 1
EXIT_USAGE = 2

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}
_SIZE = re.compile(r"\s*([0-9]+)\s*([A-Za-z]*)\s*")
_PLAN_COLUMNS = ("name", "mem_id", "offset", "size", "start", "end")


class CliError(Exception):
    """A failure reported as one line on stderr with ``exit_code`` (2 usage, 1 planning)."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


# --------------------------------------------------------------------------- memories


@dataclass(frozen=True)
class Memory:
    """One memory of the hierarchy; ``mem_id`` is its 1-based position, fastest first."""

    name: str
    size: int
    alignment: int
    base_address: int | None = None


def parse_size(text: str | int, what: str) -> int:
    """``256KiB`` -> 262144; units B, KiB, MiB, GiB (any case) or none; must be > 0."""
    if isinstance(text, bool):
        raise CliError(f"{what}: expected a size, got {text!r}")
    if isinstance(text, int):
        value = text
    else:
        match = _SIZE.fullmatch(str(text))
        unit = match.group(2).lower() if match else ""
        if not match or unit not in _UNITS:
            raise CliError(
                f"{what}: {text!r} is not a size (an integer with an optional unit"
                " B, KiB, MiB or GiB, e.g. 256KiB)"
            )
        value = int(match.group(1)) * _UNITS[unit]
    if value <= 0:
        raise CliError(f"{what}: must be positive, got {text!r}")
    return value


def _check_memory_count(memories: Sequence[Memory], where: str) -> None:
    if not 1 <= len(memories) <= MAX_MEMORIES:
        raise CliError(f"{where}: expected 1..{MAX_MEMORIES} memories, got {len(memories)}")


def parse_memory_spec(spec: str) -> list[Memory]:
    """``"256KiB:16,4MiB:64"`` -> memories ``1``, ``2`` (size:alignment each, fastest first)."""
    memories = []
    for index, item in enumerate(spec.split(","), start=1):
        parts = item.split(":")
        if len(parts) != 2:
            raise CliError(
                f"--memory: {item.strip()!r} is not SIZE:ALIGNMENT (e.g. {DEFAULT_MEMORY_SPEC})"
            )
        size = parse_size(parts[0], f"--memory: memory {index} size")
        alignment = parse_size(parts[1], f"--memory: memory {index} alignment")
        memories.append(Memory(str(index), size, alignment))
    _check_memory_count(memories, "--memory")
    return memories


def _parse_address(value: Any, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if isinstance(value, str):
        with contextlib.suppress(ValueError):
            address = int(value, 0)  # 0x..., 0o..., decimal
            if address >= 0:
                return address
    raise CliError(f"{what}: {value!r} is not a non-negative integer or 0x... string")


def read_memory_config(path: str | os.PathLike[str]) -> list[Memory]:
    """Memories from a JSON or TOML file (schema in this module's docstring)."""
    path = Path(path)
    where = f"--memory-config {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise CliError(f"{where}: cannot read: {error.strerror or error}") from error
    try:
        if path.suffix.lower() == ".toml":
            try:
                import tomllib
            except ImportError as error:  # Python 3.10
                raise CliError(f"{where}: TOML needs Python 3.11 or newer; use JSON") from error
            document = tomllib.loads(text)
        elif path.suffix.lower() == ".json":
            document = json.loads(text)
        else:
            raise CliError(f"{where}: expected a .json or .toml file")
    except CliError:
        raise
    except ValueError as error:  # json.JSONDecodeError and tomllib.TOMLDecodeError
        raise CliError(f"{where}: not valid {path.suffix[1:].upper()}: {error}") from error
    entries = document.get("memories") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CliError(f"{where}: expected a top-level 'memories' list")
    memories = []
    for index, entry in enumerate(entries, start=1):
        what = f"{where}: memory {index}"
        if not isinstance(entry, dict):
            raise CliError(f"{what}: expected a table/object, got {entry!r}")
        # Unknown keys are rejected so a typo ("alignement") is not silently ignored.
        unknown = set(entry) - {"name", "size", "alignment", "base_address"}
        if unknown:
            raise CliError(f"{what}: unknown key(s) {sorted(unknown)}")
        if "size" not in entry:
            raise CliError(f"{what}: 'size' is required")
        base = entry.get("base_address")
        memories.append(
            Memory(
                name=str(entry.get("name", index)),
                size=parse_size(entry["size"], f"{what} size"),
                alignment=parse_size(entry.get("alignment", 1), f"{what} alignment"),
                base_address=None if base is None else _parse_address(base, f"{what} base"),
            )
        )
    _check_memory_count(memories, where)
    return memories


# --------------------------------------------------------------------------- plans


@dataclass
class PlannedTensors:
    """One row per planned tensor, plus what the report needs about where it came from.

    Lifetimes are inclusive node indices. ``shares_storage`` marks tensors placed relative
    to another on purpose (upstream's cat/slice/view "nops"): they are drawn and written
    but left out of the peak-live lower bound, which would otherwise count their bytes
    twice.
    """

    names: list[str]
    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    shares_storage: npt.NDArray[np.bool_] | None = None
    node_names: list[str] | None = None
    node_count: int | None = None
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("mem_ids", "offsets", "sizes", "starts", "ends"):
            setattr(self, name, np.asarray(getattr(self, name), dtype=np.int64))
        if self.shares_storage is None:
            self.shares_storage = np.zeros(len(self.names), dtype=bool)

    def same_plan(self, other: PlannedTensors) -> bool:
        return self.names == other.names and all(
            np.array_equal(getattr(self, column), getattr(other, column))
            for column in ("mem_ids", "offsets", "sizes", "starts", "ends")
        )


def write_plan(
    path: str | os.PathLike[str],
    tensors: PlannedTensors,
    memories: Sequence[Memory],
    algorithm: str,
) -> None:
    """Write the per-tensor plan as JSON or CSV, chosen by the file's suffix."""
    path = Path(path)
    rows = zip(
        tensors.names,
        *(
            getattr(tensors, column).tolist()
            for column in ("mem_ids", "offsets", "sizes", "starts", "ends")
        ),
        strict=True,
    )
    if path.suffix.lower() == ".json":
        document = {
            "format": "cadence-memplan plan",
            "version": 1,
            "algorithm": algorithm,
            "memories": [
                {
                    "mem_id": mem_id,
                    "name": memory.name,
                    "size": memory.size,
                    "alignment": memory.alignment,
                    "base_address": memory.base_address,
                }
                for mem_id, memory in enumerate(memories, start=1)
            ],
            "tensors": [dict(zip(_PLAN_COLUMNS, row, strict=True)) for row in rows],
        }
        path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    else:
        with path.open("w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(_PLAN_COLUMNS)
            writer.writerows(rows)


def read_plan(path: str | os.PathLike[str]) -> PlannedTensors:
    """Read a plan written by :func:`write_plan` (JSON or CSV) back into arrays."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        records = json.loads(path.read_text(encoding="utf-8"))["tensors"]
        rows = [[record[column] for column in _PLAN_COLUMNS] for record in records]
    else:
        with path.open(newline="", encoding="utf-8") as file:
            reader = csv.reader(file)
            header = next(reader, None)
            if header is None or tuple(header) != _PLAN_COLUMNS:
                raise ValueError(f"{path}: expected the header {','.join(_PLAN_COLUMNS)}")
            rows = [[row[0], *map(int, row[1:])] for row in reader if row]
    columns = list(zip(*rows, strict=True)) if rows else [[] for _ in _PLAN_COLUMNS]
    return PlannedTensors(
        names=[str(name) for name in columns[0]],
        mem_ids=np.array(columns[1], dtype=np.int64),
        offsets=np.array(columns[2], dtype=np.int64),
        sizes=np.array(columns[3], dtype=np.int64),
        starts=np.array(columns[4], dtype=np.int64),
        ends=np.array(columns[5], dtype=np.int64),
    )


# --------------------------------------------------------------------------- statistics


@dataclass(frozen=True)
class MemoryStats:
    peak_usage: int  # end of the highest byte in use (upstream's "peak memory usage")
    peak_live_bytes: int  # most bytes alive at once in this memory: a lower bound on any plan
    tensor_count: int


def memory_stats(tensors: PlannedTensors, memory_count: int) -> list[MemoryStats]:
    """Per memory id 1..memory_count: peak usage, peak-live lower bound, tensors placed.

    Tensors that share storage with another on purpose leave the lower bound alone.
    """
    usage = peak_usage_per_memory(tensors.mem_ids, tensors.offsets, tensors.sizes, memory_count)
    own = ~tensors.shares_storage
    live = peak_live_bytes_per_memory(
        tensors.mem_ids[own],
        tensors.sizes[own],
        tensors.starts[own],
        tensors.ends[own],
        memory_count,
    )
    counts = np.bincount(tensors.mem_ids, minlength=memory_count + 1)
    return [
        MemoryStats(int(usage[m]), int(live[m]), int(counts[m])) for m in range(1, memory_count + 1)
    ]


def overall_peak(tensors: PlannedTensors) -> tuple[int, int]:
    """(most bytes alive at one node across all memories, first node where that happens).

    Every tensor counts, as in upstream's ``find_peak_memory_usage``.
    """
    alive = tensors.starts <= tensors.ends
    if not alive.any():
        return 0, 0
    node_count = tensors.node_count or int(tensors.ends[alive].max()) + 1
    return peak_usage_over_time(tensors.sizes, tensors.starts, tensors.ends, node_count)


def _format_bytes(count: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} B"


def _format_seconds(seconds: float) -> str:
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    # First column left-aligned (names), the rest right-aligned (numbers).
    widths = [max(len(str(cell)) for cell in column) for column in zip(headers, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = (str(cell) for cell in cells)
        return "  ".join(
            [first.ljust(widths[0])]
            + [cell.rjust(w) for cell, w in zip(rest, widths[1:], strict=True)]
        )

    print(line(headers))
    print("  ".join("-" * width for width in widths))
    for row in rows:
        print(line(row))


def print_report(
    label: str, tensors: PlannedTensors, memories: Sequence[Memory], algorithm: str
) -> None:
    stats = memory_stats(tensors, len(memories))
    print(f"{label}: {len(tensors.names):,} tensors planned with {algorithm!r}")
    rows = [
        [
            memory.name,
            "-" if memory.base_address is None else hex(memory.base_address),
            f"{memory.size:,}",
            f"{stat.peak_usage:,}",
            f"{stat.peak_usage / memory.size:.1%}",
            f"{stat.peak_live_bytes:,}",
            f"{stat.tensor_count:,}",
        ]
        for memory, stat in zip(memories, stats, strict=True)
    ]
    headers = (
        "memory",
        "base address",
        "size (B)",
        "peak usage (B)",
        "used",
        "peak live, lower bound (B)",
        "tensors",
    )
    _print_table(headers, rows)
    peak_bytes, peak_node = overall_peak(tensors)
    node = f"node {peak_node}"
    if tensors.node_names is not None and peak_node < len(tensors.node_names):
        node += f" ({tensors.node_names[peak_node]})"
    print(f"overall peak: {peak_bytes:,} bytes ({_format_bytes(peak_bytes)}) alive at {node}")
    timing_parts = [
        f"{what} {_format_seconds(seconds)}" for what, seconds in tensors.timings.items()
    ]
    print("planning time: " + ", ".join(timing_parts))


# --------------------------------------------------------------------------- array inputs


# name -> (description, kind); kind "model" needs torch + executorch, "arrays" numpy only.
BUILTIN_INPUTS: dict[str, tuple[str, str]] = {
    "encoder": ("transformer encoder, 2 layers, width 128, 64 tokens (the default)", "model"),
    "cnn": ("small CNN: 3 conv layers with ReLU and a concat on 32x32 images", "model"),
    "mlp": ("3-layer perceptron, 32 -> 64 -> 48 -> 10", "model"),
    "synthetic": ("synthetic graph of 10,000 tensors (numpy only)", "arrays"),
    "synthetic-100k": ("synthetic graph of 100,000 tensors (numpy only)", "arrays"),
}
_SYNTHETIC_SIZES = {"synthetic": 10_000, "synthetic-100k": 100_000}


def plan_arrays(
    names: list[str],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    memories: Sequence[Memory],
    algorithm: str,
    placer: Callable[..., Any] = plan,
    placer_label: str = "placer (C++ core)",
) -> PlannedTensors:
    began = time.perf_counter()
    try:
        result = placer(
            starts,
            ends,
            sizes,
            [memory.size for memory in memories],
            [memory.alignment for memory in memories],
            algorithm=algorithm,
        )
    except PlanningError as error:
        raise CliError(f"planning failed: {_joined_lines(error)}", EXIT_PLANNING_FAILED) from error
    seconds = time.perf_counter() - began
    return PlannedTensors(
        names, result.mem_ids, result.offsets, sizes, starts, ends, timings={placer_label: seconds}
    )


# --------------------------------------------------------------------------- models


@contextlib.contextmanager
def _quiet(debug: bool) -> Iterator[None]:
    """Silence torch/torchao/executorch import and lowering chatter unless --debug."""
    if debug:
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


def _builtin_model(name: str) -> tuple[Any, tuple[Any, ...]]:
    import torch

    torch.manual_seed(0)  # random init weights, the same every run
    if name == "encoder":
        layer = torch.nn.TransformerEncoderLayer(
            128, nhead=4, dim_feedforward=256, dropout=0.0, batch_first=True
        )
        model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        return model, (torch.randn(1, 64, 128),)
    if name == "cnn":

        class SmallCnn(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
                self.left = torch.nn.Conv2d(16, 16, 3, padding=1)
                self.right = torch.nn.Conv2d(16, 16, 1)
                self.head = torch.nn.Conv2d(32, 8, 1)

            def forward(self, x: torch.Tensor) -> torch.Tensor:
                x = torch.relu(self.stem(x))
                both = torch.cat([torch.relu(self.left(x)), torch.relu(self.right(x))], dim=1)
                return self.head(both)

        return SmallCnn(), (torch.randn(1, 3, 32, 32),)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 48),
        torch.nn.ReLU(),
        torch.nn.Linear(48, 10),
    )
    return model, (torch.randn(4, 32),)


def _model_stack_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("torch", "executorch"))


def _import_model_stack() -> None:
    try:
        import executorch.backends.cadence.aot.ops_registrations  # noqa: F401
        import torch  # noqa: F401
    except ImportError as error:
        raise CliError(
            f"planning models needs torch and executorch ({error}); install them with"
            " `pip install torch==2.13.0 && pip install cadence-memplan[executorch]`,"
            " or plan a CSV instance or `synthetic`"
        ) from error


def _export(input_name: str, path: Path | None) -> Any:
    import torch

    if path is not None:
        try:
            return torch.export.load(path)
        except Exception as error:
            raise CliError(
                f"cannot read torch.export archive {path}: {_one_line(error)}"
            ) from error
    model, example_inputs = _builtin_model(input_name)
    return torch.export.export(model.eval(), example_inputs, strict=False)


class _TimedPlanning:
    """Wraps a CadenceMemoryPlanning pass: times its placer's plan() calls and the pass."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.placer_seconds = 0.0
        self.pass_seconds = 0.0
        self.constraints: list[Any] = []
        plan_method = inner.algo.plan
        populate_constraints = inner.algo.populate_constraints

        def timed_plan(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return plan_method(*args, **kwargs)
            finally:
                self.placer_seconds += time.perf_counter() - began

        # Kept to learn which specs share storage on purpose (relative placements).
        def recorded_constraints(graph_module: Any) -> Any:
            state, constraints = populate_constraints(graph_module)
            self.constraints.append(constraints)
            return state, constraints

        inner.algo.plan = timed_plan
        inner.algo.populate_constraints = recorded_constraints

    def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
        began = time.perf_counter()
        try:
            return self.inner.run(graph_module, graph_signature)
        finally:
            self.pass_seconds += time.perf_counter() - began


def _lower_and_plan(
    edge: Any,
    planning_class: type,
    memories: Sequence[Memory],
    algorithm: str,
    alloc_inputs: bool,
    alloc_outputs: bool,
    who: str,
) -> tuple[Any, PlannedTensors]:
    from executorch.backends.cadence.aot.pass_utils import CompileMode
    from executorch.backends.cadence.aot.utils import MemoryConfig, MemoryPlanningAlgoFailure
    from executorch.exir import ExecutorchBackendConfig

    names = [memory.name for memory in memories]
    bases = [memory.base_address for memory in memories]
    memory_config = MemoryConfig(
        [memory.size for memory in memories],
        memory_alignments=[memory.alignment for memory in memories],
        memory_names=names,
        base_addrs=None if None in bases else bases,
    )
    planning = _TimedPlanning(
        planning_class(
            memory_config,
            CompileMode.DEFAULT,
            ALGORITHMS.index(algorithm),  # mem_algo: 0 position, 1 heuristic
            alloc_graph_input=alloc_inputs,
            alloc_graph_output=alloc_outputs,
        )
    )
    began = time.perf_counter()
    try:
        program = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    except MemoryPlanningAlgoFailure as error:
        # Ours chains the core's PlanningError, whose message is the clearest one line.
        cause = error.__cause__
        message = _joined_lines(cause) if isinstance(cause, PlanningError) else _one_line(error)
        raise CliError(f"planning failed: {message}", EXIT_PLANNING_FAILED) from error
    total_seconds = time.perf_counter() - began
    tensors = _program_tensors(program, planning, alloc_inputs, alloc_outputs)
    tensors.timings = {
        f"placer ({who})": planning.placer_seconds,
        "memory-planning pass": planning.pass_seconds,
        "whole to_executorch": total_seconds,
    }
    return program, tensors


def _program_tensors(
    program: Any, planning: _TimedPlanning, alloc_inputs: bool, alloc_outputs: bool
) -> PlannedTensors:
    from executorch.exir.memory_planning import collect_specs_from_nodes
    from executorch.exir.tensor import TensorSpec

    exported = program.exported_program()
    nodes = list(exported.graph_module.graph.nodes)
    spec_names: dict[int, str] = {}
    for node in nodes:
        specs = node.meta.get("spec")
        several = isinstance(specs, (list, tuple))
        for index, spec in enumerate(specs if several else [specs]):
            if isinstance(spec, TensorSpec):
                spec_names.setdefault(id(spec), f"{node.name}[{index}]" if several else node.name)
    # The selection upstream's placer and reports use: graph inputs/outputs as configured,
    # constants left out, each spec once, in node order.
    specs = [
        spec
        for spec in collect_specs_from_nodes(
            nodes,
            exported.graph_signature,
            ignore_graph_input=not alloc_inputs,
            ignore_graph_output=not alloc_outputs,
        )
        if spec.mem_id is not None and spec.mem_offset is not None
    ]
    constraints = planning.constraints[-1] if planning.constraints else None
    return PlannedTensors(
        names=[spec_names.get(id(spec), "?") for spec in specs],
        mem_ids=[spec.mem_id for spec in specs],
        offsets=[spec.mem_offset for spec in specs],
        sizes=[spec.allocated_memory for spec in specs],
        starts=[spec.lifetime[0] for spec in specs],
        ends=[spec.lifetime[1] for spec in specs],
        shares_storage=np.array(
            [constraints is not None and constraints.skipped_spec(spec) for spec in specs],
            dtype=bool,
        ),
        node_names=[node.name for node in nodes],
        node_count=len(nodes),
    )


# --------------------------------------------------------------------------- plot


def plot_memory_map(
    path: str | os.PathLike[str],
    tensors: PlannedTensors,
    memories: Sequence[Memory],
    title: str,
) -> None:
    """Draw one panel per memory: x = node index, y = offset, a rectangle per tensor.

    Each panel's rectangles are one PolyCollection, so 10^5 tensors draw in about a second.
    Figure size is fixed (10 x 2.4 inches per panel at 100 dpi) so images are comparable.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import FuncFormatter

    figure, axes = plt.subplots(
        len(memories), 1, figsize=(10, 2.4 * len(memories)), dpi=100, sharex=True, squeeze=False
    )
    colours = plt.get_cmap("tab10").colors
    last_node = int(tensors.ends.max()) + 1 if len(tensors.names) else 1
    peak_bytes, peak_node = overall_peak(tensors)
    stats = memory_stats(tensors, len(memories))
    for mem_id, (axis, memory, stat) in enumerate(
        zip(axes[:, 0], memories, stats, strict=True), start=1
    ):
        chosen = tensors.mem_ids == mem_id
        left = tensors.starts[chosen].astype(float)
        right = tensors.ends[chosen].astype(float) + 1  # inclusive end: the node is used
        bottom = tensors.offsets[chosen].astype(float)
        top = bottom + tensors.sizes[chosen]
        corners = np.stack(
            [np.stack(pair, axis=-1) for pair in ((left, bottom), (left, top), (right, top))]
            + [np.stack((right, bottom), axis=-1)],
            axis=1,
        )
        colour = colours[(mem_id - 1) % len(colours)]
        axis.add_collection(
            PolyCollection(
                corners,
                facecolors=colour,
                edgecolors="black",
                linewidths=0.2 if len(corners) < 2000 else 0.0,
                alpha=0.8,
                rasterized=len(corners) > 5000,  # keeps huge SVGs small
            )
        )
        # Show the used part; near capacity (or when empty) show the whole memory.
        if stat.peak_usage == 0 or stat.peak_usage > 0.8 * memory.size:
            top_of_view = memory.size * 1.02
        else:
            top_of_view = stat.peak_usage * 1.15
        axis.axhline(memory.size, color="red", linewidth=1, linestyle="--", label="capacity")
        axis.set_ylim(0, top_of_view)
        axis.set_xlim(0, last_node)
        axis.axvline(peak_node, color="grey", linewidth=0.8, linestyle=":")
        axis.set_ylabel("offset")
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: _format_bytes(int(value))))
        axis.set_title(
            f"{memory.name}: {stat.tensor_count:,} tensors, peak {_format_bytes(stat.peak_usage)}"
            f" of {_format_bytes(memory.size)} ({stat.peak_usage / memory.size:.1%})",
            fontsize=9,
            loc="left",
        )
    axes[-1, 0].set_xlabel(f"node index (dotted: overall peak, {_format_bytes(peak_bytes)})")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()  # keeps the figure size: only the panels move
    figure.savefig(path)
    plt.close(figure)


# --------------------------------------------------------------------------- comparison


def _first_difference(ours: PlannedTensors, theirs: PlannedTensors) -> str | None:
    if ours.names != theirs.names:
        return f"different tensors: {len(ours.names)} ours, {len(theirs.names)} upstream"
    different = np.flatnonzero((ours.mem_ids != theirs.mem_ids) | (ours.offsets != theirs.offsets))
    if not different.size:
        return None
    i = int(different[0])
    return (
        f"{different.size} placement(s) differ, first {ours.names[i]!r}: ours mem_id"
        f" {ours.mem_ids[i]} offset {ours.offsets[i]}, upstream mem_id {theirs.mem_ids[i]}"
        f" offset {theirs.offsets[i]}"
    )


def _print_comparison(
    ours: PlannedTensors, theirs: PlannedTensors, our_key: str, their_key: str, who: str
) -> bool:
    ours_seconds, their_seconds = ours.timings[our_key], theirs.timings[their_key]
    ratio = their_seconds / ours_seconds if ours_seconds > 0 else float("inf")
    print(
        f"compare: {who} placer {_format_seconds(their_seconds)}, ours"
        f" {_format_seconds(ours_seconds)}: {ratio:,.1f}x faster"
    )
    difference = _first_difference(ours, theirs)
    if difference is None:
        print(f"compare: placements identical ({len(ours.names):,} tensors)")
        return True
    print(f"compare: placements DIFFER: {difference}")
    return False


# --------------------------------------------------------------------------- main


def _one_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


def _joined_lines(error: BaseException) -> str:
    """The core's PlanningError lists each memory's reason on its own line: keep them all."""
    joined = "; ".join(line.strip() for line in str(error).splitlines() if line.strip())
    return joined.replace(":; ", ": ")


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Plan ExecuTorch Cadence tensor memory with cadence_memplan's C++ placers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    planner = commands.add_parser(
        "plan",
        help="plan a model or a MiniMalloc CSV instance and report each memory",
        description="Plan INPUT and print a per-memory table, the overall peak and the time"
        " spent in the placer.",
    )
    planner.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help="a .pt2 archive (torch.export.save), a MiniMalloc .csv, or a built-in name"
        f" (--list-models; default {DEFAULT_INPUT!r})",
    )
    planner.add_argument("--list-models", action="store_true", help="list built-in inputs")
    memory = planner.add_mutually_exclusive_group()
    memory.add_argument(
        "--memory",
        metavar="SIZE:ALIGN,...",
        help=f"memories, fastest first (default {DEFAULT_MEMORY_SPEC}); units B, KiB, MiB, GiB",
    )
    memory.add_argument(
        "--memory-config",
        metavar="FILE",
        help="a .json or .toml file listing memories with names and base addresses",
    )
    planner.add_argument("--algo", choices=ALGORITHMS, default="heuristic", help="placer")
    planner.add_argument(
        "--alloc-inputs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="plan the graph's inputs (models only)",
    )
    planner.add_argument(
        "--alloc-outputs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="plan the graph's outputs (models only)",
    )
    planner.add_argument("--plot", metavar="FILE", help="draw the memory map (.png, .svg, .pdf)")
    planner.add_argument("--out", metavar="FILE", help="write the plan per tensor (.json, .csv)")
    planner.add_argument("--pte", metavar="FILE", help="write the planned program (models only)")
    planner.add_argument(
        "--compare",
        action="store_true",
        help="also plan with upstream's Python placer (models) or cadence_memplan.reference"
        " (CSV, synthetic) and check the placements are identical",
    )
    planner.add_argument(
        "--debug", action="store_true", help="show tracebacks and library warnings"
    )
    return parser


def _resolve_input(text: str | None) -> tuple[str, str, Path | None]:
    """(label, kind, path) with kind "model", "archive", "csv" or "arrays"."""
    if text is None:
        return DEFAULT_INPUT, "model", None
    path = Path(text)
    if path.exists():
        if path.is_dir():
            raise CliError(f"input {text} is a directory, expected a .pt2 or .csv file")
        suffix = path.suffix.lower()
        if suffix == ".pt2":
            return path.name, "archive", path
        if suffix == ".csv":
            return path.name, "csv", path
        raise CliError(
            f"input {text}: unknown file type {suffix or '(none)'}, expected .pt2 or .csv"
        )
    if text in BUILTIN_INPUTS:
        return text, BUILTIN_INPUTS[text][1], None
    if path.suffix or os.sep in text or "/" in text:
        raise CliError(f"input {text}: no such file")
    raise CliError(
        f"input {text!r} is neither a file nor a built-in model (choose from"
        f" {', '.join(BUILTIN_INPUTS)}; see --list-models)"
    )


def _check_output_suffix(path: str | None, option: str, suffixes: Sequence[str]) -> None:
    if path is not None and Path(path).suffix.lower() not in suffixes:
        raise CliError(f"{option} {path}: expected a file ending in {' or '.join(suffixes)}")


def _run_plan(arguments: argparse.Namespace) -> int:
    if arguments.list_models:
        for name, (description, _) in BUILTIN_INPUTS.items():
            print(f"{name:<16}{description}")
        return 0
    label, kind, path = _resolve_input(arguments.input)
    if arguments.input is None and not _model_stack_installed():
        # A numpy-only install still gets a demo from the bare command.
        print(
            f"{PROG}: torch/executorch not installed, planning the synthetic graph instead",
            file=sys.stderr,
        )
        label, kind = "synthetic", "arrays"
    if arguments.memory_config:
        memories = read_memory_config(arguments.memory_config)
    elif arguments.memory:
        memories = parse_memory_spec(arguments.memory)
    else:
        memories = [
            Memory(name, memory.size, memory.alignment)
            for name, memory in zip(
                DEFAULT_MEMORY_NAMES, parse_memory_spec(DEFAULT_MEMORY_SPEC), strict=True
            )
        ]
    _check_output_suffix(arguments.plot, "--plot", (".png", ".svg", ".pdf"))
    _check_output_suffix(arguments.out, "--out", (".json", ".csv"))
    is_model = kind in ("model", "archive")
    if arguments.pte and not is_model:
        raise CliError("--pte needs a model input (a .pt2 archive or a built-in model)")
    algorithm = arguments.algo

    program = None
    comparison_ok = True
    if is_model:
        with _quiet(arguments.debug):
            _import_model_stack()
            from executorch.exir import to_edge

            from .cadence import CadenceMemoryPlanning

            exported = _export(label, path)
            try:
                edge = to_edge(exported)
            except Exception as error:
                raise CliError(
                    f"cannot lower {label} with to_edge: {_one_line(error)}", EXIT_PLANNING_FAILED
                ) from error
            # to_executorch changes the edge program's graph, so upstream gets its own copy.
            upstream_edge = copy.deepcopy(edge) if arguments.compare else None
            program, tensors = _lower_and_plan(
                edge,
                CadenceMemoryPlanning,
                memories,
                algorithm,
                arguments.alloc_inputs,
                arguments.alloc_outputs,
                "C++ core",
            )
            print_report(label, tensors, memories, algorithm)
            if upstream_edge is not None:
                from executorch.backends.cadence.aot.memory_planning import (
                    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
                )

                upstream_program, upstream_tensors = _lower_and_plan(
                    upstream_edge,
                    UpstreamCadenceMemoryPlanning,
                    memories,
                    algorithm,
                    arguments.alloc_inputs,
                    arguments.alloc_outputs,
                    "upstream Python",
                )
                comparison_ok = _print_comparison(
                    tensors,
                    upstream_tensors,
                    "placer (C++ core)",
                    "placer (upstream Python)",
                    "upstream's CadenceMemoryPlanning",
                )
                same_bytes = upstream_program.buffer == program.buffer
                print(f"compare: serialized programs {'identical' if same_bytes else 'DIFFER'}")
                comparison_ok = comparison_ok and same_bytes
    else:
        if kind == "csv":
            try:
                instance = read_minimalloc_csv(path)
            except (OSError, ValueError, UnicodeDecodeError) as error:
                raise CliError(f"cannot read MiniMalloc CSV: {_one_line(error)}") from error
            names = instance.ids.tolist()
            starts, ends, sizes = instance.starts, instance.ends, instance.sizes
        else:
            graph = synthetic_graph(_SYNTHETIC_SIZES[label])
            names = [f"t{index}" for index in range(len(graph.sizes))]
            starts, ends, sizes = graph
        tensors = plan_arrays(names, starts, ends, sizes, memories, algorithm)
        print_report(label, tensors, memories, algorithm)
        if arguments.compare:
            from . import reference

            reference_tensors = plan_arrays(
                names, starts, ends, sizes, memories, algorithm,
                placer=reference.plan, placer_label="placer (reference Python)",
            )  # fmt: skip
            comparison_ok = _print_comparison(
                tensors,
                reference_tensors,
                "placer (C++ core)",
                "placer (reference Python)",
                "cadence_memplan.reference",
            )

    # Relative placements share storage on purpose; every other pair must not collide.
    independent = ~tensors.shares_storage
    problem = validate(
        tensors.starts[independent],
        tensors.ends[independent],
        tensors.sizes[independent],
        tensors.mem_ids[independent],
        tensors.offsets[independent],
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
    )
    print(f"plan check: {problem or 'valid'}")

    try:
        if arguments.out:
            write_plan(arguments.out, tensors, memories, algorithm)
            print(f"wrote plan: {arguments.out}")
        if arguments.pte:
            Path(arguments.pte).write_bytes(program.buffer)
            print(f"wrote program: {arguments.pte} ({len(program.buffer):,} bytes)")
        if arguments.plot:
            try:
                plot_memory_map(arguments.plot, tensors, memories, f"{label} ({algorithm})")
            except ImportError as error:
                raise CliError(
                    f"--plot needs matplotlib ({error}): pip install cadence-memplan[plot]"
                ) from error
            print(f"wrote memory map: {arguments.plot}")
    except OSError as error:
        raise CliError(
            f"cannot write {error.filename}: {error.strerror or error}", EXIT_PLANNING_FAILED
        ) from error
    if problem is not None:
        raise CliError(f"the plan is invalid: {problem}", EXIT_PLANNING_FAILED)
    if not comparison_ok:
        raise CliError("placements differ from the comparison placer", EXIT_PLANNING_FAILED)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 planning failed, 2 usage)."""
    arguments_list = list(sys.argv[1:] if argv is None else argv)
    if arguments_list[:1] not in (["plan"], ["-h"], ["--help"], ["--version"]):
        # `cadence-memplan` alone, or with an input or plan options: plan is the default.
        arguments_list.insert(0, "plan")
    parser = _build_parser()
    arguments = parser.parse_args(arguments_list)
    debug = arguments.debug
    try:
        return _run_plan(arguments)
    except CliError as error:
        if debug:
            raise
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if debug:
            raise
        print(
            f"{PROG}: error: {type(error).__name__}: {_one_line(error)}"
            " (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_PLANNING_FAILED


if __name__ == "__main__":
    sys.exit(main())
