"""``cadence-memplan sweep`` and :mod:`cadence_memplan.analysis.sweep`.

Every row is held against a plan made directly with ``cadence_memplan.plan`` at that size
(arrays) or with a whole ``to_executorch`` at that size (models); the moves against
growth against a case built to have one.
"""

from __future__ import annotations

import csv
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from cli_support import SMALL_CSV, run

import cadence_memplan
from cadence_memplan.analysis.sweep import (
    SweepRow,
    arrays_planner,
    find_memory,
    moves_against_growth,
    parse_sweep_sizes,
    smallest_size_keeping_all,
    sweep,
    sweep_table,
)
from cadence_memplan.io import parse_memory_spec, read_minimalloc_csv
from cadence_memplan.request import PlanningOptions

# Position-based first fit places the largest tensor first. While memory 1 is smaller
# than A, B and C (never alive together) share it: 12 bytes. From 10 bytes A takes it,
# B and C overlap A in time and go to memory 2: memory 1 holds 10 bytes, fewer than 12.
AGAINST_GROWTH_CSV = """id,lower,upper,size
A,0,2,10
B,0,1,6
C,1,2,6
"""
AGAINST_GROWTH_MEMORIES = "fast=6:1,slow=1KiB:1"

# The command line's small instance without buffers i, j and k.
SWEEP_CSV = "".join(
    line
    for line in SMALL_CSV.splitlines(keepends=True)
    if line.split(",")[0] not in {"i", "j", "k"}
)


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as stream:
        return list(csv.DictReader(stream))


# --------------------------------------------------------------------------- sizes, names


def test_sizes_are_evenly_spaced_whole_bytes() -> None:
    sizes = parse_sweep_sizes("64KiB:1MiB:16")
    assert len(sizes) == 16
    assert (sizes[0], sizes[-1]) == (64 << 10, 1 << 20)
    assert set(np.diff(sizes).tolist()) == {64 << 10}  # (1 MiB - 64 KiB) / 15
    assert parse_sweep_sizes("100:100:1") == [100]
    assert parse_sweep_sizes("7:9:1") == [7]
    assert parse_sweep_sizes("10:12:100") == [10, 11, 12]  # each size once


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1KiB:2KiB", "is not LO:HI:STEPS"),
        ("1KiB:2KiB:3:4", "is not LO:HI:STEPS"),
        ("2KiB:1KiB:3", "LO 2KiB is larger than HI 1KiB"),
        ("1KiB:2KiB:0", "STEPS must be at least 1"),
        ("1KiB:2KiB:-3", "STEPS must be at least 1"),
        ("1KiB:2KiB:many", "STEPS 'many' is not an integer"),
        ("lots:2KiB:3", "--sizes: LO: 'lots' is not a size"),
        ("0:2KiB:3", "outside 1 B"),
    ],
)
def test_bad_sizes(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="--sizes") as error:
        parse_sweep_sizes(text)
    assert message in str(error.value)


def test_memory_by_name_or_id() -> None:
    memories = parse_memory_spec("fast=1KiB:1,near=2KiB:1,4KiB:1")
    assert find_memory(memories, "near") == 1
    assert find_memory(memories, "1") == 0
    assert find_memory(memories, "3") == 2  # unnamed: named by its id
    for missing in ("slow", "0", "4"):
        with pytest.raises(ValueError, match=f"--vary: no memory '{missing}'; the memories"):
            find_memory(memories, missing)


# --------------------------------------------------------------------------- rows


@pytest.mark.parametrize("algorithm", ["position", "heuristic", "best"])
def test_rows_match_direct_plans(tmp_path: Path, algorithm: str) -> None:
    instance = read_minimalloc_csv(write(tmp_path, "small.csv", SWEEP_CSV))
    memories = parse_memory_spec("fast=1KiB:16,near=3KiB:16,far=4KiB:16")
    sizes = parse_sweep_sizes("64:9KiB:23")
    planner = arrays_planner(
        instance.starts, instance.ends, instance.sizes, PlanningOptions(algorithm)
    )
    rows = sweep(planner, memories, 1, sizes)
    assert [row.size for row in rows] == sizes
    fitted = 0
    for row in rows:
        try:
            direct = cadence_memplan.plan(
                instance.starts,
                instance.ends,
                instance.sizes,
                [1024, row.size, 4096],
                [16, 16, 16],
                algorithm=algorithm,  # type: ignore[arg-type]
            )
        except cadence_memplan.PlanningError:
            assert not row.fits
            assert "fits nowhere" in row.failure
            continue
        fitted += 1
        assert row.fits
        for mem_id in (1, 2, 3):
            chosen = direct.mem_ids == mem_id
            assert row.tensor_bytes[mem_id - 1] == int(instance.sizes[chosen].sum())
            assert row.tensor_counts[mem_id - 1] == int(chosen.sum())
            ends = direct.offsets[chosen] + instance.sizes[chosen]
            assert row.peak_usage[mem_id - 1] == (int(ends.max()) if chosen.any() else 0)
        assert row.bytes_outside_memory_1 == int(instance.sizes[direct.mem_ids > 1].sum())
    assert 0 < fitted < len(rows)  # the sizes cover plans that fit and some that do not


