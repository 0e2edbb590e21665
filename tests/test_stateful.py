"""Stateful programs (issue 51): a KV cache (``prefill``, ``decode``) and a stream
(``init``, ``step``), exported as one multi-method program, planned by every planner and
mode on one, two and three memories, and run on the portable runtime against eager over
several calls with the state carried (tests/stateful_programs.py).

- ``share_mutable_buffers=True`` on ours: exir's pass (its ``.pte`` byte for byte in the
  default mode) and Cadence's (every ``mem_algo``), the state at one ``(mem_id, offset)``
  in every method, in memory 1 when it fits there, never overlapping another tensor;
- without it, methods that mutate a buffer of the same name get a warning naming it
  (``UnsharedStateWarning``), an error with ``strict_sharing=True``;
- ``smallest=True`` (and Cadence's ``best``) plan no bytes for the unread outputs of
  mutated buffers, and the program still runs bit for bit.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir import EdgeProgramManager
from executorch.exir.passes import MemoryPlanningPass
from stateful_programs import (
    KV_CACHE,
    PROGRAMS,
    STREAMING,
    StatefulProgram,
    backend_config,
    edge_program,
    run_on_runtime,
)

import cadence_memplan.exir
from cadence_memplan import CadenceMemoryPlanning, UnsharedStateError, UnsharedStateWarning
from cadence_memplan.cadence.compiler import cadence_backend_config

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected:UserWarning"),
]

# Memory 1 small and fast, the last large; "fits" holds the KV cache's 4 KiB in memory 1.
MEMORIES: dict[str, list[int]] = {
    "one": [1 << 20],
    "two": [768, 1 << 20],
    "two-fits": [6144, 1 << 20],
    "three": [1024, 4096, 1 << 20],
}


@pytest.fixture(scope="module")
def edges() -> Callable[[str, str], EdgeProgramManager]:
    """A copy of each program's edge program, exported and lowered once per module."""
    cache: dict[tuple[str, str], EdgeProgramManager] = {}

    def get(name: str, lowering: str) -> EdgeProgramManager:
        if (name, lowering) not in cache:
            cache[name, lowering] = edge_program(PROGRAMS[name], lowering)
        return copy.deepcopy(cache[name, lowering])

    return get


def cadence(memories: str, mem_algo: int, **options: Any) -> CadenceMemoryPlanning:
    sizes = MEMORIES[memories]
    config = MemoryConfig(sizes, memory_alignments=[16] * len(sizes))
    return CadenceMemoryPlanning(config, CompileMode.DEFAULT, mem_algo, **options)


def to_program(edge: EdgeProgramManager, planning: Any, lowering: str) -> Any:
    base = cadence_backend_config(planning) if lowering == "cadence" else None
    return edge.to_executorch(backend_config(planning, base))


def state_placements(program: Any, stateful: StatefulProgram) -> dict[str, set[tuple[int, int]]]:
    """Each buffer's ``(mem_id, offset)`` in every method."""
    found: dict[str, set[tuple[int, int]]] = {}
    for method in stateful.methods:
        exported = program.exported_program(method)
        names = {
            spec.arg.name: spec.target
            for spec in exported.graph_signature.input_specs
            if spec.target in stateful.buffers
        }
        for node in exported.graph_module.graph.find_nodes(op="placeholder"):
            if node.name in names:
                spec = node.meta["spec"]
                found.setdefault(names[node.name], set()).add((spec.mem_id, spec.mem_offset))
    return found


def check_state_apart(program: Any, stateful: StatefulProgram, sizes: list[int]) -> None:
    """Independently of the planners: the state is at one place in every method, and no
    other tensor of any method touches its bytes; every tensor ends within its memory
    (its size, or, for exir's own one-memory plans, the method's buffer size)."""
    placements = state_placements(program, stateful)
    assert set(placements) == set(stateful.buffers)
    assert all(len(places) == 1 for places in placements.values()), placements
    for method in stateful.methods:
        graph_module = program.exported_program(method).graph_module
        bufsizes = graph_module.meta["non_const_buffer_sizes"]
        state = []
        others = []
        for node in graph_module.graph.nodes:
            specs = node.meta.get("spec")
            for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                if getattr(spec, "mem_id", None) is None or spec.mem_offset is None:
                    continue
                end = spec.mem_offset + spec.allocated_memory
                assert end <= bufsizes[spec.mem_id], (method, node.name, end, bufsizes)
                if spec.mem_id <= len(sizes):
                    assert end <= sizes[spec.mem_id - 1] or len(sizes) == 1
                place = (spec.mem_id, spec.mem_offset, end)
                is_state = node.op == "placeholder" and any(
                    (spec.mem_id, spec.mem_offset) in places for places in placements.values()
                )
                (state if is_state else others).append((place, node.name, spec))
        state_specs = {id(spec) for _, _, spec in state}
        for (mem_id, low, high), name, spec in others:
            if id(spec) in state_specs:
                continue  # the output node holding a buffer's spec
            for (state_mem, state_low, state_high), state_name, _ in state:
                overlaps = mem_id == state_mem and low < state_high and state_low < high
                assert not overlaps, f"{method}: {name} overlaps the state's {state_name}"


