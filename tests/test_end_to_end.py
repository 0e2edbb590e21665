"""Real models through torch.export, Cadence lowering and ``to_executorch``, planned by
upstream's ``CadenceMemoryPlanning`` and by ours: the serialized programs must be byte
for byte the same, every spec in the same place, and every plan valid.

Also: failures (a plan that cannot fit, bad memory configs), idma load/store/wait and
pinned placements through the pass in two compile modes, and the older API's standalone planning functions.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.memory_planning import (
    GreedyWithHeuristic as UpstreamGreedyWithHeuristic,
)
from executorch.backends.cadence.aot.memory_planning import (
    PositionBasedGreedyWithHierarchy as UpstreamPositionBasedGreedyWithHierarchy,
)
from executorch.backends.cadence.aot.memory_planning_algo import MemoryPlanningState
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import (
    MemoryConfig,
    MemoryPlanningAlgoFailure,
    get_default_memory_config,
)
from executorch.exir import EdgeProgramManager
from executorch.exir.memory_planning import collect_specs_from_nodes
from executorch.exir.pass_base import PassBase, PassResult
from executorch.exir.passes.spec_prop_pass import SpecPropPass
from lowered_models import (
    MEMORY_CONFIG_KINDS,
    MODELS,
    PLANNERS,
    Run,
    assert_valid,
    edge_program,
    memory_config_for,
    node_specs,
    placements,
    plan_model,
    planned_sizes,
    to_executorch,
)

import cadence_memplan
from cadence_memplan.cadence.memory_planning import (
    CadenceMemoryPlanning,
    greedy_by_size_for_offset_calculation_with_hierarchy,
    position_based_greedy_with_hierarchy,
)

pytestmark = pytest.mark.executorch


def assert_same_programs(
    lowered: dict[str, EdgeProgramManager],
    name: str,
    memory_config: MemoryConfig,
    mode: CompileMode,
    mem_algo: int,
    alloc_graph_io: bool,
) -> Run:
    runs = {
        label: plan_model(
            edge_program(lowered, name), planner, memory_config, mode, mem_algo, alloc_graph_io
        )
        for label, planner in PLANNERS.items()
    }
    upstream_gm = runs["upstream"].program.exported_program().graph_module
    ours_gm = runs["ours"].program.exported_program().graph_module
    assert placements(ours_gm) == placements(upstream_gm)
    assert runs["ours"].program.buffer == runs["upstream"].program.buffer
    for run in runs.values():
        assert_valid(run.program, memory_config, run.constraints, alloc_graph_io)
    return runs["ours"]


@pytest.mark.parametrize("alloc_graph_io", [True, False], ids=["io_allocated", "io_not_allocated"])
@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
@pytest.mark.parametrize("config_kind", MEMORY_CONFIG_KINDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_same_program_as_upstream(
    lowered: dict[str, EdgeProgramManager],
    name: str,
    config_kind: str,
    mem_algo: int,
    alloc_graph_io: bool,
) -> None:
    memory_config = memory_config_for(config_kind, lowered, name, alloc_graph_io)
    ours = assert_same_programs(
        lowered, name, memory_config, CompileMode.DEFAULT, mem_algo, alloc_graph_io
    )
    if config_kind == "three_level_tight":
        used = {s.mem_id for _, _, s in node_specs(ours.program.exported_program().graph_module)}
        assert {1, 2, 3} <= used, f"the tight config did not spill to memories 2 and 3: {used}"


@pytest.mark.parametrize("config_kind", MEMORY_CONFIG_KINDS)
@pytest.mark.parametrize("name", list(MODELS))
def test_best_keeps_at_least_as_much_in_fast_memory(
    lowered: dict[str, EdgeProgramManager], name: str, config_kind: str
) -> None:
    """mem_algo=2 (BestOfHierarchy, not upstream's): the program lowers with upstream's
    constraints, every plan is valid, and memory 1 holds at least as many tensor bytes as
    with the better of upstream's placers."""
    memory_config = memory_config_for(config_kind, lowered, name)

    def bytes_in_fast_memory(mem_algo: int) -> int:
        run = plan_model(
            edge_program(lowered, name),
            CadenceMemoryPlanning,
            memory_config,
            CompileMode.DEFAULT,
            mem_algo,
            True,
        )
        specs = assert_valid(run.program, memory_config, run.constraints, True)
        return sum(spec.allocated_memory for spec in specs if spec.mem_id == 1)

    upstream_best = max(bytes_in_fast_memory(mem_algo) for mem_algo in (0, 1))
    assert bytes_in_fast_memory(2) >= upstream_best


@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
@pytest.mark.parametrize("name", ["cat_slice_cnn", "transformer_encoder"])
def test_same_program_as_upstream_in_minimal_mode(
    lowered: dict[str, EdgeProgramManager], name: str, mem_algo: int
) -> None:
    """MINIMAL mode generates no cat/slice/select nop constraints; still the same program."""
    memory_config = memory_config_for("three_level_tight", lowered, name)
    assert_same_programs(lowered, name, memory_config, CompileMode.MINIMAL, mem_algo, True)


def test_both_placers_match_where_they_disagree(lowered: dict[str, EdgeProgramManager]) -> None:
    """On most real graphs first fit and best fit give the same plan, so the tests above
    would not notice ours running the wrong one. On this config the two differ (found by a
    sweep of memory-1 sizes and alignments); each of ours must match its own upstream."""
    memory_config = MemoryConfig([5664, 1 << 24], memory_alignments=[48, 16])
    plans = {}
    for mem_algo in (0, 1):
        ours = assert_same_programs(
            lowered, "transformer_encoder", memory_config, CompileMode.DEFAULT, mem_algo, True
        )
        plans[mem_algo] = placements(ours.program.exported_program().graph_module)
    assert plans[0] != plans[1], "the placers now agree here: pick another config"


def test_cat_and_slice_get_relative_placements(lowered: dict[str, EdgeProgramManager]) -> None:
    """Guards the differential tests above: DEFAULT mode really places cat and slice
    relative to their sources (so our pass ran upstream's constraint code)."""
    run = plan_model(
        edge_program(lowered, "cat_slice_cnn"),
        CadenceMemoryPlanning,
        get_default_memory_config(),
        CompileMode.DEFAULT,
        1,
        True,
    )
    targets = {str(node.target) for node in run.program.exported_program().graph_module.graph.nodes}
    assert "aten._cat_nop.out" in targets
    assert "aten._slice_copy_nop.Tensor_out" in targets
    assert run.constraints._relative_placement_constraint


# --------------------------------------------------------------------------- failures


class RecordingPlanning:
    """Wraps a CadenceMemoryPlanning; snapshots every spec before ``run`` and after it
    raises."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.before: dict[int, tuple[Any, ...]] = {}
        self.after: dict[int, tuple[Any, ...]] = {}

    @staticmethod
    def snapshot(graph_module: torch.fx.GraphModule) -> dict[int, tuple[Any, ...]]:
        """By spec identity: exir's pass gives alloc nodes the specs of their users."""
        return {
            id(spec): (spec.mem_id, spec.mem_offset, copy.copy(spec.lifetime))
            for _, _, spec in node_specs(graph_module)
        }

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> Any:
        self.before = self.snapshot(graph_module)
        try:
            return self.inner.run(graph_module, graph_signature)
        finally:
            self.after = self.snapshot(graph_module)


@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
def test_plan_that_cannot_fit(lowered: dict[str, EdgeProgramManager], mem_algo: int) -> None:
    """Both raise MemoryPlanningAlgoFailure; ours names the tensor and the memory config
    and leaves every spec as it was, where upstream leaves part of the graph placed."""
    # One memory that holds the largest tensor: it is placed, a tensor alive with it fails.
    largest = max(planned_sizes(lowered, "cat_slice_cnn"))
    memory_config = MemoryConfig([largest], memory_alignments=[16], memory_names=["only"])
    recorded = {}
    for label, planner in PLANNERS.items():
        recording = RecordingPlanning(planner(memory_config, CompileMode.DEFAULT, mem_algo))
        with pytest.raises(MemoryPlanningAlgoFailure) as raised:
            to_executorch(edge_program(lowered, "cat_slice_cnn"), recording)
        recorded[label] = (recording, raised.value)

    ours, error = recorded["ours"]
    assert "spec: TensorSpec(" in str(error)
    assert f"memory config: {memory_config}" in str(error)
    assert isinstance(error.__cause__, cadence_memplan.PlanningError)
    assert ours.after == ours.before
    # Upstream placed some tensors before it failed: the guarantee above is ours alone,
    # and this test would notice if the snapshot missed the placements.
    upstream, _ = recorded["upstream"]
    placed_before = {key: state[:2] for key, state in upstream.before.items()}
    assert {key: state[:2] for key, state in upstream.after.items()} != placed_before


BAD_MEMORY_CONFIGS = {
    "zero_size": MemoryConfig([1024, 0], memory_alignments=[16, 16]),
    "negative_size": MemoryConfig([-1], memory_alignments=[16]),
    "zero_alignment": MemoryConfig([1024, 1024], memory_alignments=[16, 0]),
    "negative_alignment": MemoryConfig([1024], memory_alignments=[-16]),
    "fewer_alignments": MemoryConfig([1024, 1024], memory_alignments=[16]),
    "more_alignments": MemoryConfig([1024], memory_alignments=[16, 16]),
    "fewer_names": MemoryConfig([1024, 1024], memory_names=["a"]),
    "more_base_addresses": MemoryConfig([1024], base_addrs=[0, 4096]),
    "no_memories": MemoryConfig([]),
    "float_size": MemoryConfig([1024.0]),  # type: ignore[list-item]
}


@pytest.mark.parametrize("kind", list(BAD_MEMORY_CONFIGS))
def test_bad_memory_config_raises_in_constructor(kind: str) -> None:
    with pytest.raises(ValueError, match="memory_config"):
        CadenceMemoryPlanning(BAD_MEMORY_CONFIGS[kind], CompileMode.DEFAULT, 0)


@pytest.mark.parametrize("mem_algo", [-1, 3, True])
def test_bad_mem_algo_raises_in_constructor(mem_algo: Any) -> None:
    with pytest.raises(ValueError, match="mem_algo"):
        CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, mem_algo)


