"""The memory map of a plan (``plan --plot``): one panel per memory that holds tensors,
x = node index, y = offset, a rectangle per tensor, and the memory's live bytes as a line
(the gap between it and the highest rectangle is fragmentation). Memories that hold
nothing get a one-line note. Rectangles are drawn at least ``MIN_PIXELS`` wide and high so
that thin tensors stay visible; up to ``LABEL_LIMIT`` tensors in a panel carry their names
where they fit; in SVG each tensor has a ``<title>`` (a tooltip in browsers). Above
``EDGES_UP_TO`` tensors rectangles have no outline (thousands of outlines darken a panel
into a smear), and above ``AGGREGATE_ABOVE`` a panel draws how much of each small cell of
(node, offset) is occupied instead of every rectangle, which would only show as texture.

matplotlib is imported when a picture is drawn (``pip install matplotlib``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..io.memories import Memory
from ..io.outputs import write_whole
from ..stats import (
    IntArray,
    TensorTable,
    format_bytes,
    live_bytes_changes,
    memory_stats,
    overall_peak,
    plural,
)
from .plot_axes import binary_axis
from .printing import percent_used

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "AGGREGATE_ABOVE",
    "EDGES_UP_TO",
    "LABEL_LIMIT",
    "live_bytes_per_node",
    "plot_memory_map",
]

PANEL_INCHES = (10.0, 2.4)  # width, height of one memory's panel (at 100 dpi)
NOTE_INCHES = 0.25  # height of the line naming the memories that hold nothing
MIN_PIXELS = 2.0  # smallest drawn width and height of a tensor
LABEL_LIMIT = 50  # panels with at most this many tensors name them
AGGREGATE_ABOVE = 5000  # panels with more tensors draw occupancy instead of rectangles
# Panels with more tensors draw them without edge lines: thousands of outlines, each at
# least a pixel wide, cover the fill and darken the panel into a smear.
EDGES_UP_TO = 500
_CELL_PIXELS = 2  # occupancy cell size in pixels when aggregating
_SUPERSAMPLE = 4  # each occupancy cell is measured on a 4x4 finer grid


def plot_memory_map(
    path: str | os.PathLike[str],
    table: TensorTable,
    memories: Sequence[Memory],
    title: str,
    node_count: int | None = None,
) -> None:
    """Draw the memory map of ``table`` to ``path`` (.png, .svg or .pdf).

    The figure is 10 inches wide and 2.4 inches high per memory that holds tensors, plus
    0.25 inches for the note about memories that hold none, at 100 dpi.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt

    stats = memory_stats(table, len(memories))
    used = [index for index, stat in enumerate(stats) if stat.tensor_count]
    empty = [index for index, stat in enumerate(stats) if not stat.tensor_count]
    drawn = used or [0]  # nothing planned at all: still show memory 1
    note = (
        "no tensors in: "
        + ", ".join(
            f"{memories[index].name} ({format_bytes(memories[index].size)})" for index in empty
        )
        if used and empty
        else ""
    )
    height = PANEL_INCHES[1] * len(drawn) + (NOTE_INCHES if note else 0.0)
    figure, axes = plt.subplots(
        len(drawn), 1, figsize=(PANEL_INCHES[0], height), dpi=100, sharex=True, squeeze=False
    )
    last_node = int(table.ends.max()) + 1 if len(table) else 1
    peak_bytes, peak_node = overall_peak(table, node_count)
    panels = []
    for axis, index in zip(axes[:, 0], drawn, strict=True):
        memory, stat = memories[index], stats[index]
        # Show the used part; near capacity (or when empty) show the whole memory.
        if stat.peak_usage == 0 or stat.peak_usage > 0.8 * memory.size:
            top_of_view = memory.size * 1.02
        else:
            top_of_view = stat.peak_usage * 1.15
        axis.set_ylim(0, top_of_view)
        axis.set_xlim(0, last_node)
        axis.axhline(memory.size, color="red", linewidth=1, linestyle="--", label="capacity")
        axis.axvline(peak_node, color="grey", linewidth=0.8, linestyle=":")
        axis.set_ylabel("offset")
        binary_axis(axis.yaxis, top_of_view)
        axis.set_title(
            f"{memory.name}: {plural(stat.tensor_count, 'tensor')},"
            f" peak {format_bytes(stat.peak_usage)} of {format_bytes(memory.size)} ({percent_used(stat.peak_usage, memory.size)})",
            fontsize=9,
            loc="left",
        )
        panels.append((axis, index))
    axes[-1, 0].set_xlabel(f"node index (dotted: overall peak, {format_bytes(peak_bytes)})")
    figure.suptitle(title, fontsize=10, x=0.01, ha="left")
    if note:
        figure.text(0.01, 0.04 / height, note, fontsize=8, color="dimgrey")
    # Lay out first, so that pixel sizes (minimum sizes, labels, cells) are final.
    bottom = NOTE_INCHES / height if note else 0.0
    figure.tight_layout(rect=(0.0, bottom, 1.0, 1.0))  # keeps the figure size
    svg = str(path).lower().endswith(".svg")
    tooltips: dict[str, str] | None = {} if svg else None  # filled by _draw_memory
    for axis, index in panels:
        _draw_memory(axis, table, index, memories[index], last_node, tooltips)
    handles, labels = _legend_handles(axes[0, 0], table, drawn)
    figure.legend(handles, labels, loc="upper right", fontsize=7, frameon=False, ncols=2)
    with write_whole(path) as partial:
        if tooltips:
            _save_svg_with_titles(figure, partial, tooltips)
        else:
            figure.savefig(partial)
    plt.close(figure)


