"""The memory map (``plan --plot``), read back as a user would see it: PNG pixels, and the
SVG's text and tooltips (text kept as text with ``svg.fonttype = none``)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import cadence_memplan
from cadence_memplan.io import parse_memory_spec
from cadence_memplan.stats import TensorTable
from cadence_memplan.synthetic import synthetic_graph

matplotlib = pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')

from cadence_memplan.cli.memory_map import (
    AGGREGATE_ABOVE,
    EDGES_UP_TO,
    LABEL_LIMIT,
    MIN_PIXELS,
    live_bytes_per_node,
    plot_memory_map,
)
from cadence_memplan.cli.plot_axes import binary_tick_step

SVG = "{http://www.w3.org/2000/svg}"
MEMORIES = parse_memory_spec("fast=64KiB:16,near=1MiB:64,far=1GiB:64")


def planned(count: int, memories: str = "fast=64KiB:16,near=1MiB:64,far=1GiB:64") -> TensorTable:
    starts, ends, sizes = synthetic_graph(count)
    hierarchy = parse_memory_spec(memories)
    result = cadence_memplan.plan(
        starts,
        ends,
        sizes,
        [memory.size for memory in hierarchy],
        [memory.alignment for memory in hierarchy],
    )
    labels = [f"t{index}" for index in range(count)]
    return TensorTable(labels, result.mem_ids, result.offsets, sizes, starts, ends)


def table_of(rows: list[tuple[str, int, int, int, int, int]]) -> TensorTable:
    """Rows of (label, mem_id, offset, size, start, end)."""
    labels, *columns = zip(*rows, strict=True)
    mem_ids, offsets, sizes, starts, ends = (np.array(column) for column in columns)
    return TensorTable(list(labels), mem_ids, offsets, sizes, starts, ends)


def svg_of(tmp_path: Path, table: TensorTable, memories: list) -> ET.Element:  # type: ignore[type-arg]
    path = tmp_path / "map.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        plot_memory_map(path, table, memories, "test")
    return ET.parse(path).getroot()


def texts(root: ET.Element) -> list[str]:
    return ["".join(element.itertext()).strip() for element in root.iter(f"{SVG}text")]


def test_binary_tick_steps() -> None:
    for top in (5, 50_000, 256 * 1024 * 1.02, 722 << 20, 3 << 30, 1 << 50):
        step = binary_tick_step(top)
        assert step & (step - 1) == 0  # a power of two
        assert 4 <= top / step < 8


def test_ticks_are_round_binary_sizes(tmp_path: Path) -> None:
    root = svg_of(tmp_path, planned(200), MEMORIES)
    offsets = [text for text in texts(root) if re.fullmatch(r"[\d.]+ (B|KiB|MiB|GiB)", text)]
    assert len(offsets) >= 8  # two or three panels' worth of ticks
    units = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    values = []
    for text in offsets:
        number, unit = text.split()
        assert "." not in number, text  # 48 KiB, never 48.8 KiB
        values.append(int(number) * units[unit])
    step = np.gcd.reduce([value for value in values if value])
    assert step & (step - 1) == 0  # every tick a multiple of a power of two


def test_empty_memory_is_a_note_not_a_panel(tmp_path: Path) -> None:
    spec = "fast=64KiB:16,near=1GiB:64,far=1GiB:64"
    table, memories = planned(200, spec), parse_memory_spec(spec)
    assert set(table.mem_ids.tolist()) == {1, 2}  # far holds nothing: only two panels
    png = tmp_path / "map.png"
    plot_memory_map(png, table, memories, "test")
    height, width = matplotlib.image.imread(png).shape[:2]
    assert (width, height) == (1000, 505)  # 10 x (2 x 2.4 + 0.25) inches at 100 dpi
    assert "no tensors in: far (1.0 GiB)" in texts(svg_of(tmp_path, table, memories))


def test_svg_tooltip_per_tensor(tmp_path: Path) -> None:
    table = planned(120)
    root = svg_of(tmp_path, table, MEMORIES)
    titles = {
        group.get("id"): "".join(group.find(f"{SVG}title").itertext())  # type: ignore[union-attr]
        for group in root.iter(f"{SVG}g")
        if group.find(f"{SVG}title") is not None
    }
    assert len(titles) == len(table)
    row = 7
    tooltip = titles[f"tensor-{table.mem_ids[row]}-{row}"]
    assert tooltip.startswith(f"t{row}: {table.sizes[row]:,} bytes")
    assert f"offset {table.offsets[row]:,}" in tooltip
    assert f"nodes {table.starts[row]}..{table.ends[row]}" in tooltip


def test_labels_only_for_few_tensors(tmp_path: Path) -> None:
    wide = [("wide_one", 1, 0, 4096, 0, 40), ("other", 1, 4096, 4096, 10, 60)]
    assert "wide_one" in texts(svg_of(tmp_path, table_of(wide), MEMORIES[:1]))
    many = wide + [(f"small{i}", 1, 8192 + 16 * i, 16, i, i) for i in range(LABEL_LIMIT)]
    assert "wide_one" not in texts(svg_of(tmp_path, table_of(many), MEMORIES[:1]))


def test_thin_tensors_stay_visible(tmp_path: Path) -> None:
    """A 1-byte tensor alive for one node of 10,000 beside a 1 MiB one is far below a
    pixel; it is drawn MIN_PIXELS wide and high in its memory's colour (not as a black
    edge line). The two pictures differ only in where it is."""
    big = ("big", 1, 0, 1 << 20, 0, 0)
    last = ("last", 1, 0, 1, 9999, 9999)
    memories = parse_memory_spec("fast=2MiB:1")
    images = []
    for node in (2500, 5000):
        path = tmp_path / f"thin{node}.png"
        thin = ("thin", 1, 1 << 19, 1, node, node)
        plot_memory_map(path, table_of([big, last, thin]), memories, "test")
        images.append(matplotlib.image.imread(path)[..., :3])
    here, elsewhere = images[1], images[0]
    white_elsewhere = elsewhere.min(axis=-1) > 0.95
    blue_here = here[..., 2] - here[..., 0] > 0.2  # C0 and its darker edge are blue
    assert (white_elsewhere & blue_here).sum() >= MIN_PIXELS**2


def test_live_bytes_curve(tmp_path: Path) -> None:
    table = planned(300)
    root = svg_of(tmp_path, table, MEMORIES)
    assert "live bytes" in texts(root)
    # Its values: each memory's bytes alive at each node, as a brute force counts them.
    node_count = int(table.ends.max()) + 1
    for mem_id in (1, 2, 3):
        live = live_bytes_per_node(table, mem_id, node_count)
        assert len(live) == node_count + 1
        for node in range(node_count + 1):
            alive = (table.starts <= node) & (node <= table.ends) & (table.mem_ids == mem_id)
            assert live[node] == int(table.sizes[alive].sum())


def test_many_tensors_are_aggregated(tmp_path: Path) -> None:
    count = AGGREGATE_ABOVE + 1000
    table = planned(count, "fast=1GiB:16")
    root = svg_of(tmp_path, table, parse_memory_spec("fast=1GiB:16"))
    assert len(list(root.iter(f"{SVG}image"))) == 1  # an occupancy image, not n rectangles
    assert not any(group.find(f"{SVG}title") is not None for group in root.iter(f"{SVG}g"))
    assert any("too many to draw one by one" in text for text in texts(root))
    assert (tmp_path / "map.svg").stat().st_size < 1_000_000


def test_tensors_inside_another_are_hatched_and_in_the_legend(tmp_path: Path) -> None:
    """A tensor inside another's storage (Cadence's in-place cat/slice) is drawn over its
    host unfilled and hatched, and the legend says what that means; a plan without such
    tensors has neither."""
    rows = [("host", 1, 0, 4096, 0, 40), ("part", 1, 0, 2048, 5, 30)]
    labels, *columns = zip(*rows, strict=True)
    mem_ids, offsets, sizes, starts, ends = (np.array(column) for column in columns)
    sharing = TensorTable(
        list(labels), mem_ids, offsets, sizes, starts, ends, shares_storage=np.array([0, 1], bool)
    )
    root = svg_of(tmp_path, sharing, MEMORIES[:1])
    legend = [text for text in texts(root) if "inside another tensor's storage" in text]
    assert legend == ["inside another tensor's storage (in place: no bytes of its own)"]
    assert len(list(root.iter(f"{SVG}pattern"))) >= 1  # the hatching
    plain = svg_of(tmp_path, table_of(rows), MEMORIES[:1])
    assert not [text for text in texts(plain) if "inside another" in text]
    assert not list(plain.iter(f"{SVG}pattern"))


def test_control_flow_tensors_have_a_legend_of_their_own(tmp_path: Path) -> None:
    """The tensors a control-flow submodule writes (named op/submodule/node) lie in the
    bytes kept for their op, inside no other tensor: the legend says so, and says nothing
    of another tensor's storage when no tensor lies in one."""
    rows = [("x", 1, 4096, 4096, 0, 40), ("cond/submodule_0/alloc", 1, 0, 2048, 5, 30)]
    labels, *columns = zip(*rows, strict=True)
    mem_ids, offsets, sizes, starts, ends = (np.array(column) for column in columns)
    table = TensorTable(
        list(labels), mem_ids, offsets, sizes, starts, ends, shares_storage=np.array([0, 1], bool)
    )
    shown = texts(svg_of(tmp_path, table, MEMORIES[:1]))
    legend = [text for text in shown if "control-flow submodule" in text]
    assert legend == ["written by a control-flow submodule (in its op's bytes; branches may share)"]
    assert not [text for text in shown if "inside another" in text]


