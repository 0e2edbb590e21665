"""``stage=True`` on the passes: exir's ``memory_planning_pass`` and the Cadence drop-in
stage the graph they get inside ``to_executorch`` (the copies as out variants, with their
allocations), then plan it as without it. The staged program runs on the portable
runtime bit for bit as the unstaged one (the decoder over four steps, its KV cache
carried; the encoder; an inception net); the copies are there only when the staging's
modelled cycles are fewer than the static plan's; every plan passes the validator."""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.exir import ExecutorchBackendConfig, ExecutorchProgramManager, to_edge
from executorch.exir.memory_planning import collect_specs_from_nodes
from staging_cases import MODEL_OPTIONS

import cadence_memplan
from cadence_memplan._boundary.upstream import spec_holder
from cadence_memplan.exir import memory_planning_pass
from cadence_memplan.models import build_model, example_calls
from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL
from cadence_memplan.staging.graph import problem_of
from cadence_memplan.staging.report import NOT_REALISED, peak_live
from cadence_memplan.staging.rewrite import remove_copies, stage_program

runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]


def lowered(name: str) -> Any:
    model, inputs = build_model(name, **MODEL_OPTIONS[name])
    return to_edge(torch.export.export(model, inputs, strict=True)), example_calls(name, inputs)


def outputs(
    program: ExecutorchProgramManager, calls: list[tuple[torch.Tensor, ...]]
) -> list[bytes]:
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    return [output.numpy().tobytes() for call in calls for output in module.forward(call)]


def count(program: ExecutorchProgramManager, target: str) -> int:
    graph = program.exported_program().graph_module.graph
    return sum(str(node.target) == target for node in graph.nodes)


def assert_valid_exir_plan(program: ExecutorchProgramManager) -> None:
    """The validator on every planned spec that holds its own storage (a view's base
    once), in the arenas the program declares."""
    exported = program.exported_program()
    specs = collect_specs_from_nodes(
        exported.graph_module.graph.nodes,
        exported.graph_signature,
        ignore_graph_input=False,
        ignore_graph_output=False,
        ignore_mutable_buffers=False,
    )
    holders = list(
        {id(h): h for h in (spec_holder(s) for s in specs) if h.mem_id is not None}.values()
    )
    assert holders, "nothing was planned"
    arenas = exported.graph_module.meta["non_const_buffer_sizes"][1:]
    problem = cadence_memplan.validate(
        [h.lifetime[0] for h in holders],
        [h.lifetime[1] for h in holders],
        [h.allocated_memory for h in holders],
        [h.mem_id for h in holders],
        [h.mem_offset for h in holders],
        [max(1, size) for size in arenas],
        [1] * len(arenas),
    )
    assert problem is None, problem


def fast_bytes(edge: Any, part: int = 4) -> int:
    return peak_live(problem_of(edge.exported_program(), DEFAULT_COST_MODEL).problem) // part


@pytest.mark.parametrize("name", MODEL_OPTIONS)
def test_exir_pass_stages_and_runs_bitwise(name: str) -> None:
    edge, calls = lowered(name)
    plain = copy.deepcopy(edge).to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass())
    )
    planning = memory_planning_pass(stage=True, fast_memory_bytes=fast_bytes(edge))
    staged = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    report, rewrite = planning.last_staging, planning.last_rewrite
    assert report is not None
    assert rewrite is not None
    assert report.staged.cycles < report.static.cycles
    assert rewrite.inserted > 0
    assert count(staged, "aten.clone.out") == count(plain, "aten.clone.out") + rewrite.inserted
    for program in (plain, staged):
        assert_valid_exir_plan(program)
    assert staged.buffer != plain.buffer
    assert len(calls) == (4 if name == "decoder" else 1)
    assert outputs(staged, calls) == outputs(plain, calls)
    explained = report.explain(limit=2)
    assert explained[0].startswith(f"explain staging: {len(report.choice.schedule)} copies model")
    first = report.choice.schedule[0]
    assert explained[1].startswith(f"  {first.kind} {report.problem.name(first.tensor)} (")


