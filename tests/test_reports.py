"""Our numpy reports against upstream's Python ones, on real plans (upstream's and ours)
and on synthetic graphs; the peak-live lower bound against a brute-force count."""

from __future__ import annotations

import copy
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.backends.cadence.aot import memory_planning as upstream
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir import EdgeProgramManager, memory
from executorch.exir.tensor import TensorSpec
from lowered_models import PLANNERS, edge_program, memory_config_for, plan_model

from cadence_memplan import stats
from cadence_memplan.cadence import reports
from cadence_memplan.cadence.lowering import program_table

pytestmark = pytest.mark.executorch

REPORT_FUNCTIONS = ("find_peak_memory_usages_per_memory", "find_peak_memory_usage")


# --------------------------------------------------------------------------- helpers


@dataclass
class FakeProgram:
    """What print_memory_planning_info reads of an ExecutorchProgramManager."""

    graph_module: Any
    graph_signature: Any = None

    def exported_program(self) -> FakeProgram:
        return self


def log_tables(
    print_info: Callable[..., None],
    program: Any,
    memory_config: MemoryConfig,
    alloc_graph_io: bool,
    caplog: pytest.LogCaptureFixture,
) -> list[str]:
    caplog.clear()
    with caplog.at_level(logging.INFO):
        print_info(program, memory_config, CompileMode.DEFAULT, alloc_graph_io, alloc_graph_io)
    return [record.getMessage() for record in caplog.records if record.name == "root"]


def table_rows(table: str) -> list[list[str]]:
    """The cells of a tabulate "outline" table, header row included."""
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("|")
    ]


def assert_same_tables(
    program: Any, memory_config: MemoryConfig, alloc_graph_io: bool, caplog: Any
) -> list[list[str]]:
    """Upstream's numbers in upstream's columns, then ours; the total table identical.
    Returns our per-memory rows (without the header)."""
    theirs = log_tables(
        upstream.print_memory_planning_info, program, memory_config, alloc_graph_io, caplog
    )
    ours = log_tables(
        reports.print_memory_planning_info, program, memory_config, alloc_graph_io, caplog
    )
    assert len(theirs) == len(ours) == 2
    their_rows, our_rows = table_rows(theirs[0]), table_rows(ours[0])
    assert [row[:4] for row in our_rows] == their_rows
    assert our_rows[0][4:] == list(reports.PER_MEMORY_HEADERS[4:])
    for row in our_rows[1:]:  # usage / peak live, from the two columns before it
        usage, bound = int(row[3]), int(row[4])
        assert row[5] == (f"{usage / bound:.3f}x" if bound > 0 else "-")
    assert ours[1] == theirs[1]
    return our_rows[1:]


def brute_force_peak_live(specs: list[TensorSpec]) -> list[int]:
    """For every memory and node: the sizes of the tensors alive there, summed."""
    placed = [s for s in specs if s.mem_id is not None]
    memory_count = max((s.mem_id for s in placed), default=0)
    peaks = [0] * (memory_count + 1)
    times = {t for s in placed if s.lifetime[0] is not None for t in s.lifetime}
    for mem_id in range(1, memory_count + 1):
        for node in times:
            alive = sum(
                s.allocated_memory
                for s in placed
                if s.mem_id == mem_id
                and s.lifetime[0] is not None
                and s.lifetime[0] <= node <= s.lifetime[1]
            )
            peaks[mem_id] = max(peaks[mem_id], alive)
    return peaks[1:]


# --------------------------------------------------------------------------- real plans


