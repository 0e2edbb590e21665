"""The array API: shapes and types of results, and clear errors for bad input."""

from __future__ import annotations

import re

import numpy as np
import pytest

import cadence_memplan
from cadence_memplan import Preplaced, plan, validate

GOOD = {
    "starts": [0, 1, 2],
    "ends": [1, 2, 3],
    "sizes": [10, 20, 30],
    "memory_sizes": [64, 1000],
    "memory_alignments": [16, 16],
}


def call_plan(**changes):
    arguments = {**GOOD, **changes}
    return plan(
        arguments.pop("starts"),
        arguments.pop("ends"),
        arguments.pop("sizes"),
        arguments.pop("memory_sizes"),
        arguments.pop("memory_alignments"),
        **arguments,
    )


@pytest.mark.parametrize("algorithm", cadence_memplan.ALGORITHMS)
def test_result_arrays(algorithm):
    result = call_plan(algorithm=algorithm)
    assert result.mem_ids.dtype == np.int64
    assert result.offsets.dtype == np.int64
    assert result.mem_ids.shape == result.offsets.shape == (3,)
    assert result.bufsizes.shape == (3,)  # memory ids 0..2
    assert result.bufsizes[0] == 0
    assert len(result.memory_order) == 3
    placed = np.concatenate(result.memory_order)
    assert sorted(placed.tolist()) == [0, 1, 2]
    for mem_id, order in enumerate(result.memory_order):
        assert all(result.mem_ids[order] == mem_id)
    assert (
        validate(
            *(GOOD[k] for k in ("starts", "ends", "sizes")),
            result.mem_ids,
            result.offsets,
            GOOD["memory_sizes"],
            GOOD["memory_alignments"],
        )
        is None
    )


def test_accepts_any_integer_dtype_and_lists():
    as_lists = call_plan()
    as_int32 = call_plan(**{k: np.asarray(v, dtype=np.int32) for k, v in GOOD.items()})
    as_uint16 = call_plan(sizes=np.asarray(GOOD["sizes"], dtype=np.uint16))
    for other in (as_int32, as_uint16):
        np.testing.assert_array_equal(as_lists.mem_ids, other.mem_ids)
        np.testing.assert_array_equal(as_lists.offsets, other.offsets)


def test_empty_input_plans_nothing():
    result = call_plan(starts=[], ends=[], sizes=[])
    assert result.mem_ids.size == 0
    assert result.bufsizes.tolist() == [0, 0, 0]


BAD_INPUTS = [
    ({"sizes": [10, -5, 30]}, ValueError, "tensor 1: size -5 is negative"),
    ({"sizes": [10, (1 << 62) + 1, 30]}, ValueError, "tensor 1: size 4611686018427387905 exceeds"),
    ({"sizes": [10, 2**70, 30]}, ValueError, "sizes[1] = 1180591620717411303424 does not fit"),
    ({"sizes": [10.0, 20.0, 30.0]}, TypeError, "sizes must hold integers, got dtype float64"),
    ({"starts": [0, None, 2]}, TypeError, "starts[1] is None, not an integer"),
    ({"starts": [0, -1, 2]}, ValueError, "tensor 1: lifetime [-1, 2] has a negative node index"),
    ({"ends": [1, 2]}, ValueError, "ends has 2 entries, expected 3"),
    ({"sizes": [[10, 20, 30]]}, ValueError, "sizes must be one-dimensional"),
    ({"memory_sizes": [64, 0]}, ValueError, "memory 2: size 0 is outside [1, 2^62]"),
    ({"memory_alignments": [16, 0]}, ValueError, "memory 2: alignment 0 is outside [1, 2^62]"),
    ({"memory_alignments": [16]}, ValueError, "memory_alignments has 1 entries, expected 2"),
    (
        {"memory_sizes": [], "memory_alignments": []},
        ValueError,
        "number of memories must be in 1..63",
    ),
    ({"memory_sizes": [64] * 64, "memory_alignments": [1] * 64}, ValueError, "1..63, got 64"),
    ({"algorithm": "fastest"}, ValueError, "algorithm must be one of"),
    ({"blocked": np.zeros((3, 3), dtype=bool)}, ValueError, "blocked must have shape"),
    ({"blocked": np.zeros((3, 2), dtype=int)}, TypeError, "blocked must be a boolean array"),
    ({"allowed": [True]}, ValueError, "allowed must have one entry per memory"),
    ({"incoming_offsets": [0, -7, 0]}, ValueError, "tensor 1: incoming offset -7"),
    (
        {"preplaced": Preplaced([0], [5], [16], [3], [0])},
        ValueError,
        "placed tensor 0: mem_id 3 is not a memory id (1..2)",
    ),
    (
        {"preplaced": Preplaced([0], [5], [16], [1], [60])},
        ValueError,
        "placed tensor 0: storage [60, 76) lies outside memory 1 of 64 bytes",
    ),
    ({"preplaced": Preplaced([0], [5], [16], [1], [])}, ValueError, "placed_offsets has 0"),
]


@pytest.mark.parametrize(("changes", "error", "message"), BAD_INPUTS)
def test_bad_input_is_refused_clearly(changes, error, message):
    with pytest.raises(error) as raised:
        call_plan(**changes)
    assert message in str(raised.value)


def test_planning_error_names_tensor_and_memories():
    with pytest.raises(cadence_memplan.PlanningError) as raised:
        call_plan(
            sizes=[10, 2000, 30],
            blocked=np.array([[False, False], [False, True], [False, False]]),
        )
    error = raised.value
    assert error.tensor_index == 1
    text = str(error)
    assert "tensor 1 (size 2000 bytes, lifetime [1, 2])" in text
    assert "memory 1 (64 bytes, alignment 16): no room" in text
    assert "memory 2 (1000 bytes, alignment 16): blocked for this tensor" in text
    assert isinstance(error, RuntimeError)


