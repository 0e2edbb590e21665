"""Programs with control flow compute eager's values on the portable runtime, bit for bit,
with our planners in every mode and for both branch outcomes (issue 40; executorch
#21490, whose reproduction is here too).

exir's ``apply_algo`` plans every submodule of a graph into one shared region, and a
cond's outputs stay in its branch's memory (``MoveCall`` moves a pointer): a later
submodule overwrites them while they are alive. Ours places each submodule's arena at its
call site (``_boundary/control_flow.py``). Here, on the issue's five programs, the
reproduction and generated programs (tests/control_flow_programs.py):

- exir's default planner is wrong where the bug bites, and our check
  (``validate_control_flow``, and ``cadence_memplan.exir.verify_storage_reuse``) says so
  in words; wherever exir's program is wrong, the check flags its plan;
- ours (``memory_planning_pass()`` with its options, ``smallest=True``) is right and
  passes the check; where exir's plan passes it, ours is exir's program byte for byte;
- through Cadence's compiler (``CadenceMemoryPlanning``, every ``mem_algo``, a one-memory
  and a two-memory config), upstream's plan is flagged and ours is right.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from control_flow_programs import (
    FAMILY,
    CondThenScan,
    Generated,
    Issue21490,
    backend_config,
    export,
    generate,
    outcomes,
)
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig, get_default_memory_config
from executorch.exir import (
    EdgeProgramManager,
    ExecutorchBackendConfig,
    ExecutorchProgramManager,
    to_edge,
)
from executorch.exir.error import InternalError
from executorch.exir.memory_planning import Verifier

import cadence_memplan.exir
from cadence_memplan import CadenceMemoryPlanning, validate_control_flow
from cadence_memplan._boundary.control_flow import ArenaDoesNotFit, ArenaPlacer, higher_order_nodes
from cadence_memplan.cadence.compiler import cadence_backend_config
from cadence_memplan.cadence.lowering import lower_exported

pytestmark = [
    pytest.mark.executorch,
    # The emitter's note on a mutable buffer whose initial value it does not serialize.
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected:UserWarning"),
]

PROGRAMS: dict[str, Callable[[], torch.nn.Module]] = {
    **FAMILY,
    "cond-then-scan": CondThenScan,
    "issue-21490": Issue21490,
}
# Generated programs: a handful by default (each needs an export and a lowering per mode),
# more with -m slow.
SEEDS = (0, 1, 3, 9)
SLOW_SEEDS = tuple(range(20, 60))

# Our exir pass in each of its modes.
OUR_PASSES: dict[str, Callable[[], Any]] = {
    "default": cadence_memplan.exir.memory_planning_pass,
    "smallest": lambda: cadence_memplan.exir.memory_planning_pass(smallest=True),
    "verified": lambda: cadence_memplan.exir.memory_planning_pass(verify_storage_reuse=True),
    "scan": lambda: cadence_memplan.exir.memory_planning_pass(occupancy="scan"),
    # As #21490 planned its reproduction: graph inputs left to the caller.
    "inputs-unplanned": lambda: cadence_memplan.exir.memory_planning_pass(alloc_graph_input=False),
}


def module_of(name: str) -> torch.nn.Module:
    if name.startswith("seed-"):
        return Generated(generate(int(name.removeprefix("seed-"))))
    return PROGRAMS[name]()


@pytest.fixture(scope="module")
def edge_of() -> Callable[[str, str], tuple[torch.nn.Module, EdgeProgramManager]]:
    """``(module, edge program)`` for a program name and lowering ("exir": ``to_edge``;
    "cadence": Cadence's compiler's), each exported and lowered once per module; every
    call gets a deep copy, since ``to_executorch`` changes what it lowers."""
    cache: dict[tuple[str, str], tuple[torch.nn.Module, EdgeProgramManager]] = {}

    def get(name: str, lowering: str) -> tuple[torch.nn.Module, EdgeProgramManager]:
        if (name, lowering) not in cache:
            module = module_of(name)
            exported = export(module)
            edge = to_edge(exported) if lowering == "exir" else lower_exported(exported, lowering)
            cache[name, lowering] = (module, edge)
        module, edge = cache[name, lowering]
        return module, copy.deepcopy(edge)

    return get


def exir_program(edge: EdgeProgramManager, module: torch.nn.Module, pass_: Any = None) -> Any:
    """``to_executorch`` with ``pass_`` (None: exir's default config's pass)."""
    return edge.to_executorch(backend_config(module, pass_))


def top_graph(program: ExecutorchProgramManager) -> torch.fx.GraphModule:
    graph_module: torch.fx.GraphModule = program.exported_program().graph_module
    return graph_module


def storage_reuse_problem(program: ExecutorchProgramManager, planning: Any = None) -> str | None:
    """``cadence_memplan.exir.verify_storage_reuse`` on the planned program, as
    ``planning`` (None: exir's default pass) planned it, or its error."""
    if planning is None:
        planning = ExecutorchBackendConfig().memory_planning_pass
    exported = program.exported_program()
    verifier = Verifier(
        exported.graph_module,
        planning.alloc_graph_input,
        planning.alloc_graph_output,
        planning.alloc_mutable_buffers,
        exported.graph_signature,
    )
    try:
        cadence_memplan.exir.verify_storage_reuse(verifier)
    except InternalError as error:
        return str(error)
    return None


# --------------------------------------------------------------------------- exir's flow


def check_exir_flow(name: str, edge_of: Any, modes: tuple[str, ...]) -> ExecutorchProgramManager:
    """exir's default program of ``name``, wrong only where the check flags its plan, and
    ours in each of ``modes``: right, passing the check, and exir's own program where
    exir's plan passes it. Returns exir's program."""
    module, edge = edge_of(name, "exir")
    exirs = exir_program(edge, module)
    exir_problem = validate_control_flow(top_graph(exirs))
    if not all(outcome.equal for outcome in outcomes(module, exirs)):
        assert exir_problem is not None, name
        assert storage_reuse_problem(exirs) is not None, name
    for mode in modes:
        module, edge = edge_of(name, "exir")
        planning = OUR_PASSES[mode]()
        ours = exir_program(edge, module, planning)
        found = outcomes(module, ours)
        assert [outcome.equal for outcome in found] == [True, True], (name, mode, found)
        assert validate_control_flow(top_graph(ours)) is None
        assert storage_reuse_problem(ours, planning) is None
        if exir_problem is None and mode == "default":
            assert bytes(ours.buffer) == bytes(exirs.buffer), name
    return exirs


@pytest.mark.parametrize("name", PROGRAMS)
def test_exirs_plan_is_wrong_and_flagged_where_ours_is_right(name: str, edge_of: Any) -> None:
    """The five programs, a cond then a scan, and #21490: exir's default program gives
    wrong values (for both outcomes, but the reproduction's second, whose branch takes
    the buffer) and both checks say which tensor is overwritten; ours, in every mode,
    computes eager's."""
    exirs = check_exir_flow(name, edge_of, tuple(OUR_PASSES))
    module = module_of(name)
    wrong = [not outcome.equal for outcome in outcomes(module, exirs)]
    assert wrong == ([True, False] if name == "issue-21490" else [True, True])
    problem = validate_control_flow(top_graph(exirs))
    assert problem is not None
    assert "overwrites" in problem, problem
    assert "which hold output 0 of cond" in problem, problem
    reuse = storage_reuse_problem(exirs)
    assert reuse is not None
    assert problem in reuse


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_programs(seed: int, edge_of: Any) -> None:
    check_exir_flow(f"seed-{seed}", edge_of, ("default", "smallest"))


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_more_generated_programs(seed: int, edge_of: Any) -> None:
    check_exir_flow(f"seed-{seed}", edge_of, ("default", "smallest"))


def test_the_default_seeds_hold_both_kinds(edge_of: Any) -> None:
    """The default run has a generated program exir's plan gets wrong, and one it gets
    right (where test_generated_programs holds ours to exir's program, byte for byte)."""
    flagged = set()
    for seed in SEEDS:
        module, edge = edge_of(f"seed-{seed}", "exir")
        flagged.add(validate_control_flow(top_graph(exir_program(edge, module))) is not None)
    assert flagged == {True, False}


# --------------------------------------------------------------------------- Cadence's


CADENCE_CONFIGS = {
    "default": get_default_memory_config,
    # A 256 B memory 1 that the submodules fill: arenas spill to memory 2.
    "two-memories": lambda: MemoryConfig([256, 1 << 20], memory_alignments=[16, 32]),
}
# Programs that run on the portable runtime once Cadence's compiler lowers them:
# the reproduction's select becomes Cadence's _select_copy_nop, which it has no kernel for.
CADENCE_PROGRAMS = [name for name in PROGRAMS if name != "issue-21490"]


def cadence_program(name: str, edge_of: Any, planning: Any) -> tuple[torch.nn.Module, Any]:
    module, edge = edge_of(name, "cadence")
    config = backend_config(module, base=cadence_backend_config(planning))
    return module, edge.to_executorch(config)


# (mem_algo, memory config): every placer on the default config; on the two-memory one
# best fit (the heuristic reads the already-placed bytes in offset order) and best.
CADENCE_PLANS = [
    (0, "default"),
    (1, "default"),
    (2, "default"),
    (1, "two-memories"),
    (2, "two-memories"),
]
MEM_ALGOS = {0: "position", 1: "heuristic", 2: "best"}


@pytest.mark.parametrize(
    ("mem_algo", "config"), CADENCE_PLANS, ids=[f"{MEM_ALGOS[a]}-{c}" for a, c in CADENCE_PLANS]
)
@pytest.mark.parametrize("name", CADENCE_PROGRAMS)
def test_cadence_compiler_plans_are_right(
    name: str, mem_algo: int, config: str, edge_of: Any
) -> None:
    memory_config = CADENCE_CONFIGS[config]()
    module, program = cadence_program(
        name, edge_of, CadenceMemoryPlanning(memory_config, CompileMode.DEFAULT, mem_algo)
    )
    found = outcomes(module, program)
    assert [outcome.equal for outcome in found] == [True, True], found
    assert validate_control_flow(top_graph(program)) is None


@pytest.mark.parametrize("name", CADENCE_PROGRAMS)
def test_upstreams_cadence_plans_are_flagged(name: str, edge_of: Any) -> None:
    """Upstream's Cadence placers ignore the submodules' arenas altogether."""
    planning = UpstreamCadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 0)
    module, program = cadence_program(name, edge_of, planning)
    assert not all(outcome.equal for outcome in outcomes(module, program))
    problem = validate_control_flow(top_graph(program))
    assert problem is not None
    assert "overwrites" in problem


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_generated_programs_through_cadences_compiler(seed: int, edge_of: Any) -> None:
    for config in CADENCE_CONFIGS.values():
        planning = CadenceMemoryPlanning(config(), CompileMode.DEFAULT, 1)
        module, program = cadence_program(f"seed-{seed}", edge_of, planning)
        assert all(outcome.equal for outcome in outcomes(module, program))
        assert validate_control_flow(top_graph(program)) is None


