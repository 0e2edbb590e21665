"""The command line on a program of several methods (issue 51): a ``.pt2`` of two programs
(torch's ``package_pt2``) built from ``tests/stateful_programs.py``.

- ``plan`` plans the methods together: each method's report and the program's, against
  the same edge program planned in Python by ``CadenceMemoryPlanning`` (the figures, the
  validator on every method, the state's place), and its ``--pte`` run on the portable
  runtime against eager with the state carried;
- without ``--share-mutable-buffers`` the unshared state is a warning naming the buffer
  (``--quiet`` too), an error with ``--strict-sharing``;
- ``size`` sizes each method as that method alone in an archive of its own, and the
  program as the largest; with ``--share-mutable-buffers`` the program planned whole:
  ``plan --share-mutable-buffers`` at the size it reports keeps every tensor in fast
  memory, the state at one place, and one alignment less does not where it says proved;
- what a program of several methods cannot take is refused in one line before any work
  (these need no torch: the archive's directory is all that is read).
"""

from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
from cli_support import MODEL_TIMEOUT, SMALL_CSV, error_line, number, run

# --------------------------------------------------------------------------- refusals
# An archive's directory with two programs: resolve_input reads only that.


@pytest.fixture
def two_programs(tmp_path: Path) -> Path:
    archive = tmp_path / "both.pt2"
    with zipfile.ZipFile(archive, "w") as files:
        for name in ("init", "step"):
            files.writestr(f"both/models/{name}.json", "{}")
    return archive


@pytest.mark.parametrize(
    ("arguments", "error"),
    [
        (["plan", "--out", "plan.json", "--trace", "t.json"], "--out, --trace: not for a program"),
        (["plan", "--plot", "m.png"], "--plot: not for a program of several methods"),
        (["plan", "--compare"], "--compare: not for a program of several methods"),
        (["size", "--json", "s.json"], "--json: not for a program of several methods"),
        (["sweep", "--vary", "1", "--sizes", "1KiB:4KiB:3"], "sweep: not for a program"),
        (
            ["size", "--share-mutable-buffers", "--reorder"],
            "--reorder with --share-mutable-buffers: not sized",
        ),
    ],
)
def test_what_several_methods_cannot_take_is_refused_first(
    two_programs: Path, arguments: list[str], error: str, tmp_path: Path
) -> None:
    command, *rest = arguments
    rest = [str(tmp_path / item) if "." in item and ":" not in item else item for item in rest]
    result = run(command, two_programs, *rest)
    assert result.returncode == 2
    line = error_line(result)
    assert error in line
    if "not for" in line:
        assert "(both.pt2 holds init, step)" in line
    assert not list(tmp_path.glob("*.json"))
    assert not list(tmp_path.glob("*.png"))


def test_sharing_flags_need_several_methods(tmp_path: Path) -> None:
    csv = tmp_path / "small.csv"
    csv.write_text(SMALL_CSV)
    for flag in ("--share-mutable-buffers", "--strict-sharing"):
        line = error_line(run("plan", csv, flag))
        assert line.endswith(
            f"{flag}: for a .pt2 archive of several methods only (small.csv is one program,"
            " whose buffers no other method uses)"
        )
    both = run("plan", csv, "--share-mutable-buffers", "--strict-sharing")
    assert "not allowed with argument --share-mutable-buffers" in error_line(both)


# --------------------------------------------------------------------------- with torch

MEMORIES = "fast=768:16,near=1MiB:16"  # the stream's 256 B state fits in fast
# exir's emitter says so of every mutated buffer, as in tests/test_stateful.py.
MUTATION_WARNING = pytest.mark.filterwarnings(
    "ignore:Mutation on a buffer in the model is detected:UserWarning"
)


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("executorch", reason="needs torch and executorch")
    from stateful_programs import PROGRAMS, export_methods
    from torch.export.pt2_archive._package import package_pt2

    folder = tmp_path_factory.mktemp("archives")
    found = {}
    for name, program in PROGRAMS.items():
        found[name] = folder / f"{name}.pt2"
        package_pt2(str(found[name]), exported_programs=export_methods(program))
    return found


def python_plan(name: str, memories: list[int], **sharing: bool) -> Any:
    """The same program planned in Python, as docs/stateful.md shows: the methods lowered
    by Cadence's compiler, ``to_executorch`` with ``CadenceMemoryPlanning``."""
    from executorch.backends.cadence.aot.pass_utils import CompileMode
    from executorch.backends.cadence.aot.utils import MemoryConfig
    from stateful_programs import PROGRAMS, backend_config, edge_program

    from cadence_memplan import CadenceMemoryPlanning
    from cadence_memplan.cadence.compiler import cadence_backend_config

    config = MemoryConfig(memories, memory_alignments=[16] * len(memories))
    planning = CadenceMemoryPlanning(config, CompileMode.DEFAULT, 0, **sharing)
    base = cadence_backend_config(planning)
    return edge_program(PROGRAMS[name], "cadence").to_executorch(backend_config(planning, base))


