"""What the command line's two pictures share: the file types they are written as, and
axes in binary byte units. matplotlib is imported when an axis is drawn."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["PLOT_SUFFIXES", "binary_axis", "binary_tick_step"]

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def binary_tick_step(top: float) -> int:
    """A power of two giving 4 to 8 ticks from 0 to ``top`` bytes (16 KiB, 32 KiB, ...)."""
    if top <= 4:
        return 1
    return 1 << math.floor(math.log2(top / 4))


_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10), ("B", 1))


def binary_axis(axis: Any, top: float) -> None:
    """Ticks of ``axis`` (an x or y Axis) at multiples of a power of two bytes, all in the
    step's unit: 0, 256 MiB, ..., 1280 MiB rather than a mix of MiB and GiB."""
    from matplotlib.ticker import FuncFormatter, MultipleLocator

    step = binary_tick_step(top)
    unit, scale = next((unit, scale) for unit, scale in _UNITS if step >= scale)
    axis.set_major_locator(MultipleLocator(step))
    axis.set_major_formatter(FuncFormatter(lambda value, _: f"{round(value) // scale:,} {unit}"))
