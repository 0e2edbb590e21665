"""The picture of a capacity sweep (``sweep --plot``): what each memory holds against the
varied memory's size. matplotlib is imported when a picture is drawn."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..analysis.sweep import SweepRow, moves_against_growth, smallest_size_keeping_all
from ..io.memories import Memory
from ..io.outputs import write_whole
from ..stats import format_bytes
from .plot_axes import binary_axis

__all__ = ["SPREAD_FOR_PANELS", "plot_sweep", "sweep_panels"]


SPREAD_FOR_PANELS = 32  # memories whose sums differ more than this get a panel each


# Each swept size's value held up to the next size: a line between two sizes would show
# values no plan was made for.
SWEPT_STEPS = "steps-post"


def sweep_panels(rows: Sequence[SweepRow], memory_count: int) -> list[int] | None:
    """The memories (indices) that get a panel of their own, when the largest sums of
    sizes of the memories that hold anything differ by more than ``SPREAD_FOR_PANELS``
    times (on one linear axis the small ones would lie flat on 0); None: one panel."""
    tops = [
        max((row.tensor_bytes[index] for row in rows if row.fits), default=0)
        for index in range(memory_count)
    ]
    held = [index for index, top in enumerate(tops) if top > 0]
    if len(held) < 2 or max(tops) <= SPREAD_FOR_PANELS * min(tops[index] for index in held):
        return None
    return held


def plot_sweep(
    path: str | os.PathLike[str],
    rows: Sequence[SweepRow],
    memories: Sequence[Memory],
    varied: int,
    title: str,
) -> None:
    """The sum of tensor sizes (top) and the tensors (bottom) in each memory against the
    varied memory's size, with the sum outside memory 1, the sizes that do not fit
    (shaded), the sizes where a bigger memory held fewer bytes (red triangles) and the
    first size that keeps every tensor in the varied memory or faster ones (dotted line).

    When the memories' sums differ by orders of magnitude (:func:`sweep_panels`), each
    memory gets a panel of its own, with its own axis (and the sum outside memory 1 one
    too): on one axis the small memory and its triangles would lie flat on 0.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = sweep_panels(rows, len(memories))
    name = memories[varied].name
    sizes = np.array([row.size for row in rows], dtype=float)
    fits = np.array([row.fits for row in rows])
    figure, axes, byte_panels = _figure(plt, rows, memories, panels, fits, varied)
    count_axis = axes[-1]
    marker = "o" if len(rows) <= 40 else None
    for index, memory in enumerate(memories):
        counts = np.array([row.tensor_counts[index] for row in rows], dtype=float)
        counts[~fits] = np.nan
        count_axis.plot(
            sizes, counts, color=f"C{index % 10}", marker=marker, markersize=3,
            label=memory.name if panels is not None else None, drawstyle=SWEPT_STEPS,
        )  # fmt: skip
    _plot_bytes(byte_panels, rows, memories, varied, sizes, marker, single=panels is None)
    _shade_failures(axes, rows, sizes, fits)
    size_label = f"size of {name}"
    kept = smallest_size_keeping_all(rows, varied)
    if kept is not None:
        for axis in axes:
            axis.axvline(kept.size, color="grey", linestyle=":", linewidth=1)
        if varied == len(memories) - 1:
            what = "fits"
        else:
            what = f"all in {name if varied == 0 else f'memories 1..{varied + 1}'}"
        # In the axis label, as the memory map names its dotted line: a note beside the
        # line would run off the figure when the line is near the right edge.
        size_label += f" (dotted: {what} from {format_bytes(kept.size)})"
    low, high = sizes.min(), sizes.max()
    margin = (high - low) * 0.02 or max(high * 0.05, 1.0)
    axes[0].set_xlim(max(low - margin, 0), high + margin)
    binary_axis(count_axis.xaxis, max(high - low, 1.0))
    count_axis.set_ylabel("tensors")
    count_axis.set_ylim(bottom=0)
    count_axis.set_xlabel(size_label)
    _legends_and_title(
        figure,
        axes,
        panels is None,
        f"{title}: what each memory holds as {name} grows",
        len(memories),
    )
    with write_whole(path) as partial:
        figure.savefig(partial)
    plt.close(figure)


# A bytes panel: (axis, [(values, colour, label, style)], the memory it shows or -1).
_BytePanel = tuple[Any, list[tuple[Any, str, str, str]], int]


