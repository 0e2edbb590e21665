"""``patch_cadence()``: Cadence's compiler, unchanged, plans with our classes.

Every entry point of Cadence's compiler that ends in a program gives the same ``.pte``
bytes with the switch on and off, and with it on the C++ core is called (counted, so the
test fails if the patch did nothing) while with it off it is not. ``unpatch_cadence``
puts upstream's exact objects back; both are idempotent; ``CADENCE_MEMPLAN_ALGO`` and
the keyword choose ``best``; ``python -m cadence_memplan.cadence.patch`` runs a script unchanged.
"""

from __future__ import annotations

import contextlib
import inspect
import subprocess
import sys
import textwrap
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from executorch.backends.cadence.aot import memory_planning as upstream_memory_planning
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import get_default_memory_config
from executorch.exir import EdgeProgramManager, ExecutorchProgramManager

import cadence_memplan
from cadence_memplan import _core
from cadence_memplan.cadence import patching, reports
from cadence_memplan.cadence.compiler import cadence_backend_config, import_cadence_compiler
from cadence_memplan.models import build_model

pytestmark = pytest.mark.executorch

compiler = import_cadence_compiler()
UPSTREAM = {
    "CadenceMemoryPlanning": upstream_memory_planning.CadenceMemoryPlanning,
    "PositionBasedGreedyWithHierarchy": upstream_memory_planning.PositionBasedGreedyWithHierarchy,
    "GreedyWithHeuristic": upstream_memory_planning.GreedyWithHeuristic,
    "print_memory_planning_info": upstream_memory_planning.print_memory_planning_info,
}
OURS = {
    "CadenceMemoryPlanning": cadence_memplan.CadenceMemoryPlanning,
    "PositionBasedGreedyWithHierarchy": cadence_memplan.PositionBasedGreedyWithHierarchy,
    "GreedyWithHeuristic": cadence_memplan.GreedyWithHeuristic,
    "print_memory_planning_info": reports.print_memory_planning_info,
}
# The modules that hold those names (compiler imports two of them by name).
HOLDERS = {
    upstream_memory_planning: list(UPSTREAM),
    compiler: ["CadenceMemoryPlanning", "print_memory_planning_info"],
}