def test_is_a_drop_in_for_upstreams_class() -> None:
    planning = CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 1)
    assert isinstance(planning, UpstreamCadenceMemoryPlanning)
    assert isinstance(planning.algo, cadence_memplan.GreedyWithHeuristic)
    planning = CadenceMemoryPlanning(get_default_memory_config(), CompileMode.SIZE, 0)
    assert isinstance(planning.algo, cadence_memplan.PositionBasedGreedyWithHierarchy)
    assert planning.algo.mode is CompileMode.SIZE
    # Ours only: mem_algo=2.
    planning = CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 2)
    assert isinstance(planning.algo, cadence_memplan.BestOfHierarchy)


# --------------------------------------------------------------------------- small graphs


def idma_graph() -> torch.fx.GraphModule:
    """add -> idma_load -> idma_wait -> mul -> idma_store -> idma_wait, out-variant ops.

    The idma ops have no fake kernels, so the graph is traced with clone.out in their
    places and retargeted after spec propagation."""
    from executorch.backends.test.graph_builder import GraphBuilder
    from executorch.exir.dialects._ops import ops as exir_ops

    builder = GraphBuilder()

    def out_buffer() -> Any:
        return builder.call_operator(
            op=exir_ops.edge.aten.full.default, args=([4, 8], 0.0), kwargs={"dtype": torch.float32}
        )

    def call(op: Any, *args: Any) -> Any:
        return builder.call_operator(op=op, args=args, kwargs={"out": out_buffer()})

    x = builder.placeholder("x", torch.ones(4, 8))
    added = call(torch.ops.aten.add.out, x, x)
    loaded = call(torch.ops.aten.clone.out, added)
    waited = call(torch.ops.aten.clone.out, loaded)
    multiplied = call(torch.ops.aten.mul.out, waited, waited)
    stored = call(torch.ops.aten.clone.out, multiplied)
    builder.output([call(torch.ops.aten.clone.out, stored)])
    graph_module = SpecPropPass().call(builder.get_graph_module()).graph_module
    idma_ops = iter(
        [
            torch.ops.cadence.idma_load.out,
            torch.ops.cadence.idma_wait.out,
            torch.ops.cadence.idma_store.out,
            torch.ops.cadence.idma_wait.out,
        ]
    )
    for node in graph_module.graph.find_nodes(op="call_function", target=torch.ops.aten.clone.out):
        node.target = next(idma_ops)
    graph_module.recompile()
    return graph_module