def _pixels_per_unit(axis: Axes) -> tuple[float, float]:
    """Pixels per node (x) and per byte (y) of ``axis`` as laid out."""
    box = axis.get_window_extent()
    (x0, x1), (y0, y1) = axis.get_xlim(), axis.get_ylim()
    return box.width / (x1 - x0), box.height / (y1 - y0)


def _draw_memory(
    axis: Axes,
    table: TensorTable,
    index: int,
    memory: Memory,
    last_node: int,
    tooltips: dict[str, str] | None,
) -> None:
    """Draw memory ``index``'s tensors and live bytes on ``axis``; with ``tooltips`` (SVG),
    one patch per tensor whose gid maps to its tooltip there."""
    mem_id = index + 1
    colour = f"C{index % 10}"  # the default colour cycle
    chosen = np.flatnonzero(table.mem_ids == mem_id)
    left = table.starts[chosen].astype(float)
    width = (table.ends[chosen] - table.starts[chosen] + 1).astype(float)  # inclusive end
    bottom = table.offsets[chosen].astype(float)
    height = table.sizes[chosen].astype(float)
    if len(chosen) > AGGREGATE_ABOVE:
        _draw_occupancy(axis, (left, width, bottom, height), colour)
    else:
        boxes = (left, width, bottom, height)
        _draw_tensors(axis, table, chosen, (mem_id, memory), boxes, tooltips)
    _draw_live_bytes(axis, live_bytes_per_node(table, mem_id, last_node), last_node)


# A memory's tensors as rectangles: left, width, bottom, height (floats, one per tensor).
_Boxes = tuple[Any, Any, Any, Any]


def _draw_occupancy(axis: Axes, boxes: _Boxes, colour: str) -> None:
    """Too many tensors to draw one by one: the share of each small cell in use, shaded."""
    from matplotlib.colors import LinearSegmentedColormap

    occupancy, extent = _occupancy(*boxes, axis)
    colours = LinearSegmentedColormap.from_list("occupancy", ["white", colour])
    axis.imshow(
        occupancy,
        extent=extent,
        origin="lower",
        aspect="auto",
        cmap=colours,
        vmin=0.0,
        vmax=1.0,
        interpolation="nearest",
        zorder=1,
    )
    axis.set_title(
        axis.get_title(loc="left") + "; too many to draw one by one: the shade is the"
        " share of each small cell in use",
        fontsize=9,
        loc="left",
    )


