"""``cadence-memplan size`` and :mod:`cadence_memplan.workflow.size`.

The curve is held against brute force (every subset of a small instance packed in every
order), exactly, breakpoints included; ``all_fit_from`` against ``best`` alone with room
for everything; the shaping of the curve (monotone, points merged, ``all_fit_from``
lowered and proved by later plans) against plans made up by hand; the command line's
report against its JSON and the schema; the plot against the curve; failures that change
no file. Models (marked ``executorch``): the size found keeps every tensor in the first
memory in a whole ``to_executorch``.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest
from cases import PLANNING_INSTANCES
from cli_support import error_line, number, run

import cadence_memplan
from cadence_memplan._types import Budget
from cadence_memplan.io import parse_memory_spec, read_minimalloc_csv, size_document, size_schema
from cadence_memplan.request import PlanningOptions
from cadence_memplan.stats import peak_live_bytes
from cadence_memplan.workflow.plan import Input, LoadedInput
from cadence_memplan.workflow.size import (
    CurvePoint,
    PlanAtSize,
    Sizing,
    memory_sizing,
    size_input,
)

BEST = PlanningOptions("best")  # size plans with best, Cadence's lowering for models

UNBOUNDED = 1 << 20


def align_up(count: int, alignment: int) -> int:
    return -(-count // alignment) * alignment


def least_bufsize(starts, ends, sizes, alignment: int) -> int:
    """The smallest bufsize of one memory that holds every given tensor: each order of
    them placed by first fit, each at the lowest aligned offset where it clashes with no
    tensor placed before it and alive at the same time. Every packing is matched by the
    order of its offsets (each tensor then lands at or below its offset there), so the
    least over the orders is the optimum."""
    best: int | None = None
    for order in itertools.permutations(range(len(sizes))):
        offsets: dict[int, int] = {}
        bufsize = 0
        for i in order:
            offset = 0
            while True:
                clash = next(
                    (
                        j
                        for j in offsets
                        if sizes[i]
                        and sizes[j]
                        and starts[i] <= ends[j]
                        and starts[j] <= ends[i]
                        and offset < offsets[j] + sizes[j]
                        and offsets[j] < offset + sizes[i]
                    ),
                    None,
                )
                if clash is None:
                    break
                offset = align_up(offsets[clash] + sizes[clash], alignment)
            offsets[i] = offset
            bufsize = max(bufsize, align_up(offset + sizes[i], alignment))
        best = bufsize if best is None else min(best, bufsize)
    return best or 0


def most_kept_by_brute_force(starts, ends, sizes, alignment: int):
    """(the least bufsize of every tensor, the most memory 1 keeps at a size): every
    subset packed in every order (:func:`least_bufsize`)."""
    everyone = range(len(sizes))
    packed = {}
    for count in range(len(sizes) + 1):
        for subset in itertools.combinations(everyone, count):
            columns = ([column[i] for i in subset] for column in (starts, ends, sizes))
            packed[subset] = least_bufsize(*columns, alignment)

    def most_kept(capacity: int) -> int:
        return max(sum(sizes[i] for i in s) for s, need in packed.items() if need <= capacity)

    return packed[tuple(everyone)], most_kept


def arrays_input(starts, ends, sizes, label: str = "case") -> LoadedInput:
    return LoadedInput(
        Input(label, "arrays"),
        "cadence",
        [f"t{i}" for i in range(len(sizes))],
        np.asarray(starts, dtype=np.int64),
        np.asarray(ends, dtype=np.int64),
        np.asarray(sizes, dtype=np.int64),
    )


def random_instance(seed: int, count: tuple[int, int] = (2, 6)):
    rng = random.Random(seed)
    tensors = rng.randint(*count)
    starts = [rng.randint(0, 5) for _ in range(tensors)]
    ends = [start + rng.randint(0, 4) for start in starts]
    sizes = [rng.choice([0, *range(1, 13)]) for _ in range(tensors)]
    return starts, ends, sizes, rng.choice([1, 2, 4])


def assert_curve_shape(sizing: Sizing) -> None:
    """What holds of every curve: sizes strictly falling, below all_fit_from, multiples of
    the alignment; kept and its bound never rising as the size falls; kept <= bound <=
    total; no point repeating the one above it; lower_bound <= all_fit_from."""
    (sized,) = sizing.sized
    alignment = sized.memory.alignment
    assert sized.all_fit_from % alignment == 0
    assert sized.lower_bound <= sized.all_fit_from
    above = CurvePoint(sized.all_fit_from, sized.total, sized.total)
    for point in sized.curve:
        assert point.capacity < above.capacity
        assert point.capacity % alignment == 0
        assert point.kept <= above.kept
        assert point.kept_bound is not None
        assert above.kept_bound is not None
        assert point.kept <= point.kept_bound <= above.kept_bound
        assert (point.kept, point.kept_bound) != (above.kept, above.kept_bound)
        above = point


# --------------------------------------------------------------------------- against brute force


@pytest.mark.parametrize("seed", range(30))
def test_curve_is_exactly_the_breakpoints_of_the_most_kept(seed: int) -> None:
    """On instances small enough for brute force, all_fit_from is the least bufsize of
    every tensor, proved, and the curve lists exactly the sizes where the most memory 1
    can keep changes, each with that most, proved."""
    starts, ends, sizes, alignment = random_instance(seed)
    memories = parse_memory_spec(f"fast=1KiB:{alignment},slow={UNBOUNDED}:8")
    sizing = size_input(arrays_input(starts, ends, sizes), memories, BEST, points=100)
    (sized,) = sizing.sized
    least, most_kept = most_kept_by_brute_force(starts, ends, sizes, alignment)
    assert (sized.all_fit_from, sized.lower_bound, sized.proved) == (least, least, True)
    assert sized.total == sum(sizes)
    changes = [
        (capacity, most_kept(capacity))
        for capacity in range(least - alignment, 0, -alignment)
        if most_kept(capacity) != most_kept(capacity - alignment)
    ]
    lowest = changes[-1][0] if changes else least
    if lowest > alignment:  # the size below it was asked too: from 0 B up, nothing kept
        changes.append((0, most_kept(0)))
    assert [(point.capacity, point.kept) for point in sized.curve] == changes
    assert all(point.proved for point in sized.curve)
    assert sized.curve_ends == "complete"
    assert_curve_shape(sizing)


@pytest.mark.parametrize("seed", range(10))
def test_curve_holds_against_brute_force_with_little_work(seed: int) -> None:
    """With almost no work, the plans need not be the best: each point still keeps no
    more than any plan can and bounds what every plan keeps, over its whole step."""
    starts, ends, sizes, alignment = random_instance(100 + seed, (5, 6))
    memories = parse_memory_spec(f"fast=1KiB:{alignment},slow={UNBOUNDED}:8")
    loaded = arrays_input(starts, ends, sizes)
    sizing = size_input(loaded, memories, BEST.replace(work=0), points=100)
    (sized,) = sizing.sized
    least, most_kept = most_kept_by_brute_force(starts, ends, sizes, alignment)
    assert sized.lower_bound <= least <= sized.all_fit_from
    top = sized.all_fit_from
    for point in sized.curve:
        assert point.kept <= most_kept(point.capacity)
        assert point.kept_bound is not None
        assert most_kept(top - alignment) <= point.kept_bound  # the step's largest size
        top = point.capacity
    assert_curve_shape(sizing)


# --------------------------------------------------------------------------- all_fit_from


def instance_files() -> list[Path]:
    found = sorted((PLANNING_INSTANCES / "challenging").glob("[AC].*.csv"))
    return found or [pytest.param(None, marks=pytest.mark.skip(reason="no MiniMalloc instances"))]


@pytest.mark.parametrize("seed", range(8))
def test_all_fit_from_is_best_alone_with_room_for_everything(seed: int) -> None:
    """With no point below it, all_fit_from is best's bufsize in one memory with room for
    every tensor, at half the work; its lower bound is best's or the peak live."""
    rng = np.random.default_rng(seed)
    count = 60
    starts = rng.integers(0, 40, count)
    ends = starts + rng.integers(0, 12, count)
    sizes = rng.integers(1, 2000, count)
    alignment = int(rng.choice([1, 16, 64]))
    work = 20_000
    memories = parse_memory_spec(f"fast=1KiB:{alignment},slow=1GiB:64")
    loaded = arrays_input(starts, ends, sizes)
    (sized,) = size_input(loaded, memories, BEST.replace(work=work), points=0).sized
    room = int(sum(align_up(int(size), alignment) for size in sizes))
    alone = cadence_memplan.plan(
        starts, ends, sizes, [room], [alignment], algorithm="best", work_budget=work // 2
    )
    assert sized.all_fit_from == alone.bufsizes[1]
    peak = peak_live_bytes(starts, ends, -(-sizes // alignment) * alignment)
    assert sized.lower_bound == max(align_up(alone.lower_bound or 0, alignment), peak)
    assert sized.proved == alone.proved_optimal
    assert (sized.curve, sized.curve_ends, sized.total) == ((), "points", int(sizes.sum()))


@pytest.mark.parametrize("path", instance_files())
def test_challenging_instances_fit_in_their_capacity(path: Path) -> None:
    """A and C fit in the 1 MiB of their file names, proved optimal (C below it), and the
    first point below proves that not every tensor fits there."""
    instance = read_minimalloc_csv(path)
    loaded = arrays_input(instance.starts, instance.ends, instance.sizes, path.name)
    memories = parse_memory_spec("fast=2MiB:1,far=64MiB:1")
    (sized,) = size_input(loaded, memories, BEST, points=1).sized
    alone = cadence_memplan.plan(
        instance.starts, instance.ends, instance.sizes, [sized.all_fit_from], [1],
        algorithm="best",
    )  # fmt: skip
    assert cadence_memplan.validate(
        instance.starts, instance.ends, instance.sizes, alone.mem_ids, alone.offsets,
        [sized.all_fit_from], [1],
    ) is None  # fmt: skip
    assert sized.all_fit_from <= 1 << 20
    assert sized.proved
    bound = sized.curve[0].kept_bound
    assert bound is not None
    assert bound < sized.total


# --------------------------------------------------------------------------- the shaping


def plan_at(capacity: int, used: int, kept: int, bound: int | None) -> PlanAtSize:
    return PlanAtSize(capacity, used, 0, kept, bound, None, 0, False)


FAST = parse_memory_spec("fast=1KiB:1")[0]


def test_a_plan_below_that_keeps_everything_lowers_all_fit_from() -> None:
    everything = PlanAtSize(2000, 100, 60, 50, 50, 70, 10, False)
    probes = [
        plan_at(99, 96, 40, 50),
        plan_at(95, 90, 50, 50),  # keeps every tensor in less
        plan_at(89, 80, 30, 45),  # not every tensor fits in 89 B: 90 B is the least
    ]
    sized = memory_sizing(FAST, everything, probes, "points", 89)
    assert (sized.all_fit_from, sized.lower_bound, sized.proved) == (90, 90, True)
    assert sized.curve == (CurvePoint(80, 30, 45),)


def test_the_curve_is_made_monotone_and_repeats_merged() -> None:
    everything = PlanAtSize(2000, 100, 100, 50, None, None, 10, False)
    probes = [
        plan_at(99, 98, 40, 48),
        plan_at(97, 95, 42, 49),  # a better plan at a smaller size holds above it too
        plan_at(94, 90, 41, 47),  # a bound proved above holds here: 48 at 95 B
        plan_at(89, 80, 41, 47),  # the same answer from 80 B up
    ]
    sized = memory_sizing(FAST, everything, probes, "complete", 89)
    assert sized.curve == (CurvePoint(95, 42, 48), CurvePoint(80, 41, 47))
    # The peak live (100 B) proves it, and so does the bound below the total at 99 B.
    assert (sized.all_fit_from, sized.lower_bound, sized.proved) == (100, 100, True)


def test_the_sizing_is_the_same_on_every_run() -> None:
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 60, 120)
    ends = starts + rng.integers(0, 15, 120)
    sizes = rng.integers(1, 5000, 120) * 16
    memories = parse_memory_spec("fast=1KiB:64,slow=1GiB:64")
    documents = [
        size_document(size_input(arrays_input(starts, ends, sizes), memories,
                                 BEST.replace(work=30_000), points=6))
        for _ in range(2)
    ]  # fmt: skip
    assert documents[0] == documents[1]
    assert documents[0]["memories"][0]["curve"], "a curve to compare"


# --------------------------------------------------------------------------- command line

SIZE_MEMORIES = "fast=4KiB:16,slow=1MiB:64"


def report_figures(stdout: str) -> tuple[int, bool, list[tuple[int, int, int | None]]]:
    """The report read back: all_fit_from, whether it says proved, and the table's rows
    (size, kept, bound; the first row is every tensor at all_fit_from)."""
    lines = stdout.splitlines()
    fits = next(line for line in lines if ": every tensor fits from " in line)
    all_fit_from = number(fits.split(" fits from ")[1].split(" B")[0])
    header = next(index for index, line in enumerate(lines) if line.startswith("fast (B)"))
    rows = []
    for line in lines[header + 2 :]:
        cells = line.split()
        if not cells or not cells[0][0].isdigit():
            break
        rows.append((number(cells[0]), number(cells[1]),
                     None if cells[2] == "-" else number(cells[2])))  # fmt: skip
    return all_fit_from, fits.endswith("(proved optimal)"), rows


def printed_curve(memory: dict) -> list[tuple[int, int, int | None]]:
    """The JSON's curve as the report's table lists it: without a last point that keeps
    nothing, proved (the report's last line says it)."""
    points = [(p["capacity"], p["kept"], p["kept_bound"]) for p in memory["curve"]]
    if points and points[-1][1:] == (0, 0):
        points.pop()
    return points


def test_cli_report_is_its_json_and_the_json_its_schema(small_csv: Path, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "size.json"
    result = run("size", small_csv, "--memory", SIZE_MEMORIES, "--points", "12", "--json", out)
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    jsonschema.validate(document, size_schema())
    (memory,) = document["memories"]
    all_fit_from, proved, rows = report_figures(result.stdout)
    assert (all_fit_from, proved) == (memory["all_fit_from"], memory["proved"])
    assert rows[0] == (all_fit_from, memory["total"], memory["total"])
    assert rows[1:] == printed_curve(memory)
    assert len(rows) == 13  # 12 points: the small instance changes at each
    assert memory["curve_ends"] == "points"
    assert f"below {rows[-1][0]:,} B: not planned (--points 12" in result.stdout
    assert (document["input"], document["lowering"], document["objective"]) == (
        "small.csv", None, "bytes")  # fmt: skip
    assert document["depends_on_machine"] is False
    assert f"wrote sizing: {out}" in result.stdout
    # The same command writes the same file.
    again = tmp_path / "again.json"
    assert run("size", small_csv, "--memory", SIZE_MEMORIES, "--points", "12",
               "--json", again, "-q").returncode == 0  # fmt: skip
    assert again.read_bytes() == out.read_bytes()


def test_schema_refuses_what_the_format_does_not_say(small_csv: Path, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "size.json"
    assert run("size", small_csv, "--memory", SIZE_MEMORIES, "--json", out, "-q").returncode == 0
    document = json.loads(out.read_text())
    del document["memories"][0]["all_fit_from"]
    with pytest.raises(jsonschema.ValidationError, match="'all_fit_from' is a required"):
        jsonschema.validate(document, size_schema())
    document = json.loads(out.read_text())
    document["memories"][0]["curve"][0]["capacity"] = -1
    with pytest.raises(jsonschema.ValidationError, match="-1 is less than the minimum"):
        jsonschema.validate(document, size_schema())


def test_cli_with_a_wall_clock_cap_says_the_answer_depends_on_the_machine(
    small_csv: Path, tmp_path: Path
) -> None:
    out = tmp_path / "size.json"
    result = run("size", small_csv, "--memory", SIZE_MEMORIES, "--budget", "60000",
                 "--points", "2", "--json", out, "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "with --budget 60000 ms the answer depends on the machine" in result.stdout
    document = json.loads(out.read_text())
    assert (document["depends_on_machine"], document["budget_ms"]) == (True, 60000)


def test_cli_complete_curve_ends_where_nothing_is_kept(tmp_path: Path) -> None:
    """a and b alive together, c (100 B, 112 aligned) alone: 768 B keeps all three, 512 B
    b and c, 256 B a and c, 112 B c, below it nothing. The report lists the first three
    and says the last in its last line."""
    instance = tmp_path / "two.csv"
    instance.write_text("id,lower,upper,size\na,0,2,256\nb,1,3,512\nc,5,6,100\n")
    out = tmp_path / "size.json"
    result = run("size", instance, "--memory", SIZE_MEMORIES, "--json", out, "-q")
    assert result.returncode == 0, result.stderr
    (memory,) = json.loads(out.read_text())["memories"]
    points = [(p["capacity"], p["kept"], p["kept_bound"]) for p in memory["curve"]]
    assert (memory["all_fit_from"], memory["curve_ends"]) == (768, "complete")
    assert points == [(512, 612, 612), (256, 356, 356), (112, 100, 100), (0, 0, 0)]
    _, _, rows = report_figures(result.stdout)
    assert rows[1:] == points[:-1]
    assert "the curve is complete: below 112 B, fast keeps nothing" in result.stdout


def test_cli_one_memory_has_no_curve(small_csv: Path) -> None:
    result = run("size", small_csv, "--memory", "fast=4KiB:16", "-q")
    assert result.returncode == 0, result.stderr
    assert "the only memory" in result.stdout
    assert "no plan (a single memory: nothing can spill)" in result.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--points", "-1"], "argument --points: '-1' is not a whole number of points >= 0"),
        (["--points", "many"], "argument --points: 'many' is not a whole number of points"),
        (["--objective", "traffic"], "--objective: for models only"),
        (["--lowering", "exir"], "--lowering exir: for models only"),
        (["--algo", "best"], "unrecognized arguments: --algo best"),
        (["--work", "-5"], "argument --work: '-5' is not a whole number of units >= 0"),
        (["--json", "size.txt"], "--json"),
        (["--plot", "missing/size.png"], "--plot"),
        (["--memory", "4KiB"], "--memory:"),
    ],
)
def test_cli_usage_errors_change_no_file(
    small_csv: Path, tmp_path: Path, arguments: list[str], message: str
) -> None:
    """A bad option is one line and exit 2, before any work: the output asked for, an
    existing file, is left as it was."""
    kept = tmp_path / "size.json"
    kept.write_text("a file of the user's\n")
    result = run("size", small_csv, "--memory", SIZE_MEMORIES, "--json", kept, *arguments)
    assert result.returncode == 2, result.stdout
    assert message in error_line(result)
    assert kept.read_text() == "a file of the user's\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["size.json", "small.csv"]


def test_cli_refuses_to_write_over_its_input(small_csv: Path) -> None:
    before = small_csv.read_bytes()
    result = run("size", small_csv, "--json", small_csv.with_suffix(".json"), "--plot",
                 small_csv.with_suffix(".png"), "--memory", SIZE_MEMORIES, "-q")  # fmt: skip
    assert result.returncode == 0, result.stderr
    refused = run("size", small_csv, "--json", small_csv, "--memory", SIZE_MEMORIES)
    assert refused.returncode == 2
    assert "--json" in error_line(refused)
    assert small_csv.read_bytes() == before


# --------------------------------------------------------------------------- the plot


def made_up_sizing(proved: bool) -> Sizing:
    everything = PlanAtSize(1 << 20, 4096, 3000, 9000, 9000, 4096 if proved else 3072, 1, False)
    probes = [plan_at(4095, 4000, 8800, 9000), plan_at(3999, 3500, 7000, 7200)]
    sized = memory_sizing(FAST, everything, probes, "points", 3999)
    return Sizing(Input("made-up", "arrays"), (FAST,), None, "bytes", (sized,), Budget(10),
                  2, False, 0.0)  # fmt: skip


@pytest.mark.parametrize("proved", [True, False], ids=["proved", "not proved"])
def test_plot_draws_the_curve_and_its_bound(tmp_path: Path, proved: bool) -> None:
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    import matplotlib.image
    from matplotlib.colors import to_rgba

    from cadence_memplan.cli.size_plot import plot_sizing, sizing_figure

    sizing = made_up_sizing(proved)
    figure = sizing_figure(sizing)
    (axis, *_) = figure.axes
    lines = {line.get_label(): line for line in axis.get_lines()}
    kept = lines["kept by a plan found"]
    bound = lines["at most, in any plan (proved)"]
    assert list(kept.get_xdata())[:3] == [3500, 4000, 4096]
    assert list(kept.get_ydata()) == [7000, 8800, 9000, 9000]
    assert list(bound.get_ydata()) == [7200, 9000, 9000, 9000]
    low, high = axis.get_xlim()
    assert low < min(kept.get_xdata())
    assert high >= max(kept.get_xdata()) > 4096
    assert "every tensor fits from 4,096 B" in axis.get_xlabel()
    shaded = [patch for patch in axis.patches if patch.get_facecolor()[:3] == to_rgba("grey")[:3]]
    assert bool(shaded) == (not proved)
    lower_bound = sizing.sized[0].lower_bound  # 4,000 B: 7,200 < 9,000 at 3,999 B
    assert (f"at least {lower_bound:,} B" in axis.get_xlabel()) == (not proved)
    # The ticks carry the unit (one for all of them); the label names none beside them.
    figure.canvas.draw()
    ticks = [label.get_text() for label in axis.get_yticklabels() if label.get_text()]
    assert len({tick.split()[-1] for tick in ticks}) == 1, ticks
    assert not re.search(r"\b(B|KiB|MiB|GiB)\b", axis.get_ylabel()), axis.get_ylabel()
    path = tmp_path / "size.png"
    plot_sizing(path, sizing)
    assert matplotlib.image.imread(path).shape[2] == 4


def test_cli_plot(small_csv: Path, tmp_path: Path) -> None:
    image = pytest.importorskip(
        "matplotlib.image", reason='needs matplotlib: pip install ".[plot]"'
    )
    png = tmp_path / "size.png"
    result = run("size", small_csv, "--memory", SIZE_MEMORIES, "--plot", png, "-q")
    assert result.returncode == 0, result.stderr
    assert f"wrote sizing plot: {png}" in result.stdout
    height, width = image.imread(png).shape[:2]
    assert width > height > 300


# --------------------------------------------------------------------------- models


@pytest.mark.executorch
@pytest.mark.parametrize("objective", ["bytes", "traffic"])
def test_model_all_fit_from_keeps_every_tensor_in_a_whole_lowering(objective: str) -> None:
    """At all_fit_from, ``plan --algo best`` (a whole to_executorch) keeps every tensor in
    the first memory; a size below keeps less, never more than the point's bound; the
    curve's terms are the objective's."""
    import dataclasses

    from cadence_memplan.workflow.plan import load_input, plan_input

    loaded = load_input("cnn", lowering="cadence")
    memories = parse_memory_spec("fast=4KiB:16,near=32KiB:64,far=1MiB:64")
    sizing = size_input(loaded, memories, BEST.replace(objective=objective), points=3)
    (sized,) = sizing.sized
    assert sized.curve
    assert_curve_shape(sizing)

    def plan_at_size(capacity: int):
        config = [dataclasses.replace(memories[0], size=capacity), *memories[1:]]
        return plan_input(loaded, config, BEST.replace(objective=objective))

    whole = plan_at_size(sized.all_fit_from)
    assert (whole.table.mem_ids == 1).all()
    assert whole.kept == sized.total
    if objective == "traffic":
        assert sized.total > int(whole.table.sizes.sum())  # traffic counts the readers
    for point in sized.curve:
        below = plan_at_size(point.capacity)
        assert below.kept is not None
        assert point.kept_bound is not None
        assert below.kept <= point.kept_bound < sized.total


@pytest.mark.executorch
def test_cli_model_size(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out = tmp_path / "size.json"
    result = run("size", "mlp", "--memory", "fast=1KiB:16,near=64KiB:64", "--json", out,
                 timeout=300)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "lowering once with to_executorch" in result.stderr
    assert "lowering: cadence" in result.stdout
    document = json.loads(out.read_text())
    jsonschema.validate(document, size_schema())
    assert document["lowering"] == "cadence"
    all_fit_from, proved, rows = report_figures(result.stdout)
    (memory,) = document["memories"]
    assert (all_fit_from, proved) == (memory["all_fit_from"], memory["proved"])
    assert rows[1:] == printed_curve(memory)
