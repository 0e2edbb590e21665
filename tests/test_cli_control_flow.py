"""Every command and option on programs with control flow (issue 52): generated programs
of conds and maps (tests/control_flow_programs.py), saved as ``.pt2`` archives, through
``size``, ``sweep`` and ``plan`` with every ``--algo``, ``--reorder``, ``--compare`` and
both lowerings, in process; and Cadence's compiler with ``reorder=True`` on the portable
runtime against eager.

Each run must finish (exit 0, no traceback), print a plan the validator accepts, and
where ``--compare`` finds upstream's program different, say why (our plan passes the
control-flow check, upstream's is flagged or sees the submodules' bytes as free); a
difference on a program without control flow still fails.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from control_flow_programs import FAMILY, Generated, backend_config, export, generate, outcomes
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import get_default_memory_config

from cadence_memplan import CadenceMemoryPlanning, validate_control_flow
from cadence_memplan.analysis.explain import explain_peaks
from cadence_memplan.cadence.compiler import cadence_backend_config
from cadence_memplan.cadence.lowering import lower_exported
from cadence_memplan.cli.explaining import EXPLAIN_ROWS
from cadence_memplan.cli.main import main
from cadence_memplan.io import Memory, read_plan_file
from cadence_memplan.workflow.compare import compare_with_upstream
from cadence_memplan.workflow.plan import (
    PlanningOptions,
    check_control_flow,
    check_plan,
    load_input,
    plan_input,
    sweep_input,
)
from cadence_memplan.workflow.size import size_input

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected:UserWarning"),
]

# Generated programs, with a cond, a nested cond and a map between them; through each
# command with -m slow, with the issue-40 family (each command lowers the program anew,
# some 15 s each).
SEEDS = (0, 1, 3)
PROGRAMS = ("seed-0", "seed-1", "seed-3", "seed-9", "seed-21", *FAMILY)


def module_of(name: str) -> torch.nn.Module:
    if name.startswith("seed-"):
        return Generated(generate(int(name.removeprefix("seed-"))))
    return FAMILY[name]()


@pytest.fixture(scope="module")
def archive_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """A program's ``.pt2`` (torch.export.save), saved once per module."""
    saved: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in saved:
            path = tmp_path_factory.mktemp("programs") / f"{name}.pt2"
            torch.export.save(export(module_of(name)), path)
            saved[name] = path
        return saved[name]

    return get


def run(capsys: pytest.CaptureFixture[str], *arguments: str | Path) -> str:
    """``cadence-memplan ARGUMENTS`` in process; its stdout, once it exited 0."""
    status = main([*map(str, arguments), "-q"])
    captured = capsys.readouterr()
    assert status == 0, captured.out + captured.err
    assert "Traceback" not in captured.err
    return captured.out


def every_command(capsys: pytest.CaptureFixture[str], archive: Path) -> None:
    for algo in ("position", "heuristic", "best"):
        out = run(capsys, "plan", archive, "--algo", algo)
        assert "plan check: valid" in out
    for lowering in ("cadence", "exir"):
        out = run(capsys, "plan", archive, "--reorder", "--lowering", lowering)
        assert "plan check: valid" in out
        assert "reorder: kept the given order" in out
        out = run(capsys, "size", archive, "--lowering", lowering)
        assert "every tensor fits from" in out
    out = run(capsys, "plan", archive, "--reorder", "--algo", "best")
    assert "plan check: valid" in out
    out = run(capsys, "sweep", archive, "--vary", "fast", "--sizes", "256:4KiB:3")
    assert "4,096" in out or "4.0 KiB" in out
    for algo in ("position", "heuristic"):
        out = run(capsys, "plan", archive, "--algo", algo, "--compare")
        assert "plan check: valid" in out
        if "serialized programs DIFFER" in out:
            assert "compare: different by design: " in out


@pytest.mark.parametrize("lowering", ["cadence", "exir"])
def test_a_generated_program_through_every_library_step(lowering: str, archive_of: Any) -> None:
    """What each command runs, on one lowering of a program with a cond and a map (the
    commands themselves on more programs with -m slow): every placer, reorder, size,
    sweep and the comparison with upstream's pass."""
    loaded = load_input(archive_of("seed-1"), lowering=lowering)
    memories = [Memory("fast", 512, 16), Memory("slow", 1 << 20, 16)]
    for algorithm in ("position", "heuristic", "best"):
        for reorder in (False, True):
            planned = plan_input(
                loaded, memories, PlanningOptions(algorithm, lowering=lowering, reorder=reorder)
            )
            assert check_plan(planned.table, memories) is None
            graph = planned.program.exported_program().graph_module
            assert validate_control_flow(graph) is None
            assert check_control_flow(planned.program) is None
            # The submodules' tensors are rows too, at their op's node, inside its bytes.
            inside = [
                row for row, label in enumerate(planned.table.labels) if "/submodule_" in str(label)
            ]
            assert inside
            assert planned.table.shares_storage[inside].all()
            if reorder:
                assert planned.reorder is not None
                assert not planned.reorder.reordered
    sizing = size_input(loaded, memories, PlanningOptions("best", lowering=lowering), points=3)
    assert sizing.sized[0].all_fit_from > 0
    rows = sweep_input(
        loaded, memories, 0, [256, 1024, 4096], PlanningOptions("heuristic", lowering=lowering)
    )
    assert len(rows) == 3
    ours = plan_input(loaded, memories, PlanningOptions("heuristic", lowering=lowering))
    comparison = compare_with_upstream(
        ours, loaded, PlanningOptions("heuristic", lowering=lowering)
    )
    assert comparison.same_program or comparison.by_design is not None