def test_exir_pass_leaves_the_program_unstaged_when_staging_does_not_pay() -> None:
    """Fast memory that holds everything: the static plan is all in fast memory, no copy
    models fewer cycles, and the program is the unstaged one, byte for byte."""
    edge, _ = lowered("encoder")
    plain = copy.deepcopy(edge).to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass())
    )
    planning = memory_planning_pass(stage=True, fast_memory_bytes=fast_bytes(edge, 1) * 2)
    staged = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    assert planning.last_rewrite is not None
    assert planning.last_rewrite.inserted == 0
    assert planning.last_staging is not None
    assert planning.last_staging.staged.cycles == planning.last_staging.static.cycles
    assert planning.last_staging.explain()[0].startswith("explain staging: nothing staged")
    assert_valid_exir_plan(staged)
    assert staged.buffer == plain.buffer


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"stage": True}, "stage=True needs fast_memory_bytes"),
        ({"stage": True, "fast_memory_bytes": 0}, "fast_memory_bytes must be positive"),
        ({"fast_memory_bytes": 1024}, "go with stage=True"),
        ({"cost_model": DEFAULT_COST_MODEL}, "go with stage=True"),
        ({"stage": "yes", "fast_memory_bytes": 1024}, "stage must be True or False"),
    ],
)
def test_exir_pass_refuses_bad_staging_keywords(keywords: dict[str, Any], message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        memory_planning_pass(**keywords)


def test_remove_copies_puts_the_graph_back() -> None:
    edge, _ = lowered("decoder")
    exported = edge.exported_program()
    before = exported.graph_module.code
    _, rewrite = stage_program(exported, DEFAULT_COST_MODEL, fast_bytes(edge))
    assert rewrite.inserted > 0
    assert exported.graph_module.code != before
    remove_copies(exported.graph_module, rewrite)
    assert exported.graph_module.code == before


def cadence_staged(name: str, part: int) -> tuple[Any, Any, Any, Any]:
    """Cadence's lowering of the built-in ``name`` planned by the drop-in with
    ``stage=True``, fast memory a ``part``-th of its peak live bytes: the pass, the
    program, the memory config and the constraints Cadence's passes made."""
    from executorch.backends.cadence.aot.pass_utils import CompileMode
    from lowered_models import capture_constraints

    from cadence_memplan import CadenceMemoryPlanning
    from cadence_memplan.cadence.lowering import backend_config, lower_exported, memory_config
    from cadence_memplan.io.memories import parse_memory_spec

    model, inputs = build_model(name)
    edge = lower_exported(torch.export.export(model, inputs, strict=True), "cadence")
    capacity = fast_bytes(edge, part) // 16 * 16
    config = memory_config(parse_memory_spec(f"fast={capacity}:16,slow=4MiB:16"))
    planning = CadenceMemoryPlanning(config, CompileMode.DEFAULT, 2, stage=True)
    constraints = capture_constraints(planning)
    program = edge.to_executorch(backend_config("cadence", planning))
    return planning, program, config, constraints[-1]


def assert_staged_as_modelled(planning: Any, program: Any) -> None:
    """Either the staging the drop-in modelled is the plan: every copy's fast side (a
    load's copy, a store's source) in memory 1 and the placer's plan modelling no more
    cycles than the static plan, or fewer than its plan of the unstaged program; or the
    program is unstaged and the report says so."""
    report, rewrite = planning.last_staging, planning.last_rewrite
    assert report is not None
    assert rewrite is not None
    nodes = list(program.exported_program().graph_module.graph.nodes)
    copies = [node for node in nodes if str(node.target) == "cadence.idma_copy.out"]
    assert len(copies) == rewrite.inserted
    if not report.realised:
        assert rewrite.inserted == 0
        assert not report.choice.schedule
        assert any(NOT_REALISED in line for line in report.lines())
        assert NOT_REALISED in report.explain()[0]
        return
    if not report.choice.schedule:  # nothing worth staging: nothing to place
        assert rewrite.inserted == 0
        return
    assert report.placed is not None
    unstaged = report.placed_unstaged
    assert report.placed.cycles <= report.static.cycles or (
        unstaged is not None and report.placed.cycles < unstaged.cycles
    )
    for node in copies:
        fast_side = node if node.name.startswith("idma_load") else node.args[0]
        assert fast_side.meta["spec"].mem_id == 1, node.name


@pytest.mark.slow  # Cadence's lowering and compiler: about 20 s
def test_cadence_drop_in_stages_through_memory_1() -> None:
    """``CadenceMemoryPlanning(..., stage=True)`` on Cadence's lowering of the decoder:
    the copies are Cadence's idma ops, planned with the rest (the validator), each
    copy's fast side in memory 1, and ``SimplifyIdmaOpsPass`` has made them
    ``idma_copy``; or, when the placer does not realise the staging modelled, the
    program planned unstaged, which the report says. The portable runtime has no
    Cadence kernels, so the run is exir's pass's test above."""
    from lowered_models import assert_valid

    planning, program, config, constraints = cadence_staged("decoder", 4)
    assert_valid(program, config, constraints, True)
    assert_staged_as_modelled(planning, program)
    assert planning.last_staging.static.cycles > 0


@pytest.mark.slow  # three lowerings and stagings of the encoder: about a minute
@pytest.mark.parametrize("part", [2, 4, 8])
def test_cadence_drop_in_stages_the_encoder(part: int) -> None:
    """The encoder's slice and select outputs lie in their inputs' storage (Cadence's
    nops): the staging never copies them on their own (Cadence cannot pin one to memory
    1), so the drop-in plans, and the plan passes the validator."""
    from lowered_models import assert_valid

    planning, program, config, constraints = cadence_staged("encoder", part)
    assert_valid(program, config, constraints, True)
    assert_staged_as_modelled(planning, program)


def test_cadence_drop_in_refuses_bad_staging_keywords() -> None:
    from executorch.backends.cadence.aot.pass_utils import CompileMode
    from executorch.backends.cadence.aot.utils import get_default_memory_config

    from cadence_memplan import CadenceMemoryPlanning

    config = get_default_memory_config()
    with pytest.raises(ValueError, match="goes with stage=True"):
        CadenceMemoryPlanning(config, CompileMode.DEFAULT, 2, cost_model=DEFAULT_COST_MODEL)
    with pytest.raises(ValueError, match="use one or the other"):
        CadenceMemoryPlanning(
            config, CompileMode.DEFAULT, 2, stage=True, share_mutable_buffers=True
        )
    with pytest.raises(TypeError, match="stage must be True or False"):
        CadenceMemoryPlanning(config, CompileMode.DEFAULT, 2, stage=1)  # type: ignore[arg-type]


def test_a_pass_that_raises_takes_its_copies_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """Staged, then planning raises: the graph the pass got is as it was, node for node."""
    from executorch.exir.passes import MemoryPlanningPass

    edge, _ = lowered("decoder")
    captured: list[tuple[Any, Any]] = []

    class Capture(MemoryPlanningPass):  # type: ignore[misc]
        def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
            captured.append((copy.deepcopy(graph_module), graph_signature))
            return super().run(graph_module, graph_signature)

    capacity = fast_bytes(edge)
    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=Capture()))
    graph_module, signature = captured[0]
    before = graph_module.code

    def fail(self: Any, graph_module: Any, graph_signature: Any = None) -> Any:
        assert any("clone.out" in str(node.target) for node in graph_module.graph.nodes)
        raise RuntimeError("planning failed")

    monkeypatch.setattr(MemoryPlanningPass, "run", fail)
    planning = memory_planning_pass(stage=True, fast_memory_bytes=capacity)
    with pytest.raises(RuntimeError, match="planning failed"):
        planning.run(graph_module, signature)
    assert graph_module.code == before


