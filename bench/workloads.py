"""Benchmark workloads and the implementations timed on them, shared by bench/table.py and
the pytest-benchmark suites (bench/test_instances.py, test_scaling.py, test_models.py).

A workload is a planning problem (inclusive lifetimes, sizes, a memory hierarchy), made
lazily: synthetic graphs, the public MiniMalloc instances in ``../shared/data/planning-
instances`` (never copied into the repository) and transformer encoders exported through
torch.export and executorch's ``to_edge``.

Memory hierarchies:

* synthetic graphs (also one of 40,000 tensors of which 12% are long-lived: each lives
  from its start to a uniformly drawn later node, so about 1,600 are alive at once) and
  exported models: a Cadence-like three levels, 256 KiB (alignment 16),
  4 MiB (64), 1 GiB (64), as ``bench/conftest.py`` and ``python -m cadence_memplan``;
* real/ instances (tensors of up to 9.4 GB, peaks of up to 497 GB): a fast memory of a
  quarter of the instance's peak-live bound (alignment 16), then one of 2^50 bytes (64),
  so planning never fails and the fast memory fills up and fragments, as on a DSP;
* challenging/ instances: the capacity in the file name (alignment 1; MiniMalloc knows a
  packing that fits, the greedy placers do not find it), then an overflow memory as big
  as all buffers together.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

import cadence_memplan
from cadence_memplan import reference
from cadence_memplan.io.minimalloc import capacity_from_filename, read_minimalloc_csv
from cadence_memplan.stats import peak_live_bytes
from cadence_memplan.synthetic import synthetic_graph

__all__ = [
    "CADENCE_ALIGNMENTS",
    "CADENCE_MEMORY_SIZES",
    "IMPLEMENTATIONS",
    "INSTANCES",
    "PYTHON_IMPLEMENTATIONS",
    "PYTHON_MAX_TENSORS",
    "Workload",
    "benchmark_cell",
    "instance_workloads",
    "long_lived_graph",
    "long_lived_workloads",
    "model_workloads",
    "prepare",
    "synthetic_workloads",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
INSTANCES = REPO_ROOT.parent / "shared" / "data" / "planning-instances"

CADENCE_MEMORY_SIZES = [256 << 10, 4 << 20, 1 << 30]
CADENCE_ALIGNMENTS = [16, 64, 64]
SYNTHETIC_COUNTS = (100, 1_000, 2_000, 10_000, 100_000, 1_000_000)
MODEL_DEPTHS = (4, 16, 32)


@dataclass
class Workload:
    """One planning problem; ``make`` returns (starts, ends, sizes, memory_sizes, alignments)
    and, for exported models, the graph's own TensorSpecs."""

    kind: str
    name: str
    make: Callable[[], tuple[Any, ...]] = field(repr=False)

    @cached_property
    def problem(self) -> tuple[Any, ...]:
        return self.make()

    @property
    def arrays(self) -> tuple[npt.NDArray[np.int64], ...]:
        return self.problem[:3]

    @property
    def memory_sizes(self) -> list[int]:
        return self.problem[3]

    @property
    def alignments(self) -> list[int]:
        return self.problem[4]

    @property
    def tensor_count(self) -> int:
        return len(self.arrays[0])

    @cached_property
    def specs(self) -> list[Any]:
        """TensorSpecs whose lifetime and ``allocated_memory`` are the arrays'."""
        if len(self.problem) > 5:
            return self.problem[5]
        return tensor_specs(*self.arrays)

    def validate(self, mem_ids: Any, offsets: Any) -> None:
        problem = cadence_memplan.validate(
            *self.arrays, mem_ids, offsets, self.memory_sizes, self.alignments
        )
        assert problem is None, f"{self.name}: invalid plan: {problem}"


def synthetic_workloads(
    counts: tuple[int, ...] = SYNTHETIC_COUNTS, live_tensors: float = 32
) -> Iterator[Workload]:
    for count in counts:
        yield Workload(
            "synthetic",
            f"synthetic n={count:,}",
            lambda count=count: (
                *synthetic_graph(count, live_tensors=live_tensors),
                CADENCE_MEMORY_SIZES,
                CADENCE_ALIGNMENTS,
            ),
        )


LONG_LIVED_COUNT = 40_000
LONG_LIVED_FRACTION = 0.12


def long_lived_graph(
    count: int = LONG_LIVED_COUNT, fraction: float = LONG_LIVED_FRACTION, seed: int = 1
) -> tuple[npt.NDArray[np.int64], ...]:
    """``synthetic_graph(count)`` with ``fraction`` of its tensors, drawn at random, living
    from their start to a uniformly drawn later node: thousands alive at once, as in the
    real instances, on an otherwise short-lived graph."""
    starts, ends, sizes = synthetic_graph(count)
    rng = np.random.default_rng(seed)
    chosen = rng.random(count) < fraction
    last = max(count - 1, 0)
    ends = ends.copy()
    ends[chosen] = rng.integers(starts[chosen], last, endpoint=True)
    return starts, ends, sizes