def pinned_graph() -> tuple[torch.fx.GraphModule, list[str]]:
    """A chain of adds; returns the graph and its add nodes' names."""
    from executorch.backends.test.graph_builder import GraphBuilder
    from executorch.exir.dialects._ops import ops as exir_ops

    builder = GraphBuilder()
    value = builder.placeholder("x", torch.ones(8, 8))
    previous = value
    for _ in range(5):
        value, previous = (
            builder.call_operator(op=exir_ops.edge.aten.add.Tensor, args=(value, previous)),
            value,
        )
    builder.output([value])
    graph_module = SpecPropPass().call(builder.get_graph_module()).graph_module
    adds = [n.name for n in graph_module.graph.nodes if n.op == "call_function"]
    return graph_module, adds


def pin_adds(offsets: dict[int, tuple[int, int | None]]) -> type:
    """A constraint-generation pass pinning add number k to (mem_id, offset or None)."""

    class PinAdds(PassBase):
        def __init__(self, constraints: MemConstraints) -> None:
            self.constraints = constraints

        def call(self, graph_module: torch.fx.GraphModule) -> PassResult:
            adds = [n for n in graph_module.graph.nodes if n.op == "call_function"]
            for index, (mem_id, offset) in offsets.items():
                self.constraints.add_absolute_placement_constraint(adds[index], mem_id, offset)
            return PassResult(graph_module, False)

    return PinAdds


