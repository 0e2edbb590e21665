"""cadence_memplan.capacity.selection: which tensors to keep in one memory, with a proved bound.

Each random instance is solved by brute force over every subset of its candidates, with
the capacity checked here per time step from the definition (free units at ``t`` =
``floor(C / a)`` minus the units wholly inside an obstacle alive at ``t``), not through
the module's rows. The module's choice must meet that check, its value must be its
weight, and its bound must be at least the brute-force optimum (equal when it says
optimal, which it must on instances this small).
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cadence_memplan.capacity import selection as _selection
from cadence_memplan.capacity.selection import CapacitySelection, Selection

highspy = pytest.importorskip("highspy")

# Work enough for these small programs to be solved to the end.
WORK_LIMIT = 10**9


@dataclass
class Instance:
    starts: list[int]
    ends: list[int]
    sizes: list[int]
    weights: list[int]
    candidates: list[bool]
    capacity: int
    alignment: int
    obstacles: list[tuple[int, int, int, int]]  # start, end, size, offset

    def selection(self) -> CapacitySelection:
        o = self.obstacles
        return CapacitySelection(
            self.starts,
            self.ends,
            self.sizes,
            self.weights,
            np.array(self.candidates, dtype=bool),
            self.capacity,
            self.alignment,
            obstacle_starts=[x[0] for x in o],
            obstacle_ends=[x[1] for x in o],
            obstacle_sizes=[x[2] for x in o],
            obstacle_offsets=[x[3] for x in o],
        )

    def free(self, i: int) -> bool:
        """Costs nothing at any step (the memory must still hold it alone)."""
        a = self.alignment
        fits_alone = -(-self.sizes[i] // a) <= self.capacity // a
        return fits_alone and (self.sizes[i] == 0 or self.starts[i] > self.ends[i])

    def fits(self, chosen: list[int], capacity: int) -> bool:
        """Every time step's chosen units within the free units, from the definition."""
        a = self.alignment
        total = capacity // a
        times = [t for i in chosen for t in (self.starts[i], self.ends[i])]
        times += [t for s, e, _, _ in self.obstacles for t in (s, e)]
        if not times:
            return True
        for t in range(min(times), max(times) + 1):
            blocked: set[int] = set()
            for start, end, size, offset in self.obstacles:
                if start <= t <= end:
                    blocked.update(
                        k for k in range(total) if k * a >= offset and (k + 1) * a <= offset + size
                    )
            used = sum(
                -(-self.sizes[i] // a) for i in chosen if self.starts[i] <= t <= self.ends[i]
            )
            if used > total - len(blocked):
                return False
        # A tensor alive at no step still has to fit alone (its aligned end within C), as
        # the exact search gives it an offset.
        return all(-(-self.sizes[i] // a) <= total for i in chosen if self.sizes[i] > 0)

    def breaks_cut(self, chosen: list[int], cuts: list[list[int]]) -> bool:
        """The module's documented meaning: free tensors are left out of a cut."""
        return any({i for i in cut if not self.free(i)} <= set(chosen) for cut in cuts)

    def optimum(self, capacity: int, cuts: list[list[int]]) -> int:
        pool = [i for i, c in enumerate(self.candidates) if c]
        best = 0
        for r in range(len(pool) + 1):
            for subset in itertools.combinations(pool, r):
                chosen = list(subset)
                weight = sum(self.weights[i] for i in chosen)
                if (
                    weight > best
                    and self.fits(chosen, capacity)
                    and not self.breaks_cut(chosen, cuts)
                ):
                    best = weight
        return best


@st.composite
def instances(draw: st.DrawFn, *, big_weights: bool = False) -> Instance:
    n = draw(st.integers(0, 9))
    alignment = draw(st.sampled_from([1, 16, 3]))
    unit = draw(st.sampled_from([1, alignment]))
    starts, ends, sizes = [], [], []
    for _ in range(n):
        start = draw(st.integers(0, 7))
        # Mostly real lifetimes, sometimes empty ones (start > end).
        ends.append(start + draw(st.integers(-2, 5)))
        starts.append(start)
        sizes.append(draw(st.sampled_from([0, draw(st.integers(1, 12)) * unit])))
    if big_weights:
        # Sums far beyond 2**53: the weights go to HiGHS divided and rounded up.
        weights = [draw(st.integers(0, 1 << 20)) << 40 | draw(st.integers(0, 999)) for _ in sizes]
    else:
        weights = [draw(st.sampled_from([s, draw(st.integers(0, 1000))])) for s in sizes]
    candidates = [draw(st.booleans()) or draw(st.booleans()) for _ in range(n)]
    capacity = draw(st.integers(0, 40)) * draw(st.sampled_from([1, alignment])) + draw(
        st.integers(0, 2)
    )
    obstacles = []
    for _ in range(draw(st.integers(0, 3))):
        start = draw(st.integers(0, 7))
        obstacles.append(
            (
                start,
                start + draw(st.integers(-1, 4)),
                draw(st.integers(0, 40)),
                draw(st.integers(0, capacity + 4)),
            )
        )
    return Instance(starts, ends, sizes, weights, candidates, capacity, alignment, obstacles)


def check(instance: Instance, result: Selection, capacity: int, cuts: list[list[int]]) -> None:
    chosen = np.flatnonzero(result.chosen).tolist()
    assert result.chosen.dtype == np.bool_
    assert len(result.chosen) == len(instance.sizes)
    assert all(instance.candidates[i] for i in chosen)
    assert result.value == sum(instance.weights[i] for i in chosen)
    assert isinstance(result.value, int)
    assert isinstance(result.bound, int)
    assert instance.fits(chosen, capacity)
    assert not instance.breaks_cut(chosen, cuts)
    # Free candidates are always chosen (when they fit alone at this capacity).
    assert all(
        result.chosen[i]
        for i in range(len(instance.sizes))
        if instance.candidates[i] and instance.free(i) and instance.fits([i], capacity)
    )
    optimum = instance.optimum(capacity, cuts)
    assert result.value <= optimum <= result.bound
    assert result.capacity == capacity
    # Instances this small are solved to optimality well within the work limit.
    assert result.optimal
    assert result.bound == optimum


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_bound_and_choice_match_brute_force(instance: Instance, data: st.DataObject) -> None:
    selection = instance.selection()
    result = selection.solve(WORK_LIMIT)
    assert result is not None
    check(instance, result, instance.capacity, [])
    assert selection.bound == result.bound

    # Cut off the choice (as a caller would when it does not pack) and solve again.
    cuts: list[list[int]] = []
    for _ in range(2):
        cut = [i for i in np.flatnonzero(result.chosen).tolist() if not instance.free(i)]
        if not cut:
            break
        selection.forbid_together(cut)
        cuts.append(cut)
        result = selection.solve(WORK_LIMIT)
        assert result is not None
        assert not set(cut) <= set(np.flatnonzero(result.chosen).tolist())
        check(instance, result, instance.capacity, cuts)
        assert selection.bound == result.bound
    assert selection.cut_count == len(cuts)

    # A smaller capacity: its own bound, the memory's bound untouched.
    smaller = data.draw(st.integers(0, instance.capacity), label="smaller capacity")
    before = selection.bound
    result = selection.solve(WORK_LIMIT, capacity=smaller)
    assert result is not None
    check(instance, result, smaller, cuts)
    assert selection.bound == before


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(big_weights=True))
def test_huge_weights_keep_value_exact_and_bound_valid(instance: Instance) -> None:
    result = instance.selection().solve(WORK_LIMIT)
    assert result is not None
    chosen = np.flatnonzero(result.chosen).tolist()
    assert result.value == sum(instance.weights[i] for i in chosen)
    assert instance.fits(chosen, instance.capacity)
    optimum = instance.optimum(instance.capacity, [])
    assert result.value <= optimum <= result.bound
    if result.optimal:
        assert result.value == optimum


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(), st.data())
def test_a_start_that_breaks_rows_is_repaired(instance: Instance, data: st.DataObject) -> None:
    start = np.array([c and data.draw(st.booleans()) for c in instance.candidates], dtype=bool)
    result = instance.selection().solve(WORK_LIMIT, start=start)
    assert result is not None
    check(instance, result, instance.capacity, [])


def tight_instance() -> Instance:
    # Three tensors alive together, room for two of them.
    return Instance(
        starts=[0, 0, 0, 3],
        ends=[2, 2, 2, 1],
        sizes=[16, 16, 16, 0],
        weights=[5, 4, 3, 7],
        candidates=[True, True, True, True],
        capacity=32,
        alignment=16,
        obstacles=[],
    )


def test_forbid_together_excludes_the_set() -> None:
    instance = tight_instance()
    selection = instance.selection()
    first = selection.solve(WORK_LIMIT)
    assert first is not None
    assert first.chosen.tolist() == [True, True, False, True]
    assert (first.value, first.bound) == (16, 16)
    # The zero-size tensor 3 is left out of the cut: {0, 1} is what is forbidden.
    selection.forbid_together([0, 1, 3])
    second = selection.solve(WORK_LIMIT)
    assert second is not None
    assert second.chosen.tolist() == [True, False, True, True]
    assert (second.value, second.bound) == (15, 15)
    assert selection.bound == 15
    selection.forbid_together([0, 2])
    selection.forbid_together([1, 2])
    third = selection.solve(WORK_LIMIT)
    assert third is not None
    assert third.chosen.tolist() == [True, False, False, True]
    assert (third.value, third.bound) == (12, 12)


def test_obstacle_units_are_taken_from_the_capacity() -> None:
    instance = tight_instance()
    # Bytes [8, 32) cover unit 1 ([16, 32)) wholly, unit 0 only in part: one unit left.
    instance.obstacles = [(1, 1, 24, 8)]
    result = instance.selection().solve(WORK_LIMIT)
    assert result is not None
    assert result.chosen.tolist() == [True, False, False, True]
    assert (result.value, result.bound) == (12, 12)
    # Bytes [8, 30) cover no unit wholly: both units stay free in the program.
    instance.obstacles = [(1, 1, 22, 8)]
    result = instance.selection().solve(WORK_LIMIT)
    assert result is not None
    assert (result.value, result.bound) == (16, 16)


def test_fast_path_calls_no_solver(monkeypatch: pytest.MonkeyPatch) -> None:
    # With highspy unimportable, any solver call would raise ImportError.
    monkeypatch.setitem(sys.modules, "highspy", None)
    instance = tight_instance()
    instance.capacity = 48
    instance.candidates[2] = True
    result = instance.selection().solve(WORK_LIMIT)
    assert result is not None
    assert not result.solver_called
    assert result.chosen.tolist() == [True, True, True, True]
    assert result.value == result.bound == 19
    assert result.optimal
    # Not a candidate: never chosen, and the rest fits.
    instance.capacity = 32
    instance.candidates[2] = False
    result = instance.selection().solve(WORK_LIMIT)
    assert result is not None
    assert not result.solver_called
    assert result.chosen.tolist() == [True, True, False, True]
    # Where a row binds, the solver is needed, and missing.
    instance.candidates[2] = True
    with pytest.raises(ImportError):
        instance.selection().solve(WORK_LIMIT)


def test_too_many_nonzeros_returns_none(monkeypatch: pytest.MonkeyPatch) -> None:
    selection = tight_instance().selection()
    assert selection.model_size() == (1, 3)
    monkeypatch.setattr(_selection, "MAX_NONZEROS", 2)
    assert selection.solve(WORK_LIMIT) is None


def hard_selection() -> CapacitySelection:
    """A program HiGHS does not solve to the end in a few thousand units of work."""
    rng = np.random.default_rng(7)
    n = 400
    starts = rng.integers(0, 300, n)
    ends = starts + rng.integers(0, 40, n)
    sizes = rng.integers(1, 4000, n) * 16
    return CapacitySelection(
        starts, ends, sizes, sizes, np.ones(n, dtype=bool), int(sizes.sum() // 40), 16
    )


def test_work_limit_is_counted_and_deterministic() -> None:
    """A solve stops at the first report past its work limit, and the same limit gives the
    same choice, bound and work (HiGHS on one thread, stopped by work, not time); more work
    never proves less."""
    first = hard_selection().solve(3_000)
    again = hard_selection().solve(3_000)
    more = hard_selection().solve(30_000)
    assert first is not None
    assert again is not None
    assert more is not None
    assert not first.optimal
    assert first.work >= 3_000
    assert not first.cut_short
    assert (first.value, first.bound, first.work) == (again.value, again.bound, again.work)
    assert np.array_equal(first.chosen, again.chosen)
    assert more.work > first.work
    assert more.bound <= first.bound
    assert first.value <= first.bound


def test_wall_clock_cap_says_it_cut_the_solve() -> None:
    """A cap already spent stops the solve at HiGHS's first report, and says so."""
    result = hard_selection().solve(10**9, time_limit_s=0.0)
    assert result is not None
    assert result.cut_short
    assert result.value <= result.bound


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"ends": [1, 2]}, "ends has 2 entries"),
        ({"weights": [1]}, "weights has 1 entries"),
        ({"sizes": [4, -1, 4]}, r"sizes\[1\] = -1"),
        ({"weights": [4, -1, 4]}, r"weights\[1\] = -1"),
        ({"alignment": 0}, "alignment = 0"),
        ({"capacity": -1}, "capacity = -1"),
        ({"candidates": [1, 1, 1]}, "candidates must be a bool array"),
        ({"candidates": np.ones(2, dtype=bool)}, "candidates must be a bool array"),
        ({"obstacle_starts": [0], "obstacle_ends": []}, "obstacle_ends has 0 entries"),
        (
            {
                "obstacle_starts": [0],
                "obstacle_ends": [0],
                "obstacle_sizes": [1],
                "obstacle_offsets": [-2],
            },
            r"obstacle_offsets\[0\] = -2",
        ),
    ],
)
def test_invalid_input_is_rejected(change: dict[str, object], message: str) -> None:
    arguments: dict[str, object] = {
        "starts": [0, 1, 2],
        "ends": [1, 2, 3],
        "sizes": [4, 4, 4],
        "weights": [4, 4, 4],
        "candidates": np.ones(3, dtype=bool),
        "capacity": 8,
        "alignment": 4,
    }
    arguments.update(change)
    with pytest.raises(ValueError, match=message):
        CapacitySelection(**arguments)  # type: ignore[arg-type]