@pytest.mark.parametrize("alloc_graph_io", [True, False], ids=["io_allocated", "io_not_allocated"])
@pytest.mark.parametrize("planner", list(PLANNERS))
@pytest.mark.parametrize(
    "name", ["mlp", "cat_slice_cnn", "transformer_encoder", "depthwise_transposed_cnn"]
)
def test_reports_on_real_plans(
    lowered: dict[str, EdgeProgramManager],
    caplog: pytest.LogCaptureFixture,
    name: str,
    planner: str,
    alloc_graph_io: bool,
) -> None:
    memory_config = memory_config_for("three_level_tight", lowered, name, alloc_graph_io)
    run = plan_model(
        edge_program(lowered, name),
        PLANNERS[planner],
        memory_config,
        CompileMode.DEFAULT,
        1,
        alloc_graph_io,
    )
    exported = run.program.exported_program()
    arguments = (exported.graph_module, exported.graph_signature, alloc_graph_io, alloc_graph_io)
    for constraints in (None, run.constraints):
        for function in REPORT_FUNCTIONS:
            assert getattr(reports, function)(*arguments, constraints) == getattr(
                upstream, function
            )(*arguments, constraints), (function, constraints)

    # With the planning constraints, the tensors placed relative to others (sharing their
    # storage on purpose) are left out, so the bound holds against the plan.
    bounds = reports.find_peak_live_bytes_per_memory(*arguments, run.constraints)
    usages = reports.find_peak_memory_usages_per_memory(*arguments, run.constraints)
    specs = list(
        upstream.collect_specs_from_graph_module(*arguments)  # upstream's own selection
    )
    kept = [s for s in specs if not run.constraints.skipped_spec(s)]
    assert bounds == brute_force_peak_live(kept)
    assert len(bounds) == len(usages) == 3
    assert all(0 < bound <= usage for bound, usage in zip(bounds, usages, strict=True))

    # The printed bound has no constraints to go by; it leaves out the nops' aliases itself.
    rows = assert_same_tables(run.program, memory_config, alloc_graph_io, caplog)
    printed_bounds = [int(row[4]) for row in rows]
    assert printed_bounds == bounds
    # The command line's table goes by the same definition of "shares storage".
    table, _ = program_table(run.program, alloc_graph_io, alloc_graph_io)
    assert [stat.peak_live_bytes for stat in stats.memory_stats(table, 3)] == printed_bounds
    assert reports.find_peak_live_bytes_per_memory(*arguments, None) == brute_force_peak_live(specs)


# --------------------------------------------------------------------------- synthetic


def synthetic_graph(
    rng: random.Random, tensor_count: int, memory_count: int = 3
) -> tuple[torch.fx.Graph, list[TensorSpec]]:
    """memory.alloc nodes carrying placed specs with random sizes and lifetimes, some empty
    (start > end), some without a lifetime, some of size 0."""
    graph = torch.fx.Graph()
    prototypes = [TensorSpec(torch.uint8, torch.Size([size])) for size in (0, 1, 7, 16, 100, 333)]
    specs = []
    for index in range(tensor_count):
        spec = copy.copy(rng.choice(prototypes))  # TensorSpec() is slow; copies are not
        start = rng.randint(0, tensor_count - 1)
        kind = rng.random()
        if kind < 0.05:
            spec.lifetime = [None, None]
        elif kind < 0.1:
            spec.lifetime = [start, max(0, start - rng.randint(1, 3))]
        else:
            spec.lifetime = [start, min(tensor_count - 1, start + rng.randint(0, 20))]
        spec.mem_id = rng.randint(1, memory_count)
        spec.mem_offset = rng.randint(0, 1000)
        node = graph.create_node("call_function", memory.alloc, (), {}, name=f"alloc_{index}")
        node.meta["spec"] = spec
        specs.append(spec)
    graph.output(None)
    return graph, specs


class GraphOnly:
    """The reports read only ``graph_module.graph``; a GraphModule would compile a
    Python function of every node, which takes long at 10^5 nodes."""

    def __init__(self, graph: torch.fx.Graph) -> None:
        self.graph = graph