@pytest.fixture(autouse=True)
def unpatched(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(patching.ALGORITHM_ENV, raising=False)
    monkeypatch.delenv(patching.REORDER_ENV, raising=False)
    cadence_memplan.unpatch_cadence()
    yield
    cadence_memplan.unpatch_cadence()


@pytest.fixture
def core_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the C++ core planned (one entry per call)."""
    calls: list[int] = []
    core_plan = _core.plan

    def counting_core_plan(**arguments: Any) -> Any:
        calls.append(1)
        return core_plan(**arguments)

    monkeypatch.setattr(_core, "plan", counting_core_plan)
    return calls


def names_hold(expected: dict[str, Any]) -> bool:
    return all(
        getattr(module, name) is expected[name]
        for module, names in HOLDERS.items()
        for name in names
    )


# --------------------------------------------------------------------------- entry points


def finish(edge: EdgeProgramManager, mem_algo: int) -> bytes:
    """What a toolchain does with an edge program: to_executorch with the
    ``CadenceMemoryPlanning`` it finds in executorch's module (looked up now)."""
    planning = upstream_memory_planning.CadenceMemoryPlanning(
        get_default_memory_config(), CompileMode.DEFAULT, mem_algo
    )
    return bytes(edge.to_executorch(cadence_backend_config(planning)).buffer)


def mlp() -> tuple[Any, tuple[Any, ...]]:
    return build_model("mlp")


def exported_mlp() -> Any:
    import torch

    model, inputs = mlp()
    return torch.export.export(model, inputs, strict=True)


# Entry point -> how it becomes a .pte at mem_algo m.
ENTRY_POINTS: dict[str, Callable[[int], bytes]] = {
    "export_to_executorch_gen_etrecord": lambda m: bytes(
        compiler.export_to_executorch_gen_etrecord(*mlp(), mem_algo=m).buffer
    ),
    # Cadence's export_example.py calls this one, on an exported (quantized) program.
    "_lower_ep_to_cadence_gen_etrecord": lambda m: bytes(
        compiler._lower_ep_to_cadence_gen_etrecord(exported_mlp(), mem_algo=m).buffer
    ),
    "export_to_cadence": lambda m: finish(compiler.export_to_cadence(*mlp()), m),
    "quantize_and_export_to_cadence": lambda m: finish(
        compiler.quantize_and_export_to_cadence(*mlp()), m
    ),
    "export_to_edge": lambda m: finish(compiler.export_to_edge(*mlp()), m),
}
# Returns an edge program that no config takes to a .pte: its quantize/dequantize ops have
# no out variants until Cadence's passes replace them (quantize_and_export_to_cadence).
WITHOUT_PROGRAM = {"quantize_and_export_to_edge"}


def test_every_public_entry_point_is_covered() -> None:
    """Each public function of Cadence's compiler that returns a program is tested below."""
    returning_programs = {
        name
        for name, value in vars(compiler).items()
        if inspect.isfunction(value)
        and value.__module__ == compiler.__name__
        and not name.startswith("_")
        and inspect.signature(value).return_annotation
        in (EdgeProgramManager, ExecutorchProgramManager)
    }
    covered = {name for name in ENTRY_POINTS if not name.startswith("_")} | WITHOUT_PROGRAM
    assert returning_programs == covered


def test_the_entry_point_without_a_program_fails_alike_patched(core_calls: list[int]) -> None:
    (name,) = WITHOUT_PROGRAM
    errors = []
    for patched in (False, True):
        with cadence_memplan.patch_cadence() if patched else contextlib.nullcontext():
            edge = getattr(compiler, name)(*mlp())
            with pytest.raises(RuntimeError, match="Missing out variants") as raised:
                finish(edge, 0)
        errors.append(str(raised.value))
    assert errors[0] == errors[1]
    assert not core_calls  # it fails before planning


@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
@pytest.mark.parametrize("entry_point", list(ENTRY_POINTS))
def test_entry_point_gives_the_same_program_patched(
    entry_point: str, mem_algo: int, core_calls: list[int]
) -> None:
    unpatched_program = ENTRY_POINTS[entry_point](mem_algo)
    assert not core_calls, "the core ran without the patch"
    with cadence_memplan.patch_cadence():
        patched_program = ENTRY_POINTS[entry_point](mem_algo)
    assert core_calls, "the patch is on but the core never planned"
    assert patched_program == unpatched_program


# --------------------------------------------------------------------------- the switch


def test_patch_points_every_name_at_ours_and_unpatch_restores_upstreams() -> None:
    assert names_hold(UPSTREAM)
    result = cadence_memplan.patch_cadence()
    assert result.algorithm == "mem_algo"
    assert names_hold(OURS)
    cadence_memplan.unpatch_cadence()
    assert names_hold(UPSTREAM)


def test_patch_and_unpatch_are_idempotent() -> None:
    cadence_memplan.patch_cadence()
    cadence_memplan.patch_cadence()
    assert names_hold(OURS)
    assert patching.patched_algorithm() == "mem_algo"
    cadence_memplan.unpatch_cadence()
    cadence_memplan.unpatch_cadence()
    assert names_hold(UPSTREAM)
    assert patching.patched_algorithm() is None


def test_context_manager_puts_back_the_state_before_it() -> None:
    with cadence_memplan.patch_cadence() as outer:
        assert outer.algorithm == "mem_algo"
        with cadence_memplan.patch_cadence(algorithm="best"):
            assert compiler.CadenceMemoryPlanning is patching.BestCadenceMemoryPlanning
        assert names_hold(OURS)
    assert names_hold(UPSTREAM)


def test_mem_algo_keeps_its_meaning() -> None:
    cadence_memplan.patch_cadence()
    config = get_default_memory_config()
    placers = [
        type(compiler.CadenceMemoryPlanning(config, CompileMode.DEFAULT, mem_algo).algo)
        for mem_algo in (0, 1, 2)
    ]
    assert placers == [
        cadence_memplan.PositionBasedGreedyWithHierarchy,
        cadence_memplan.GreedyWithHeuristic,
        cadence_memplan.BestOfHierarchy,
    ]
    # Upstream's own class, held from before the patch, finds our placers by name too.
    upstream = UPSTREAM["CadenceMemoryPlanning"](config, CompileMode.DEFAULT, 1)
    assert type(upstream.algo) is cadence_memplan.GreedyWithHeuristic


def test_names_taken_after_the_patch_are_restored_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Cadence module imported while patched takes our objects by name; unpatch finds it."""
    cadence_memplan.patch_cadence()
    late = types.ModuleType("executorch.backends.cadence.late_toolchain")
    late.CadenceMemoryPlanning = upstream_memory_planning.CadenceMemoryPlanning  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, late.__name__, late)
    assert late.CadenceMemoryPlanning is OURS["CadenceMemoryPlanning"]
    cadence_memplan.unpatch_cadence()
    assert late.CadenceMemoryPlanning is UPSTREAM["CadenceMemoryPlanning"]


@pytest.mark.parametrize("how", ["environment", "keyword"])
def test_best_for_mem_algo_callers(how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if how == "environment":
        monkeypatch.setenv(patching.ALGORITHM_ENV, "best")
        result = cadence_memplan.patch_cadence()
    else:
        result = cadence_memplan.patch_cadence(algorithm="best")
    assert result.algorithm == "best"
    config = get_default_memory_config()
    for mem_algo in (0, 1, 2):
        planning = compiler.CadenceMemoryPlanning(config, CompileMode.DEFAULT, mem_algo)
        assert type(planning.algo) is cadence_memplan.BestOfHierarchy
    assert upstream_memory_planning.GreedyWithHeuristic is cadence_memplan.BestOfHierarchy
    # A program still lowers, planned by best.
    program = compiler.export_to_executorch_gen_etrecord(*mlp(), mem_algo=0)
    assert program.buffer[4:8] == b"ET12"


def test_environment_says_mem_algo_or_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("", "mem_algo", " MEM_ALGO "):
        monkeypatch.setenv(patching.ALGORITHM_ENV, value)
        assert cadence_memplan.patch_cadence().algorithm == "mem_algo"
        assert compiler.CadenceMemoryPlanning is OURS["CadenceMemoryPlanning"]


@pytest.mark.parametrize("how", ["environment", "keyword"])
def test_invalid_algorithm_is_a_clear_error_that_changes_nothing(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "environment":
        monkeypatch.setenv(patching.ALGORITHM_ENV, "fastest")
        with pytest.raises(ValueError, match=r"CADENCE_MEMPLAN_ALGO='fastest': expected 'best'"):
            cadence_memplan.patch_cadence()
    else:
        with pytest.raises(
            ValueError, match=r"algorithm='position': expected 'best' .* 'mem_algo'"
        ):
            cadence_memplan.patch_cadence(algorithm="position")
    assert names_hold(UPSTREAM)
    assert patching.patched_algorithm() is None


@pytest.mark.parametrize("how", ["environment", "keyword"])
def test_reorder_makes_every_planner_the_compiler_builds_reorder(
    how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if how == "environment":
        monkeypatch.setenv(patching.REORDER_ENV, " On ")
        patch = cadence_memplan.patch_cadence(algorithm="best")
    else:
        patch = cadence_memplan.patch_cadence(algorithm="best", reorder=True)
    assert (patch.algorithm, patch.reorder) == ("best", True)
    config = get_default_memory_config()
    planning = compiler.CadenceMemoryPlanning(config, CompileMode.DEFAULT, 0)
    assert planning.reorder
    assert type(planning.algo) is cadence_memplan.BestOfHierarchy
    assert not compiler.CadenceMemoryPlanning(config, CompileMode.DEFAULT, 0, reorder=False).reorder
    with cadence_memplan.patch_cadence(reorder=False):
        assert not compiler.CadenceMemoryPlanning(config, CompileMode.DEFAULT, 1).reorder
    assert compiler.CadenceMemoryPlanning(config, CompileMode.DEFAULT, 1).reorder  # put back
    assert patching.patched_reorder() is True
    cadence_memplan.unpatch_cadence()
    assert names_hold(UPSTREAM)
    assert patching.patched_reorder() is None


def test_reorder_environment_refuses_what_it_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (("", False), ("0", False), ("off", False), ("1", True), ("yes", True)):
        monkeypatch.setenv(patching.REORDER_ENV, value)
        assert cadence_memplan.patch_cadence().reorder is expected
    cadence_memplan.unpatch_cadence()
    monkeypatch.setenv(patching.REORDER_ENV, "maybe")
    with pytest.raises(ValueError, match=r"CADENCE_MEMPLAN_REORDER='maybe': expected 1 "):
        cadence_memplan.patch_cadence()
    assert names_hold(UPSTREAM)


# --------------------------------------------------------------------------- new interpreters


def python(*arguments: str | Path, **environment: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (patching.ALGORITHM_ENV, patching.REORDER_ENV)
    }
    env.update(environment)
    return subprocess.run(
        [sys.executable, *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env=env,
    )


IMPORT_COMPILER = "import executorch.backends.cadence.aot.compiler as compiler"


def test_the_patch_makes_cadences_compiler_importable() -> None:
    """On Python 3.11 importing Cadence's compiler fails (typing.override); after
    patch_cadence() it works, in a fresh interpreter."""
    if sys.version_info < (3, 12):
        plain = python("-c", IMPORT_COMPILER)
        assert plain.returncode != 0
        assert "override" in plain.stderr
    patched = python(
        "-c",
        "import cadence_memplan; cadence_memplan.patch_cadence();"
        f" {IMPORT_COMPILER}; print(compiler.CadenceMemoryPlanning.__module__)",
    )
    assert patched.returncode == 0, patched.stderr
    assert patched.stdout.split() == ["cadence_memplan.cadence.memory_planning"]


TOOLCHAIN_SCRIPT = """\
import sys

from executorch.backends.cadence.aot.compiler import (
    CadenceMemoryPlanning,
    export_to_executorch_gen_etrecord,
)

from cadence_memplan.models import build_model

if __name__ == "__main__":
    print("argv", sys.argv[1:])
    print("file", __file__)
    print("path0", sys.path[0])
    print("planner", CadenceMemoryPlanning.__module__, CadenceMemoryPlanning.__name__)
    program = export_to_executorch_gen_etrecord(*build_model("mlp"), mem_algo=1)
    with open(sys.argv[1], "wb") as file:
        file.write(program.buffer)
    sys.exit(int(sys.argv[2]))
"""


def test_runner_runs_an_unchanged_script(tmp_path: Path) -> None:
    script = tmp_path / "toolchain.py"
    script.write_text(TOOLCHAIN_SCRIPT)
    pte = tmp_path / "model.pte"
    result = python("-m", "cadence_memplan.cadence.patch", script, pte, "3", "--flag")
    assert result.returncode == 3, result.stderr
    lines = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert lines["argv"] == repr([str(pte), "3", "--flag"])
    assert lines["file"] == str(script)
    assert lines["path0"] == str(tmp_path)
    assert lines["planner"] == "cadence_memplan.cadence.memory_planning CadenceMemoryPlanning"
    # The program upstream's planner gives, from this process, unpatched.
    expected = compiler.export_to_executorch_gen_etrecord(*mlp(), mem_algo=1).buffer
    assert pte.read_bytes() == expected


def test_runner_takes_the_environment_and_refuses_a_bad_value(tmp_path: Path) -> None:
    script = tmp_path / "which.py"
    script.write_text(
        textwrap.dedent(
            f"""\
            {IMPORT_COMPILER}
            print(compiler.CadenceMemoryPlanning.__name__)
            """
        )
    )
    best = python("-m", "cadence_memplan.cadence.patch", script, CADENCE_MEMPLAN_ALGO="best")
    assert best.returncode == 0, best.stderr
    assert best.stdout.strip() == "BestCadenceMemoryPlanning"
    bad = python("-m", "cadence_memplan.cadence.patch", script, CADENCE_MEMPLAN_ALGO="fast")
    assert bad.returncode == 2
    assert "CADENCE_MEMPLAN_ALGO='fast': expected 'best'" in bad.stderr.strip().splitlines()[-1]
    assert not bad.stdout  # the script never ran


def test_runner_runs_a_module_and_explains_its_usage(tmp_path: Path) -> None:
    (tmp_path / "toolchain_module.py").write_text(
        "import sys\nprint(__name__, sys.argv[1:])\nsys.exit(5)\n"
    )
    module = subprocess.run(
        [
            sys.executable,
            "-m",
            "cadence_memplan.cadence.patch",
            "-m",
            "toolchain_module",
            "a",
            "-b",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )
    assert module.returncode == 5, module.stderr
    assert module.stdout.strip() == "__main__ ['a', '-b']"
    nothing = python("-m", "cadence_memplan.cadence.patch")
    assert nothing.returncode == 2
    assert "give a SCRIPT to run, or -m MODULE" in nothing.stderr
    missing = python("-m", "cadence_memplan.cadence.patch", tmp_path / "absent.py")
    assert missing.returncode == 2
    assert "no such file" in missing.stderr
    helped = python("-m", "cadence_memplan.cadence.patch", "--help")
    assert helped.returncode == 0
    assert "CADENCE_MEMPLAN_ALGO=best" in helped.stdout