def test_moves_against_growth_found_where_built(tmp_path: Path) -> None:
    instance = read_minimalloc_csv(write(tmp_path, "against.csv", AGAINST_GROWTH_CSV))
    memories = parse_memory_spec(AGAINST_GROWTH_MEMORIES)
    planner = arrays_planner(instance.starts, instance.ends, instance.sizes, PlanningOptions())
    rows = sweep(planner, memories, 0, list(range(6, 13)))
    assert [row.tensor_bytes[0] for row in rows] == [12, 12, 12, 12, 10, 10, 10]
    notes = moves_against_growth(rows, memories, 0)
    assert notes == ["", "", "", "", "fast -2 B, slow +2 B", "", ""]
    assert smallest_size_keeping_all(rows, 0) is None  # A, B and C never all fit in 12 B
    # Varying the slower memory with fast fixed at 10 B: nothing moves against growth.
    fixed = parse_memory_spec("fast=10:1,slow=12:1")
    slow_rows = sweep(planner, fixed, 1, [12, 20])
    assert moves_against_growth(slow_rows, fixed, 1) == ["", ""]


def test_moves_against_growth_compare_with_the_last_plan_that_fits() -> None:
    memories = parse_memory_spec("a=1KiB:1,b=1KiB:1,c=1KiB:1")

    def row(size: int, *tensor_bytes: int) -> SweepRow:
        return SweepRow(size, True, tensor_bytes, (1, 1, 1), tensor_bytes)

    failed = SweepRow(3, False, (0, 0, 0), (0, 0, 0), (0, 0, 0), "x fits nowhere")
    rows = [row(1, 5, 5, 5), row(2, 6, 3, 6), failed, row(4, 7, 1, 7), row(5, 9, 0, 6)]
    # Varying b (index 1): a + b fell 11 -> 9 at size 2, then 9 -> 8 at 4 (past the
    # failed row), then rose.
    assert moves_against_growth(rows, memories, 1) == [
        "",
        "a +1 B, b -2 B, c +1 B",
        "",
        "a +1 B, b -2 B, c +1 B",
        "",
    ]
    assert moves_against_growth(rows, memories, 0) == ["", "", "", "", ""]


# --------------------------------------------------------------------------- command line


