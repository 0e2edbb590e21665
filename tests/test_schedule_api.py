"""cadence_memplan.schedule, the array API of the scheduler, against brute force over every
legal order of small random programs (peaks counted step by step here, not by the core's
sweep), and its input checks."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from cases import random_schedule_problem
from hypothesis import example, given, settings
from hypothesis import strategies as st

import cadence_memplan
from cadence_memplan import schedule


def peak_of(problem: dict, order: list[int]) -> int:
    """The most bytes alive at one step, from the definition."""
    n = problem["num_units"]
    step = {unit: s for s, unit in enumerate(order)}
    offsets = problem["buffer_user_offsets"]
    peak = 0
    for t in range(n):
        alive = 0
        for b, size in enumerate(problem["buffer_sizes"]):
            producer = problem["buffer_producers"][b]
            born = 0 if producer < 0 else step[producer]
            users = problem["buffer_users"][offsets[b] : offsets[b + 1]]
            dies = max([born, *(step[u] for u in users)])
            if problem["buffer_live_to_end"][b]:
                dies = n - 1
            alive += size if born <= t <= dies else 0
        peak = max(peak, alive)
    return peak


def legal_orders(problem: dict) -> list[list[int]]:
    n = problem["num_units"]
    before = {(int(a), int(b)) for a, b in problem["edges"]}
    offsets = problem["buffer_user_offsets"]
    for b, producer in enumerate(problem["buffer_producers"]):
        for user in problem["buffer_users"][offsets[b] : offsets[b + 1]]:
            if producer >= 0 and user != producer:
                before.add((producer, user))
    orders = []
    for order in itertools.permutations(range(n)):
        step = {unit: s for s, unit in enumerate(order)}
        if all(step[a] < step[b] for a, b in before):
            orders.append(list(order))
    return orders


@st.composite
def problems(draw: st.DrawFn) -> dict:
    n = draw(st.integers(0, 6))
    edges = [(a, b) for b in range(n) for a in range(b) if draw(st.integers(0, 5)) == 0]
    sizes, producers, users, offsets, live_to_end = [], [], [], [0], []
    for _ in range(draw(st.integers(0, n + 3))):
        producer = draw(st.integers(-1, n - 1))
        sizes.append(draw(st.sampled_from([0, 8, 16, 24, 40, 64])))
        producers.append(producer)
        if n:
            users += draw(st.lists(st.integers(max(producer, 0), n - 1), max_size=3))
        offsets.append(len(users))
        live_to_end.append(draw(st.booleans()) and draw(st.booleans()))
    return {
        "num_units": n,
        "edges": np.array(edges, dtype=np.int64).reshape(-1, 2),
        "buffer_sizes": sizes,
        "buffer_producers": producers,
        "buffer_user_offsets": offsets,
        "buffer_users": users,
        "buffer_live_to_end": np.array(live_to_end, dtype=np.bool_),
    }


# Found by hypothesis: an input nobody reads is alive at the first step, so the source
# (unit 2) that takes it from unit 0's step belongs first, not just before its reader.
SOURCE_BEFORE_AN_UNREAD_INPUT = {
    "num_units": 4,
    "edges": np.array([[0, 1], [0, 3], [1, 3], [2, 3]], dtype=np.int64),
    "buffer_sizes": [16, 0, 0, 16, 8],
    "buffer_producers": [-1, 0, 0, 0, 2],
    "buffer_user_offsets": [0, 0, 0, 0, 0, 1],
    "buffer_users": [3],
    "buffer_live_to_end": np.zeros(5, dtype=np.bool_),
}


@settings(max_examples=300, deadline=None)
@given(problems())
@example(SOURCE_BEFORE_AN_UNREAD_INPUT)
def test_schedule_finds_the_best_legal_order(problem: dict) -> None:
    orders = legal_orders(problem)
    best = min(peak_of(problem, order) for order in orders)
    result = schedule(**problem, work_budget=10**9)
    order = result.order.tolist()
    assert order in orders
    assert result.peak_live == peak_of(problem, order) == best
    assert result.given_peak_live == peak_of(problem, list(range(problem["num_units"])))
    assert result.lower_bound <= best
    assert result.proved_optimal
    # The given order is kept unless something is strictly better.
    improved = best < result.given_peak_live
    assert (result.strategy != "given") == improved
    assert (order == list(range(problem["num_units"]))) or improved
    assert not result.cut_short


@settings(max_examples=100, deadline=None)
@given(problems(), st.integers(0, 5))
def test_a_small_budget_never_returns_worse_than_the_given_order(
    problem: dict, work_budget: int
) -> None:
    result = schedule(**problem, work_budget=work_budget)
    assert result.order.tolist() in legal_orders(problem)
    assert result.peak_live == peak_of(problem, result.order.tolist()) <= result.given_peak_live
    assert result.work <= work_budget + 1


def write_backs(layers: int) -> dict:
    """A decoder's caches: each updated cache is read by its layer's attention and by a
    write-back that the given order puts at the end, as exir does."""
    sizes, producers, users, offsets, live_to_end = [], [], [], [0], []
    for layer in range(layers):
        update, attention, write_back = 2 * layer, 2 * layer + 1, 2 * layers + layer
        sizes += [1000, 10]
        producers += [update, attention]
        users += [attention, write_back]
        offsets.append(len(users))
        if layer + 1 < layers:
            users.append(attention + 1)
        offsets.append(len(users))
        live_to_end += [False, layer + 1 == layers]
    return {
        "num_units": 3 * layers,
        "edges": np.zeros((0, 2), dtype=np.int64),
        "buffer_sizes": sizes,
        "buffer_producers": producers,
        "buffer_user_offsets": offsets,
        "buffer_users": users,
        "buffer_live_to_end": np.array(live_to_end),
    }


def test_write_backs_move_up_to_the_bound() -> None:
    result = schedule(**write_backs(40))
    assert result.given_peak_live == 40 * 1000 + 10
    assert result.peak_live == result.lower_bound == 1010
    assert result.proved_optimal
    assert sorted(result.order.tolist()) == list(range(120))


def test_same_input_same_order() -> None:
    problem = random_schedule_problem(5)
    first, second = schedule(**problem), schedule(**problem)
    assert first.order.tolist() == second.order.tolist()
    assert first.work == second.work
    assert first.peak_live <= first.given_peak_live
    assert first.lower_bound <= first.peak_live


def test_schedule_is_public() -> None:
    assert cadence_memplan.schedule is schedule
    assert "schedule" in cadence_memplan.__all__
    assert "ScheduleResult" in cadence_memplan.__all__


@pytest.mark.parametrize(
    ("change", "error", "words"),
    [
        ({"edges": [[1, 0]]}, ValueError, "edge 0 is (1, 0)"),
        ({"edges": [0, 1]}, ValueError, "shape (k, 2)"),
        ({"buffer_producers": [2]}, ValueError, "producer 2"),
        ({"buffer_sizes": [-8]}, ValueError, "size -8"),
        ({"buffer_users": [0], "buffer_producers": [1]}, ValueError, "before its producer"),
        ({"buffer_user_offsets": [0, 2]}, ValueError, "end at len(buffer_users)"),
        ({"buffer_user_offsets": [0]}, ValueError, "buffer_user_offsets has 1 entries"),
        ({"buffer_sizes": [8.5]}, TypeError, "integers"),
        ({"buffer_live_to_end": np.array([1])}, TypeError, "boolean"),
        ({"num_units": 2.0}, TypeError, "num_units"),
        ({"work_budget": -1}, ValueError, "work_budget"),
        ({"budget_ms": -1}, ValueError, "budget_ms"),
        ({"buffer_users": [2**40]}, ValueError, "buffer_users[0] = 1099511627776 is not a unit"),
    ],
)
def test_bad_input_is_refused_in_words(change: dict, error: type, words: str) -> None:
    problem = {
        "num_units": 2,
        "edges": np.zeros((0, 2), dtype=np.int64),
        "buffer_sizes": [8],
        "buffer_producers": [0],
        "buffer_user_offsets": [0, 1],
        "buffer_users": [1],
    }
    problem.update(change)
    with pytest.raises(error) as raised:
        schedule(**problem)
    assert words in str(raised.value)
