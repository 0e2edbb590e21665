"""Ctrl-C honoured in every phase of a call, and a planner it stops changes nothing.

The core polls its Interrupt at the start of each phase and after each stretch of work
(csrc/core/common/interrupt.h). ``_core.set_interrupt_hook`` makes it raise a real SIGINT
at the Nth poll of a named phase, so each test lands the signal in the phase it names,
by count, never by a timer: the 1st, 2nd and 7th poll of each phase. Python's own steps
(the arrays' conversion, HiGHS's solve, the drop-in's write-back) get the signal from
the test itself, at a chosen call. No test here reads a clock (bench/interrupts.py
measures how soon a plan reacts).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from cases import random_schedule_problem

import cadence_memplan
from cadence_memplan import _core, api
from cadence_memplan.capacity import highs as _highs
from cadence_memplan.synthetic import synthetic_graph

POLLS = (1, 2, 7)
# Enough tensors for every phase of a plan to poll seven times or more.
BIG = synthetic_graph(200_000, seed=3)
BIG_MEMORY = ([1 << 40], [16])
# Memory 1 holds about a third of what is alive at once: best spills, so its capacity-first
# planning, squeaky wheel and growth of memory 1 run.
SPILLING = synthetic_graph(2_000, seed=5)
SPILLING_MEMORY = ([24 << 10, 1 << 40], [16, 64])


@pytest.fixture(autouse=True)
def python_sigint_handler() -> Iterator[None]:
    """Python's own SIGINT handler, whatever the test run inherited (a run started in the
    background of a shell script has SIGINT ignored), and no hook left behind."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        _core.set_interrupt_hook(phase=None)
        signal.signal(signal.SIGINT, previous)


def interrupted_at(phase: str, poll: int, call: Callable[[], Any]) -> None:
    """``call`` ends with KeyboardInterrupt raised at poll ``poll`` of ``phase``."""
    _core.set_interrupt_hook(phase=phase, poll=poll)
    with pytest.raises(KeyboardInterrupt):
        call()
    assert _core.interrupt_hook_fired(), f"{phase} was never polled {poll} times"


def plan_big(algorithm: str = "position") -> cadence_memplan.PlanResult:
    return cadence_memplan.plan(*BIG, *BIG_MEMORY, algorithm=algorithm)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("algorithm", "phase", "poll"),
    [
        (algorithm, phase, poll)
        for algorithm in cadence_memplan.UPSTREAM_ALGORITHMS
        for phase in ("check", "index", "order", "place", "result")
        for poll in POLLS
        # First fit's memory lists come out in order: its result phase has one poll.
        if not (algorithm == "position" and phase == "result" and poll > 1)
    ],
)
def test_each_phase_of_a_plan(algorithm: str, phase: str, poll: int) -> None:
    interrupted_at(phase, poll, lambda: plan_big(algorithm))


def test_a_plan_after_an_interrupted_one_is_whole() -> None:
    """Nothing of a stop is left behind: the next call plans as a fresh process would."""
    expected = plan_big("heuristic")
    interrupted_at("place", 2, lambda: plan_big("heuristic"))
    again = plan_big("heuristic")
    assert np.array_equal(again.mem_ids, expected.mem_ids)
    assert np.array_equal(again.offsets, expected.offsets)


@pytest.mark.parametrize("poll", POLLS)
def test_the_validator(poll: int) -> None:
    result = plan_big()
    interrupted_at(
        "validate",
        poll,
        lambda: cadence_memplan.validate(*BIG, result.mem_ids, result.offsets, *BIG_MEMORY),
    )


def spilling_best() -> cadence_memplan.PlanResult:
    return cadence_memplan.plan(
        *SPILLING, *SPILLING_MEMORY, algorithm="best", work_budget=200_000, threads=1
    )


@pytest.mark.parametrize("poll", POLLS)
@pytest.mark.parametrize("phase", ["validate", "search", "improve"])
def test_each_step_of_best(phase: str, poll: int) -> None:
    interrupted_at(phase, poll, spilling_best)


@pytest.mark.parametrize("poll", POLLS)
def test_the_scheduler(poll: int) -> None:
    problem = random_schedule_problem(5)
    interrupted_at("schedule", poll, lambda: cadence_memplan.schedule(**problem))