def test_cli_csv_rows_and_marks(tmp_path: Path) -> None:
    instance = write(tmp_path, "against.csv", AGAINST_GROWTH_CSV)
    out = tmp_path / "sweep.csv"
    result = run(
        "sweep", instance, "--memory", AGAINST_GROWTH_MEMORIES, "--vary", "fast",
        "--sizes", "6:12:7", "--out", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = read_rows(out)
    assert [int(row["size"]) for row in rows] == list(range(6, 13))
    assert [int(row["fast_sum_of_sizes"]) for row in rows] == [12, 12, 12, 12, 10, 10, 10]
    assert [int(row["slow_sum_of_sizes"]) for row in rows] == [10, 10, 10, 10, 12, 12, 12]
    assert [int(row["fast_tensors"]) for row in rows] == [2, 2, 2, 2, 1, 1, 1]
    assert [int(row["sum_of_sizes_outside_memory_1"]) for row in rows] == [10] * 4 + [12] * 3
    assert [row["moved_against_growth"] for row in rows] == [""] * 4 + ["fast -2 B, slow +2 B"] + [
        ""
    ] * 2
    assert all(row["fits"] == "1" for row in rows)
    marked = [line for line in result.stdout.splitlines() if "yes  << moved" in line]
    assert len(marked) == 1
    assert marked[0].startswith("10 B ")
    assert "moved against growth at 1 size (10 B; marked <<)" in result.stdout
    assert "every tensor in fast: at none of the sizes swept" in result.stdout
    assert "planning time: 7 plans in" in result.stdout


def test_cli_rows_that_do_not_fit_and_the_first_size_keeping_all(tmp_path: Path) -> None:
    instance = write(tmp_path, "small.csv", SWEEP_CSV)
    out = tmp_path / "sweep.csv"
    result = run(
        "sweep", instance, "--memory", "fast=1KiB:16,far=4KiB:16", "--vary", "far",
        "--sizes", "1KiB:16KiB:16", "--out", out, "--algo", "heuristic",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = read_rows(out)
    instance_arrays = read_minimalloc_csv(instance)
    for row in rows:
        try:
            direct = cadence_memplan.plan(
                instance_arrays.starts,
                instance_arrays.ends,
                instance_arrays.sizes,
                [1024, int(row["size"])],
                [16, 16],
                algorithm="heuristic",
            )
        except cadence_memplan.PlanningError:
            assert row["fits"] == "0"
            assert row["far_sum_of_sizes"] == ""
            assert "fits nowhere" in row["failure"]
            assert row["failure"].startswith("buffer '")  # named by the file's id
            continue
        assert row["fits"] == "1"
        assert int(row["far_sum_of_sizes"]) == int(instance_arrays.sizes[direct.mem_ids == 2].sum())
    assert {row["fits"] for row in rows} == {"0", "1"}
    first = next(row for row in rows if row["fits"] == "1")
    assert f"it fits: from far = {int(first['size']) / 1024:.1f} KiB" in result.stdout
    assert "does not fit at" in result.stdout


def test_cli_sweep_plot(tmp_path: Path) -> None:
    matplotlib_image = pytest.importorskip(
        "matplotlib.image", reason='needs matplotlib: pip install ".[plot]"'
    )
    instance = write(tmp_path, "against.csv", AGAINST_GROWTH_CSV)
    png = tmp_path / "sweep.png"
    result = run(
        "sweep", instance, "--memory", AGAINST_GROWTH_MEMORIES, "--vary", "1",
        "--sizes", "6:12:7", "--plot", png, "-q",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert f"wrote sweep plot: {png}" in result.stdout
    assert matplotlib_image.imread(png).shape[:2] == (600, 1000)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--vary", "slow", "--sizes", "1KiB:2KiB:3"], "--vary: no memory 'slow'"),
        (["--vary", "4", "--sizes", "1KiB:2KiB:3"], "--vary: no memory '4'"),
        (["--vary", "fast", "--sizes", "1KiB:2KiB"], "--sizes: '1KiB:2KiB' is not LO:HI:STEPS"),
        (["--vary", "fast", "--sizes", "2KiB:1KiB:3"], "LO 2KiB is larger than HI 1KiB"),
        (["--vary", "fast", "--sizes", "1KiB:2KiB:0"], "STEPS must be at least 1"),
        (["--vary", "fast", "--sizes", "1KiB:2KiB:3", "--out", "x.json"], "expected a file"),
        (["--sizes", "1KiB:2KiB:3"], "the following arguments are required: --vary"),
        (["--vary", "fast"], "the following arguments are required: --sizes"),
        (["--vary", "fast", "--sizes", "1KiB:2KiB:3", "--memory", "1KiB"], "--memory:"),
    ],
)
def test_cli_usage_errors(tmp_path: Path, arguments: list[str], message: str) -> None:
    instance = write(tmp_path, "small.csv", SWEEP_CSV)
    result = run("sweep", instance, *arguments)
    assert result.returncode == 2, result.stdout
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert message in lines[-1]
    assert not (tmp_path / "x.json").exists()


# --------------------------------------------------------------------------- models


@pytest.mark.executorch
@pytest.mark.parametrize("lowering", ["cadence", "exir"])
def test_model_rows_are_the_plans_of_whole_lowerings(lowering: str) -> None:
    """Re-planning only the planning step gives, at each size, the plan a whole
    to_executorch makes there (cnn: cat and slice constraints on Cadence's lowering, none
    on exir's), also after a size that does not fit; the CLI's model path uses this
    Replanner."""
    import copy

    import executorch.backends.cadence.aot.ops_registrations  # noqa: F401  (cadence ops)
    from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure

    from cadence_memplan.cadence.lowering import export_model, lower_and_plan, lower_exported
    from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning
    from cadence_memplan.cadence.sweep import PLANNING_FAILURES, Replanner
    from cadence_memplan.models import build_model

    model, inputs = build_model("cnn", image=8)
    edge = lower_exported(export_model(model, inputs, lowering), lowering)
    base = parse_memory_spec("fast=4KiB:16,near=8KiB:64")
    options = PlanningOptions("heuristic", lowering=lowering)
    replanner = Replanner(copy.deepcopy(edge), base, options)
    checked = failed = 0
    sharing = False
    for fast, near in ((1024, 8192), (256, 256), (2048, 8192), (4096, 8192), (8192, 8192)):
        memories = parse_memory_spec(f"fast={fast}:16,near={near}:64")
        try:
            whole = lower_and_plan(copy.deepcopy(edge), CadenceMemoryPlanning, memories, options)
        except MemoryPlanningAlgoFailure:
            with pytest.raises(PLANNING_FAILURES):
                replanner.plan(memories)
            failed += 1
            continue
        table = replanner.plan(memories)
        assert table.same_plan(whole.table)
        assert np.array_equal(table.shares_storage, whole.table.shares_storage)
        sharing = sharing or bool(table.shares_storage.any())
        checked += 1
    assert checked >= 3
    assert failed == 1
    # Cadence's cat/slice nops place tensors inside others; exir's program has no nops.
    assert sharing == (lowering == "cadence")


@pytest.mark.executorch
def test_cli_model_sweep(tmp_path: Path) -> None:
    out = tmp_path / "sweep.csv"
    result = run(
        "sweep", "mlp", "--vary", "fast", "--sizes", "1KiB:16KiB:4", "--out", out,
        timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "lowering once with to_executorch" in result.stderr
    rows = read_rows(out)
    assert [int(row["size"]) for row in rows] == [1024, 6144, 11264, 16384]
    # The 6 tensors of the mlp Cadence ships (`plan mlp` plans 6; exir's plain lowering
    # has 9): all in fast once it is big enough, fewer below.
    assert int(rows[-1]["fast_tensors"]) == 6
    assert int(rows[-1]["sum_of_sizes_outside_memory_1"]) == 0
    assert int(rows[0]["sum_of_sizes_outside_memory_1"]) > 0


@pytest.mark.executorch
@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
def test_model_sweep_rows_equal_plan_at_each_size(algorithm: str) -> None:
    """Each row of a model's sweep is what ``plan`` reports at that size, on the program
    Cadence ships (``lowering="cadence"``, Cadence's backend config): per memory, the
    tensors, the sum of their sizes and the peak usage; a size where ``plan`` finds no
    room is a row that does not fit. (The sweep once lowered with plain to_edge and
    exir's default config, a program of other tensors.)"""
    from cadence_memplan.stats import peak_usage_per_memory, summed_sizes_per_memory
    from cadence_memplan.workflow.plan import DoesNotFit, load_input, plan_input, sweep_input

    loaded = load_input("cnn", lowering="cadence")
    memories = parse_memory_spec("fast=4KiB:16,near=32KiB:64,far=64KiB:64")
    sizes = parse_sweep_sizes("4KiB:64KiB:5")
    rows = sweep_input(loaded, memories, 0, sizes, PlanningOptions(algorithm))
    assert [row.size for row in rows] == sizes
    fitting = 0
    for row in rows:
        config = [dataclasses.replace(memories[0], size=row.size), *memories[1:]]
        try:
            planned = plan_input(loaded, config, PlanningOptions(algorithm))
        except DoesNotFit:
            assert not row.fits, row
            continue
        assert row.fits, row
        table, count = planned.table, len(memories)
        counts = np.bincount(table.mem_ids, minlength=count + 1)[1:]
        usage = peak_usage_per_memory(table.mem_ids, table.offsets, table.sizes, count)[1:]
        assert row.tensor_counts == tuple(counts.tolist())
        assert sum(row.tensor_counts) == len(table)
        assert row.tensor_bytes == tuple(summed_sizes_per_memory(table, count)[1:].tolist())
        assert row.peak_usage == tuple(usage.tolist())
        fitting += 1
    assert 2 <= fitting < len(rows), "sizes that fit and one that does not"


@pytest.mark.executorch
def test_cli_sweep_plans_what_plan_plans(tmp_path: Path) -> None:
    """``sweep`` and ``plan`` lower the default model the same way (Cadence's, by
    default): at the size ``plan`` uses, the sweep's row has plan's tensor counts and
    peaks. ``sweep --lowering`` is accepted as ``plan``'s is."""
    plan_json = tmp_path / "plan.json"
    sweep_csv = tmp_path / "sweep.csv"
    spec = "fast=256KiB:16,near=4MiB:64,far=1GiB:64"
    planned = run("plan", "--memory", spec, "--out", plan_json, "-q", timeout=300)
    assert planned.returncode == 0, planned.stderr
    swept = run(
        "sweep", "--memory", spec, "--vary", "fast", "--sizes", "256KiB:256KiB:1",
        "--lowering", "cadence", "--out", sweep_csv, timeout=300,
    )  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    assert "lowering: cadence" in swept.stdout
    plan = json.loads(plan_json.read_text())
    (row,) = read_rows(sweep_csv)
    for memory in plan["memories"]:
        name = memory["name"]
        tensors = [t for t in plan["tensors"] if t["mem_id"] == memory["mem_id"]]
        assert int(row[f"{name}_tensors"]) == len(tensors) == memory["tensor_count"], name
        assert int(row[f"{name}_peak_usage"]) == memory["peak_usage"], name


def test_sweep_plot_has_a_panel_per_memory_when_magnitudes_differ(tmp_path: Path) -> None:
    """Memories whose sums differ by orders of magnitude get a panel each (on one linear
    axis the small one lies flat on 0); sums of one magnitude share one panel."""
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    from cadence_memplan.cli.sweep_plot import SPREAD_FOR_PANELS, plot_sweep, sweep_panels

    def row(size: int, *held: int) -> SweepRow:
        return SweepRow(size, True, held, (1,) * len(held), held)

    close = [row(64, 100, 300, 0), row(128, 200, 200, 0)]
    assert sweep_panels(close, 3) is None
    apart = [row(64, 100, 0, 200 * SPREAD_FOR_PANELS), row(128, 200, 0, 400 * SPREAD_FOR_PANELS)]
    assert sweep_panels(apart, 3) == [0, 2]  # the memory that holds nothing gets none
    memories = parse_memory_spec("fast=64:1,near=1MiB:1,far=1GiB:1")
    heights = []
    for name, rows in (("close", close), ("apart", apart)):
        path = tmp_path / f"{name}.png"
        plot_sweep(path, rows, memories, 0, name)
        import matplotlib.image

        heights.append(matplotlib.image.imread(path).shape[0])
    assert heights[0] == 600  # one panel of bytes, one of tensors
    assert heights[1] > heights[0]  # fast, far, outside fast, tensors


def test_sweep_plot_draws_steps(tmp_path: Path) -> None:
    """A value holds from its size up to the next size swept: steps, no straight line
    through sizes that were not planned."""
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    from matplotlib.figure import Figure

    from cadence_memplan.cli import sweep_plot

    rows = [
        SweepRow(size, True, (size, 64 - size), (1, 1), (size, 64 - size)) for size in (16, 32, 64)
    ]
    figures: list[object] = []
    savefig = Figure.savefig

    def keep(figure: object, *arguments: object, **options: object) -> None:
        figures.append(figure)
        savefig(figure, *arguments, **options)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", keep)
        sweep_plot.plot_sweep(
            tmp_path / "s.png", rows, parse_memory_spec("fast=64:1,far=1GiB:1"), 0, "s"
        )
    (figure,) = figures
    lines = [
        line for axis in figure.axes for line in axis.get_lines() if len(line.get_xdata()) == 3
    ]
    assert lines
    assert {line.get_drawstyle() for line in lines} == {"steps-post"}


def test_sweep_table_rounds_a_row_alike_and_never_up() -> None:
    """1.75 MiB prints with the decimals it needs, and a peak just below it stays below
    (format_bytes alone says 1.8 MiB beside 1.7 MiB)."""
    memories = parse_memory_spec("fast=2MiB:16,far=1GiB:16")
    size = 1_835_008  # 1.75 MiB
    rows = [SweepRow(size, True, (size + 4096, 0), (3, 0), (size - 1, 0))]
    _, (line,) = sweep_table(rows, memories, 0)
    assert line[:3] == ["1.75 MiB", "1.74 MiB", "1.75 MiB (3)"]
    rows = [SweepRow(1 << 20, True, (1 << 20, 0), (1, 0), ((1 << 20) - 23, 0))]
    _, (line,) = sweep_table(rows, memories, 0)
    assert line[:2] == ["1.0 MiB", "1023.9 KiB"]


def test_sweep_plot_names_its_dotted_line_in_the_axis_label(tmp_path: Path) -> None:
    """The first size that keeps every tensor in the varied memory is a dotted line, named
    in the size axis's label: a note beside the line ran off the figure when the line lay
    at its right edge."""
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    import xml.etree.ElementTree as ET

    import matplotlib

    from cadence_memplan.cli.sweep_plot import plot_sweep

    rows = [
        SweepRow(size, True, (size, 64 - size), (1, 1), (size, 64 - size)) for size in (32, 48, 64)
    ]
    rows[-1] = SweepRow(64, True, (64, 0), (2, 0), (64, 0))
    path = tmp_path / "sweep.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        plot_sweep(path, rows, parse_memory_spec("fast=64:1,far=1GiB:1"), 0, "edge")
    texts = [
        "".join(text.itertext()).strip()
        for text in ET.parse(path).iter("{http://www.w3.org/2000/svg}text")
    ]
    assert "size of fast (dotted: all in fast from 64 B)" in texts