@pytest.mark.slow  # two lowerings and plans of the decoder through plan_input: about 40 s
@pytest.mark.parametrize("lowering", ["exir", "cadence"])
def test_plan_input_plans_the_staged_program(lowering: str) -> None:
    """``PlanningOptions(stage=True)`` (``plan --stage``): the plan is the staged
    program's, through the Cadence drop-in (its copies clones on exir's lowering, idma
    copies on Cadence's), it passes the validator, and on exir's lowering the program runs
    on the portable runtime over four steps bit for bit as the unstaged one."""
    from cadence_memplan.io.memories import parse_memory_spec
    from cadence_memplan.request import PlanningOptions
    from cadence_memplan.workflow.plan import check_plan, load_input, plan_input

    memories = parse_memory_spec("fast=22KiB:16,slow=1MiB:16")
    loaded = load_input("decoder", lowering=lowering)
    options = PlanningOptions(algorithm="best", lowering=lowering)  # type: ignore[arg-type]
    plain = plan_input(loaded, memories, options)
    staged = plan_input(loaded, memories, options.replace(stage=True))
    assert plain.staging is None
    report = staged.staging
    assert report is not None
    assert report.staged.cycles < report.static.cycles
    for planned in (plain, staged):
        assert check_plan(planned.table, memories) is None
    copy_op = "aten.clone.out" if lowering == "exir" else "cadence.idma_copy.out"
    added = count(staged.program, copy_op) - count(plain.program, copy_op)
    # Stores waited for at the graph's end have no op to go before (Rewrite.skipped).
    assert 0 < added <= len(report.choice.schedule)
    assert len(staged.table.labels) > len(plain.table.labels)
    if lowering == "exir":
        _, inputs = build_model("decoder")
        calls = example_calls("decoder", inputs)
        assert outputs(staged.program, calls) == outputs(plain.program, calls)


