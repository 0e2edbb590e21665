"""pytest setup: the shared fixtures, and what each test needs to run.

Fixtures: ``small_csv`` (tests/cli_support.py's ``SMALL_CSV`` as a file) and ``lowered``
(the session's cache of models lowered with Cadence's compiler). Helpers are plain modules
beside this one, imported by name, never from a ``test_*.py`` module: tests/cases.py
(planning problems, numpy only), tests/cli_support.py (running the command line, numpy
only), tests/plan_tables.py (planned tensor tables, numpy and hypothesis),
tests/upstream_runs.py (running a case through upstream's classes and ours),
tests/exir_cases.py (inputs of exir's planners), tests/exir_runs.py (an input through
exir's planner and ours) and tests/lowered_models.py (real models through Cadence's
compiler); the last four need torch and executorch.

Markers (registered in pyproject.toml, ``--strict-markers``): ``executorch`` for tests
that need torch and executorch (their modules skip with the reason when executorch is not
installed), ``slow`` for tests of minutes, deselected by default and selected with
``-m slow``.
"""

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

# Make `import cases` work whatever pytest's import mode is.
sys.path.insert(0, str(Path(__file__).parent))

from cli_support import SMALL_CSV


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    """tests/cli_support.py's ``SMALL_CSV``, written to a file of the test's own."""
    path = tmp_path / "small.csv"
    path.write_text(SMALL_CSV)
    return path


@pytest.fixture(scope="session")
def lowered() -> dict[str, Any]:
    """The session's models lowered with Cadence's compiler, by name: a cache that
    tests/lowered_models.py's ``edge_program`` fills and hands out only as deep copies
    (lowering is the slow part; every plan then runs on a program of its own)."""
    return {}


EXECUTORCH_MISSING = not all(importlib.util.find_spec(name) for name in ("torch", "executorch"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``executorch`` skip, saying why, where torch or executorch is missing."""
    if not EXECUTORCH_MISSING:
        return
    skip = pytest.mark.skip(
        reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"'
    )
    for item in items:
        if item.get_closest_marker("executorch") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _cadence_preserve_ops_kept_small() -> Any:
    """executorch 1.5.1's edge verifier extends the preserve-ops list it is handed with the
    compile config's, which Cadence's compiler passes as one module-level list
    (``compiler.TO_EDGE_PRESERVE_OPS``): every Cadence lowering makes it four times longer,
    and a session that lowers a few dozen models runs out of memory. Growth only repeats
    its entries, so keeping each once restores it."""
    yield
    compiler = sys.modules.get("executorch.backends.cadence.aot.compiler")
    preserve_ops = getattr(compiler, "TO_EDGE_PRESERVE_OPS", None)
    if isinstance(preserve_ops, list):
        preserve_ops[:] = list(dict.fromkeys(preserve_ops))
