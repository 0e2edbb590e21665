"""The memory map: one panel per memory, x = node index, y = offset, a rectangle per tensor.

matplotlib is imported when a map is drawn (``pip install "cadence-memplan[plot]"``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from ..io.memories import Memory
from ..stats import TensorTable, format_bytes, memory_stats, overall_peak

__all__ = ["PLOT_SUFFIXES", "plot_memory_map"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def plot_memory_map(
    path: str | os.PathLike[str],
    table: TensorTable,
    memories: Sequence[Memory],
    title: str,
    node_count: int | None = None,
) -> None:
    """Draw one panel per memory: x = node index, y = offset, a rectangle per tensor.

    Each panel's rectangles are one PolyCollection, so 10^5 tensors draw in about a second.
    Figure size is fixed (10 x 2.4 inches per panel at 100 dpi) so images are comparable.
    """
    import matplotlib

    matplotlib.use("Agg")  # files only: no display needed
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection
    from matplotlib.ticker import FuncFormatter

    figure, axes = plt.subplots(
        len(memories), 1, figsize=(10, 2.4 * len(memories)), dpi=100, sharex=True, squeeze=False
    )
    colours = [f"C{index}" for index in range(10)]  # the default colour cycle
    last_node = int(table.ends.max()) + 1 if len(table) else 1
    peak_bytes, peak_node = overall_peak(table, node_count)
    stats = memory_stats(table, len(memories))
    for mem_id, (axis, memory, stat) in enumerate(
        zip(axes[:, 0], memories, stats, strict=True), start=1
    ):
        chosen = table.mem_ids == mem_id
        left = table.starts[chosen].astype(float)
        right = table.ends[chosen].astype(float) + 1  # inclusive end: the node is used
        bottom = table.offsets[chosen].astype(float)
        top = bottom + table.sizes[chosen]
        corners = np.stack(
            [np.stack(pair, axis=-1) for pair in ((left, bottom), (left, top), (right, top))]
            + [np.stack((right, bottom), axis=-1)],
            axis=1,
        )
        colour = colours[(mem_id - 1) % len(colours)]
        axis.add_collection(
            PolyCollection(
                corners,  # type: ignore[arg-type]  # an (n, 4, 2) array is n polygons
                facecolors=colour,
                edgecolors="black",
                linewidths=0.2 if len(corners) < 2000 else 0.0,
                alpha=0.8,
                rasterized=len(corners) > 5000,  # keeps huge SVGs small
            )
        )
        # Show the used part; near capacity (or when empty) show the whole memory.
        if stat.peak_usage == 0 or stat.peak_usage > 0.8 * memory.size:
            top_of_view = memory.size * 1.02
        else:
            top_of_view = stat.peak_usage * 1.15
        axis.axhline(memory.size, color="red", linewidth=1, linestyle="--", label="capacity")
        axis.set_ylim(0, top_of_view)
        axis.set_xlim(0, last_node)
        axis.axvline(peak_node, color="grey", linewidth=0.8, linestyle=":")
        axis.set_ylabel("offset")
        axis.yaxis.set_major_formatter(FuncFormatter(lambda value, _: format_bytes(int(value))))
        axis.set_title(
            f"{memory.name}: {stat.tensor_count:,} tensors, peak {format_bytes(stat.peak_usage)}"
            f" of {format_bytes(memory.size)} ({stat.peak_usage / memory.size:.1%})",
            fontsize=9,
            loc="left",
        )
    axes[-1, 0].set_xlabel(f"node index (dotted: overall peak, {format_bytes(peak_bytes)})")
    figure.suptitle(title, fontsize=10)
    figure.tight_layout()  # keeps the figure size: only the panels move
    figure.savefig(path)
    plt.close(figure)