def test_labels_never_collide(tmp_path: Path) -> None:
    """Tensors inside their host share its centre: only the host is named there, and a
    tensor inside it with room for a name elsewhere keeps its own."""
    rows = [
        ("host_tensor", 1, 0, 8192, 0, 60),
        ("same_place", 1, 0, 8192, 0, 60),  # exactly the host's rectangle
        ("lower_half", 1, 0, 4096, 0, 60),  # its centre lies below the host's
    ]
    labels, *columns = zip(*rows, strict=True)
    mem_ids, offsets, sizes, starts, ends = (np.array(column) for column in columns)
    table = TensorTable(
        list(labels), mem_ids, offsets, sizes, starts, ends,
        shares_storage=np.array([0, 1, 1], bool),
    )  # fmt: skip
    shown = texts(svg_of(tmp_path, table, parse_memory_spec("fast=8KiB:16")))
    assert "host_tensor" in shown
    assert "same_place" not in shown
    assert "lower_half" in shown


def test_a_hosts_name_stays_off_the_tensors_inside_it(tmp_path: Path) -> None:
    """Read on a region of a tensor inside it, a host's name would name that tensor: a host
    that two halves cover (Cadence's in-place cat) is not named inside them, and one whose
    middle a part covers is named in the band left free."""
    covered = TensorTable(
        ["cat_host", "first_half", "second_half"],
        np.array([1, 1, 1]), np.array([0, 0, 4096]), np.array([8192, 4096, 4096]),
        np.array([0, 0, 0]), np.array([60, 60, 60]), shares_storage=np.array([0, 1, 1], bool),
    )  # fmt: skip
    shown = texts(svg_of(tmp_path, covered, parse_memory_spec("fast=8KiB:16")))
    assert "first_half" in shown
    assert "second_half" in shown
    assert "cat_host" not in shown
    middle = TensorTable(
        ["slice_host", "middle"],
        np.array([1, 1]), np.array([0, 2048]), np.array([8192, 4096]),
        np.array([0, 0]), np.array([60, 60]), shares_storage=np.array([0, 1], bool),
    )  # fmt: skip
    shown = texts(svg_of(tmp_path, middle, parse_memory_spec("fast=8KiB:16")))
    assert "slice_host" in shown
    assert "middle" in shown


