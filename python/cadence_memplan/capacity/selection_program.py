"""The selection's program in integers: its input, rows and cuts, and the checks that need
no solver (``capacity/selection.py`` says what the program is and solves it with HiGHS).

:class:`SelectionProgram` holds the tensors that may go to one memory, checked, with what
the rows need: each tensor's size in units of the alignment, the free candidates (no size,
or never alive), the model's columns, and the obstacles' units. It makes the capacity rows
at a capacity (:meth:`~SelectionProgram.rows`: one per segment of time that can bind and
is not implied by a neighbour, cached), keeps the no-good cuts, and meets every row and cut
in integer arithmetic: a greedy choice, the repair of a choice that breaks one, and the
exact weight of a choice. Lifetimes are inclusive ``[start, end]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from .._validation import MAX_BYTE_VALUE, as_int64, is_integer

__all__ = [
    "INT64_MAX",
    "MAX_NONZEROS",
    "BoolArray",
    "IntArray",
    "Rows",
    "SelectionProgram",
    "check_scalar",
    "exact_sum",
]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: The most nonzeros (row entries of the capacity rows and the cuts) a model may have; above
#: it ``CapacitySelection.solve`` returns None. Measured (docs/best.md, "Why HiGHS"): HiGHS needs
#: about 6 s to its first bound on pangu_2.6B's 0.6-0.7 M-nonzero models and overruns short
#: time limits by 2 s there; at 3.1 M nonzeros it proves nothing useful in 30 s, and building
#: the model alone takes 2.7 s.
MAX_NONZEROS = 1_000_000
INT64_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class Rows:
    """The capacity rows at one capacity. The rows are in time order, so each model column
    (a tensor alive over an interval of time) lies in a contiguous run of them:
    ``[first[j], stop[j])`` (empty for a column that never meets a row that can bind)."""

    rhs: IntArray  # free units per row
    first: IntArray  # per model column
    stop: IntArray  # per model column
    units: IntArray  # per model column, 0 for a column fixed at 0 (too big at this capacity)

    @property
    def count(self) -> int:
        return len(self.rhs)

    @property
    def nonzeros(self) -> int:
        return int((self.stop - self.first).sum())

    def loads(self, chosen: BoolArray) -> npt.NDArray[Any]:
        """The exact units the ``chosen`` model columns put in each row."""
        units = self.units[chosen]
        exact: Any = np.int64 if exact_sum(units) <= INT64_MAX // 2 else object
        delta = np.zeros(self.count + 1, dtype=exact)
        np.add.at(delta, self.first[chosen], units.astype(exact))
        np.subtract.at(delta, self.stop[chosen], units.astype(exact))
        return np.cumsum(delta[:-1])


class SelectionProgram:
    """The program of one memory (the module): ``CapacitySelection``'s arguments, checked.
    ValueError or TypeError names the argument that is wrong."""

    def __init__(
        self,
        starts: npt.ArrayLike,
        ends: npt.ArrayLike,
        sizes: npt.ArrayLike,
        weights: npt.ArrayLike,
        candidates: npt.ArrayLike,
        capacity: int,
        alignment: int,
        obstacle_starts: npt.ArrayLike = (),
        obstacle_ends: npt.ArrayLike = (),
        obstacle_sizes: npt.ArrayLike = (),
        obstacle_offsets: npt.ArrayLike = (),
    ) -> None:
        self.starts = as_int64("starts", starts)
        self.ends = as_int64("ends", ends)
        self.sizes = as_int64("sizes", sizes)
        self.weights = as_int64("weights", weights)
        n = len(self.starts)
        for name, array in (("ends", self.ends), ("sizes", self.sizes)):
            if len(array) != n:
                raise ValueError(f"{name} has {len(array)} entries, starts has {n}")
        if len(self.weights) != n:
            raise ValueError(f"weights has {len(self.weights)} entries, starts has {n}")
        mask = np.asarray(candidates)
        if mask.dtype != np.bool_ or mask.shape != (n,):
            raise ValueError(
                f"candidates must be a bool array of length {n}, got"
                f" dtype {mask.dtype} and shape {mask.shape}"
            )
        self.candidates = np.array(mask, dtype=np.bool_)
        check_bytes("sizes", self.sizes)
        check_bytes("weights", self.weights)
        check_times("ends", self.ends)
        self.capacity = check_scalar("capacity", capacity, minimum=0)
        self.alignment = check_scalar("alignment", alignment, minimum=1)

        self.obstacle_starts = as_int64("obstacle_starts", obstacle_starts)
        self.obstacle_ends = as_int64("obstacle_ends", obstacle_ends)
        self.obstacle_sizes = as_int64("obstacle_sizes", obstacle_sizes)
        self.obstacle_offsets = as_int64("obstacle_offsets", obstacle_offsets)
        m = len(self.obstacle_starts)
        for name, array in (
            ("obstacle_ends", self.obstacle_ends),
            ("obstacle_sizes", self.obstacle_sizes),
            ("obstacle_offsets", self.obstacle_offsets),
        ):
            if len(array) != m:
                raise ValueError(f"{name} has {len(array)} entries, obstacle_starts has {m}")
        check_bytes("obstacle_sizes", self.obstacle_sizes)
        check_bytes("obstacle_offsets", self.obstacle_offsets)
        check_times("obstacle_ends", self.obstacle_ends)

        a = self.alignment
        self.units = -(-self.sizes // a)  # ceil; sizes <= 2**62 so no overflow
        alive = self.starts <= self.ends
        # Too big: cannot lie in the memory at all (a tensor with an empty lifetime too: it
        # still gets an offset, as in the exact search). Free: costs nothing at any instant.
        too_big = self.units > self.capacity // a
        self.free = self.candidates & ~too_big & ((self.units == 0) | ~alive)
        #: The candidates the model decides on (its columns, in index order).
        self.columns = np.flatnonzero(self.candidates & ~self.free & ~too_big)
        self.column_of = np.full(n, -1, dtype=np.int64)
        self.column_of[self.columns] = np.arange(len(self.columns))
        self.cuts: list[IntArray] = []
        self.rows_cache: dict[int, Rows | None] = {}

    def model_size(self, capacity: int | None = None) -> tuple[int, int]:
        """``(rows, nonzeros)`` at ``capacity`` (default: the memory's), cuts included."""
        capacity = self.check_capacity(capacity)
        rows, nonzeros = self.row_counts(capacity)
        return rows + len(self.cuts), nonzeros + sum(len(cut) for cut in self.cuts)

    def column_weight(self, chosen: BoolArray) -> int:
        """The exact weight of ``chosen`` model columns."""
        return exact_sum(self.weights[self.columns][chosen])

    def forbid_together(self, indices: npt.ArrayLike) -> None:
        """Add a no-good cut: the tensors ``indices`` (candidate indices into the n tensors)
        are never all chosen together again.

        The caller states that these tensors do not pack into the memory at its own
        capacity; then no superset packs either, at that capacity or any smaller one, so the
        cut keeps :attr:`bound` valid for every plan. Free candidates (zero size, empty
        lifetime) never stop a packing, so they are left out of the cut (which makes it
        stronger); candidates larger than the memory already cannot be chosen, so a cut
        holding one is satisfied and ignored. ValueError for an index out of range, a
        repeated index, a non-candidate, or a set of free tensors only (those always pack).
        """
        chosen = as_int64("indices", indices)
        n = len(self.starts)
        if len(chosen) == 0:
            raise ValueError("forbid_together needs at least one index: the empty set packs")
        if chosen.min() < 0 or chosen.max() >= n:
            bad = int(chosen[(chosen < 0) | (chosen >= n)][0])
            raise ValueError(f"index {bad} is out of range for {n} tensors")
        if len(np.unique(chosen)) != len(chosen):
            raise ValueError("forbid_together got a repeated index")
        if not self.candidates[chosen].all():
            bad = int(chosen[~self.candidates[chosen]][0])
            raise ValueError(f"tensor {bad} is not a candidate for this memory")
        kept = chosen[~self.free[chosen]]
        if len(kept) == 0:
            raise ValueError(
                "forbid_together got only free tensors (zero size or empty lifetime),"
                " which always pack"
            )
        columns = self.column_of[kept]
        if (columns < 0).any():
            return  # holds a tensor larger than the memory: never chosen, cut satisfied
        self.cuts.append(np.sort(columns))

    def free_at(self, capacity: int) -> BoolArray:
        """The free candidates that fit alone at ``capacity`` (all of them at the memory's)."""
        free: BoolArray = np.logical_and(self.free, self.units <= capacity // self.alignment)
        return free

    def check_capacity(self, capacity: int | None) -> int:
        if capacity is None:
            return self.capacity
        capacity = check_scalar("capacity", capacity, minimum=0)
        if capacity > self.capacity:
            raise ValueError(
                f"capacity {capacity} is above the memory's {self.capacity}: the cuts"
                " hold only at the memory's capacity and below"
            )
        return capacity

    def check_start(self, start: npt.ArrayLike) -> BoolArray:
        mask = np.asarray(start)
        if mask.dtype != np.bool_ or mask.shape != self.candidates.shape:
            raise ValueError(
                f"start must be a bool array of length {len(self.candidates)}, got"
                f" dtype {mask.dtype} and shape {mask.shape}"
            )
        return mask

    def weight_of(self, chosen: BoolArray) -> int:
        return exact_sum(self.weights[chosen])

    def segments(
        self, capacity: int
    ) -> tuple[IntArray, npt.NDArray[Any], IntArray, IntArray, IntArray, IntArray]:
        """The time cut at every event: ``(times, load, cap, adds, removes, count)``, one
        entry per segment ``[times[k], times[k+1])`` (the last one runs to infinity):
        the candidates' units alive (``load``, exact), the free units (``cap``), the model
        columns that start at ``times[k]`` (``adds``) and end just before it (``removes``),
        and how many are alive (``count``)."""
        a = self.alignment
        total_units = capacity // a
        cols = self.columns
        # At a smaller capacity, tensors that no longer fit alone stay out of its rows and
        # get an empty column (their x is fixed at 0 in _model).
        cols = cols[self.units[cols] <= total_units]
        col_units = self.units[cols]
        col_starts = self.starts[cols]
        col_stops = self.ends[cols] + 1
        o_alive = self.obstacle_starts <= self.obstacle_ends
        o_first = -(-self.obstacle_offsets // a)  # first unit wholly inside
        o_stop = np.minimum((self.obstacle_offsets + self.obstacle_sizes) // a, total_units)
        o_used = o_alive & (o_first < o_stop)
        o_starts = self.obstacle_starts[o_used]
        o_stops = self.obstacle_ends[o_used] + 1
        o_first, o_stop = o_first[o_used], o_stop[o_used]

        times = np.unique(np.concatenate([col_starts, col_stops, o_starts, o_stops]))
        segments = len(times)
        start_at = np.searchsorted(times, col_starts)
        stop_at = np.searchsorted(times, col_stops)
        adds = np.bincount(start_at, minlength=segments).astype(np.int64)
        removes = np.bincount(stop_at, minlength=segments).astype(np.int64)
        count = np.cumsum(adds - removes)
        # The load is exact: int64 when no sum of units can overflow it, else Python ints.
        exact: type[Any] = (
            np.int64 if exact_sum(col_units) <= INT64_MAX // 2 else np.dtype(object).type
        )
        delta = np.zeros(segments, dtype=exact)
        np.add.at(delta, start_at, col_units.astype(exact))
        np.subtract.at(delta, stop_at, col_units.astype(exact))
        load = np.cumsum(delta)

        blocked = np.zeros(segments, dtype=np.int64)
        if len(o_starts):
            # Union of the obstacles' unit ranges alive at each obstacle event (obstacles may
            # share storage, so their ranges may overlap), held until the next such event.
            event_times = np.unique(np.concatenate([o_starts, o_stops]))
            covered = np.zeros(len(event_times), dtype=np.int64)
            for k, t in enumerate(event_times):
                live = (o_starts <= t) & (t < o_stops)
                covered[k] = union_length(o_first[live], o_stop[live])
            blocked = covered[np.searchsorted(event_times, times, side="right") - 1]
        cap = total_units - blocked
        return times, load, cap, adds, removes, count

    def row_selection(self, capacity: int) -> tuple[IntArray, IntArray, IntArray]:
        """``(row_times, rhs, row_counts)``: the segments that need a row (see the module)."""
        times, load, cap, adds, removes, count = self.segments(capacity)
        segments = len(times)
        if segments == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty
        binding = np.asarray(load > cap, dtype=np.bool_)
        # Implied by the next segment: nothing ends at its start and it has no more room.
        forward = np.zeros(segments, dtype=np.bool_)
        forward[:-1] = (removes[1:] == 0) & (cap[1:] <= cap[:-1])
        # Implied by the previous one: nothing starts here and it had no more room; strictly
        # (something ended, or less room here), so two equal neighbours do not both go.
        backward = np.zeros(segments, dtype=np.bool_)
        backward[1:] = (
            (adds[1:] == 0) & (cap[:-1] <= cap[1:]) & ((removes[1:] > 0) | (cap[:-1] < cap[1:]))
        )
        keep = binding & ~forward & ~backward
        return times[keep], cap[keep], count[keep]

    def row_counts(self, capacity: int) -> tuple[int, int]:
        _, rhs, counts = self.row_selection(capacity)
        return len(rhs), int(counts.sum())

    def rows(self, capacity: int) -> Rows | None:
        """The capacity rows at ``capacity`` (cached), or None above :data:`MAX_NONZEROS`."""
        if capacity in self.rows_cache:
            return self.rows_cache[capacity]
        row_times, rhs, counts = self.row_selection(capacity)
        rows: Rows | None = None
        if int(counts.sum()) <= MAX_NONZEROS:
            cols = self.columns
            units = np.where(self.units[cols] <= capacity // self.alignment, self.units[cols], 0)
            first = np.searchsorted(row_times, self.starts[cols], side="left")
            stop = np.searchsorted(row_times, self.ends[cols], side="right")
            stop = np.where(units > 0, stop, first)
            rows = Rows(rhs=rhs, first=first, stop=stop, units=units)
        self.rows_cache[capacity] = rows
        return rows

    def violated(self, chosen: BoolArray, rows: Rows) -> IntArray | None:
        """The model columns of one row or cut that ``chosen`` breaks, or None."""
        over = np.flatnonzero(rows.loads(chosen) > rows.rhs)
        if len(over):
            row = int(over[0])
            return np.flatnonzero(chosen & (rows.first <= row) & (row < rows.stop))
        if (chosen & (rows.units == 0) & (self.units[self.columns] > 0)).any():
            return np.flatnonzero(chosen & (rows.units == 0) & (self.units[self.columns] > 0))
        for cut in self.cuts:
            if chosen[cut].all():
                return cut
        return None

    def repair(self, chosen: BoolArray, rows: Rows) -> BoolArray:
        """``chosen`` (model columns) with every row and cut met in integer arithmetic: while
        one is not (by HiGHS's feasibility tolerance, if at all, or a start that breaks it),
        drop its lightest tensor per unit. Dropping only removes, so what was met stays met."""
        chosen = chosen.copy()
        weights = self.weights[self.columns]
        units = self.units[self.columns]
        while (members := self.violated(chosen, rows)) is not None:
            density = weights[members] / np.maximum(units[members], 1)
            chosen[members[int(np.argmin(density))]] = False
        return chosen

    def greedy(self, rows: Rows) -> BoolArray:
        """A choice that meets every row and cut: the columns by weight per unit, heaviest
        first, each kept when it fits in all its rows and completes no cut."""
        count = len(self.columns)
        chosen = np.zeros(count, dtype=np.bool_)
        weights = self.weights[self.columns].astype(np.float64)
        units = rows.units
        order = np.lexsort((-weights, -weights / np.maximum(units, 1)))
        room = rows.rhs.copy()
        cuts_of: dict[int, list[int]] = {}
        for k, cut in enumerate(self.cuts):
            for column in cut.tolist():
                cuts_of.setdefault(column, []).append(k)
        missing = [len(cut) for cut in self.cuts]
        fixed = self.units[self.columns] > units  # too big at this capacity: stays at 0
        first, stop = rows.first, rows.stop
        for j in order.tolist():
            if fixed[j]:
                continue
            lo, hi = int(first[j]), int(stop[j])
            if hi > lo and int(room[lo:hi].min()) < int(units[j]):
                continue
            if any(missing[k] == 1 for k in cuts_of.get(j, ())):
                continue
            chosen[j] = True
            room[lo:hi] -= units[j]
            for k in cuts_of.get(j, ()):
                missing[k] -= 1
        return chosen


# -- helpers ----------------------------------------------------------------------------


def check_bytes(name: str, values: IntArray) -> None:
    if len(values) and (values.min() < 0 or values.max() > MAX_BYTE_VALUE):
        bad = int(np.flatnonzero((values < 0) | (values > MAX_BYTE_VALUE))[0])
        raise ValueError(f"{name}[{bad}] = {values[bad]} is not in [0, 2**62]")


def check_times(name: str, ends: IntArray) -> None:
    if len(ends) and ends.max() == INT64_MAX:
        raise ValueError(f"{name} must be below 2**63 - 1 (one past the end must fit)")


def check_scalar(name: str, value: object, *, minimum: int) -> int:
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    number = int(cast(int, value))  # an Integral: a Python or numpy integer
    if not minimum <= number <= MAX_BYTE_VALUE:
        raise ValueError(f"{name} = {number} is not in [{minimum}, 2**62]")
    return number


def exact_sum(values: npt.NDArray[Any]) -> int:
    """The exact sum of non-negative integers below 2**62 (int64 while it cannot overflow)."""
    if len(values) == 0:
        return 0
    if len(values) * int(values.max()) <= INT64_MAX:
        return int(values.sum(dtype=np.int64))
    return int(sum(int(v) for v in values.tolist()))


def union_length(first: IntArray, stop: IntArray) -> int:
    """How many units the ranges ``[first[i], stop[i])`` cover together."""
    if len(first) == 0:
        return 0
    order = np.argsort(first, kind="stable")
    first, stop = first[order], stop[order]
    reach = np.maximum.accumulate(stop)
    begin = first.copy()
    begin[1:] = np.maximum(first[1:], reach[:-1])
    return int(np.maximum(stop - begin, 0).sum())