TWO_MEMORIES = MemoryConfig([1024, 8192], memory_alignments=[16, 64])
COMPILE_MODES = [CompileMode.DEFAULT, CompileMode.MINIMAL]


@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
@pytest.mark.parametrize("mode", COMPILE_MODES, ids=lambda m: m.name)
def test_idma_ops_through_the_pass(mode: CompileMode, mem_algo: int) -> None:
    """idma_load is pinned to memory 1, idma_wait aliases its input, and the pass ends with
    upstream's SimplifyIdmaOpsPass (load/store become idma_copy)."""
    results = {}
    for label, planner in PLANNERS.items():
        graph_module = planner(TWO_MEMORIES, mode, mem_algo)(idma_graph()).graph_module
        results[label] = graph_module
    assert placements(results["ours"]) == placements(results["upstream"])
    graph_module = results["ours"]
    targets = [n.target for n in graph_module.graph.nodes if n.op == "call_function"]
    assert targets.count(torch.ops.cadence.idma_copy.out) == 2
    assert torch.ops.cadence.idma_load.out not in targets
    assert torch.ops.cadence.idma_store.out not in targets
    for node in graph_module.graph.find_nodes(
        op="call_function", target=torch.ops.cadence.idma_wait.out
    ):
        spec, source = node.meta["spec"], node.args[0].meta["spec"]
        assert (spec.mem_id, spec.mem_offset) == (source.mem_id, source.mem_offset)
    first_copy = graph_module.graph.find_nodes(
        op="call_function", target=torch.ops.cadence.idma_copy.out
    )[0]
    assert first_copy.meta["spec"].mem_id == 1


@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
@pytest.mark.parametrize("mode", COMPILE_MODES, ids=lambda m: m.name)
def test_pinned_offsets_and_memories_through_the_pass(mode: CompileMode, mem_algo: int) -> None:
    pins = {1: (2, 4096), 2: (1, None), 4: (2, None)}
    results = {}
    for label, planner in PLANNERS.items():
        graph_module, adds = pinned_graph()
        planning = planner(
            TWO_MEMORIES, mode, mem_algo, additional_constraint_gen_passes=[pin_adds(pins)]
        )
        results[label] = planning(graph_module).graph_module
    assert placements(results["ours"]) == placements(results["upstream"])
    specs = {n.name: n.meta["spec"] for n in results["ours"].graph.nodes if n.name in adds}
    assert (specs[adds[1]].mem_id, specs[adds[1]].mem_offset) == (2, 4096)
    assert specs[adds[2]].mem_id == 1
    assert specs[adds[4]].mem_id == 2


# ------------------------------------------------- the standalone functions (older API)

SEED_FUNCTIONS = {
    "position": (position_based_greedy_with_hierarchy, UpstreamPositionBasedGreedyWithHierarchy),
    "heuristic": (
        greedy_by_size_for_offset_calculation_with_hierarchy,
        UpstreamGreedyWithHeuristic,
    ),
}