def state_bytes_in_memory_1(program: Any, stateful: StatefulProgram) -> int:
    total = 0
    for method in list(stateful.methods)[:1]:
        exported = program.exported_program(method)
        for node in exported.graph_module.graph.find_nodes(op="placeholder"):
            spec = node.meta["spec"]
            if node.name.removeprefix("b_") in stateful.buffers and spec.mem_id == 1:
                total += spec.allocated_memory
    return total


# --------------------------------------------------------------------------- exir's pass


@pytest.mark.parametrize("name", PROGRAMS)
def test_exir_pass_sharing_gives_exirs_pte_and_runs_right(name: str, edges: Any) -> None:
    stateful = PROGRAMS[name]
    theirs = to_program(edges(name, "exir"), MemoryPlanningPass(share_mutable_buffers=True), "exir")
    ours = to_program(
        edges(name, "exir"),
        cadence_memplan.exir.memory_planning_pass(share_mutable_buffers=True),
        "exir",
    )
    assert ours.buffer == theirs.buffer
    assert run_on_runtime(stateful, ours.buffer).equal
    check_state_apart(ours, stateful, [1 << 30])


def test_exir_pass_smallest_reorder_sharing_runs_right_and_smaller(edges: Any) -> None:
    default = to_program(
        edges("kv-cache", "exir"), MemoryPlanningPass(share_mutable_buffers=True), "exir"
    )
    planning = cadence_memplan.exir.memory_planning_pass(
        share_mutable_buffers=True, smallest=True, reorder=True, verify_storage_reuse=True
    )
    program = to_program(edges("kv-cache", "exir"), planning, "exir")
    assert run_on_runtime(KV_CACHE, program.buffer).equal
    check_state_apart(program, KV_CACHE, [1 << 30])
    for method in KV_CACHE.methods:
        ours = program.exported_program(method).graph_module.meta["non_const_buffer_sizes"]
        exirs = default.exported_program(method).graph_module.meta["non_const_buffer_sizes"]
        assert ours[2] == exirs[2]  # the state, as exir places it
        assert ours[1] < exirs[1]


def test_exir_pass_without_sharing_warns_naming_the_buffer(edges: Any) -> None:
    planning = cadence_memplan.exir.memory_planning_pass()
    with pytest.warns(UnsharedStateWarning, match=r"'state' \(used by 2 methods\) is not shared"):
        program = to_program(edges("streaming", "exir"), planning, "exir")
    assert not run_on_runtime(STREAMING, program.buffer).equal  # why it warns
    strict = cadence_memplan.exir.memory_planning_pass(strict_sharing=True)
    with pytest.raises(UnsharedStateError, match=r"'k_cache'.*'v_cache'.* not shared between"):
        to_program(edges("kv-cache", "exir"), strict, "exir")


def test_smallest_plans_no_bytes_for_unread_mutation_outputs(edges: Any) -> None:
    planning = cadence_memplan.exir.memory_planning_pass(smallest=True, verify_storage_reuse=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnsharedStateWarning)
        program = to_program(edges("kv-cache", "exir"), planning, "exir")
    for method in KV_CACHE.methods:
        graph_module = program.exported_program(method).graph_module
        buffers = [node.meta["spec"] for node in graph_module.graph.find_nodes(op="placeholder")]
        held = graph_module.graph.output_node().meta["spec"]
        assert held[0] is buffers[0]  # k_cache
        assert held[1] is buffers[1]  # v_cache
    assert planning.memory_planning_algo.dropped == 2 * 16 * 32 * 4


# --------------------------------------------------------------------------- Cadence's pass


CADENCE_CASES = [
    ("streaming", "two", 2),  # unshared: computes wrong values
    ("kv-cache", "three", 2),  # unshared: computes wrong values
    ("kv-cache", "two-fits", 0),
    ("streaming", "one", 1),
]


