"""Upstream's own memory-planning tests, run with our placers swapped in for upstream's.

executorch ships ``backends/cadence/aot/tests/test_memory_passes.py`` in its wheel: pinned
offsets and memories, relative placements for cat/slice/select and memory.view, start
alignments, blocklists, peak-memory reports. Each of its unittest TestCases is
subclassed here so pytest collects it, and an autouse fixture points every name through
which those tests reach a placer or a report at ours:

- the test module's ``CadenceMemoryPlanning``, ``PositionBasedGreedyWithHierarchy`` and
  ``find_peak_memory_usage``;
- the Cadence compiler's ``CadenceMemoryPlanning`` and ``print_memory_planning_info``,
  which ``export_to_executorch_gen_etrecord`` uses.

To prove the swap took, upstream's two placers raise if anything calls them, and every
test that plans must have run the C++ core.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from executorch.backends.cadence.aot import memory_planning as upstream_memory_planning

import cadence_memplan
from cadence_memplan import _core
from cadence_memplan.cadence import reports
from cadence_memplan.cadence.compiler import import_cadence_compiler
from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning

pytestmark = pytest.mark.executorch


def import_upstream_tests() -> tuple[Any, Any]:
    """Upstream's test module and the Cadence compiler it drives (both need
    ``typing.override`` on Python 3.11, which import_cadence_compiler provides)."""
    compiler = import_cadence_compiler()
    with warnings.catch_warnings():
        # Importing it deep-copies pytrees through a deprecated torch helper; pyproject's
        # filter for it does not cover imports at collection time.
        warnings.filterwarnings(
            "ignore", r"`isinstance\(treespec, LeafSpec\)` is deprecated", FutureWarning
        )
        tests = importlib.import_module("executorch.backends.cadence.aot.tests.test_memory_passes")
    return tests, compiler


upstream_tests, compiler = import_upstream_tests()

# Upstream tests that plan nothing: they check a constraint is refused before planning.
TESTS_THAT_DO_NOT_PLAN = frozenset({"test_slice_pinned_input_fail"})


@pytest.fixture(autouse=True)
def our_placers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(upstream_tests, "CadenceMemoryPlanning", CadenceMemoryPlanning)
    monkeypatch.setattr(
        upstream_tests,
        "PositionBasedGreedyWithHierarchy",
        cadence_memplan.PositionBasedGreedyWithHierarchy,
    )
    monkeypatch.setattr(upstream_tests, "find_peak_memory_usage", reports.find_peak_memory_usage)
    monkeypatch.setattr(compiler, "CadenceMemoryPlanning", CadenceMemoryPlanning)
    monkeypatch.setattr(compiler, "print_memory_planning_info", reports.print_memory_planning_info)

    def upstream_placer_called(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("an upstream placer ran: the swap to ours did not take")

    for name in ("PositionBasedGreedyWithHierarchy", "GreedyWithHeuristic"):
        monkeypatch.setattr(getattr(upstream_memory_planning, name), "plan", upstream_placer_called)

    core_calls = 0
    core_plan = _core.plan

    def counting_core_plan(**kwargs: Any) -> Any:
        nonlocal core_calls
        core_calls += 1
        return core_plan(**kwargs)

    monkeypatch.setattr(_core, "plan", counting_core_plan)
    yield
    runs_upstream_test = request.cls is not None and request.cls.__name__.endswith("OurPlacers")
    if runs_upstream_test and not request.node.name.startswith(tuple(TESTS_THAT_DO_NOT_PLAN)):
        assert core_calls > 0, f"{request.node.name} never ran our placer"


class TestMemPlanningPassesWithOurPlacers(upstream_tests.TestMemPlanningPasses):
    pass


class TestMemTransformWithOurPlacers(upstream_tests.TestMemTransform):
    pass


class TestAbsolutePlacementConstraintWithOurPlacers(upstream_tests.TestAbsolutePlacementConstraint):
    pass


class TestMixedPlacementConstraintsWithOurPlacers(upstream_tests.TestMixedPlacementConstraints):
    pass


def test_every_upstream_test_class_is_covered() -> None:
    """A new TestCase in upstream's module must be added above (or excluded on purpose)."""
    import unittest

    upstream_classes = {
        name
        for name, value in vars(upstream_tests).items()
        if isinstance(value, type)
        and issubclass(value, unittest.TestCase)
        and value.__module__ == upstream_tests.__name__
        and any(attribute.startswith("test") for attribute in vars(value))
    }
    covered = {
        base.__name__
        for value in globals().values()
        if isinstance(value, type) and value.__name__.endswith("WithOurPlacers")
        for base in value.__bases__
    }
    assert upstream_classes == covered