@pytest.mark.parametrize("alloc_graph_io", [True, False], ids=["io_allocated", "io_not_allocated"])
@pytest.mark.parametrize("algorithm", list(SEED_FUNCTIONS))
def test_seed_functions_match_upstreams_placers(
    lowered: dict[str, EdgeProgramManager], algorithm: str, alloc_graph_io: bool
) -> None:
    """The standalone functions give the placements and bufsizes of upstream's placer on the
    same collected specs (a lowered graph whose lifetimes are set)."""
    seed_function, upstream_class = SEED_FUNCTIONS[algorithm]
    memory_config = memory_config_for("three_level_tight", lowered, "mlp", alloc_graph_io)
    program = to_executorch(
        edge_program(lowered, "mlp"),
        CadenceMemoryPlanning(get_default_memory_config(), CompileMode.MINIMAL, 0),
    )
    exported = program.exported_program()
    graph_module, signature = exported.graph_module, exported.graph_signature

    def clear_placements() -> None:
        for _, _, spec in node_specs(graph_module):
            spec.mem_id = spec.mem_offset = None

    clear_placements()
    bufsizes = seed_function(
        graph_module, 16, signature, alloc_graph_io, alloc_graph_io, memory_config=memory_config
    )
    ours = placements(graph_module)

    clear_placements()
    specs = list(
        collect_specs_from_nodes(
            graph_module.graph.nodes,
            signature,
            ignore_graph_input=not alloc_graph_io,
            ignore_graph_output=not alloc_graph_io,
        )
    )
    state = MemoryPlanningState(memory_config)
    upstream_class(memory_config).plan(specs, graph_module, signature, state, MemConstraints())
    assert ours == placements(graph_module)
    assert bufsizes == state.bufsizes
    assert any(mem_id == 3 for _, _, mem_id, _ in ours)


def test_seed_function_failure_leaves_specs(lowered: dict[str, EdgeProgramManager]) -> None:
    program = to_executorch(
        edge_program(lowered, "mlp"),
        CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 0),
    )
    exported = program.exported_program()
    before = placements(exported.graph_module)
    with pytest.raises(MemoryPlanningAlgoFailure, match="memory config"):
        position_based_greedy_with_hierarchy(
            exported.graph_module,
            16,
            exported.graph_signature,
            True,
            True,
            memory_config=MemoryConfig([64]),
        )
    assert placements(exported.graph_module) == before
    with pytest.raises(ValueError, match="memory_sizes"):
        position_based_greedy_with_hierarchy(
            exported.graph_module, 16, None, True, True, memory_config=MemoryConfig([0])
        )


def test_seed_function_needs_lifetimes(lowered: dict[str, EdgeProgramManager]) -> None:
    program = to_executorch(
        edge_program(lowered, "mlp"),
        CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 0),
    )
    exported = program.exported_program()
    specs = [s for _, _, s in node_specs(exported.graph_module) if s.mem_id is not None]
    specs[-1].lifetime = [None, None]
    with pytest.raises(ValueError, match="update_all_tensors_lifetime"):
        position_based_greedy_with_hierarchy(
            exported.graph_module,
            16,
            exported.graph_signature,
            True,
            True,
            memory_config=MemoryConfig([1 << 20]),
        )


def test_validator_catches_a_broken_plan(lowered: dict[str, EdgeProgramManager]) -> None:
    """The validity check used above can fail: move one planned tensor onto another."""
    memory_config = get_default_memory_config()
    run = plan_model(
        edge_program(lowered, "mlp"),
        CadenceMemoryPlanning,
        memory_config,
        CompileMode.DEFAULT,
        0,
        True,
    )
    specs = assert_valid(run.program, memory_config, run.constraints, True)
    sizes = np.array([s.allocated_memory for s in specs])
    big = specs[int(np.argmax(sizes))]
    overlapping = next(
        s
        for s in specs
        if s is not big and s.lifetime[0] <= big.lifetime[1] and big.lifetime[0] <= s.lifetime[1]
    )
    overlapping.mem_offset = big.mem_offset
    with pytest.raises(AssertionError, match="share bytes"):
        assert_valid(run.program, memory_config, run.constraints, True)
