"""``patch_exir()``: every ``to_executorch`` in the process plans with our exir planners.

The names exir builds its planning from point at ours and back; a plain
``to_executorch()`` (the default config's pass, built when executorch imported) plans with
ours: exir's ``.pte`` byte for byte without control flow, with the C++ core called
(counted, so the test fails if the patch did nothing), and eager's values with control
flow where exir's are wrong. The planners' fallback calls exir's own function, never the
patched name (which recursed). ``python -m cadence_memplan.exir.patch`` runs a script
unchanged.
"""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from control_flow_programs import ConsecutiveConds, example_inputs, outcomes
from executorch.exir import ExecutorchBackendConfig, banked_memory_planning, to_edge
from executorch.exir import memory_planning as exir_planning
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.passes import memory_planning_pass as exir_pass_module
from exir_cases import NAMED_GREEDY_CASES, build_specs, graph_module_with
from exir_runs import Raised, assert_same_outcome, run_greedy

import cadence_memplan
import cadence_memplan.exir
from cadence_memplan.exir import patching, records
from cadence_memplan.models import build_model

pytestmark = pytest.mark.executorch

EXIRS = {
    "greedy": exir_planning.greedy,
    "MemoryPlanningAlgorithmSuite": exir_planning.MemoryPlanningAlgorithmSuite,
    "BankedGreedy": banked_memory_planning.BankedGreedy,
}
OURS = {
    "greedy": cadence_memplan.exir.greedy,
    "MemoryPlanningAlgorithmSuite": cadence_memplan.exir.MemoryPlanningAlgorithmSuite,
    "BankedGreedy": cadence_memplan.exir.BankedGreedy,
}
# The modules that hold those names, and which.
HOLDERS = {
    exir_planning: ["greedy", "MemoryPlanningAlgorithmSuite"],
    exir_pass_module: ["MemoryPlanningAlgorithmSuite"],
    banked_memory_planning: ["MemoryPlanningAlgorithmSuite", "BankedGreedy"],
}


def default_algorithm() -> Any:
    return ExecutorchBackendConfig().memory_planning_pass.memory_planning_algo


DEFAULT_ALGORITHM = default_algorithm()


def names_hold(objects: dict[str, Any]) -> bool:
    return all(
        getattr(module, name) is objects[name]
        for module, names in HOLDERS.items()
        for name in names
    )


@pytest.fixture(autouse=True)
def unpatched() -> Iterator[None]:
    cadence_memplan.unpatch_exir()
    yield
    cadence_memplan.unpatch_exir()


# --------------------------------------------------------------------------- the switch


def test_patch_points_every_name_at_ours_and_unpatch_restores_exirs() -> None:
    assert names_hold(EXIRS)
    assert default_algorithm() is DEFAULT_ALGORITHM
    result = cadence_memplan.patch_exir()
    assert result.smallest is False
    assert names_hold(OURS)
    suite = default_algorithm()
    assert type(suite) is cadence_memplan.exir.MemoryPlanningAlgorithmSuite
    assert suite.algo_list == [cadence_memplan.exir.greedy]
    assert MemoryPlanningPass().memory_planning_algo.algo_list == [cadence_memplan.exir.greedy]
    cadence_memplan.unpatch_exir()
    assert names_hold(EXIRS)
    assert default_algorithm() is DEFAULT_ALGORITHM


def test_patch_and_unpatch_are_idempotent() -> None:
    cadence_memplan.patch_exir()
    cadence_memplan.patch_exir()
    assert names_hold(OURS)
    assert patching.patched_smallest() is False
    cadence_memplan.unpatch_exir()
    cadence_memplan.unpatch_exir()
    assert names_hold(EXIRS)
    assert patching.patched_smallest() is None


def test_context_manager_puts_back_the_state_before_it() -> None:
    with cadence_memplan.patch_exir() as outer:
        assert outer.smallest is False
        with cadence_memplan.patch_exir(smallest=True):
            algorithms = default_algorithm().algo_list
            assert algorithms == [cadence_memplan.exir.greedy, cadence_memplan.exir.best]
            new_suite = exir_pass_module.MemoryPlanningAlgorithmSuite()
            assert new_suite.algo_list == algorithms
        assert names_hold(OURS)
        assert default_algorithm().algo_list == [cadence_memplan.exir.greedy]
    assert names_hold(EXIRS)
    assert default_algorithm() is DEFAULT_ALGORITHM


def test_a_default_pass_someone_else_replaced_is_left_alone() -> None:
    default_pass = ExecutorchBackendConfig().memory_planning_pass
    theirs = exir_planning.MemoryPlanningAlgorithmSuite(algo_list=[exir_planning.greedy])
    default_pass.memory_planning_algo = theirs
    try:
        cadence_memplan.patch_exir()
        assert default_algorithm() is theirs
        cadence_memplan.unpatch_exir()
        assert default_algorithm() is theirs
    finally:
        default_pass.memory_planning_algo = DEFAULT_ALGORITHM


def test_names_taken_after_the_patch_are_restored_too(monkeypatch: pytest.MonkeyPatch) -> None:
    cadence_memplan.patch_exir()
    late = types.ModuleType("executorch.late_exporter")
    late.greedy = exir_planning.greedy  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, late.__name__, late)
    assert late.greedy is OURS["greedy"]
    cadence_memplan.unpatch_exir()
    assert late.greedy is EXIRS["greedy"]


# --------------------------------------------------------------------------- programs


def mlp_edge() -> Any:
    model, inputs = build_model("mlp")
    return to_edge(torch.export.export(model, inputs))