def test_disallowed_memory_is_named_in_the_error():
    with pytest.raises(
        cadence_memplan.PlanningError, match=r"memory 2 .*: not allowed in this call"
    ):
        call_plan(sizes=[10, 200, 30], allowed=[True, False])


def test_planning_error_states_the_peak_live_bound_in_readable_sizes():
    # 3 KiB and 2 KiB alive together at node 1: 5 KiB must be alive at once, 4 KiB exist.
    with pytest.raises(cadence_memplan.PlanningError) as raised:
        plan([0, 1], [1, 2], [3 << 10, 2 << 10], [4 << 10], [16])
    text = str(raised.value)
    assert "peak-live lower bound: 5.0 KiB (5,120 bytes) must be alive at once" in text
    assert "more than the 4.0 KiB (4,096 bytes) the one memory holds" in text


def test_planning_error_survives_pickling():
    import pickle

    error = cadence_memplan.PlanningError("tensor 3 fits nowhere", 3)
    copy = pickle.loads(pickle.dumps(error))
    assert (str(copy), copy.tensor_index) == ("tensor 3 fits nowhere", 3)


def test_import_exposes_only_the_public_names():
    """No helper (Any, importlib, annotations, ...) leaks into ``cadence_memplan``'s namespace."""
    import inspect

    leaked = {
        name
        for name, value in vars(cadence_memplan).items()
        if not name.startswith("_") and not inspect.ismodule(value)
    }
    assert leaked == set(cadence_memplan.__all__) - set(cadence_memplan._EXECUTORCH_NAMES) - {
        "__version__"
    }


def test_python_limits_are_the_cores():
    from cadence_memplan import _core, _validation

    assert _validation.MAX_MEMORIES == _core.MAX_MEMORIES
    assert _validation.MAX_BYTE_VALUE == _core.MAX_BYTE_VALUE


# Each invalid plan below breaks exactly one rule; the valid twin fixes it.
VALIDATOR_CASES = [
    # (starts, ends, sizes, mem_ids, offsets, memory_sizes, alignments, expected fragment)
    (
        [0, 2],
        [2, 3],
        [16, 16],
        [1, 1],
        [0, 8],
        [64],
        [1],
        "tensor 0 .* and tensor 1 .* share bytes",
    ),
    ([0, 3], [2, 4], [16, 16], [1, 1], [0, 8], [64], [1], None),  # lifetimes only touch at 2/3
    ([0, 2], [2, 3], [16, 16], [1, 2], [0, 8], [64, 64], [1, 1], None),  # different memories
    ([0], [2], [16], [1], [8], [64], [16], "tensor 0 .* is not aligned to 16 bytes"),
    ([0], [2], [30], [1], [37], [64], [37], "ends past the memory's 64 bytes"),
    ([0], [2], [16], [2], [0], [64], [1], "mem_id 2, not a memory id"),
    ([0], [2], [16], [1], [-16], [64], [1], "negative offset -16"),
    ([0, 1], [2, 1], [0, 16], [1, 1], [0, 0], [64], [1], None),  # zero size overlaps nothing
    ([3, 1], [2, 1], [16, 16], [1, 1], [0, 0], [64], [1], None),  # empty lifetime [3, 2]
]


@pytest.mark.parametrize(
    ("starts", "ends", "sizes", "mem_ids", "offsets", "memory_sizes", "alignments", "expected"),
    VALIDATOR_CASES,
)
def test_validator(starts, ends, sizes, mem_ids, offsets, memory_sizes, alignments, expected):
    problem = validate(starts, ends, sizes, mem_ids, offsets, memory_sizes, alignments)
    if expected is None:
        assert problem is None
    else:
        assert problem is not None
        assert re.search(expected, problem), problem


def test_package_ships_type_information():
    """py.typed and the extension's stub are installed, and the stub covers the extension."""
    import ast
    from importlib.resources import files

    from cadence_memplan import _core

    package = files("cadence_memplan")
    assert package.joinpath("py.typed").is_file()
    stub = ast.parse(package.joinpath("_core.pyi").read_text())
    declared = {
        node.name if not isinstance(node, ast.AnnAssign) else node.target.id
        for node in stub.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AnnAssign))
    }
    public = {name for name in dir(_core) if not name.startswith("_")}
    assert declared == public


def test_the_extension_takes_keywords_only_and_names_its_results():
    """Swapped positional arguments cannot type-check by accident: the core refuses them."""
    from cadence_memplan import _core

    empty = np.zeros(0, dtype=np.int64)
    with pytest.raises(TypeError):
        _core.validate(empty, empty, empty, empty, empty, np.array([8]), np.array([1]))
    result = cadence_memplan.plan([0], [1], [4], [8], [4], preplaced=None)
    assert result.call_bufsizes.tolist() == [0, 4]


@pytest.mark.parametrize(
    "size", [2, 1023, 1024, 1536, 10**6, (5 << 30) + 12345, (3 << 40) + 1, (1 << 62) - 1]
)
def test_the_cores_failure_note_reads_like_format_bytes(size: int) -> None:
    """The core writes the failure's peak-live note; it must name sizes as Python does."""
    from cadence_memplan.stats import format_bytes

    with pytest.raises(cadence_memplan.PlanningError) as raised:
        plan([0, 0], [0, 0], [size, 0], [size - 1, size - 1], [1, 1])
    total = 2 * (size - 1)
    verdict = "more than" if size > total else "within"
    assert str(raised.value).endswith(
        f"peak-live lower bound: {format_bytes(size)} ({size:,} bytes) must be alive at once,"
        f" {verdict} the {format_bytes(total)} ({total:,} bytes) the memories hold in all"
    )