def test_stage_refused_where_it_does_not_apply() -> None:
    from cadence_memplan.request import PlanningOptions
    from cadence_memplan.workflow.plan import sweep_input

    with pytest.raises(ValueError, match="cost_model goes with stage=True"):
        PlanningOptions(cost_model="model.toml")
    with pytest.raises(TypeError, match="stage must be True or False"):
        PlanningOptions(stage="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not to a sweep"):
        sweep_input("decoder", [], 0, [1024], PlanningOptions(stage=True))


def test_exir_pass_stages_in_its_other_modes() -> None:
    """Staging comes first, then ``smallest``, ``reorder`` and the storage-reuse check
    plan and check the staged graph: the decoder still runs bit for bit."""
    edge, calls = lowered("decoder")
    plain = copy.deepcopy(edge).to_executorch()
    planning = memory_planning_pass(
        stage=True,
        fast_memory_bytes=fast_bytes(edge),
        smallest=True,
        reorder=True,
        verify_storage_reuse=True,
    )
    staged = edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))
    assert planning.last_rewrite is not None
    assert planning.last_rewrite.inserted > 0
    assert planning.last_reorder is not None
    assert_valid_exir_plan(staged)
    assert outputs(staged, calls) == outputs(plain, calls)


@pytest.mark.slow  # Cadence's lowering: about 15 s
def test_cadence_drop_in_that_fails_takes_its_copies_out() -> None:
    """Staged, then Cadence's placer finds no room (slow memory too small): no copy is
    left in the graph, which has the nodes the pass got (Cadence's constraints have made
    some of them nops, as without staging), and every spec's placement is as it was."""
    from executorch.backends.cadence.aot.pass_utils import CompileMode
    from executorch.exir.passes import MemoryPlanningPass

    from cadence_memplan import CadenceMemoryPlanning
    from cadence_memplan.cadence.lowering import lower_exported, memory_config
    from cadence_memplan.cadence.memory_planning import SpecSnapshot
    from cadence_memplan.cadence.sweep import PLANNING_FAILURES
    from cadence_memplan.io.memories import parse_memory_spec

    model, inputs = build_model("decoder")
    edge = lower_exported(torch.export.export(model, inputs, strict=True), "cadence")
    capacity = fast_bytes(edge) // 16 * 16
    captured: list[tuple[Any, Any]] = []

    class Capture(MemoryPlanningPass):  # type: ignore[misc]
        def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
            captured.append((copy.deepcopy(graph_module), graph_signature))
            return super().run(graph_module, graph_signature)

    edge.to_executorch(ExecutorchBackendConfig(memory_planning_pass=Capture()))
    graph_module, signature = captured[0]
    nodes, placements = list(graph_module.graph.nodes), SpecSnapshot(graph_module).saved
    config = memory_config(parse_memory_spec(f"fast={capacity}:16,slow=1KiB:16"))
    planning = CadenceMemoryPlanning(config, CompileMode.DEFAULT, 2, stage=True)
    with pytest.raises(PLANNING_FAILURES):
        planning.run(graph_module, signature)
    assert planning.last_staging is not None
    assert not planning.last_staging.realised  # the staged plan failed, then the unstaged
    assert list(graph_module.graph.nodes) == nodes
    assert "idma" not in graph_module.code
    assert SpecSnapshot(graph_module).saved == placements