@pytest.mark.parametrize("seed", range(40))
def test_synthetic_reports_match_upstream_and_brute_force(
    seed: int, caplog: pytest.LogCaptureFixture
) -> None:
    rng = random.Random(seed)
    graph, specs = synthetic_graph(rng, rng.randint(1, 60), memory_count=rng.randint(1, 4))
    graph_module = GraphOnly(graph)
    constraints = MemConstraints()
    for spec in specs[::7]:  # pretend some were placed relative to others
        constraints._relative_placement_constraint[id(spec)] = None  # type: ignore[assignment]
    for mem_constraints in (None, constraints):
        arguments = (graph_module, None, True, True, mem_constraints)
        for function in REPORT_FUNCTIONS:
            assert getattr(reports, function)(*arguments) == getattr(upstream, function)(*arguments)
        kept = [s for s in specs if mem_constraints is None or not mem_constraints.skipped_spec(s)]
        expected = brute_force_peak_live(kept)
        assert reports.find_peak_live_bytes_per_memory(*arguments) == expected

    memory_count = max(s.mem_id for s in specs)
    memory_config = MemoryConfig(
        [1 << 20] * memory_count,
        memory_names=[f"m{i}" for i in range(memory_count)],
        base_addrs=[0x1000 * i for i in range(memory_count)],
    )
    assert_same_tables(FakeProgram(graph_module), memory_config, True, caplog)


def test_peak_live_bound_counts_inclusive_lifetimes() -> None:
    """Hand-checked: lifetimes [0, 2] and [2, 4] share node 2; [5, 4] is never alive."""
    sizes_and_lifetimes = [(10, [0, 2]), (20, [2, 4]), (40, [5, 4]), (5, [3, 3])]
    graph = torch.fx.Graph()
    for index, (size, lifetime) in enumerate(sizes_and_lifetimes):
        spec = TensorSpec(torch.uint8, torch.Size([size]))
        spec.alignment = 1
        spec.lifetime, spec.mem_id, spec.mem_offset = lifetime, 1, 0
        node = graph.create_node("call_function", memory.alloc, (), {}, name=f"alloc_{index}")
        node.meta["spec"] = spec
    graph.output(None)
    assert reports.find_peak_live_bytes_per_memory(GraphOnly(graph), None, True, True) == [30]


def test_unplanned_spec_is_reported() -> None:
    graph = torch.fx.Graph()
    node = graph.create_node("call_function", memory.alloc, (), {}, name="alloc")
    node.meta["spec"] = TensorSpec(torch.uint8, torch.Size([4]))
    graph.output(None)
    with pytest.raises(ValueError, match="not memory planned"):
        reports.find_peak_memory_usages_per_memory(GraphOnly(graph), None, True, True)


class CountingSpec(TensorSpec):
    """Counts reads of ``allocated_memory``, which TensorSpec computes on every access."""

    reads = 0

    @property
    def allocated_memory(self) -> int:
        CountingSpec.reads += 1
        return super().allocated_memory


def test_print_reads_each_spec_once(caplog: pytest.LogCaptureFixture) -> None:
    graph, specs = synthetic_graph(random.Random(1), 200)
    for node, spec in zip(graph.nodes, specs, strict=False):
        counting = CountingSpec(torch.uint8, torch.Size([spec.allocated_memory]))
        counting.lifetime, counting.mem_id, counting.mem_offset = (
            spec.lifetime,
            spec.mem_id,
            spec.mem_offset,
        )
        node.meta["spec"] = counting
    CountingSpec.reads = 0
    log_tables(
        reports.print_memory_planning_info,
        FakeProgram(GraphOnly(graph)),
        MemoryConfig([1 << 20] * 3),
        True,
        caplog,
    )
    assert CountingSpec.reads == len(specs)


def test_reports_at_a_hundred_thousand_tensors(caplog: pytest.LogCaptureFixture) -> None:
    """At 10^5 tensors the vectorised reports still print upstream's numbers (their speed
    is bench/test_reports.py's)."""
    tensor_count = 100_000
    graph, _ = synthetic_graph(random.Random(7), tensor_count)
    program = FakeProgram(GraphOnly(graph))
    config = MemoryConfig([1 << 20] * 3)
    ours = log_tables(reports.print_memory_planning_info, program, config, True, caplog)
    theirs = log_tables(upstream.print_memory_planning_info, program, config, True, caplog)
    assert [row[:4] for row in table_rows(ours[0])] == table_rows(theirs[0])
    assert ours[1] == theirs[1]