def raise_sigint_at_call(target: Callable[..., Any], call: int) -> Callable[..., Any]:
    """``target`` that raises SIGINT (Ctrl-C) on its ``call``-th call, before it runs."""
    calls = [0]

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        if calls[0] == call:
            signal.raise_signal(signal.SIGINT)
        return target(*args, **kwargs)

    return wrapped


@pytest.mark.parametrize("call", [1, 3, 5])
def test_the_arrays_conversion(monkeypatch: pytest.MonkeyPatch, call: int) -> None:
    """Python's part of plan(): the inputs' conversion to int64 arrays."""
    monkeypatch.setattr(api, "as_int64", raise_sigint_at_call(api.as_int64, call))
    with pytest.raises(KeyboardInterrupt):
        plan_big()


@pytest.mark.parametrize("report", [1, 3])
def test_a_highs_solve(monkeypatch: pytest.MonkeyPatch, report: int) -> None:
    """best's capacity-first planning solves an integer program with HiGHS, whose reports
    run Python inside its C++: a SIGINT there is held until the solve returns (an exception
    must not unwind through HiGHS), the report that hears it stops the solve, and
    KeyboardInterrupt comes out of plan()."""
    heard: list[bool] = []  # per report: whether a SIGINT had come
    stopped: list[bool] = []
    on_report = _highs.HighsModel.on_report

    def reporting(model: Any, event: Any) -> None:
        heard.append(model.interrupted())
        if len(heard) == report:
            signal.raise_signal(signal.SIGINT)
        on_report(model, event)
        stopped.append(model.interrupted())

    monkeypatch.setattr(_highs.HighsModel, "on_report", reporting)
    with pytest.raises(KeyboardInterrupt):
        spilling_best()
    assert len(heard) >= report
    assert stopped[report - 1]  # the report the signal came in asked HiGHS to stop
    # HiGHS may report a few more times while it unwinds, never a search's worth.
    assert heard.count(True) <= 5


@pytest.mark.executorch
@pytest.mark.parametrize("call", [1, 2])
def test_the_drop_in_write_back(monkeypatch: pytest.MonkeyPatch, call: int) -> None:
    """The Cadence drop-in writes every spec's mem_id and mem_offset, and upstream's state:
    a SIGINT that comes while it writes puts all of it back as it was, then raises."""
    import random

    from cases import RandomChooser, generate_case
    from upstream_runs import build_problem

    from cadence_memplan._boundary.tensorspecs import cadence_specs

    case = generate_case(RandomChooser(random.Random(11)), max_tensors=40)
    problem = build_problem(cadence_memplan.PositionBasedGreedyWithHierarchy, case)
    before = problem.snapshot()
    monkeypatch.setattr(
        cadence_specs, "set_column", raise_sigint_at_call(cadence_specs.set_column, call)
    )
    with pytest.raises(KeyboardInterrupt):
        problem.algo.plan(problem.specs, None, None, problem.state, problem.constraints)
    assert problem.snapshot() == before
    monkeypatch.undo()
    problem.algo.plan(problem.specs, None, None, problem.state, problem.constraints)
    assert problem.snapshot() != before  # the same call without Ctrl-C plans


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT cannot be sent to a child on Windows")
def test_ctrl_c_from_outside_stops_a_long_plan() -> None:
    """The whole way, from another process: Ctrl-C sent the moment a three-million-tensor
    plan starts (tens of seconds of work) ends it with KeyboardInterrupt."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                """
                import signal, sys
                import cadence_memplan
                from cadence_memplan.synthetic import synthetic_graph
                signal.signal(signal.SIGINT, signal.default_int_handler)
                graph = synthetic_graph(3_000_000)
                try:
                    print("planning", flush=True)  # inside: the signal may come at once
                    cadence_memplan.plan(*graph, [1 << 40], [16])
                except KeyboardInterrupt:
                    print("interrupted", flush=True)
                    sys.exit(0)
                print("finished", flush=True)
                """
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "planning"
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate(timeout=300)  # a hang guard, not a measure
    assert output.strip() == "interrupted"
    assert child.returncode == 0