@pytest.mark.slow
@pytest.mark.parametrize("name", PROGRAMS)
def test_more_programs_through_every_command(
    name: str, archive_of: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    every_command(capsys, archive_of(name))


def test_the_default_seeds_hold_conds_and_maps() -> None:
    kinds = " ".join(generate(seed).describe() for seed in SEEDS)
    assert "map" in generate(1).describe()
    assert "cond" in kinds
    assert "map" in kinds


@pytest.mark.parametrize("name", ["consecutive-conds", "seed-1"])
def test_explain_counts_the_submodules_tensors(
    name: str, capsys: pytest.CaptureFixture[str], archive_of: Any, tmp_path: Path
) -> None:
    """``plan --explain``: the tensors the submodules write are alive at the peak node in
    the bytes they write, listed apart, and their bytes are no holes; the report calls
    them what they are, not tensors inside another's storage."""
    plan = tmp_path / "plan.json"
    out = run(capsys, "plan", archive_of(name), "--explain", "--out", plan)
    plan_file = read_plan_file(plan)
    table = plan_file.table
    assert plan_file.memories is not None
    in_submodule = table.in_submodule
    overall = next(line for line in out.splitlines() if line.startswith("overall peak:"))
    assert f"{in_submodule.sum()} tensors control-flow submodules write, not counted" in overall
    assert ("inside another's storage" in overall) == (table.shares_storage & ~in_submodule).any()
    explained = [
        peak for peak in explain_peaks(table, len(plan_file.memories)) if peak.peak_node >= 0
    ]
    assert any(peak.submodule_rows.size for peak in explained)
    for peak in explained:
        section = out.split(f"(memory {peak.mem_id}): ")[1].split("\nexplain ")[0]
        # A valid plan: the own tensors, the submodules' and the holes fill the peak usage.
        assert peak.hole_bytes == peak.gap - peak.submodule_bytes
        if peak.submodule_rows.size:
            assert (
                f"write, alive there in the bytes kept for their ops, {peak.submodule_bytes:,} B"
                in section
            )
            for row in peak.submodule_rows[:EXPLAIN_ROWS].tolist():
                assert f"    {table.labels[row]} " in section
        if peak.hole_bytes:
            assert f", {peak.hole_bytes:,} B" in section
        else:
            assert "no holes below the peak usage there" in section


def test_compare_says_why_upstreams_control_flow_plan_differs(
    archive_of: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The family's first program: upstream's plan overwrites a live tensor (docs/cadence.md),
    so the programs differ, and --compare says so and exits 0."""
    out = run(capsys, "plan", archive_of("consecutive-conds"), "--compare")
    assert "compare: serialized programs DIFFER" in out
    assert "different by design: upstream's plan is wrong" in out
    assert "overwrites" in out


def test_compare_still_fails_on_an_unexplained_difference(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A model without control flow whose 'upstream' plans differently (ours, with the
    graph's inputs left unplanned) is a failure, exit 1."""
    import executorch.backends.cadence.aot.memory_planning as upstream

    class NotUpstream(CadenceMemoryPlanning):
        def __init__(self, memory_config: Any, mode: Any, mem_algo: int, **rest: Any) -> None:
            super().__init__(memory_config, mode, mem_algo, **{**rest, "alloc_graph_input": False})

    monkeypatch.setattr(upstream, "CadenceMemoryPlanning", NotUpstream)
    status = main(["plan", "cnn", "--compare", "-q"])
    captured = capsys.readouterr()
    out = captured.out
    assert "serialized programs DIFFER" in out, captured.err
    assert "different by design" not in out
    assert status == 1


@pytest.mark.parametrize("name", ["seed-1"])
def test_cadences_compiler_with_reorder_is_right(name: str) -> None:
    """Cadence's compiler with CadenceMemoryPlanning(reorder=True) (what
    CADENCE_MEMPLAN_REORDER=1 patches in): the program runs as eager."""
    module = module_of(name)
    edge = lower_exported(export(module), "cadence")
    planning = CadenceMemoryPlanning(
        get_default_memory_config(), CompileMode.DEFAULT, 1, reorder=True
    )
    program = edge.to_executorch(backend_config(module, base=cadence_backend_config(planning)))
    assert planning.last_reorder is not None
    assert not planning.last_reorder.reordered
    assert all(outcome.equal for outcome in outcomes(module, program))
    assert validate_control_flow(program.exported_program().graph_module) is None