@pytest.mark.parametrize(("name", "memories", "mem_algo"), CADENCE_CASES)
def test_cadence_sharing_runs_right(name: str, memories: str, mem_algo: int, edges: Any) -> None:
    stateful = PROGRAMS[name]
    planning = cadence(memories, mem_algo, share_mutable_buffers=True)
    program = to_program(edges(name, "cadence"), planning, "cadence")
    run = run_on_runtime(stateful, program.buffer)
    assert run.equal, run
    check_state_apart(program, stateful, MEMORIES[memories])
    state_size = 4096 if name == "kv-cache" else 256
    fits = state_size <= MEMORIES[memories][0]
    assert (planning.last_state_mem_id == 1) is fits
    assert state_bytes_in_memory_1(program, stateful) == (state_size if fits else 0)
    # Where it sits, read off every method's specs: the fastest memory that holds it (the
    # slowest, 1 MiB, takes what spills, so every method plans around it there), as the
    # pass says; the same for every mem_algo.
    placed = state_placements(program, stateful)
    fastest = next(m for m, size in enumerate(MEMORIES[memories], 1) if size >= state_size)
    assert {mem_id for places in placed.values() for mem_id, _ in places} == {fastest}
    assert planning.last_state_mem_id == fastest
    sizes = {
        tuple(program.exported_program(method).graph_module.meta["non_const_buffer_sizes"])
        for method in stateful.methods
    }
    assert len(sizes) == 1  # each memory sized for the largest method


def test_cadence_without_sharing_warns_and_strict_raises(edges: Any) -> None:
    with pytest.warns(UnsharedStateWarning, match="CadenceMemoryPlanning: mutable buffer 'state'"):
        program = to_program(edges("streaming", "cadence"), cadence("two", 2), "cadence")
    assert not run_on_runtime(STREAMING, program.buffer).equal
    strict = cadence("two", 2, strict_sharing=True)
    with pytest.raises(UnsharedStateError, match="not shared between the methods"):
        to_program(edges("streaming", "cadence"), strict, "cadence")


def test_a_state_larger_than_every_memory_is_a_clear_error(edges: Any) -> None:
    config = MemoryConfig([1024, 2048], memory_alignments=[16, 16])
    planning = CadenceMemoryPlanning(config, CompileMode.DEFAULT, 0, share_mutable_buffers=True)
    with pytest.raises(Exception, match=r"shared mutable state \(4,096 B\) fits in no memory"):
        to_program(edges("kv-cache", "cadence"), planning, "cadence")


# --------------------------------------------------------------------------- the matrix


@pytest.mark.slow
@pytest.mark.parametrize("memories", MEMORIES)
@pytest.mark.parametrize("mem_algo", [0, 1, 2])
@pytest.mark.parametrize("reorder", [False, True])
@pytest.mark.parametrize("name", PROGRAMS)
def test_every_cadence_planner_and_memory(
    name: str, mem_algo: int, memories: str, reorder: bool, edges: Any
) -> None:
    stateful = PROGRAMS[name]
    planning = cadence(memories, mem_algo, share_mutable_buffers=True, reorder=reorder)
    program = to_program(edges(name, "cadence"), planning, "cadence")
    assert run_on_runtime(stateful, program.buffer).equal
    check_state_apart(program, stateful, MEMORIES[memories])


@pytest.mark.slow
@pytest.mark.parametrize(
    "options",
    [{}, {"smallest": True}, {"reorder": True}, {"smallest": True, "reorder": True}],
    ids=["default", "smallest", "reorder", "smallest-reorder"],
)
@pytest.mark.parametrize("name", PROGRAMS)
def test_every_exir_mode(name: str, options: dict[str, bool], edges: Any) -> None:
    stateful = PROGRAMS[name]
    planning = cadence_memplan.exir.memory_planning_pass(share_mutable_buffers=True, **options)
    program = to_program(edges(name, "exir"), planning, "exir")
    assert run_on_runtime(stateful, program.buffer).equal
    check_state_apart(program, stateful, [1 << 30])


# --------------------------------------------------------------------------- the command line


def test_a_multi_program_archive_loads_every_method(tmp_path: Any) -> None:
    from stateful_programs import export_methods
    from torch.export.pt2_archive._package import package_pt2

    from cadence_memplan.request import PlanningOptions
    from cadence_memplan.workflow.plan import InputError, load_input, plan_input

    archive = tmp_path / "both.pt2"
    package_pt2(str(archive), exported_programs=export_methods(STREAMING))
    loaded = load_input(archive, lowering="exir")
    assert loaded.input.methods == ("init", "step")
    assert set(loaded.edge.methods) == {"init", "step"}
    with pytest.raises(InputError, match=r"holds 2 methods \(init, step\): plan_input"):
        plan_input(loaded, [], PlanningOptions(lowering="exir"))