def _draw_tensors(
    axis: Axes,
    table: TensorTable,
    chosen: Any,
    numbered_memory: tuple[int, Memory],
    boxes: _Boxes,
    tooltips: dict[str, str] | None,
) -> None:
    """The tensors of rows ``chosen`` (all in one memory), one rectangle each; with
    ``tooltips``, one patch per tensor (SVG), else one collection per style."""
    from matplotlib.collections import PolyCollection
    from matplotlib.patches import Rectangle

    left, width, bottom, height = boxes
    mem_id, memory = numbered_memory
    colour = f"C{(mem_id - 1) % 10}"  # the default colour cycle, as _draw_memory's
    x_pixels, y_pixels = _pixels_per_unit(axis)
    # Thin tensors are widened (and raised) to MIN_PIXELS about their centre.
    drawn_width = np.maximum(width, MIN_PIXELS / x_pixels)
    drawn_height = np.maximum(height, MIN_PIXELS / y_pixels)
    drawn_left = left - (drawn_width - width) / 2
    drawn_bottom = np.maximum(bottom - (drawn_height - height) / 2, 0.0)
    own_style, inside_style, submodule_style = _tensor_styles(
        colour, edges=len(chosen) <= EDGES_UP_TO
    )
    in_submodule = table.in_submodule[chosen]
    inside = table.shares_storage[chosen] & ~in_submodule
    styles = np.where(in_submodule, 2, np.where(inside, 1, 0))  # indexes the three styles
    if tooltips is not None:
        # One patch per tensor, so that SVG gets one element (and <title>) each.
        for row, x, y, w, h, kind in zip(
            chosen.tolist(), drawn_left, drawn_bottom, drawn_width, drawn_height,
            styles.tolist(), strict=True,
        ):  # fmt: skip
            gid = f"tensor-{mem_id}-{row}"
            style = (own_style, inside_style, submodule_style)[kind]
            axis.add_patch(Rectangle((x, y), w, h, gid=gid, **style))
            tooltips[gid] = _tooltip(table, row, memory)
    else:
        corners = np.stack(
            [
                np.stack((drawn_left, drawn_bottom), axis=-1),
                np.stack((drawn_left, drawn_bottom + drawn_height), axis=-1),
                np.stack((drawn_left + drawn_width, drawn_bottom + drawn_height), axis=-1),
                np.stack((drawn_left + drawn_width, drawn_bottom), axis=-1),
            ],
            axis=1,
        )
        # Hosts first; the tensors inside them on top, hatched and unfilled, so that
        # the host shows through and no one reads them as overlapping allocations.
        for keep, style in (
            (styles == 0, own_style), (styles == 2, submodule_style), (inside, inside_style)
        ):  # fmt: skip
            if keep.any():
                axis.add_collection(PolyCollection(corners[keep], **style))
    if len(chosen) <= LABEL_LIMIT:
        _label_tensors(axis, table, chosen, x_pixels, y_pixels)


def _draw_live_bytes(axis: Axes, live: Any, last_node: int) -> None:
    """The memory's live bytes per node: a step line, or, with more nodes than pixel
    columns, each column's most over a band down to its least."""
    columns = int(axis.get_window_extent().width)
    if last_node <= columns:
        axis.step(
            np.arange(last_node + 1),
            live,
            where="post",
            color="black",
            linewidth=0.9,
            label="live bytes",
            zorder=3,
        )
        return
    # More nodes than pixels: one line through every node would fill the panel, so draw
    # each pixel column's most live bytes, and a band down to its least behind the
    # tensors (over them, where live bytes swing within a column, it hid them in grey).
    edges = np.linspace(0, last_node, columns + 1).astype(np.int64)
    edges[-1] = last_node  # the column ends are node indices; the last covers the end
    starts_at = edges[:-1]
    most = np.maximum.reduceat(live[:last_node], starts_at)
    least = np.minimum.reduceat(live[:last_node], starts_at)
    axis.fill_between(
        edges, np.append(least, least[-1]), np.append(most, most[-1]), step="post",
        color="black", alpha=0.25, linewidth=0, zorder=0.5,
    )  # fmt: skip
    axis.step(
        edges, np.append(most, most[-1]), where="post", color="black", linewidth=0.5, alpha=0.8,
        label="live bytes (band: least to most in a pixel's nodes)", zorder=3,
    )  # fmt: skip


