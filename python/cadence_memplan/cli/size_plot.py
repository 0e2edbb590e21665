"""The picture of a sizing (``size --plot``): what the first memory keeps against its
size, with the proved bound, and the size from which every tensor fits. matplotlib is
imported when a picture is drawn."""

from __future__ import annotations

import os
from typing import Any

from ..io.outputs import write_whole
from ..workflow.size import Sizing
from .plot_axes import binary_axis
from .printing import kept_terms

__all__ = ["plot_sizing", "sizing_figure"]


def plot_sizing(path: str | os.PathLike[str], sizing: Sizing) -> None:
    """:func:`sizing_figure`, written whole (the format by the suffix: .png, .svg, .pdf)."""
    figure = sizing_figure(sizing)  # selects the Agg backend first
    import matplotlib.pyplot as plt

    with write_whole(path) as partial:
        figure.savefig(partial, bbox_inches="tight")
    plt.close(figure)


def sizing_figure(sizing: Sizing) -> Any:
    """The picture of ``sizing``'s first memory (a matplotlib Figure): steps of what a
    plan keeps there (solid, a dot where each step starts) and of the most any plan keeps
    (dashed), from the smallest size planned to a little past ``all_fit_from`` (dotted
    line), where every tensor is kept; when ``all_fit_from`` is not proved, the sizes
    between its lower bound and it are shaded. The right axis reads the left one as a
    share of every tensor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import ScalarFormatter

    sized = sizing.sized[0]
    memory = sized.memory
    name, total, fits = memory.name, sized.total, sized.all_fit_from
    ascending = list(reversed(sized.curve))
    low = min([fits, sized.lower_bound, *(point.capacity for point in ascending)])
    high = fits + max((fits - low) * 0.08, memory.alignment, 1)
    sizes = [point.capacity for point in ascending] + [fits, high]
    kept = [point.kept for point in ascending] + [total, total]
    figure, axis = plt.subplots(figsize=(10, 5), dpi=100)
    axis.step(sizes, kept, where="post", color="C0", linewidth=1.8, label="kept by a plan found")
    axis.plot(sizes[:-1], kept[:-1], linestyle="none", marker="o", markersize=3, color="C0")
    if any(point.kept_bound is not None for point in ascending):
        bounds = [point.kept if point.kept_bound is None else point.kept_bound
                  for point in ascending] + [total, total]  # fmt: skip
        axis.step(
            sizes, bounds, where="post", color="C3", linestyle="--", linewidth=1.2,
            label="at most, in any plan (proved)",
        )  # fmt: skip
        axis.fill_between(sizes, kept, bounds, step="post", color="C3", alpha=0.12, linewidth=0)
    axis.axvline(fits, color="grey", linestyle=":", linewidth=1.2)
    if not sized.proved:
        axis.axvspan(
            sized.lower_bound, fits, color="grey", alpha=0.2, linewidth=0,
            label=f"every tensor may fit from here on (not proved below {fits:,} B)",
        )  # fmt: skip
    bottom = min(kept)
    # Near the top the steps are what matters: zoom in unless the curve spans most of it.
    floor = 0.0 if bottom < total / 2 else bottom - (total - bottom) * 0.1
    top = total + (total - floor) * 0.06
    axis.set_ylim(floor, top)
    axis.set_xlim(low - (high - low) * 0.02, high)
    binary_axis(axis.xaxis, max(high - low, 1.0))
    binary_axis(axis.yaxis, max(top - floor, 1.0))
    if total:

        def to_share(kept: Any) -> Any:  # numpy arrays of the axis' values
            return kept * 100 / total

        def from_share(share: Any) -> Any:
            return share * total / 100

        share_axis = axis.secondary_yaxis("right", functions=(to_share, from_share))
        share_axis.set_ylabel("share of every tensor (%)")
        # Shares near 100% as themselves, not as an offset ("1e-5+9.999999e1").
        formatter = share_axis.yaxis.get_major_formatter()
        if isinstance(formatter, ScalarFormatter):
            formatter.set_useOffset(False)
    unit, terms = kept_terms(sizing.objective)
    # No unit here: each tick carries its own (16 KiB, 32 KiB, ...).
    axis.set_ylabel(f"kept in {name} ({terms})" if unit == "B" else f"kept in {name} (traffic)")
    axis.set_xlabel(
        f"size of {name} (dotted: every tensor fits from {fits:,} B"
        + (", proved)" if sized.proved else f"; at least {sized.lower_bound:,} B)")
    )
    extra = "" if floor == 0 else " (the left axis does not start at 0)"
    axis.set_title(
        f"{sizing.input.label}: what {name} keeps against its size{extra}", fontsize=10, loc="left"
    )
    # Below the axes: inside, it would hide the steps wherever they are.
    axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=3,
                frameon=False)  # fmt: skip
    figure.tight_layout()
    return figure
