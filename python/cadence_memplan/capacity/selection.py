"""Which tensors to keep in one memory of capacity C: the most weight, with a proved bound.

This is the selection step of capacity-first planning (``capacity/capacity_first.py``). Given the
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

Work, not time. A solve is limited in units of work, counted from what HiGHS reports,
never read off a clock; HiGHS runs on one thread, so a solve stopped by work is the same on
every run (``capacity/highs.py`` says what is charged, and how Ctrl-C stops a solve).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from .._signals import sigint_deferred
from .highs import NONZEROS_PER_WORK, HighsModel, apply_cuts, build_model, check_status
from .highs import run as run_highs
from .highs import set_option as set_highs_option
from .selection_program import (
    MAX_NONZEROS,
    BoolArray,
    IntArray,
    SelectionProgram,
    check_scalar,
    exact_sum,
)

__all__ = ["MAX_NONZEROS", "CapacitySelection", "Selection"]

# Scaled weights sum to less than this, so every objective value is an exact double.
_EXACT_DOUBLE_SUM = 1 << 52


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
        self._program = SelectionProgram(
            starts, ends, sizes, weights, candidates, capacity, alignment,
            obstacle_starts, obstacle_ends, obstacle_sizes, obstacle_offsets,
        )  # fmt: skip
        self._models: dict[int, HighsModel] = {}
        self._bound: int | None = None

    # -- what the caller reads -------------------------------------------------------

    @property
    def capacity(self) -> int:
        """The memory's capacity in bytes, as given."""
        return self._program.capacity

    @property
    def bound(self) -> int | None:
        """The best proved bound at the memory's own capacity so far (None before the first
        solve at it): no valid plan keeps more weight in the memory. Cuts only remove choices
        that do not pack, so later bounds are valid too; this is their minimum."""
        return self._bound

    @property
    def cut_count(self) -> int:
        """How many :meth:`forbid_together` cuts the program holds."""
        return len(self._program.cuts)

    def model_size(self, capacity: int | None = None) -> tuple[int, int]:
        """``(rows, nonzeros)`` of the program at ``capacity`` (default: the memory's),
        cuts included, without building the HiGHS model. Nonzeros above
        :data:`MAX_NONZEROS` mean :meth:`solve` returns None."""
        return self._program.model_size(capacity)

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
        self._program.forbid_together(indices)

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
        program = self._program
        limit = _check_time_limit(time_limit_s)
        work_limit = check_scalar("work_limit", work_limit, minimum=0)
        capacity = program.check_capacity(capacity)
        start_mask = None if start is None else program.check_start(start)
        if not 0.0 <= rel_gap < 1.0:
            raise ValueError(f"rel_gap must be in [0, 1), got {rel_gap!r}")
        rows = program.rows(capacity)
        if rows is None:
            return None
        if rows.nonzeros + sum(len(cut) for cut in program.cuts) > MAX_NONZEROS:  # cuts, too
            return None
        if rows.count == 0 and not program.cuts:
            # Nothing can bind: every candidate that fits alone is kept, and that is optimal.
            chosen = np.zeros(len(program.starts), dtype=np.bool_)
            chosen[program.free_at(capacity)] = True
            chosen[program.columns[rows.units > 0]] = True
            value = program.weight_of(chosen)
            return self._finish(chosen, value, value, capacity, False, began)

        # An incumbent before the solver: the better of the caller's start (repaired) and a
        # greedy choice. HiGHS starts from it, and it is the answer if HiGHS finds nothing.
        incumbent = program.greedy(rows)
        if start_mask is not None:
            given = program.repair(start_mask[program.columns], rows)
            if program.column_weight(given) > program.column_weight(incumbent):
                incumbent = given

        import highspy as hs

        scale, scaled = scaled_weights(program.weights[program.columns])
        built = capacity not in self._models
        model = self._models.get(capacity) or build_model(rows, scaled)
        self._models[capacity] = model
        build_work = rows.nonzeros // NONZEROS_PER_WORK if built else 0
        apply_cuts(model, program.cuts)
        highs = model.highs
        set_highs_option(highs, "mip_rel_gap", rel_gap)
        solution = hs.HighsSolution()
        solution.col_value = incumbent.astype(np.float64)
        solution.value_valid = True
        check_status(highs.setSolution(solution), "setSolution")
        with sigint_deferred() as interrupted:
            model.start(max(0, work_limit - build_work), began + limit, interrupted)
            run_highs(highs)
        info = highs.getInfo()
        if info.primal_solution_status == hs.SolutionStatus.kSolutionStatusFeasible:
            found = np.asarray(highs.getSolution().col_value, dtype=np.float64) > 0.5
            found = program.repair(found, rows)
            if program.column_weight(found) >= program.column_weight(incumbent):
                incumbent = found
        chosen = np.zeros(len(program.starts), dtype=np.bool_)
        chosen[program.free_at(capacity)] = True
        chosen[program.columns[incumbent]] = True
        value = program.weight_of(chosen)

        total = program.weight_of(program.candidates)
        dual = float(info.mip_dual_bound)
        bound = total
        if math.isfinite(dual):
            bound = program.weight_of(program.free_at(capacity)) + scale * integer_bound(dual)
        bound = max(value, min(bound, total))
        return self._finish(
            chosen, value, bound, capacity, True, began, build_work + model.work, model.cut_short
        )

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
        if capacity == self._program.capacity:
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


# -- the objective in exact integers ---------------------------------------------------


def _check_time_limit(time_limit_s: object) -> float:
    if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, (int, float)):
        raise TypeError(f"time_limit_s must be a number, got {time_limit_s!r}")
    limit = float(time_limit_s)
    if not limit >= 0:  # NaN too
        raise ValueError(f"time_limit_s must be >= 0, got {time_limit_s!r}")
    return limit


def scaled_weights(weights: IntArray) -> tuple[int, npt.NDArray[np.float64]]:
    """``(scale, costs)``: integer costs, as doubles, with ``scale * costs[i] >= weights[i]``
    (equal while the costs sum below 2**52: every objective value is then exact)."""
    if len(weights) == 0:
        return 1, np.zeros(0)
    divisor = int(np.gcd.reduce(weights))
    if divisor == 0:
        return 1, np.zeros(len(weights))
    reduced = weights // divisor
    shift = 0
    while exact_sum(-(-reduced // (1 << shift))) >= _EXACT_DOUBLE_SUM:
        shift += 1
    costs = -(-reduced // (1 << shift))  # rounded up: the bound stays valid
    return divisor << shift, costs.astype(np.float64)


def integer_bound(dual: float) -> int:
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
