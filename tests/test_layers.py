"""The package's layers: nothing at its root, in ``io/``, ``analysis/`` or ``cli/`` imports
torch or executorch, so a numpy-only install plans arrays and CSV files. ``cadence/``,
``exir/``, ``scheduling/`` and ``_boundary/`` import executorch; of them only ``cadence/__init__.py`` and
the ``-m`` runner ``cadence/patch.py`` must not (the runner refuses a bad
``CADENCE_MEMPLAN_ALGO`` before torch loads).

Each module is imported in a fresh interpreter where importing torch or executorch
raises, so the test holds whether or not they are installed. Importing anything else
outside the standard library and the package's declared dependencies (its metadata's
``Requires-Dist`` for this Python, extras left out) raises there too: a module that
happens to be installed here (``typing_extensions``, pulled in by the test tools) would
be missing from a user's numpy-only install.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from package_source import PACKAGE, import_origin

NEEDS_EXECUTORCH = ("cadence", "exir", "scheduling", "_boundary")
NUMPY_ONLY_THERE = ("cadence_memplan.cadence", "cadence_memplan.cadence.patch")
# staging/ is numpy-only but for the modules that read and rewrite exir graphs.
TORCH_SIDE_OF_STAGING = ("cadence_memplan.staging.graph", "cadence_memplan.staging.rewrite")

_IMPORT_ALL = """
import importlib, importlib.abc, json, sys

declared = set(json.loads(sys.argv[2]))

class Blocked(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        top = name.split(".")[0]
        if top in ("torch", "executorch"):
            raise ImportError(f"blocked: {name}")
        if top not in sys.stdlib_module_names and top not in declared:
            raise ImportError(f"not a declared dependency: {name}")
        return None

sys.meta_path.insert(0, Blocked())
failures = {}
for module in json.loads(sys.argv[1]):
    try:
        importlib.import_module(module)
    except ImportError as error:
        failures[module] = str(error)
print(json.dumps(failures))
"""


def numpy_only_modules() -> list[str]:
    """Every module that must import without torch: the root, io/, analysis/, cli/, and
    the two named above."""
    modules = list(NUMPY_ONLY_THERE)
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[0] in NEEDS_EXECUTORCH or parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(("cadence_memplan", *parts))
        if module not in TORCH_SIDE_OF_STAGING:
            modules.append(module)
    return modules


def declared_dependencies() -> list[str]:
    """The import names of the package's own dependencies on this Python (their
    distribution names: numpy, highspy, tomli), and the package itself."""
    names = ["cadence_memplan"]
    for requirement in metadata.requires("cadence-memplan") or []:
        name, _, marker = requirement.partition(";")
        if "extra" in marker or (marker and not _marker_holds(marker)):
            continue
        names.append(re.split(r"[<>=!~\[ ]", name.strip(), maxsplit=1)[0].replace("-", "_"))
    return names


def _marker_holds(marker: str) -> bool:
    """Whether a ``python_version`` marker holds here (the only kind the package uses)."""
    found = re.fullmatch(r"\s*python_version\s*(<|>=)\s*['\"](\d+)\.(\d+)['\"]\s*", marker)
    assert found, f"a dependency marker this test cannot read: {marker!r}"
    version = (int(found[2]), int(found[3]))
    return sys.version_info[:2] < version if found[1] == "<" else sys.version_info[:2] >= version


def import_failures(modules: list[str]) -> dict[str, str]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _IMPORT_ALL,
            json.dumps(modules),
            json.dumps(declared_dependencies()),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    failures: dict[str, str] = json.loads(done.stdout)
    return failures


def test_nothing_outside_cadence_exir_and_boundary_imports_torch() -> None:
    modules = numpy_only_modules()
    assert "cadence_memplan.workflow.plan" in modules
    assert "cadence_memplan.cli.main" in modules
    assert import_failures(modules) == {}


def test_the_declared_dependencies_are_read() -> None:
    declared = declared_dependencies()
    assert {"cadence_memplan", "numpy", "highspy"} <= set(declared)
    assert ("tomli" in declared) == (sys.version_info < (3, 11))
    assert "executorch" not in declared  # an extra


@pytest.mark.parametrize("module", ["cadence_memplan.cadence.algorithms", "cadence_memplan.exir"])
def test_the_check_sees_a_module_that_imports_torch(module: str) -> None:
    assert module in import_failures([module])


def package_imports(path: Path, source: str | None = None) -> set[str]:
    """The package's subpackages or root modules that the module at ``path`` imports
    (``cadence``, ``exir``...); ``source`` stands in for its text."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text() if source is None else source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        origin = import_origin(path, node)
        if origin is None:
            continue
        parts = origin.relative_to(PACKAGE).parts
        if parts:
            found.add(parts[0])
        else:  # from . import x / from .. import x, at the package's root
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize(("package", "other"), [("cadence", "exir"), ("exir", "cadence")])
def test_cadence_and_exir_do_not_import_each_other(package: str, other: str) -> None:
    offenders = [
        str(path.relative_to(PACKAGE))
        for path in sorted((PACKAGE / package).rglob("*.py"))
        if other in package_imports(path)
    ]
    assert offenders == []


def test_the_import_reader_sees_both_spellings() -> None:
    module = PACKAGE / "cadence" / "algorithms.py"
    assert "exir" in package_imports(module, "from ..exir.planners import greedy\n")
    assert "exir" in package_imports(module, "from cadence_memplan.exir import best\n")
    assert "exir" not in package_imports(module, "from .._boundary import upstream\n")