def drawn_figure(tmp_path: Path, table: TensorTable, memories: list) -> Any:  # type: ignore[type-arg]
    """The figure ``plot_memory_map`` saves."""
    from matplotlib.figure import Figure

    figures: list[Any] = []
    savefig = Figure.savefig

    def keep(figure: Any, *arguments: Any, **options: Any) -> None:
        figures.append(figure)
        savefig(figure, *arguments, **options)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Figure, "savefig", keep)
        plot_memory_map(tmp_path / "map.png", table, memories, "test")
    (figure,) = figures
    return figure


@pytest.mark.parametrize("count", [EDGES_UP_TO, EDGES_UP_TO + 1, AGGREGATE_ABOVE])
def test_many_rectangles_are_drawn_without_edge_lines(tmp_path: Path, count: int) -> None:
    """Thousands of outlines, each at least a pixel wide, darken a panel into a smear:
    above EDGES_UP_TO tensors, rectangles are fills only; and the band of live bytes
    (more nodes than pixels) lies behind them, not over them."""
    memories = parse_memory_spec("fast=1GiB:16")
    table = planned(count, "fast=1GiB:16")
    table.ends[0] = 5000  # more nodes than the panel has pixels: the band is drawn
    figure = drawn_figure(tmp_path, table, memories)
    (axis, *_) = figure.axes
    tensors, *band = axis.collections  # the rectangles first, then the band
    widths = set(np.asarray(tensors.get_linewidths()).tolist())
    assert (widths == {0.0}) == (count > EDGES_UP_TO), widths
    assert band
    assert all(other.get_zorder() < tensors.get_zorder() for other in band)