def test_a_plain_to_executorch_plans_with_ours() -> None:
    """No control flow: exir's program byte for byte, the C++ core called only patched."""
    edge = mlp_edge()
    packing = mock.patch.object(records, "pack_shared_objects", wraps=records.pack_shared_objects)
    with packing as core:
        exirs = copy.deepcopy(edge).to_executorch()
        assert core.call_count == 0
        with cadence_memplan.patch_exir():
            ours = copy.deepcopy(edge).to_executorch()
            assert core.call_count > 0
            passed = copy.deepcopy(edge).to_executorch(
                ExecutorchBackendConfig(memory_planning_pass=MemoryPlanningPass())
            )
    assert bytes(ours.buffer) == bytes(exirs.buffer) == bytes(passed.buffer)


def test_control_flow_is_right_patched() -> None:
    module = ConsecutiveConds()
    edge = to_edge(torch.export.export(module, example_inputs(module), strict=True))
    exirs = copy.deepcopy(edge).to_executorch()
    assert not any(outcome.equal for outcome in outcomes(module, exirs))
    with cadence_memplan.patch_exir():
        ours = copy.deepcopy(edge).to_executorch()
    assert all(outcome.equal for outcome in outcomes(module, ours))
    direct = copy.deepcopy(edge).to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=cadence_memplan.exir.memory_planning_pass())
    )
    assert bytes(ours.buffer) == bytes(direct.buffer)


def test_banked_planning_builds_ours() -> None:
    target = banked_memory_planning.TargetMemoryMap(
        [banked_memory_planning.Bank("sram", 1, 1 << 20)]
    )
    with cadence_memplan.patch_exir():
        planning = banked_memory_planning.banked_memory_planning_pass(target)
    suite = planning.memory_planning_algo
    assert type(suite) is cadence_memplan.exir.MemoryPlanningAlgorithmSuite
    assert [type(algorithm) for algorithm in suite.algo_list] == [cadence_memplan.exir.BankedGreedy]


@pytest.mark.parametrize("smallest", [False, True])
def test_the_fallback_runs_exirs_own_greedy_not_the_patched_name(smallest: bool) -> None:
    """Specs the arrays cannot carry go to exir's greedy: the function captured on import.
    Looked up by name, it would be ours again, and recurse."""
    case = NAMED_GREEDY_CASES["a lifetime of None"]
    specs = build_specs(case.specs)
    exirs = run_greedy(exir_planning.greedy, case, specs)
    assert isinstance(exirs, Raised)  # exir's own greedy fails on it: the error says whose
    cadence_memplan.patch_exir(smallest=smallest)
    assert exir_planning.greedy is cadence_memplan.exir.greedy
    assert_same_outcome(exirs, run_greedy(cadence_memplan.exir.greedy, case, specs), case)
    ordered = [copy.deepcopy(specs)[i] for i in case.visit_order()]
    graph_module = graph_module_with(case.input_mem_buffer_sizes)
    with pytest.raises(type(exirs.error), match=re.escape(str(exirs.error))):
        cadence_memplan.exir.best(case.alignment, ordered, graph_module, None)


# --------------------------------------------------------------------------- the runner


def python(*arguments: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=cwd,
    )


EXPORT_SCRIPT = """\
import sys

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.memory_planning import greedy

from cadence_memplan.models import build_model

if __name__ == "__main__":
    print("argv", sys.argv[1:])
    print("greedy", greedy.__module__)
    model, inputs = build_model("mlp")
    program = to_edge(torch.export.export(model, inputs)).to_executorch()
    algorithms = ExecutorchBackendConfig().memory_planning_pass.memory_planning_algo.algo_list
    print("algorithms", " ".join(algorithm.__name__ for algorithm in algorithms))
    with open(sys.argv[1], "wb") as file:
        file.write(program.buffer)
    sys.exit(int(sys.argv[2]))
"""


@pytest.mark.parametrize("smallest", [False, True])
def test_runner_runs_an_unchanged_script(tmp_path: Path, smallest: bool) -> None:
    script = tmp_path / "exporter.py"
    script.write_text(EXPORT_SCRIPT)
    pte = tmp_path / "model.pte"
    switches = ["--smallest"] if smallest else []
    result = python("-m", "cadence_memplan.exir.patch", *switches, script, pte, "3", "--flag")
    assert result.returncode == 3, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["argv"] == repr([str(pte), "3", "--flag"])
    assert lines["greedy"] == "cadence_memplan.exir.planners"
    assert lines["algorithms"] == ("greedy best" if smallest else "greedy")
    # Exir's program, from this process, unpatched (best finds nothing smaller here).
    assert pte.read_bytes() == bytes(mlp_edge().to_executorch().buffer)


def test_runner_runs_a_module_and_explains_its_usage(tmp_path: Path) -> None:
    """The command line is Cadence's runner's (_boundary/script_runner.py; tests/test_patch.py checks the
    rest of it), with --smallest."""
    (tmp_path / "exporter_module.py").write_text(
        "import sys\nfrom executorch.exir import memory_planning\n"
        "print(__name__, sys.argv[1:], memory_planning.greedy.__module__)\nsys.exit(5)\n"
    )
    module = python(
        "-m", "cadence_memplan.exir.patch", "-m", "exporter_module", "a", "-b", cwd=tmp_path
    )
    assert module.returncode == 5, module.stderr
    assert module.stdout.strip() == "__main__ ['a', '-b'] cadence_memplan.exir.planners"
    unknown = python("-m", "cadence_memplan.exir.patch", "--fast", tmp_path / "x.py")
    assert unknown.returncode == 2
    assert "unknown option --fast" in unknown.stderr
    assert "--smallest, -m and -h" in unknown.stderr
    helped = python("-m", "cadence_memplan.exir.patch", "--help")
    assert helped.returncode == 0
    assert "--smallest" in helped.stdout
    assert "patch_exir()" in helped.stdout
