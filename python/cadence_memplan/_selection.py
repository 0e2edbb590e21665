"""Which tensors to keep in one memory of capacity C: the most weight, with a proved bound.

This is the selection step of capacity-first planning (``_capacity.py``). Given the
tensors that may go to one memory (``candidates``), their inclusive lifetimes
``[start, end]``, sizes and integer weights (bytes by default, or traffic),
:class:`CapacitySelection` chooses the ones to keep by an integer program solved with
HiGHS (``highspy``, a declared dependency, imported only when a solve needs it):

    maximise    sum_i w_i x_i                        x_i in {0, 1}, one per candidate
    subject to  sum_{i alive at t} units_i x_i <= floor(C / a) - blocked(t)   for every t

where ``a`` is the memory's alignment, ``units_i = ceil(size_i / a)`` (a tensor at offset
``k a`` blocks the units ``[k, k + units_i)`` and must end by ``C``), and ``blocked(t)``
counts the units ``[k a, (k + 1) a)`` below ``floor(C / a) a`` that lie wholly inside an
obstacle (a tensor already in the memory, at a fixed offset) alive at ``t``. Every valid
plan keeps a set that satisfies every row (the chosen tensors alive at ``t`` occupy
disjoint unit ranges of the free units), so the program's optimum is an **upper bound** on
what any plan keeps; it ignores fragmentation, so the chosen set need not pack. When it
does not, :meth:`CapacitySelection.forbid_together` cuts it off (a no-good: any superset of
a set that does not pack does not pack either) and the next :meth:`~CapacitySelection.solve`
returns another choice and a bound that is still valid for every plan.

Rows. Between two consecutive event times (a candidate's start or end + 1, an obstacle's
start or end + 1) the row is the same, so only those segments need rows; a segment whose
alive set is contained in a neighbour's with no more room (a start with no end after it, or
an end with no start after it) is implied by that neighbour and dropped, and so is every
segment whose candidates fit together anyway. Without obstacles the rows left are the
maximal cliques of the interval graph that can bind: at most n.

Exactness. HiGHS works in doubles. The weights go in divided by their greatest common
divisor ``g``; while the sum of the divided weights is below 2**52 every objective value is
an integer that a double holds exactly, HiGHS runs with ``mip_rel_gap = 0`` and an absolute
gap below 1, and the bound is ``g * floor(D + tau)`` for HiGHS's dual bound ``D``, clamped
to at least the value of the choice. ``tau`` (at most 0.005, see :func:`_integer_bound`)
only absorbs the rounding of ``D`` itself; the bound is otherwise as proved as HiGHS's
floating-point branch and bound (its LP tolerances are trusted, as with any
floating-point MIP solver), and the tests check it against brute force. Above 2**52, the
weights are further divided by a power of two ``2**k`` and rounded **up**, so the bound
stays valid but may be loose by up to ``g * 2**k`` per chosen tensor: the value of a choice
is always exact (Python integers), only the bound loses precision. The choice HiGHS returns
is rounded to 0/1, checked against every row and cut in integer arithmetic and, should a
row be over by HiGHS's feasibility tolerance, repaired by dropping tensors.

Size guard. A model with more than :data:`MAX_NONZEROS` nonzeros is not built:
:meth:`~CapacitySelection.solve` returns None and the caller falls back to its own way.

Work, not time. A solve is limited in units of work (those of ``best``'s ``work_budget``:
docs/best.md, "Budget, threads, determinism"), counted from what HiGHS reports, never read
off a clock: building a model costs one unit per :data:`NONZEROS_PER_WORK` nonzeros, and
each of HiGHS's interrupt callbacks :data:`WORK_PER_REPORT` plus :data:`WORK_PER_NODE` per
branch and bound node since the last (measured, in CPU time: 3 to 25 ms between two
reports at its root and 0.1 to 3 ms a node, on models of 1,600 to 50,000 nonzeros, with
no trend in their size). HiGHS runs on one thread with its fixed random seed, and its reports come at
the same points of the same search on every run, so a solve stopped by work is the same
whatever the machine's load (a wall-clock cap, when one is given, is the exception). A
SIGINT during a solve stops it at HiGHS's next report and is raised when it returns.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from ._signals import sigint_deferred
from ._validation import MAX_BYTE_VALUE, as_int64, is_integer

if TYPE_CHECKING:
    import highspy

__all__ = ["MAX_NONZEROS", "CapacitySelection", "Selection"]

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

#: The most nonzeros (row entries of the capacity rows and the cuts) a model may have; above
#: it :meth:`CapacitySelection.solve` returns None. Measured (docs/quality.md): HiGHS needs
#: about 6 s to its first bound on pangu_2.6B's 0.6-0.7 M-nonzero models and overruns short
#: time limits by 2 s there; at 3.1 M nonzeros it proves nothing useful in 30 s, and building
#: the model alone takes 2.7 s.
MAX_NONZEROS = 1_000_000

# HiGHS stops when its dual bound is within this of the best choice, in units of the scaled
# (integer) objective: below 1, so floor(dual bound + tau) is then the choice's value.
_MIP_ABS_GAP = 0.99
# Scaled weights sum to less than this, so every objective value is an exact double.
_EXACT_DOUBLE_SUM = 1 << 52
_INT64_MAX = (1 << 63) - 1
# Up to this many nonzeros, HiGHS keeps its presolve and feasibility jump (see _model).
_SMALL_MODEL_NONZEROS = 20_000

#: Work (``best``'s units, about 15 µs each): the nonzeros of a model built per unit, and
#: the units per interrupt callback and per branch and bound node of HiGHS (the module's
#: "Work, not time"; docs/best.md, "Budget, threads, determinism").
NONZEROS_PER_WORK = 16
WORK_PER_REPORT = 500
WORK_PER_NODE = 50

_banner_lock = threading.Lock()
_banner_silenced = False


@dataclass(frozen=True)
class Selection:
    """One solve's choice and its bound.

    ``chosen[i]`` is True for the candidates to keep in the memory (never for a
    non-candidate). ``value`` is the exact sum of their weights. ``bound`` is proved: no
    choice that satisfies the program at ``capacity`` (and the cuts made so far) has more
    weight, hence no valid plan of the memory at ``capacity`` keeps more (``bound >= value``).
    ``capacity`` is the capacity the program was solved for: the memory's own, or the smaller
    one passed to :meth:`CapacitySelection.solve`, for which ``bound`` says nothing about
    the memory (see :attr:`CapacitySelection.bound`). ``solver_called`` is False when the
    answer needed no solver (everything fits, or nothing can bind); ``seconds`` is the wall
    time of the solve, building the model included, and ``work`` what it was charged (the
    module's "Work, not time"); ``cut_short`` is True when the wall-clock cap stopped it.
    """

    chosen: BoolArray
    value: int
    bound: int
    capacity: int
    solver_called: bool
    seconds: float
    work: int = 0
    cut_short: bool = False

    @property
    def optimal(self) -> bool:
        """True when no choice at ``capacity`` has more weight: ``value == bound``."""
        return self.value == self.bound


@dataclass(frozen=True)
class _Rows:
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
        exact: Any = np.int64 if _exact_sum(units) <= _INT64_MAX // 2 else object
        delta = np.zeros(self.count + 1, dtype=exact)
        np.add.at(delta, self.first[chosen], units.astype(exact))
        np.subtract.at(delta, self.stop[chosen], units.astype(exact))
        return np.cumsum(delta[:-1])


@dataclass
class _Model:
    """A HiGHS model at one capacity, how many of the cuts it holds, and the limits and the
    work of the solve under way (the module's "Work, not time")."""

    highs: highspy.Highs
    cuts_applied: int
    work_limit: int = 0
    deadline: float = math.inf  # time.perf_counter(); inf: no cap.
    interrupted: Callable[[], bool] = lambda: False
    reports: int = 0
    nodes: int = 0
    cut_short: bool = False

    def start(self, work_limit: int, deadline: float, interrupted: Callable[[], bool]) -> None:
        self.work_limit, self.deadline, self.interrupted = work_limit, deadline, interrupted
        self.reports = self.nodes = 0
        self.cut_short = False

    @property
    def work(self) -> int:
        return self.reports * WORK_PER_REPORT + self.nodes * WORK_PER_NODE

    def on_report(self, event: highspy.highs.HighsCallbackEvent) -> None:
        """HiGHS's interrupt callbacks (simplex, IPM, MIP): count the work, and stop once it
        reaches the limit, the cap passed or a SIGINT arrived. HiGHS's own ``time_limit``
        is checked too seldom on large models (its root cut loop ran 24 s past a 20 s limit
        on pangu_2.6B at 256 KiB); these callbacks are not."""
        self.reports += 1
        self.nodes = max(self.nodes, int(event.data_out.mip_node_count))
        if self.work >= self.work_limit or self.interrupted():
            event.interrupt()
        elif self.deadline != math.inf and time.perf_counter() > self.deadline:
            self.cut_short = True
            event.interrupt()


class CapacitySelection:
    """Choose the candidates to keep in one memory of ``capacity`` bytes (see the module).

    ``starts, ends, sizes, weights`` are per tensor (length n, integers; lifetimes
    inclusive, ``start > end`` is an empty lifetime); ``candidates`` (bool, length n) marks
    the tensors that may go to the memory, the others are ignored. Weights must be >= 0;
    pass the sizes to keep the most bytes. ``obstacle_*`` describe the tensors already in
    the memory: inclusive lifetimes, sizes and fixed byte offsets. Zero-size candidates and
    candidates with empty lifetimes cost nothing and are always chosen; candidates larger
    than the memory (``ceil(size / a) > floor(capacity / a)``, empty lifetime or not: the
    exact search still gives those an offset) are never chosen.

    Call :meth:`solve`, then :meth:`forbid_together` on a choice that does not pack and
    :meth:`solve` again. Not thread-safe: one solve at a time per instance.
    """

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
        self._starts = as_int64("starts", starts)
        self._ends = as_int64("ends", ends)
        self._sizes = as_int64("sizes", sizes)
        self._weights = as_int64("weights", weights)
        n = len(self._starts)
        for name, array in (("ends", self._ends), ("sizes", self._sizes)):
            if len(array) != n:
                raise ValueError(f"{name} has {len(array)} entries, starts has {n}")
        if len(self._weights) != n:
            raise ValueError(f"weights has {len(self._weights)} entries, starts has {n}")
        mask = np.asarray(candidates)
        if mask.dtype != np.bool_ or mask.shape != (n,):
            raise ValueError(
                f"candidates must be a bool array of length {n}, got"
                f" dtype {mask.dtype} and shape {mask.shape}"
            )
        self._candidates = np.array(mask, dtype=np.bool_)
        _check_bytes("sizes", self._sizes)
        _check_bytes("weights", self._weights)
        _check_times("ends", self._ends)
        self._capacity = _check_scalar("capacity", capacity, minimum=0)
        self._alignment = _check_scalar("alignment", alignment, minimum=1)

        self._obstacle_starts = as_int64("obstacle_starts", obstacle_starts)
        self._obstacle_ends = as_int64("obstacle_ends", obstacle_ends)
        self._obstacle_sizes = as_int64("obstacle_sizes", obstacle_sizes)
        self._obstacle_offsets = as_int64("obstacle_offsets", obstacle_offsets)
        m = len(self._obstacle_starts)
        for name, array in (
            ("obstacle_ends", self._obstacle_ends),
            ("obstacle_sizes", self._obstacle_sizes),
            ("obstacle_offsets", self._obstacle_offsets),
        ):
            if len(array) != m:
                raise ValueError(f"{name} has {len(array)} entries, obstacle_starts has {m}")
        _check_bytes("obstacle_sizes", self._obstacle_sizes)
        _check_bytes("obstacle_offsets", self._obstacle_offsets)
        _check_times("obstacle_ends", self._obstacle_ends)

        a = self._alignment
        self._units = -(-self._sizes // a)  # ceil; sizes <= 2**62 so no overflow
        alive = self._starts <= self._ends
        # Too big: cannot lie in the memory at all (a tensor with an empty lifetime too: it
        # still gets an offset, as in the exact search). Free: costs nothing at any instant.
        too_big = self._units > self._capacity // a
        self._free = self._candidates & ~too_big & ((self._units == 0) | ~alive)
        #: The candidates the model decides on (its columns, in index order).
        self._columns = np.flatnonzero(self._candidates & ~self._free & ~too_big)
        self._column_of = np.full(n, -1, dtype=np.int64)
        self._column_of[self._columns] = np.arange(len(self._columns))
        self._cuts: list[IntArray] = []
        self._models: dict[int, _Model] = {}
        self._rows_cache: dict[int, _Rows | None] = {}
        self._bound: int | None = None

    # -- what the caller reads -------------------------------------------------------

    @property
    def capacity(self) -> int:
        """The memory's capacity in bytes, as given."""
        return self._capacity

    @property
    def bound(self) -> int | None:
        """The best proved bound at the memory's own capacity so far (None before the first
        solve at it): no valid plan keeps more weight in the memory. Cuts only remove choices
        that do not pack, so later bounds are valid too; this is their minimum."""
        return self._bound

    @property
    def cut_count(self) -> int:
        """How many :meth:`forbid_together` cuts the program holds."""
        return len(self._cuts)

    def model_size(self, capacity: int | None = None) -> tuple[int, int]:
        """``(rows, nonzeros)`` of the program at ``capacity`` (default: the memory's),
        cuts included, without building the HiGHS model. Nonzeros above
        :data:`MAX_NONZEROS` mean :meth:`solve` returns None."""
        capacity = self._check_capacity(capacity)
        rows, nonzeros = self._row_counts(capacity)
        return rows + len(self._cuts), nonzeros + sum(len(cut) for cut in self._cuts)

    # -- the cuts ---------------------------------------------------------------------

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
        n = len(self._starts)
        if len(chosen) == 0:
            raise ValueError("forbid_together needs at least one index: the empty set packs")
        if chosen.min() < 0 or chosen.max() >= n:
            bad = int(chosen[(chosen < 0) | (chosen >= n)][0])
            raise ValueError(f"index {bad} is out of range for {n} tensors")
        if len(np.unique(chosen)) != len(chosen):
            raise ValueError("forbid_together got a repeated index")
        if not self._candidates[chosen].all():
            bad = int(chosen[~self._candidates[chosen]][0])
            raise ValueError(f"tensor {bad} is not a candidate for this memory")
        kept = chosen[~self._free[chosen]]
        if len(kept) == 0:
            raise ValueError(
                "forbid_together got only free tensors (zero size or empty lifetime),"
                " which always pack"
            )
        columns = self._column_of[kept]
        if (columns < 0).any():
            return  # holds a tensor larger than the memory: never chosen, cut satisfied
        self._cuts.append(np.sort(columns))

    # -- solving ----------------------------------------------------------------------

    def solve(
        self,
        work_limit: int,
        *,
        time_limit_s: float = math.inf,
        capacity: int | None = None,
        start: npt.ArrayLike | None = None,
        rel_gap: float = 0.0,
    ) -> Selection | None:
        """Choose the tensors to keep, within about ``work_limit`` units of work (the
        module's "Work, not time"; building a model counts), and ``time_limit_s`` seconds of
        wall time when a cap is given (the default: none).

        ``capacity`` (default: the memory's) may be smaller than the memory's, for a choice
        with slack that packs more easily; the returned ``bound`` is then the bound at that
        capacity and :attr:`bound` is not updated. ``start`` (bool per tensor) is a choice to
        start from, such as the best packed one so far; it is repaired if it breaks a row or
        a cut (tensors dropped). ``rel_gap`` lets HiGHS stop once ``bound - value <=
        rel_gap * bound`` (0, the default: only when ``value == bound``); G_1's bytes, for
        one, need minutes to close the last few hundred bytes of 3.46 GB.

        Returns None, without calling the solver, when the model would have more than
        :data:`MAX_NONZEROS` nonzeros. Otherwise a choice that meets every row and cut: the
        best of HiGHS's, a greedy one (weight per unit, heaviest first) and ``start``. When
        the work runs out first, ``bound`` is the best HiGHS proved, or the sum of the
        candidates' weights if it did not finish its root LP. Without cuts, when no instant
        can be over the capacity, every candidate is chosen and no solver is called.
        Raises ImportError when highspy is missing (only if a solver is needed) and
        RuntimeError when HiGHS reports an error.
        """
        began = time.perf_counter()
        limit = _check_time_limit(time_limit_s)
        work_limit = _check_scalar("work_limit", work_limit, minimum=0)
        capacity = self._check_capacity(capacity)
        start_mask = None if start is None else self._check_start(start)
        if not 0.0 <= rel_gap < 1.0:
            raise ValueError(f"rel_gap must be in [0, 1), got {rel_gap!r}")
        rows = self._rows(capacity)
        if rows is None:
            return None
        if rows.nonzeros + sum(len(cut) for cut in self._cuts) > MAX_NONZEROS:  # cuts, too
            return None
        if rows.count == 0 and not self._cuts:
            # Nothing can bind: every candidate that fits alone is kept, and that is optimal.
            chosen = np.zeros(len(self._starts), dtype=np.bool_)
            chosen[self._free_at(capacity)] = True
            chosen[self._columns[rows.units > 0]] = True
            value = self._weight_of(chosen)
            return self._finish(chosen, value, value, capacity, False, began)

        # An incumbent before the solver: the better of the caller's start (repaired) and a
        # greedy choice. HiGHS starts from it, and it is the answer if HiGHS finds nothing.
        incumbent = self._greedy(rows)
        if start_mask is not None:
            given = self._repair(start_mask[self._columns], rows)
            if self._column_weight(given) > self._column_weight(incumbent):
                incumbent = given

        import highspy as hs

        scale, scaled = _scaled_weights(self._weights[self._columns])
        built = capacity not in self._models
        model = self._model(capacity, rows, scaled)
        build_work = rows.nonzeros // NONZEROS_PER_WORK if built else 0
        self._apply_cuts(model)
        highs = model.highs
        _set_option(highs, "mip_rel_gap", rel_gap)
        solution = hs.HighsSolution()
        solution.col_value = incumbent.astype(np.float64)
        solution.value_valid = True
        _check_status(highs.setSolution(solution), "setSolution")
        with sigint_deferred() as interrupted:
            model.start(max(0, work_limit - build_work), began + limit, interrupted)
            _run(highs)
        info = highs.getInfo()
        if info.primal_solution_status == hs.SolutionStatus.kSolutionStatusFeasible:
            found = np.asarray(highs.getSolution().col_value, dtype=np.float64) > 0.5
            found = self._repair(found, rows)
            if self._column_weight(found) >= self._column_weight(incumbent):
                incumbent = found
        chosen = np.zeros(len(self._starts), dtype=np.bool_)
        chosen[self._free_at(capacity)] = True
        chosen[self._columns[incumbent]] = True
        value = self._weight_of(chosen)

        total = self._weight_of(self._candidates)
        dual = float(info.mip_dual_bound)
        bound = total
        if math.isfinite(dual):
            bound = self._weight_of(self._free_at(capacity)) + scale * _integer_bound(dual)
        bound = max(value, min(bound, total))
        return self._finish(
            chosen, value, bound, capacity, True, began, build_work + model.work, model.cut_short
        )

    def _column_weight(self, chosen: BoolArray) -> int:
        return _exact_sum(self._weights[self._columns][chosen])

    # -- internals --------------------------------------------------------------------

    def _finish(
        self,
        chosen: BoolArray,
        value: int,
        bound: int,
        capacity: int,
        solver_called: bool,
        began: float,
        work: int = 0,
        cut_short: bool = False,
    ) -> Selection:
        if capacity == self._capacity:
            self._bound = bound if self._bound is None else min(self._bound, bound)
        chosen.setflags(write=False)
        return Selection(
            chosen=chosen,
            value=value,
            bound=bound,
            capacity=capacity,
            solver_called=solver_called,
            seconds=time.perf_counter() - began,
            work=work,
            cut_short=cut_short,
        )

    def _free_at(self, capacity: int) -> BoolArray:
        """The free candidates that fit alone at ``capacity`` (all of them at the memory's)."""
        free: BoolArray = np.logical_and(self._free, self._units <= capacity // self._alignment)
        return free

    def _check_capacity(self, capacity: int | None) -> int:
        if capacity is None:
            return self._capacity
        capacity = _check_scalar("capacity", capacity, minimum=0)
        if capacity > self._capacity:
            raise ValueError(
                f"capacity {capacity} is above the memory's {self._capacity}: the cuts"
                " hold only at the memory's capacity and below"
            )
        return capacity

    def _check_start(self, start: npt.ArrayLike) -> BoolArray:
        mask = np.asarray(start)
        if mask.dtype != np.bool_ or mask.shape != self._candidates.shape:
            raise ValueError(
                f"start must be a bool array of length {len(self._candidates)}, got"
                f" dtype {mask.dtype} and shape {mask.shape}"
            )
        return mask

    def _weight_of(self, chosen: BoolArray) -> int:
        return _exact_sum(self._weights[chosen])

    def _segments(
        self, capacity: int
    ) -> tuple[IntArray, npt.NDArray[Any], IntArray, IntArray, IntArray, IntArray]:
        """The time cut at every event: ``(times, load, cap, adds, removes, count)``, one
        entry per segment ``[times[k], times[k+1])`` (the last one runs to infinity):
        the candidates' units alive (``load``, exact), the free units (``cap``), the model
        columns that start at ``times[k]`` (``adds``) and end just before it (``removes``),
        and how many are alive (``count``)."""
        a = self._alignment
        total_units = capacity // a
        cols = self._columns
        # At a smaller capacity, tensors that no longer fit alone stay out of its rows and
        # get an empty column (their x is fixed at 0 in _model).
        cols = cols[self._units[cols] <= total_units]
        col_units = self._units[cols]
        col_starts = self._starts[cols]
        col_stops = self._ends[cols] + 1
        o_alive = self._obstacle_starts <= self._obstacle_ends
        o_first = -(-self._obstacle_offsets // a)  # first unit wholly inside
        o_stop = np.minimum((self._obstacle_offsets + self._obstacle_sizes) // a, total_units)
        o_used = o_alive & (o_first < o_stop)
        o_starts = self._obstacle_starts[o_used]
        o_stops = self._obstacle_ends[o_used] + 1
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
            np.int64 if _exact_sum(col_units) <= _INT64_MAX // 2 else np.dtype(object).type
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
                covered[k] = _union_length(o_first[live], o_stop[live])
            blocked = covered[np.searchsorted(event_times, times, side="right") - 1]
        cap = total_units - blocked
        return times, load, cap, adds, removes, count

    def _row_selection(self, capacity: int) -> tuple[IntArray, IntArray, IntArray]:
        """``(row_times, rhs, row_counts)``: the segments that need a row (see the module)."""
        times, load, cap, adds, removes, count = self._segments(capacity)
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

    def _row_counts(self, capacity: int) -> tuple[int, int]:
        _, rhs, counts = self._row_selection(capacity)
        return len(rhs), int(counts.sum())

    def _rows(self, capacity: int) -> _Rows | None:
        """The capacity rows at ``capacity`` (cached), or None above :data:`MAX_NONZEROS`."""
        if capacity in self._rows_cache:
            return self._rows_cache[capacity]
        row_times, rhs, counts = self._row_selection(capacity)
        rows: _Rows | None = None
        if int(counts.sum()) <= MAX_NONZEROS:
            cols = self._columns
            units = np.where(self._units[cols] <= capacity // self._alignment, self._units[cols], 0)
            first = np.searchsorted(row_times, self._starts[cols], side="left")
            stop = np.searchsorted(row_times, self._ends[cols], side="right")
            stop = np.where(units > 0, stop, first)
            rows = _Rows(rhs=rhs, first=first, stop=stop, units=units)
        self._rows_cache[capacity] = rows
        return rows

    def _model(self, capacity: int, rows: _Rows, scaled: npt.NDArray[np.float64]) -> _Model:
        """The HiGHS model at ``capacity``, built on first use and kept for the next solves."""
        model = self._models.get(capacity)
        if model is not None:
            return model
        import highspy as hs

        cols = self._columns
        fits = rows.units > 0
        per_column = rows.stop - rows.first
        col_starts = np.zeros(len(cols) + 1, dtype=np.int64)
        np.cumsum(per_column, out=col_starts[1:])
        # Column j's entries are the rows first[j], first[j] + 1, ..., stop[j] - 1.
        row_index = np.repeat(rows.first - col_starts[:-1], per_column) + np.arange(
            int(col_starts[-1]), dtype=np.int64
        )
        lp = hs.HighsLp()
        lp.num_col_ = len(cols)
        lp.num_row_ = rows.count
        lp.sense_ = hs.ObjSense.kMaximize
        lp.col_cost_ = scaled
        lp.col_lower_ = np.zeros(len(cols))
        lp.col_upper_ = fits.astype(np.float64)
        lp.row_lower_ = np.full(rows.count, -hs.kHighsInf)
        lp.row_upper_ = rows.rhs.astype(np.float64)
        lp.a_matrix_.format_ = hs.MatrixFormat.kColwise
        lp.a_matrix_.num_col_ = len(cols)
        lp.a_matrix_.num_row_ = rows.count
        lp.a_matrix_.start_ = col_starts.astype(np.int32)
        lp.a_matrix_.index_ = row_index.astype(np.int32)
        lp.a_matrix_.value_ = np.repeat(rows.units, per_column).astype(np.float64)
        lp.integrality_ = [hs.HighsVarType.kInteger] * len(cols)
        highs = _new_highs()
        _set_option(highs, "output_flag", False)
        # One thread: HiGHS's search depends on its thread count (measured: a solve stopped
        # at its 150th report differs between 1, 2 and 4 threads), and its default is half
        # the machine's cores. Its random seed stays the fixed default.
        _set_option(highs, "threads", 1)
        _set_option(highs, "mip_abs_gap", _MIP_ABS_GAP)
        # Measured on the challenging instances and the real graphs (docs/quality.md): presolve
        # and the feasibility-jump heuristic cost seconds on large models (19 s and 15 s on
        # pangu_2.6B at 256 KiB, before the root LP, ignoring the time limit) for little gain;
        # on small ones they find good choices early (F at a quarter of its bound: 87% of
        # the bound in 1.5 s without them), so they stay on there.
        if len(row_index) > _SMALL_MODEL_NONZEROS:
            _set_option(highs, "presolve", "off")
            # HiGHS >= 1.10 only (older releases have no feasibility jump: nothing to turn off).
            highs.setOptionValue("mip_heuristic_run_feasibility_jump", False)
        _check_status(highs.passModel(lp), "passModel")
        model = _Model(highs=highs, cuts_applied=0)
        # highspy's callback events (1.8 and later: the dependency's floor).
        highs.cbSimplexInterrupt.subscribe(model.on_report)
        highs.cbIpmInterrupt.subscribe(model.on_report)
        highs.cbMipInterrupt.subscribe(model.on_report)
        self._models[capacity] = model
        return model

    def _apply_cuts(self, model: _Model) -> None:
        for cut in self._cuts[model.cuts_applied :]:
            _check_status(
                model.highs.addRow(
                    -math.inf,
                    float(len(cut) - 1),
                    len(cut),
                    cut.astype(np.int32),
                    np.ones(len(cut)),
                ),
                "addRow",
            )
        model.cuts_applied = len(self._cuts)

    def _violated(self, chosen: BoolArray, rows: _Rows) -> IntArray | None:
        """The model columns of one row or cut that ``chosen`` breaks, or None."""
        over = np.flatnonzero(rows.loads(chosen) > rows.rhs)
        if len(over):
            row = int(over[0])
            return np.flatnonzero(chosen & (rows.first <= row) & (row < rows.stop))
        if (chosen & (rows.units == 0) & (self._units[self._columns] > 0)).any():
            return np.flatnonzero(chosen & (rows.units == 0) & (self._units[self._columns] > 0))
        for cut in self._cuts:
            if chosen[cut].all():
                return cut
        return None

    def _repair(self, chosen: BoolArray, rows: _Rows) -> BoolArray:
        """``chosen`` (model columns) with every row and cut met in integer arithmetic: while
        one is not (by HiGHS's feasibility tolerance, if at all, or a start that breaks it),
        drop its lightest tensor per unit. Dropping only removes, so what was met stays met."""
        chosen = chosen.copy()
        weights = self._weights[self._columns]
        units = self._units[self._columns]
        while (members := self._violated(chosen, rows)) is not None:
            density = weights[members] / np.maximum(units[members], 1)
            chosen[members[int(np.argmin(density))]] = False
        return chosen

    def _greedy(self, rows: _Rows) -> BoolArray:
        """A choice that meets every row and cut: the columns by weight per unit, heaviest
        first, each kept when it fits in all its rows and completes no cut."""
        count = len(self._columns)
        chosen = np.zeros(count, dtype=np.bool_)
        weights = self._weights[self._columns].astype(np.float64)
        units = rows.units
        order = np.lexsort((-weights, -weights / np.maximum(units, 1)))
        room = rows.rhs.copy()
        cuts_of: dict[int, list[int]] = {}
        for k, cut in enumerate(self._cuts):
            for column in cut.tolist():
                cuts_of.setdefault(column, []).append(k)
        missing = [len(cut) for cut in self._cuts]
        fixed = self._units[self._columns] > units  # too big at this capacity: stays at 0
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


def _check_bytes(name: str, values: IntArray) -> None:
    if len(values) and (values.min() < 0 or values.max() > MAX_BYTE_VALUE):
        bad = int(np.flatnonzero((values < 0) | (values > MAX_BYTE_VALUE))[0])
        raise ValueError(f"{name}[{bad}] = {values[bad]} is not in [0, 2**62]")


def _check_times(name: str, ends: IntArray) -> None:
    if len(ends) and ends.max() == _INT64_MAX:
        raise ValueError(f"{name} must be below 2**63 - 1 (one past the end must fit)")


def _check_scalar(name: str, value: object, *, minimum: int) -> int:
    if not is_integer(value):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    number = int(cast(int, value))  # an Integral: a Python or numpy integer
    if not minimum <= number <= MAX_BYTE_VALUE:
        raise ValueError(f"{name} = {number} is not in [{minimum}, 2**62]")
    return number


def _check_time_limit(time_limit_s: object) -> float:
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float)):
        raise TypeError(f"time_limit_s must be a number, got {time_limit_s!r}")
    limit = float(time_limit_s)
    if not limit >= 0:  # NaN too
        raise ValueError(f"time_limit_s must be >= 0, got {time_limit_s!r}")
    return limit


def _exact_sum(values: npt.NDArray[Any]) -> int:
    """The exact sum of non-negative integers below 2**62 (int64 while it cannot overflow)."""
    if len(values) == 0:
        return 0
    if len(values) * int(values.max()) <= _INT64_MAX:
        return int(values.sum(dtype=np.int64))
    return int(sum(int(v) for v in values.tolist()))


def _scaled_weights(weights: IntArray) -> tuple[int, npt.NDArray[np.float64]]:
    """``(scale, costs)``: integer costs, as doubles, with ``scale * costs[i] >= weights[i]``
    (equal while the costs sum below 2**52: every objective value is then exact)."""
    if len(weights) == 0:
        return 1, np.zeros(0)
    divisor = int(np.gcd.reduce(weights))
    if divisor == 0:
        return 1, np.zeros(len(weights))
    reduced = weights // divisor
    shift = 0
    while _exact_sum(-(-reduced // (1 << shift))) >= _EXACT_DOUBLE_SUM:
        shift += 1
    costs = -(-reduced // (1 << shift))  # rounded up: the bound stays valid
    return divisor << shift, costs.astype(np.float64)


def _integer_bound(dual: float) -> int:
    """The largest integer that ``dual``, HiGHS's bound on the scaled objective, allows.

    ``floor(dual + tau)``: ``tau`` absorbs the rounding of a value that is an integer in exact
    arithmetic (the incumbent's objective, where HiGHS closes the gap with it) but comes
    out a few ulps below it, e.g. 41.999999999999 for 42; without it the floor would cut the
    bound below the optimum. It is 1e-12 relative (thousands of ulps) and at least 1e-6 (the
    order of HiGHS's own tolerances near 0), capped at 0.005 so that, with the absolute gap
    of 0.99 HiGHS stops at, a closed gap still floors to the incumbent.
    """
    tau = min(5e-3, max(1e-6, 1e-12 * abs(dual)))
    return max(0, math.floor(dual + tau))


def _union_length(first: IntArray, stop: IntArray) -> int:
    """How many units the ranges ``[first[i], stop[i])`` cover together."""
    if len(first) == 0:
        return 0
    order = np.argsort(first, kind="stable")
    first, stop = first[order], stop[order]
    reach = np.maximum.accumulate(stop)
    begin = first.copy()
    begin[1:] = np.maximum(first[1:], reach[:-1])
    return int(np.maximum(stop - begin, 0).sum())


def _run(highs: highspy.Highs) -> None:
    """``highs.run()``. HiGHS refuses to run on one thread when another user of highspy in
    the process made its process-wide scheduler with more: the scheduler is then made
    anew, once, and the run tried again."""
    import highspy as hs

    status = highs.run()
    if status == hs.HighsStatus.kError and highs.getModelStatus() == hs.HighsModelStatus.kNotset:
        hs.Highs.resetGlobalScheduler(True)
        status = highs.run()
    _check_status(status, "run")


def _set_option(highs: highspy.Highs, name: str, value: bool | float | str) -> None:
    _check_status(highs.setOptionValue(name, value), f"setOptionValue({name!r})")


def _check_status(status: object, what: str) -> None:
    import highspy as hs

    if status == hs.HighsStatus.kError:
        raise RuntimeError(f"HiGHS {what} failed")


def _new_highs() -> highspy.Highs:
    """A new ``highspy.Highs``. HiGHS prints its banner on the process's first one, before
    any option can turn output off; that first construction runs with the process's stdout
    pointed at /dev/null (POSIX only; elsewhere the banner shows once)."""
    global _banner_silenced
    import highspy as hs

    with _banner_lock:
        if _banner_silenced:
            return hs.Highs()  # type: ignore[no-untyped-call]  # highspy's __init__
        _banner_silenced = True
        with _stdout_silenced():
            return hs.Highs()  # type: ignore[no-untyped-call]  # highspy's __init__


@contextlib.contextmanager
def _stdout_silenced() -> Iterator[None]:
    if os.name != "posix":
        yield
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
    except OSError:
        yield
        return
    fd = 1  # where HiGHS's C++ writes, whatever sys.stdout is
    if sys.stdout is not None:
        sys.stdout.flush()
    libc.fflush(None)
    saved = os.dup(fd)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), fd)
            try:
                yield
            finally:
                libc.fflush(None)
                os.dup2(saved, fd)
    finally:
        os.close(saved)
