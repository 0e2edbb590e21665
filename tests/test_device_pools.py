"""The pools cadence_memplan.device predicts, proved on executorch's runtime.

A small C++ runner (tests/runtime_probe/pool_runner.cpp), compiled once per session
against the installed wheel's headers and libraries, loads each method with exactly the
predicted method and temp pools (each base 64-byte aligned: the figures assume 8): the
method loads, runs, and its outputs equal the Python runtime's. One byte less in either
pool fails, in the runner's own process (the runtime may crash there: executorch 1.5.1's
parse_values uses an integer list's allocations unchecked). Skips, saying why, where
there is no compiler or the wheel lacks its headers or libraries.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.executorch

from device_runner import Run, build_runner, run

programs = pytest.importorskip("device_programs", reason="needs torch and executorch")

from cadence_memplan.device import program_memory
from cadence_memplan.device.pools import MethodMemory

# executorch's Error::OperatorMissing: the program needs a kernel the wheel does not ship.
OPERATOR_MISSING = 0x14


@pytest.fixture(scope="session")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    built = build_runner(tmp_path_factory.mktemp("pool_runner"))
    if isinstance(built, str):
        pytest.skip(built)
    return built


_BUILT: dict[str, Any] = {}


def _program(
    name: str, builders: dict[str, Callable[[], Any]], directory: Path
) -> tuple[Path, Any]:
    """The program built once per session, written to ``directory``."""
    if name not in _BUILT:
        _BUILT[name] = builders[name]()
    path = directory / f"{name}.pte"
    path.write_bytes(_BUILT[name].pte)
    return path, _BUILT[name]


def _prove(runner: Path, pte: Path, program: Any) -> dict[str, MethodMemory]:
    """Every method at its predicted pools: loads, takes exactly the method pool, runs, and
    gives the Python runtime's outputs."""
    predicted = {m.name: m for m in program_memory(pte, target="host").methods}
    assert set(predicted) == set(program.inputs)
    for name, memory in predicted.items():
        inputs = program.inputs[name]
        done = run(runner, pte, name, memory.method_pool, memory.temp_pool, inputs)
        assert done.ran, (name, done)
        assert done.figures["method_high"] == memory.method_pool, name
        assert done.figures["temp_run_high"] <= memory.temp_pool, name
        expected = programs.python_outputs(program.pte, name, inputs)
        assert len(done.outputs) == len(expected)
        for ours, theirs in zip(done.outputs, expected, strict=True):
            assert ours.dtype == theirs.dtype
            assert ours.shape == theirs.shape
            np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-6)
    return predicted


def _fails(done: Run) -> bool:
    """The runner did not both load and run (a clean error or a crash)."""
    return not done.ran


def _one_byte_less(runner: Path, pte: Path, program: Any, memory: MethodMemory) -> None:
    inputs = program.inputs[memory.name]
    less_method = run(runner, pte, memory.name, memory.method_pool - 1, memory.temp_pool, inputs)
    assert _fails(less_method), (memory.name, "method pool - 1", less_method)
    if memory.temp_pool > 0:
        less_temp = run(runner, pte, memory.name, memory.method_pool, memory.temp_pool - 1, inputs)
        assert _fails(less_temp), (memory.name, "temp pool - 1", less_temp)


@pytest.mark.parametrize("name", list(programs.FAST))
def test_the_predicted_pools_are_the_smallest_that_run(
    runner: Path, tmp_path: Path, name: str
) -> None:
    pte, program = _program(name, programs.FAST, tmp_path)
    predicted = _prove(runner, pte, program)
    for memory in predicted.values():
        _one_byte_less(runner, pte, program, memory)
        assert not memory.unknowns, memory.unknowns


@pytest.mark.slow
@pytest.mark.parametrize("name", list(programs.SLOW))
def test_the_built_in_models_pools_are_the_smallest_that_run(
    runner: Path, tmp_path: Path, name: str
) -> None:
    pte, program = _program(name, programs.SLOW, tmp_path)
    memories = program_memory(pte).methods
    if any(u.what.startswith("temp at execute") for m in memories for u in m.unknowns):
        pytest.skip(f"{name} runs kernels the wheel does not ship: {memories[0].unknowns}")
    roomy = run(runner, pte, "forward", 1 << 24, 1 << 20, program.inputs["forward"])
    if roomy.figures.get("load") == OPERATOR_MISSING:
        pytest.skip(f"{name} runs operators the wheel's kernels lack: {roomy.stderr[-300:]}")
    predicted = _prove(runner, pte, program)
    for memory in predicted.values():
        _one_byte_less(runner, pte, program, memory)


def test_without_a_temp_pool_the_metadata_stays_in_the_method_pool(
    runner: Path, tmp_path: Path
) -> None:
    pte, program = _program("cnn-exir", programs.FAST, tmp_path)
    (memory,) = program_memory(pte).methods
    assert memory.method_pool_without_temp > memory.method_pool
    inputs = program.inputs["forward"]
    exact = run(runner, pte, "forward", memory.method_pool_without_temp, 0, inputs)
    assert exact.ran
    assert exact.figures["method_high"] == memory.method_pool_without_temp
    less = run(runner, pte, "forward", memory.method_pool_without_temp - 1, 0, inputs)
    assert _fails(less)


@pytest.mark.parametrize("skew", [1, 4, 7])
def test_a_base_off_by_k_bytes_costs_at_most_8_minus_k_more(
    runner: Path, tmp_path: Path, skew: int
) -> None:
    pte, program = _program("tiny-mlp", programs.FAST, tmp_path)
    (memory,) = program_memory(pte).methods
    inputs = program.inputs["forward"]
    more = 8 - skew
    done = run(runner, pte, "forward", memory.method_pool + more, memory.temp_pool + more,
               inputs, skew=skew)  # fmt: skip
    assert done.ran, done
    assert done.figures["method_high"] <= memory.method_pool + more


def test_topk_takes_its_temp_while_it_runs(runner: Path, tmp_path: Path) -> None:
    pte, program = _program("topk", programs.FAST, tmp_path)
    (memory,) = program_memory(pte).methods
    assert memory.temp_at_execute == 37 * 16  # one (value, index) pair per element of dim 1
    done = run(
        runner, pte, "forward", memory.method_pool, memory.temp_pool, program.inputs["forward"]
    )
    assert done.figures["temp_run_high"] == memory.temp_at_execute