def test_invalid_calls_are_rejected() -> None:
    selection = tight_instance().selection()
    with pytest.raises(ValueError, match="above the memory's"):
        selection.solve(WORK_LIMIT, capacity=33)
    with pytest.raises(ValueError, match="time_limit_s"):
        selection.solve(WORK_LIMIT, time_limit_s=-1.0)
    with pytest.raises(ValueError, match="work_limit"):
        selection.solve(-1)
    with pytest.raises(ValueError, match="out of range"):
        selection.forbid_together([4])
    with pytest.raises(ValueError, match="repeated"):
        selection.forbid_together([0, 0])
    with pytest.raises(ValueError, match="only free tensors"):
        selection.forbid_together([3])
    with pytest.raises(ValueError, match="at least one"):
        selection.forbid_together([])
    other = tight_instance()
    other.candidates[1] = False
    with pytest.raises(ValueError, match="not a candidate"):
        other.selection().forbid_together([0, 1])


def test_units_round_sizes_up_to_the_alignment() -> None:
    # 17 bytes take two 16-byte units: two such tensors do not fit in 48 bytes together.
    arrays: dict[str, npt.ArrayLike] = {"starts": [0, 0], "ends": [0, 0], "sizes": [17, 17]}
    selection = CapacitySelection(
        arrays["starts"], arrays["ends"], arrays["sizes"], [17, 17], np.ones(2, bool), 48, 16
    )
    result = selection.solve(WORK_LIMIT)
    assert result is not None
    assert (result.value, result.bound) == (17, 17)