def _tensor_styles(
    colour: str, edges: bool = True
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Patch styles of a memory's tensors: those with storage of their own filled in the
    memory's colour, outlined in a darker shade if ``edges``; those inside another's
    storage (Cadence's in-place cat, slice, view) unfilled, hatched and dashed, drawn over
    their host; those a control-flow submodule writes (in the bytes kept for its op, where
    the branches of a cond may overlap: only one runs) lightly filled and dotted."""
    from matplotlib.colors import to_rgba

    edge = tuple(0.6 * channel for channel in to_rgba(colour)[:3])  # a darker shade
    own = {
        "facecolor": to_rgba(colour, 0.8),
        "edgecolor": edge if edges else "none",
        "linewidth": 0.4 if edges else 0.0,
        "zorder": 1,
    }
    inside = {
        "facecolor": "none",
        "edgecolor": (0.1, 0.1, 0.1),
        "hatch": "////",
        "linewidth": 0.8,
        "linestyle": "--",
        "zorder": 2,
    }
    submodule = {
        "facecolor": to_rgba(colour, 0.3),
        "edgecolor": edge,
        "hatch": "..",
        "linewidth": 0.6,
        "zorder": 1,
    }
    return own, inside, submodule


def _legend_handles(
    axis: Axes, table: TensorTable, drawn: Sequence[int]
) -> tuple[list[Any], list[str]]:
    """The legend: capacity, live bytes, a tensor, and, when the plan has any, a tensor
    inside another's storage (drawn inside its host: no bytes of its own) and one a
    control-flow submodule writes."""
    from matplotlib.patches import Patch

    handles, labels = axis.get_legend_handles_labels()
    own, inside, submodule = _tensor_styles(f"C{drawn[0] % 10}")
    handles.append(Patch(**{key: value for key, value in own.items() if key != "zorder"}))
    labels.append("tensor (its own bytes)")
    in_submodule = table.in_submodule
    if (table.shares_storage & ~in_submodule).any():
        handles.append(Patch(**{key: value for key, value in inside.items() if key != "zorder"}))
        labels.append("inside another tensor's storage (in place: no bytes of its own)")
    if in_submodule.any():
        handles.append(Patch(**{key: value for key, value in submodule.items() if key != "zorder"}))
        labels.append("written by a control-flow submodule (in its op's bytes; branches may share)")
    return handles, labels


def live_bytes_per_node(table: TensorTable, mem_id: int, node_count: int) -> IntArray:
    """Memory ``mem_id``'s live bytes at each node ``0..node_count`` (tensors inside
    another's storage left out, as in the peak-live bound)."""
    own = ~table.shares_storage
    ids, times, live = live_bytes_changes(
        table.mem_ids[own], table.sizes[own], table.starts[own], table.ends[own]
    )
    times, live = times[ids == mem_id], live[ids == mem_id]
    # Each change holds until the next: the value at a node is the last change at or before it.
    last_change = np.searchsorted(times, np.arange(node_count + 1), side="right") - 1
    return np.where(last_change >= 0, live[np.maximum(last_change, 0)], 0)


def _tooltip(table: TensorTable, row: int, memory: Memory) -> str:
    size = int(table.sizes[row])
    offset = int(table.offsets[row])
    return (
        f"{table.labels[row]}: {size:,} bytes ({format_bytes(size)}) in {memory.name} at"
        f" offset {offset:,}, nodes {int(table.starts[row])}..{int(table.ends[row])}"
    )


Box = tuple[float, float, float, float]  # left, bottom, width, height, in pixels


def _label_tensors(
    axis: Axes, table: TensorTable, chosen: np.ndarray[Any, Any], x_pixels: float, y_pixels: float
) -> None:
    """Name each tensor inside its rectangle when the name fits (7 pt is about 4.5 px a
    character wide and 10 px high at 100 dpi) and overlaps no name already placed: tensors
    with storage of their own first, largest first, then those inside another's storage.
    A name stays off the regions of the tensors inside its tensor (read there, it would name
    them): it goes to the centre of the rectangle, else of a band those tensors leave free,
    else nowhere (the SVG's tooltip still names it)."""
    placed: list[Box] = []
    order = sorted(
        chosen.tolist(),
        key=lambda row: (bool(table.shares_storage[row]), -int(table.sizes[row]), row),
    )
    rectangles = {row: _rectangle(table, row, x_pixels, y_pixels) for row in order}
    inside = [row for row in order if table.shares_storage[row]]
    for row in order:
        text = str(table.labels[row])
        rectangle = rectangles[row]
        text_pixels = 4.5 * len(text) + 4
        if rectangle[2] >= text_pixels and rectangle[3] >= 11:
            rotation, box = 0, (text_pixels, 11.0)
        elif rectangle[3] >= text_pixels and rectangle[2] >= 11:
            rotation, box = 90, (11.0, text_pixels)  # tall and narrow: along the rectangle
        else:
            continue
        # What a name must not land on: the tensors inside this one (one that covers it
        # exactly is the same region, named once).
        parts = [
            rectangles[other] for other in inside
            if _contains(rectangle, rectangles[other]) and rectangles[other] != rectangle
        ]  # fmt: skip
        centre = _free_centre(rectangle, parts, box)
        if centre is None:
            continue
        label_box = (centre[0] - box[0] / 2, centre[1] - box[1] / 2, *box)
        if any(_overlap(label_box, other) for other in placed):
            continue
        placed.append(label_box)
        axis.text(
            centre[0] / x_pixels,
            centre[1] / y_pixels,
            text,
            ha="center",
            va="center",
            fontsize=7,
            rotation=rotation,
            clip_on=True,
            zorder=4,
            # Readable over a host's edges and the hatching of the tensors inside it.
            bbox={"facecolor": "white", "alpha": 0.75, "linewidth": 0, "pad": 0.6},
        )


def _rectangle(table: TensorTable, row: int, x_pixels: float, y_pixels: float) -> Box:
    """A tensor's rectangle in pixels: nodes ``start..end`` inclusive, bytes from its offset."""
    start, end = float(table.starts[row]), float(table.ends[row])
    offset, size = float(table.offsets[row]), float(table.sizes[row])
    return (start * x_pixels, offset * y_pixels, (end - start + 1) * x_pixels, size * y_pixels)


def _free_centre(
    rectangle: Box, parts: list[Box], box: tuple[float, float]
) -> tuple[float, float] | None:
    """Where a ``box``-sized name fits in ``rectangle`` off every one of ``parts``: its
    centre, else the centre of the widest band (full height, or full width) the parts
    leave free; None when there is none."""
    left, bottom, width, height = rectangle
    centres = [(left + width / 2, bottom + height / 2)]
    for axis, (start, length, other) in enumerate(
        ((left, width, bottom + height / 2), (bottom, height, left + width / 2))
    ):
        covered = sorted((part[axis], part[axis] + part[axis + 2]) for part in parts)
        gaps, reach = [], start
        for low, high in covered:
            if low > reach:
                gaps.append((reach, low))
            reach = max(reach, high)
        if start + length > reach:
            gaps.append((reach, start + length))
        for low, high in sorted(gaps, key=lambda gap: gap[0] - gap[1]):
            if high - low >= box[axis]:
                middle = (low + high) / 2
                centres.append((middle, other) if axis == 0 else (other, middle))
    for x, y in centres:
        label = (x - box[0] / 2, y - box[1] / 2, *box)
        if _contains(rectangle, label) and not any(_overlap(label, part) for part in parts):
            return x, y
    return None


def _contains(outer: Box, inner: Box) -> bool:
    """Does ``inner`` lie within ``outer`` (to half a pixel)?"""
    return (
        inner[0] >= outer[0] - 0.5
        and inner[1] >= outer[1] - 0.5
        and inner[0] + inner[2] <= outer[0] + outer[2] + 0.5
        and inner[1] + inner[3] <= outer[1] + outer[3] + 0.5
    )


def _overlap(first: Box, second: Box) -> bool:
    """Do two boxes (left, bottom, width, height) overlap?"""
    return (
        first[0] < second[0] + second[2]
        and second[0] < first[0] + first[2]
        and first[1] < second[1] + second[3]
        and second[1] < first[1] + first[3]
    )


def _occupancy(
    left: np.ndarray[Any, Any],
    width: np.ndarray[Any, Any],
    bottom: np.ndarray[Any, Any],
    height: np.ndarray[Any, Any],
    axis: Axes,
) -> tuple[np.ndarray[Any, Any], tuple[float, float, float, float]]:
    """The share of each cell of about ``_CELL_PIXELS`` that tensors cover, measured on a
    grid ``_SUPERSAMPLE`` times finer with a 2-D difference array (O(n + cells))."""
    box = axis.get_window_extent()
    (x0, x1), (y0, y1) = axis.get_xlim(), axis.get_ylim()
    columns = max(1, int(box.width / _CELL_PIXELS))
    rows = max(1, int(box.height / _CELL_PIXELS))
    fine_columns, fine_rows = columns * _SUPERSAMPLE, rows * _SUPERSAMPLE

    def cells(values: np.ndarray[Any, Any], low: float, high: float, count: int) -> Any:
        scaled = np.rint((values - low) / (high - low) * count)
        return np.clip(scaled, 0, count).astype(np.int64)

    first_column = cells(left, x0, x1, fine_columns)
    last_column = np.maximum(cells(left + width, x0, x1, fine_columns), first_column + 1)
    first_row = cells(bottom, y0, y1, fine_rows)
    last_row = np.maximum(cells(bottom + height, y0, y1, fine_rows), first_row + 1)
    keep = (first_column < fine_columns) & (first_row < fine_rows)
    difference = np.zeros((fine_rows + 1, fine_columns + 1), dtype=np.int32)
    for rows_at, columns_at, sign in (
        (first_row, first_column, 1),
        (first_row, last_column, -1),
        (last_row, first_column, -1),
        (last_row, last_column, 1),
    ):
        np.add.at(difference, (rows_at[keep], columns_at[keep]), sign)
    covered = np.cumsum(np.cumsum(difference, axis=0), axis=1)[:fine_rows, :fine_columns] > 0
    share = covered.reshape(rows, _SUPERSAMPLE, columns, _SUPERSAMPLE).mean(axis=(1, 3))
    return share, (x0, x1, y0, y1)


_SVG_GROUP = re.compile(r'<g id="(tensor-\d+-\d+)">')


def _save_svg_with_titles(
    figure: Any, path: str | os.PathLike[str], titles: dict[str, str]
) -> None:
    """Save as SVG, then give each tensor's group a ``<title>`` (a browser tooltip)."""
    import io

    buffer = io.StringIO()
    figure.savefig(buffer, format="svg")

    def with_title(match: re.Match[str]) -> str:
        return f"{match.group(0)}<title>{escape(titles[match.group(1)])}</title>"

    Path(path).write_text(_SVG_GROUP.sub(with_title, buffer.getvalue()), encoding="utf-8")
