"""pytest setup: the shared test helpers, and what each test needs to run.

Helpers: tests/cases.py (planning problems, numpy only), tests/upstream_runs.py (running a
case through upstream's classes and ours) and tests/lowered_models.py (real models through
Cadence's compiler); the last two need torch and executorch.

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

# Each model is lowered once per session (the slow part); every plan runs on a deep copy.
_LOWERED_PROGRAMS: dict[str, Any] = {}


@pytest.fixture
def lowered() -> dict[str, Any]:
    """Models already lowered with Cadence's compiler, by name (tests/lowered_models.py)."""
    return _LOWERED_PROGRAMS


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