# --------------------------------------------------------------------------- generator


def test_the_generator_makes_what_it_says() -> None:
    """1 to 5 conds and maps, nested up to 2 levels, kept alive or not, over seeds; the
    same seed, the same program."""
    programs = [generate(seed) for seed in range(200)]
    assert {program.count() for program in programs} == {1, 2, 3, 4, 5}
    assert {program.depth() for program in programs} == {0, 1, 2}
    described = " ".join(program.describe() for program in programs)
    assert "map*(" in described
    assert "map(" in described
    assert "cond*(" in described
    assert "cond(" in described
    assert generate(7).describe() == generate(7).describe()


# --------------------------------------------------------------------------- placing


def place_all(graph_module: torch.fx.GraphModule, capacity: int | None) -> int:
    """exir's arenas of ``graph_module`` placed by ``ArenaPlacer``; their end in memory 1."""
    placer = ArenaPlacer(graph_module, lambda mem_id: 16, capacity and (lambda mem_id: capacity))
    for hop in higher_order_nodes(graph_module):
        placer.place(hop)
    return placer.arenas().ends[1]


def test_an_arena_that_cannot_move_far_enough_is_a_clear_error(edge_of: Any) -> None:
    """Where a memory is too small for an arena past the outputs it must keep, the placer
    says so (Cadence's flow turns it into MemoryPlanningAlgoFailure)."""
    planned = []
    for _ in range(2):
        module, edge = edge_of("consecutive-conds", "exir")
        planned.append(top_graph(exir_program(edge, module)))  # exir's arenas, all at 0
    exirs = max(
        submodule.meta["non_const_buffer_sizes"][1]
        for hop in higher_order_nodes(planned[0])
        for _, submodule in hop.submodules
    )
    needed = place_all(planned[0], None)
    assert needed > exirs  # an arena moved
    pattern = r"submodules of cond_\d \(node \d+\) need \d+ bytes of memory 1 past the [1-9]"
    with pytest.raises(ArenaDoesNotFit, match=pattern):
        place_all(planned[1], needed - 1)
