"""exir's own memory-planning tests, run under ``patch_exir()``.

executorch ships ``exir/tests/test_memory_planning.py`` and
``exir/tests/test_banked_memory_planning.py`` in its wheel: greedy's placements and
shared objects, the suite, the verifier, control flow's submodules, mutable buffers,
in-place ops, banks. Each of their unittest TestCases is subclassed here so pytest
collects it, and an autouse fixture patches exir for it (the test modules take
``greedy``, ``MemoryPlanningAlgorithmSuite`` and ``BankedGreedy`` by name from exir's
modules, and the patch points those names at ours there too; the modules are imported
patched, for the tests that take ``greedy`` on import).

To prove the patch took, exir's own planning loops fail the test if they run anywhere but
inside our planners' fallback to exir's function.
"""

from __future__ import annotations

import importlib
import unittest
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

from executorch.exir import banked_memory_planning
from executorch.exir import memory_planning as exir_planning
from executorch.exir._warnings import ExperimentalWarning

import cadence_memplan
from cadence_memplan.exir import planners, search

pytestmark = [
    pytest.mark.executorch,
    # Raised by exir's own tests (the runtime's experimental API, deprecated passes).
    pytest.mark.filterwarnings("ignore::executorch.exir._warnings.ExperimentalWarning"),
    pytest.mark.filterwarnings("ignore:.*is deprecated:FutureWarning"),
    pytest.mark.filterwarnings("ignore:_check_is_size will be removed:FutureWarning"),
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected:UserWarning"),
    pytest.mark.filterwarnings("ignore:Function .* kwarg value is None:UserWarning"),
]


def import_upstream_tests(name: str) -> Any:
    """exir's test module, imported patched: some of its tests take ``greedy`` when the
    module is imported (``maketest``'s criteria), so they hold ours from then on."""
    with warnings.catch_warnings(), cadence_memplan.patch_exir():
        # Importing them imports the runtime, which warns that it is experimental.
        warnings.simplefilter("ignore", ExperimentalWarning)
        return importlib.import_module(f"executorch.exir.tests.{name}")


memory_planning_tests = import_upstream_tests("test_memory_planning")
banked_tests = import_upstream_tests("test_banked_memory_planning")


@pytest.fixture(autouse=True)
def our_planners(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """exir patched for the test; exir's own greedy and banked loops
    (``pick_shared_obj``) may run only where ours hands specs to exir's function (its
    fallback), so a test that plans with exir's planners fails."""
    fallbacks = 0

    def allowing(function: Any) -> Any:
        def fallback(*args: Any, **kwargs: Any) -> Any:
            nonlocal fallbacks
            fallbacks += 1
            try:
                return function(*args, **kwargs)
            finally:
                fallbacks -= 1

        return fallback

    for module in (planners, search):
        monkeypatch.setattr(module, "exir_greedy", allowing(module.exir_greedy))
    for module in (exir_planning, banked_memory_planning):

        def guarded(*args: Any, original: Any = module.pick_shared_obj, **kwargs: Any) -> Any:
            assert fallbacks, "exir's own planner ran: the patch did not take"
            return original(*args, **kwargs)

        monkeypatch.setattr(module, "pick_shared_obj", guarded)
    with cadence_memplan.patch_exir():
        yield


def _covered(module: Any) -> dict[str, type]:
    """A subclass of each of the module's TestCases, named ...WithOurPlanners."""
    return {
        f"{name}WithOurPlanners": type(f"{name}WithOurPlanners", (value,), {})
        for name, value in vars(module).items()
        if isinstance(value, type)
        and issubclass(value, unittest.TestCase)
        and value.__module__ == module.__name__
        and any(attribute.startswith("test") for attribute in vars(value))
    }


globals().update(_covered(memory_planning_tests))
globals().update(_covered(banked_tests))


def test_every_upstream_test_class_is_covered() -> None:
    covered = {
        base
        for value in globals().values()
        if isinstance(value, type) and value.__name__.endswith("WithOurPlanners")
        for base in value.__bases__
    }
    for module in (memory_planning_tests, banked_tests):
        assert set(_covered(module)) <= set(globals())
        assert all(value.__bases__[0] in covered for value in _covered(module).values())