def long_lived_workloads() -> Iterator[Workload]:
    yield Workload(
        "long-lived",
        f"long-lived n={LONG_LIVED_COUNT:,}",
        lambda: (*long_lived_graph(), CADENCE_MEMORY_SIZES, CADENCE_ALIGNMENTS),
    )


def _instance_problem(path: Path) -> tuple[Any, ...]:
    instance = read_minimalloc_csv(path)
    capacity = capacity_from_filename(path)
    if capacity is not None:
        memory_sizes = [capacity, max(1, int(instance.sizes.sum()))]
        alignments = [1, 1]
    else:
        peak_live = peak_live_bytes(instance.starts, instance.ends, instance.sizes)
        memory_sizes = [max(1, peak_live // 4), 1 << 50]
        alignments = [16, 64]
    return (*instance[1:], memory_sizes, alignments)


def instance_workloads(folders: tuple[str, ...] = ("real", "challenging")) -> Iterator[Workload]:
    """The public instances, smallest first; nothing when the data folder is absent."""
    for folder in folders:
        paths = sorted((INSTANCES / folder).glob("*.csv"), key=lambda p: p.stat().st_size)
        for path in paths:
            yield Workload(
                folder, f"{folder}/{path.stem}", lambda path=path: _instance_problem(path)
            )


def export_encoder_specs(depth: int) -> list[Any]:
    """TensorSpecs of a transformer encoder (d_model 256, 4 heads, sequence 128) as exir
    plans them: torch.export, ``to_edge``, spec propagation and lifetimes. Graph inputs
    (weights and the input) are left out, as upstream's Cadence pipeline does not plan
    constants; outputs are kept."""
    import torch
    from executorch.exir import to_edge
    from executorch.exir.memory_planning import (
        collect_specs_from_nodes,
        update_all_tensors_lifetime,
    )
    from executorch.exir.passes import SpecPropPass

    from cadence_memplan.models import build_model

    model, inputs = build_model("encoder", layers=depth, width=256, tokens=128, feedforward=1024)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
    program = to_edge(exported).exported_program()
    graph_module = SpecPropPass()(program.graph_module).graph_module
    update_all_tensors_lifetime(graph_module, program.graph_signature)
    return list(
        collect_specs_from_nodes(
            graph_module.graph.nodes,
            program.graph_signature,
            do_assertion=False,
            ignore_graph_input=True,
            ignore_graph_output=False,
        )
    )


def _model_problem(depth: int) -> tuple[Any, ...]:
    specs = export_encoder_specs(depth)
    starts = np.array([spec.lifetime[0] for spec in specs], dtype=np.int64)
    ends = np.array([spec.lifetime[1] for spec in specs], dtype=np.int64)
    sizes = np.array([spec.allocated_memory for spec in specs], dtype=np.int64)
    return starts, ends, sizes, CADENCE_MEMORY_SIZES, CADENCE_ALIGNMENTS, specs


def model_workloads(depths: tuple[int, ...] = MODEL_DEPTHS) -> Iterator[Workload]:
    for depth in depths:
        yield Workload("model", f"encoder depth {depth}", lambda depth=depth: _model_problem(depth))


def tensor_specs(starts: Any, ends: Any, sizes: Any) -> list[Any]:
    """One uint8 TensorSpec per tensor (alignment 1, so ``allocated_memory`` is its size).

    TensorSpec's constructor costs ~0.2 ms, too slow for 10^6 specs, so each spec is a
    copy of one template's attributes with its own shape and lifetime. Planning reads
    only those two (and writes mem_id/mem_offset, which each spec owns)."""
    import torch
    from executorch.exir.tensor import TensorSpec

    template = TensorSpec(torch.uint8, torch.Size([1]))
    template.alignment = 1
    attributes = vars(template)
    specs = []
    for start, end, size in zip(starts.tolist(), ends.tolist(), sizes.tolist(), strict=True):
        spec = TensorSpec.__new__(TensorSpec)
        spec.__dict__.update(attributes)
        spec.shape = torch.Size([size])
        spec.lifetime = [start, end]
        specs.append(spec)
    return specs


# --------------------------------------------------------------------------- implementations
#
# ``prepare(implementation, algorithm, workload)`` returns ``(setup, run, check)``: setup()
# (untimed) readies a round, run() is what is timed, check(result) asserts the plan is valid.


def _reset(specs: list[Any]) -> None:
    # The heuristic keeps an incoming mem_offset, so every round starts from unplanned specs.
    for spec in specs:
        spec.mem_id = None
        spec.mem_offset = None


def _spec_based(algo_class: type, workload: Workload) -> tuple[Callable, Callable, Callable]:
    from executorch.backends.cadence.aot.memory_constraints import MemConstraints
    from executorch.backends.cadence.aot.memory_planning_algo import MemoryPlanningState
    from executorch.backends.cadence.aot.utils import MemoryConfig

    specs = workload.specs
    config = MemoryConfig(list(workload.memory_sizes), memory_alignments=list(workload.alignments))
    round_objects: dict[str, Any] = {}

    def setup() -> None:
        _reset(specs)
        round_objects["state"] = MemoryPlanningState(config)
        round_objects["algo"] = algo_class(config)

    def run() -> list[Any]:
        round_objects["algo"].plan(specs, None, None, round_objects["state"], MemConstraints())
        return specs

    def check(result: list[Any]) -> None:
        workload.validate([s.mem_id for s in result], [s.mem_offset for s in result])

    return setup, run, check


def _arrays_based(planner: Callable, algorithm: str, workload: Workload) -> tuple[Callable, ...]:
    def run() -> Any:
        return planner(
            *workload.arrays, workload.memory_sizes, workload.alignments, algorithm=algorithm
        )

    def check(result: Any) -> None:
        workload.validate(result.mem_ids, result.offsets)

    return (lambda: None), run, check


def _naive_scan(algorithm: str, workload: Workload) -> tuple[Callable, ...]:
    """The simplest correct native planner: our core with every memory scanned in offset
    order, as TFLM's planner and TFLite's greedy_by_size do (``occupancy="scan"``)."""

    def plan_by_scan(*args: Any, **kwargs: Any) -> Any:
        return cadence_memplan.plan(*args, **kwargs, occupancy="scan")

    return _arrays_based(plan_by_scan, algorithm, workload)


def _marshalling_floor(algorithm: str, workload: Workload) -> tuple[Callable, ...]:
    """The least any TensorSpec-based plan() must do: read each spec's lifetime and
    ``allocated_memory`` once, and write a (mem_id, mem_offset) back. The values written
    are the core's plan, computed untimed."""
    specs = workload.specs
    planned = cadence_memplan.plan(
        *workload.arrays, workload.memory_sizes, workload.alignments, algorithm=algorithm
    )

    def run() -> list[Any]:
        starts, ends, sizes = [], [], []
        for spec in specs:
            lifetime = spec.lifetime
            starts.append(lifetime[0])
            ends.append(lifetime[1])
            sizes.append(spec.allocated_memory)
        for spec, mem_id, offset in zip(
            specs, planned.mem_ids.tolist(), planned.offsets.tolist(), strict=True
        ):
            spec.mem_id = mem_id
            spec.mem_offset = offset
        return specs

    def check(result: list[Any]) -> None:
        workload.validate([s.mem_id for s in result], [s.mem_offset for s in result])

    return (lambda: _reset(specs)), run, check


def prepare(implementation: str, algorithm: str, workload: Workload) -> tuple[Callable, ...]:
    if implementation == "core":
        return _arrays_based(cadence_memplan.plan, algorithm, workload)
    if implementation == "reference":
        return _arrays_based(reference.plan, algorithm, workload)
    if implementation == "naive":
        return _naive_scan(algorithm, workload)
    if implementation == "floor":
        return _marshalling_floor(algorithm, workload)
    if implementation == "upstream":
        from executorch.backends.cadence.aot import memory_planning as upstream

        classes = {
            "position": upstream.PositionBasedGreedyWithHierarchy,
            "heuristic": upstream.GreedyWithHeuristic,
        }
        return _spec_based(classes[algorithm], workload)
    if implementation == "drop-in":
        classes = {
            "position": cadence_memplan.PositionBasedGreedyWithHierarchy,
            "heuristic": cadence_memplan.GreedyWithHeuristic,
        }
        return _spec_based(classes[algorithm], workload)
    raise ValueError(f"unknown implementation {implementation!r}")


# In table order; the Python ones are quadratic and run under the per-cell time budget.
IMPLEMENTATIONS = ("upstream", "reference", "naive", "core", "drop-in", "floor")
PYTHON_IMPLEMENTATIONS = ("upstream", "reference")


def time_once(setup: Callable, run: Callable) -> tuple[float, Any]:
    setup()
    began = time.perf_counter()
    result = run()
    return time.perf_counter() - began, result


# Largest tensor count at which the pytest suites time each Python implementation; past it
# one round takes minutes (bench/table.py times them under a budget instead).
PYTHON_MAX_TENSORS = {"upstream": 2_000, "reference": 20_000}


def benchmark_cell(benchmark: Any, implementation: str, algorithm: str, workload: Workload) -> None:
    """One pytest-benchmark measurement; checks the plan, never asserts a time."""
    import pytest

    if workload.tensor_count > PYTHON_MAX_TENSORS.get(implementation, workload.tensor_count):
        pytest.skip(f"{implementation} takes minutes at {workload.tensor_count:,} tensors")
    setup, run, check = prepare(implementation, algorithm, workload)
    rounds = 1 if implementation in PYTHON_IMPLEMENTATIONS else 5
    benchmark.group = f"{workload.name} {algorithm}"
    check(benchmark.pedantic(run, setup=setup, rounds=rounds, iterations=1))
