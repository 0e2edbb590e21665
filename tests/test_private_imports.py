"""No module of the package imports another's private names (numpy-only: source read).

A name with a leading underscore belongs to its module. What several modules share is
public in the module that owns it: the TensorSpec boundary
(``_boundary/tensorspecs/``), upstream's private names (``_boundary/upstream.py``),
the array API's vocabulary (``_types.py``, ``_validation.py``). Importing a private
module itself (``from . import _core``) is allowed; importing ``_x`` out of one is not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from package_source import PACKAGE, import_origin


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _is_module(directory: Path, name: str) -> bool:
    return (
        (directory / f"{name}.py").exists()
        or (directory / name).is_dir()
        or any(directory.glob(f"{name}.*.so"))
        or (directory / f"{name}.pyi").exists()
    )


def private_imports(path: Path, source: str, package: Path = PACKAGE) -> list[str]:
    """``line: from X import _y`` for each private name ``source`` imports from the package."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        origin = import_origin(path, node, package)
        if origin is None:
            continue
        for alias in node.names:
            if _is_private(alias.name) and not _is_module(origin, alias.name):
                found.append(
                    f"{node.lineno}: from {'.' * node.level}{node.module or ''} import {alias.name}"
                )
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    assert (PACKAGE / "api.py").exists(), f"no package source at {PACKAGE}"
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if (found := private_imports(path, path.read_text()))
    }
    assert offenders == {}


@pytest.mark.parametrize(
    "source",
    [
        "from .planners import _read_specs",
        "from ..exir.planners import column, _NotExact",
        "from cadence_memplan.exir.planners import _pack",
        "from .._validation import _private_limit",
    ],
)
def test_the_check_finds_private_imports(source: str) -> None:
    path = PACKAGE / "cadence" / "algorithms.py"
    assert private_imports(path, source) != []


@pytest.mark.parametrize(
    "source",
    [
        "from . import _core",
        "from .. import _boundary",
        "from .._boundary.tensorspecs import NotExact, read_exir_specs",
        "from executorch.exir.memory_planning import greedy",
        "from .._types import PlanningError",
    ],
)
def test_the_check_passes_public_names_and_private_modules(source: str) -> None:
    path = PACKAGE / "cadence" / "algorithms.py"
    if "_core" in source:
        path = PACKAGE / "api.py"
    assert private_imports(path, source) == []