def block_rows(stdout: str, title: str) -> dict[str, list[str]]:
    """The table under the line starting with ``title``: memory name -> its cells."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 3
    rows = {}
    for line in lines[start:]:
        if not line.startswith(("fast ", "near ")):
            break
        rows[line.split()[0]] = line.split()
    return rows


@pytest.mark.executorch
@MUTATION_WARNING
def test_plan_shares_the_state_and_sizes_each_memory_for_the_largest_method(
    archives: dict[str, Path], tmp_path: Path
) -> None:
    from stateful_programs import STREAMING, run_on_runtime

    from cadence_memplan.cadence.lowering import graph_table
    from cadence_memplan.io.memories import parse_memory_spec
    from cadence_memplan.stats import memory_stats
    from cadence_memplan.workflow.plan import check_plan

    pte = tmp_path / "stream.pte"
    result = run(
        "plan", archives["streaming"], "--memory", MEMORIES, "--share-mutable-buffers",
        "--pte", pte, "--explain", "-q", timeout=MODEL_TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr
    ours = python_plan("streaming", [768, 1 << 20], share_mutable_buffers=True)
    memories = parse_memory_spec(MEMORIES)
    program = block_rows(result.stdout, "streaming.pt2, the program:")
    for m, memory in enumerate(("fast", "near")):
        usage = {}
        for method in STREAMING.methods:
            exported = ours.exported_program(method)
            table, _ = graph_table(exported.graph_module, exported.graph_signature, True, True)
            assert check_plan(table, memories) is None
            usage[method] = memory_stats(table, 2)[m].peak_usage
            cells = block_rows(result.stdout, f"streaming.pt2 method {method}:")[memory]
            assert number(cells[3]) == usage[method]  # peak usage (B)
            # each memory sized for the largest method, in every method of the program
            assert exported.graph_module.meta["non_const_buffer_sizes"][m + 1] >= max(
                usage.values()
            )
        assert [number(cell) for cell in program[memory][4:]] == list(usage.values())
        assert number(program[memory][2]) == max(usage.values())
    assert (
        "state: 256 bytes in 1 mutable buffer, at one place in every method; 256 B of it in fast"
        in result.stdout
    )
    assert "  state (256 B): fast+0 in init, step" in result.stdout
    for method in STREAMING.methods:  # --explain, under each method's report
        block = result.stdout.split(f"streaming.pt2 method {method}:")[1]
        block = block.split("\nstreaming.pt2")[0]  # up to the next method's, or the program's
        assert "explain fast (memory 1): peak usage" in block
    assert f"wrote program: {pte}" in result.stdout
    assert run_on_runtime(STREAMING, pte.read_bytes()).equal


@pytest.mark.executorch
@MUTATION_WARNING
def test_unshared_state_is_never_silent(archives: dict[str, Path]) -> None:
    from stateful_programs import STREAMING

    from cadence_memplan import UnsharedStateWarning

    result = run("plan", archives["streaming"], "--memory", MEMORIES, "-q", timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert (
        "cadence-memplan: warning: CadenceMemoryPlanning: mutable buffer 'state' (used by 2"
        " methods) is not shared between the methods" in result.stderr
    )
    assert "Plan with --share-mutable-buffers" in result.stderr
    assert "NOT shared: each method its own copy" in result.stdout
    with pytest.warns(UnsharedStateWarning, match="mutable buffer 'state'"):
        ours = python_plan("streaming", [768, 1 << 20])  # each method on its own, in Python
    places = []
    for method in STREAMING.methods:
        exported = ours.exported_program(method)
        node = next(iter(exported.graph_module.graph.find_nodes(op="placeholder")))
        spec = node.meta["spec"]
        places.append(f"{('fast', 'near')[spec.mem_id - 1]}+{spec.mem_offset:,} in {method}")
    assert f"  state (256 B): {', '.join(places)}" in result.stdout
    strict = run(
        "plan", archives["streaming"], "--memory", MEMORIES, "--strict-sharing",
        timeout=MODEL_TIMEOUT,
    )  # fmt: skip
    assert strict.returncode == 1
    assert error_line(strict).startswith(
        "cadence-memplan: error: cannot plan streaming.pt2: CadenceMemoryPlanning: mutable"
        " buffer 'state' (used by 2 methods) is not shared"
    )


@pytest.mark.executorch
@MUTATION_WARNING
def test_size_reports_each_method_as_its_own_program_and_the_largest(
    archives: dict[str, Path], tmp_path: Path
) -> None:
    import torch
    from stateful_programs import KV_CACHE, export_methods

    from cadence_memplan.api import DEFAULT_WORK_BUDGET
    from cadence_memplan.io.memories import parse_memory_spec
    from cadence_memplan.request import PlanningOptions
    from cadence_memplan.workflow.size import size_input

    spec = "fast=4KiB:16,near=1MiB:16"
    result = run("size", archives["kv-cache"], "--memory", spec, "--points", "0", "-q",
                 timeout=MODEL_TIMEOUT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "mutable buffers 'k_cache' (used by 2 methods), 'v_cache'" in result.stderr
    fits = {}
    work = DEFAULT_WORK_BUDGET // len(KV_CACHE.methods)  # the default, split over the methods
    for method, exported in export_methods(KV_CACHE).items():
        alone = tmp_path / f"{method}.pt2"
        torch.export.save(exported, alone)
        options = PlanningOptions(algorithm="best", work=work)
        sized = size_input(alone, parse_memory_spec(spec), options, points=0).sized[0]
        fits[method] = sized.all_fit_from
        line = f"fast: every tensor fits from {sized.all_fit_from:,} B"
        block = result.stdout.split(f"kv-cache.pt2 method {method}:")[1].split("\n\n")[0]
        assert line in block
    largest = max(fits, key=fits.__getitem__)
    assert f"fast: every tensor of every method fits from {fits[largest]:,} B" in result.stdout
    assert f"the largest method's ({largest})" in result.stdout


def program_fits_from(stdout: str) -> tuple[int, bool, int | None]:
    """``size --share-mutable-buffers``'s answer for the program: the size, whether it is
    proved, and the bound where it is not."""
    block = stdout.split(", the program: ")[-1]
    line = next(line for line in block.splitlines() if line.startswith("fast: every tensor"))
    fits = number(line.split(" fits from ")[1].split(" B ")[0])
    if "(proved optimal" in line:
        return fits, True, None
    return fits, False, number(line.split("no size below ")[1].split(" B ")[0])


@pytest.mark.executorch
@MUTATION_WARNING
@pytest.mark.parametrize(
    ("name", "others"), [("streaming", ",near=1MiB:16"), ("kv-cache", "")]
)  # fmt: skip
def test_size_with_the_state_shared_is_a_size_that_plan_fits(
    archives: dict[str, Path], name: str, others: str
) -> None:
    from stateful_programs import PROGRAMS

    methods = list(PROGRAMS[name].methods)
    result = run(
        "size", archives[name], "--memory", f"fast=4KiB:16{others}", "--share-mutable-buffers",
        "--points", "0", timeout=MODEL_TIMEOUT,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr  # the state is shared: nothing to warn of
    assert "planning every method, the state shared, with fast =" in result.stderr
    assert "plan --reorder keeps" not in result.stdout  # refused with shared state
    fits, proved, bound = program_fits_from(result.stdout)
    for method in methods:  # each method alone needs no more than the program
        block = result.stdout.split(f"{name}.pt2 method {method}:")[1].split("\n\n")[0]
        line = next(line for line in block.splitlines() if line.startswith("fast: every"))
        assert "(proved optimal)" in line  # so its size is a bound on the program's
        assert fits >= number(line.split(" fits from ")[1].split(" B ")[0])
    if bound is not None:
        assert bound < fits

    def plan_at(size: int) -> tuple[subprocess.CompletedProcess[str], dict[str, list[str]]]:
        planned = run(
            "plan", archives[name], "--memory", f"fast={size}:16{others}", "--algo", "best",
            "--share-mutable-buffers", "-q", timeout=MODEL_TIMEOUT,
        )  # fmt: skip
        if planned.returncode != 0:
            return planned, {}
        assert planned.stdout.count("plan check: valid") == len(methods)
        return planned, block_rows(planned.stdout, f"{name}.pt2, the program:")

    planned, rows = plan_at(fits)
    assert planned.returncode == 0, planned.stderr
    assert number(rows["fast"][2]) <= fits  # the program's arena in fast
    if others:
        assert number(rows["near"][2]) == 0  # nothing spilled
    # the state at one place in fast, the same for every method
    users = ", ".join(methods)
    for buffer in PROGRAMS[name].buffers:
        place = rf"^  {buffer} \([\d,]+ B\): fast\+[\d,]+ in {users}$"
        assert re.search(place, planned.stdout, re.MULTILINE)
    state = r"^state: ([\d,]+) bytes in .*, at one place in every method; ([\d,]+) B of it in fast$"
    total = re.search(state, planned.stdout, re.MULTILINE)
    assert total is not None
    assert total[1] == total[2]  # all of it in fast
    if proved:
        smaller, rows = plan_at(fits - 16)
        if others:  # something is not in fast
            assert smaller.returncode == 0, smaller.stderr
            assert number(rows["near"][2]) > 0
        else:  # one memory: nothing can spill
            assert smaller.returncode != 0
