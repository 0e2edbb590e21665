"""What ``size`` finds (:class:`Sizing`: one :class:`MemorySizing` per memory sized, its
curve of :class:`CurvePoint`), below ``workflow/size.py``, which finds it, and ``io/sizes.py``,
which writes it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._types import Budget, Objective
from .hierarchy import Hierarchy, Memory
from .inputs import Input, StateBuffer

__all__ = ["CURVE_ENDS", "CurvePoint", "MemorySizing", "SharedSizing", "Sizing"]


@dataclass(frozen=True)
class CurvePoint:
    """From ``capacity`` bytes of memory 1 up to the next point's (or ``all_fit_from``),
    a plan keeps ``kept`` there (bytes summed over the run, or traffic), and no plan keeps
    more than ``kept_bound`` (None: no bound, for a model whose planner is called more
    than once)."""

    capacity: int
    kept: int
    kept_bound: int | None

    @property
    def proved(self) -> bool:
        return self.kept == self.kept_bound


# Why a curve stops where it does.
CURVE_ENDS = ("complete", "points", "no plan", "one memory")


@dataclass(frozen=True)
class MemorySizing:
    """One memory sized: ``all_fit_from`` (every tensor allowed there fits from this size
    up), ``lower_bound`` (no smaller size holds them all), ``proved`` (the two are equal),
    ``total`` (what it keeps from ``all_fit_from`` up: every tensor allowed there, in the
    curve's terms), the ``curve`` below ``all_fit_from`` (largest size first), and why the
    curve ends (``curve_ends``, one of :data:`CURVE_ENDS`): it went down to where memory 1
    keeps nothing ("complete"), to the number of points asked for ("points"), to a size
    where best found no plan that places every tensor ("no plan"), or there is no other
    memory ("one memory"); ``lowest_tried`` is the smallest size planned (None: none)."""

    memory: Memory
    all_fit_from: int
    lower_bound: int
    total: int
    curve: tuple[CurvePoint, ...]
    curve_ends: str
    lowest_tried: int | None

    @property
    def proved(self) -> bool:
        return self.lower_bound >= self.all_fit_from


@dataclass(frozen=True)
class Sizing:
    """What :func:`size_input` found: ``memories`` (the hierarchy it planned in, sized
    memories first), ``objective`` (the curve's terms), ``budget`` (work and cap as given,
    the work defaulted), ``work`` spent in all, ``cut_short`` (the wall-clock cap ended a
    step: the answer may change from run to run), ``seconds`` the time it took;
    ``reorder``: sized in the node order ``reorder=True`` keeps; ``reordered_fits_from``:
    when sized in the given order, what every tensor needs in the reordered one, where that
    is less (else None); ``program``: a model's program as lowered once (an
    ``ExecutorchProgramManager``, for its pools: :mod:`cadence_memplan.device`), None for
    arrays."""

    input: Input
    memories: Hierarchy
    lowering: str | None
    objective: Objective
    sized: tuple[MemorySizing, ...]
    budget: Budget
    work: int
    cut_short: bool
    seconds: float
    reorder: bool = False
    reordered_fits_from: int | None = None
    program: Any = None


@dataclass(frozen=True)
class SharedSizing:
    """A program of several methods sized with its mutable state at one place in every
    method (``workflow/size_shared.py``): memory 1 (``memory``); ``fits_from``, the least
    size of it at which a plan of the whole program was found that keeps there every
    tensor of every method it keeps with room for all of them, the state included;
    ``lower_bound``, below which no plan holds them all, and the method whose tensors give
    it (``bound_by``); the state's buffers in the plan at ``fits_from``; each size planned,
    in order, and whether the program fitted there (``tried``); the seconds it took."""

    memory: Memory
    fits_from: int
    lower_bound: int
    bound_by: str
    state: tuple[StateBuffer, ...]
    tried: tuple[tuple[int, bool], ...]
    seconds: float

    @property
    def proved(self) -> bool:
        return self.lower_bound >= self.fits_from