def _figure(
    plt: Any,
    rows: Sequence[SweepRow],
    memories: Sequence[Memory],
    panels: list[int] | None,
    fits: np.ndarray[Any, Any],
    varied: int,
) -> tuple[Any, Any, list[_BytePanel]]:
    """The figure, its axes (the tensor counts last) and its bytes panels: one for every
    memory, or (``panels``) one per memory, with the sum outside memory 1 its own."""
    outside = np.array([row.bytes_outside_memory_1 for row in rows], dtype=float)
    outside[~fits] = np.nan
    outside_label = f"outside {memories[0].name}"

    def held(index: int) -> np.ndarray[Any, Any]:
        values = np.array([row.tensor_bytes[index] for row in rows], dtype=float)
        values[~fits] = np.nan  # no plan, no point
        return values

    if panels is None:
        figure, axes = plt.subplots(
            2, 1, figsize=(10, 6), dpi=100, sharex=True, height_ratios=(2, 1)
        )
        lines = [(held(index), f"C{index % 10}", memory.name, "-")
                 for index, memory in enumerate(memories)]  # fmt: skip
        lines.append((outside, "black", outside_label, "--"))
        return figure, axes, [(axes[0], lines, varied)]
    extra = len(memories) > 2  # with two memories, outside memory 1 is memory 2
    count = len(panels) + extra
    figure, axes = plt.subplots(
        count + 1, 1, figsize=(10, 1.9 * count + 2), dpi=100, sharex=True,
        height_ratios=(*([1.0] * count), 1.0),
    )  # fmt: skip
    byte_panels: list[_BytePanel] = [
        (axes[position], [(held(index), f"C{index % 10}", memories[index].name, "-")], index)
        for position, index in enumerate(panels)
    ]
    if extra:
        byte_panels.append((axes[len(panels)], [(outside, "black", outside_label, "--")], -1))
    return figure, axes, byte_panels


def _plot_bytes(
    byte_panels: list[_BytePanel],
    rows: Sequence[SweepRow],
    memories: Sequence[Memory],
    varied: int,
    sizes: np.ndarray[Any, Any],
    marker: str | None,
    single: bool,
) -> None:
    """Each bytes panel's lines, and the red triangles where a bigger memory held fewer
    bytes (on the varied memory's panel, or the one panel)."""
    name = memories[varied].name
    notes = moves_against_growth(rows, memories, varied)
    against = [index for index, note in enumerate(notes) if note]
    marks = (
        f"bigger {name}, fewer bytes in {name}"
        if varied == 0
        else f"bigger {name}, fewer bytes in memories 1..{varied + 1}"
    )
    for axis, panel_lines, index in byte_panels:
        for values, colour, label, style in panel_lines:
            axis.plot(
                sizes, values, color=colour, linestyle=style, marker=None if style == "--"
                else marker, markersize=3, linewidth=1 if style == "--" else 1.5, label=label,
                drawstyle=SWEPT_STEPS,
            )  # fmt: skip
        if against and (index == varied or (single and axis is byte_panels[0][0])):
            axis.plot(
                sizes[against], [rows[row].tensor_bytes[varied] for row in against],
                linestyle="none", marker="v", color="red", markersize=6, label=marks,
            )  # fmt: skip
        top = np.nanmax([np.nanmax(np.nan_to_num(values)) for values, *_ in panel_lines])
        top = max(float(top), 1.0) * 1.08
        axis.set_ylim(0, top)
        binary_axis(axis.yaxis, top)
        if single:
            axis.set_ylabel("sum of tensor sizes")
        else:
            axis.set_ylabel("sum of sizes", fontsize=8)
            axis.set_title(panel_lines[0][2], fontsize=9, loc="left", pad=2)


def _shade_failures(
    axes: Any, rows: Sequence[SweepRow], sizes: np.ndarray[Any, Any], fits: np.ndarray[Any, Any]
) -> None:
    """The sizes that do not fit, shaded on every axis (labelled once)."""
    step = float(np.median(np.diff(sizes))) if len(sizes) > 1 else max(sizes[0] * 0.05, 1.0)
    first_failure = int(np.argmin(fits))
    for position, row in enumerate(rows):
        if not row.fits:
            for axis in axes:
                axis.axvspan(
                    sizes[position] - step / 2, sizes[position] + step / 2, color="grey",
                    alpha=0.3, linewidth=0,
                    label="does not fit" if axis is axes[0] and position == first_failure
                    else None,
                )  # fmt: skip


def _legends_and_title(
    figure: Any, axes: Any, single: bool, heading: str, memory_count: int
) -> None:
    """The legends and the heading, laid out: one legend and title for one bytes panel,
    else a legend per panel that has more than its line, and the heading says why."""
    if single:
        axes[0].legend(fontsize=8, loc="best", framealpha=0.85)
        axes[0].set_title(heading, fontsize=10, loc="left")
        figure.tight_layout()
        return
    for axis in axes[:-1]:
        if len(axis.get_legend_handles_labels()[1]) > 1:  # more than the panel's line
            axis.legend(fontsize=7, loc="best", framealpha=0.85)
    axes[-1].legend(fontsize=7, loc="best", framealpha=0.85, ncols=memory_count)
    heading += " (a panel per memory: their sums differ by orders of magnitude)"
    figure.suptitle(heading, fontsize=10, x=0.01, ha="left")
    figure.tight_layout()
