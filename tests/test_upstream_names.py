"""Every private name of executorch and torch goes through _boundary/upstream.py.

The package's modules are read as source (numpy-only: nothing is imported). A private
upstream name is an import of ``_x`` (or from a ``_x`` module) of executorch or torch, an
attribute ``obj._x`` that no module of the package defines (on ``self``/``cls``: that the
module itself does not define, such as an inherited ``BankedGreedy._check_capacity``), or
a string ``"_x"`` (as ``getattr``/``object.__getattribute__`` take them) that names none
of the package's own.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from package_source import PACKAGE

BOUNDARY = PACKAGE / "_boundary" / "upstream.py"
UPSTREAM = ("executorch", "torch")
# Private by name, public by contract: namedtuple's API and argparse's option table.
STANDARD = frozenset({"_fields", "_replace", "_asdict", "_make", "_option_string_actions"})
_PRIVATE = re.compile(r"_[A-Za-z]\w*\Z")


def is_private(name: str) -> bool:
    return _PRIVATE.match(name) is not None and not name.endswith("__")


def defined_names(tree: ast.AST) -> set[str]:
    """Private names a module defines: functions, classes, assignments (to names and to
    attributes), parameters, imports of the package's own (``from ._x import ...``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            names.update((alias.asname or alias.name) for alias in node.names)
            names.update(part for part in (node.module or "").split(".") if part)
    return {name for name in names if is_private(name)}


def private_upstream_names(source: str, package_names: set[str]) -> list[str]:
    """``line: what`` for each private upstream name ``source`` uses."""
    tree = ast.parse(source)
    own = defined_names(tree)
    known = package_names | own | STANDARD
    in_f_strings = {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.ImportFrom) and node.level == 0:
            parts = (node.module or "").split(".")
            if parts[0] in UPSTREAM:
                if any(is_private(part) for part in parts):
                    found.append(f"{line}: from {node.module}")
                found += [
                    f"{line}: from {node.module} import {alias.name}"
                    for alias in node.names
                    if is_private(alias.name)
                ]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] in UPSTREAM and any(is_private(part) for part in parts):
                    found.append(f"{line}: import {alias.name}")
        elif isinstance(node, ast.Attribute) and is_private(node.attr):
            on_self = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if node.attr not in ((own | STANDARD) if on_self else known):
                found.append(f"{line}: .{node.attr}")
        elif (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and is_private(node.value)
            and node.value not in known
            and id(node) not in in_f_strings
        ):
            found.append(f"{line}: {node.value!r}")
    return found


def package_sources() -> dict[Path, str]:
    return {path: path.read_text() for path in sorted(PACKAGE.rglob("*.py"))}


def test_the_boundary_exists_and_holds_upstreams_names() -> None:
    sources = package_sources()
    assert BOUNDARY in sources
    names = set().union(*(defined_names(ast.parse(s)) for p, s in sources.items() if p != BOUNDARY))
    assert private_upstream_names(sources[BOUNDARY], names), "the boundary lost its names?"


def test_no_private_upstream_name_outside_the_boundary() -> None:
    sources = package_sources()
    trees = {path: ast.parse(source) for path, source in sources.items()}
    package_names = set().union(
        *(defined_names(tree) for path, tree in trees.items() if path != BOUNDARY)
    )
    offenders = {
        str(path.relative_to(PACKAGE)): found
        for path, source in sources.items()
        if path != BOUNDARY and (found := private_upstream_names(source, package_names))
    }
    assert offenders == {}, (
        f"private upstream names outside {BOUNDARY.relative_to(PACKAGE)}: {offenders}"
    )


@pytest.mark.parametrize(
    "source",
    [
        "from executorch.exir.memory_planning import _is_inplace_node",
        "from executorch.exir.memory_planning import greedy, _is_mutable_buffer as m",
        "from torch.fx._lazy_graph_module import LazyGraphModule",
        "import torch._guards",
        "import torch\nsize = torch._utils._element_size",
        "blocked = constraints._mem_id_blocklist",
        "view._run_guards()",
        "base = object.__getattribute__(view, '_base')",
        "class B(Upstream):\n    def f(self):\n        self._check_capacity([])",
    ],
)
def test_the_check_finds_each_kind_of_private_name(source: str) -> None:
    assert private_upstream_names(source, set()) != []


@pytest.mark.parametrize(
    "source",
    [
        "from ._validation import as_int64",
        "from executorch.exir.memory_planning import greedy",
        "class A:\n    def f(self):\n        self._x = 1\n        return self._x",
        "def _helper(): pass\nvalue = module._helper",
        "Point._fields",
        "text = '__init__'",
        "header = f'{name}_tensors'",
    ],
)
def test_the_check_passes_the_packages_own_names(source: str) -> None:
    assert private_upstream_names(source, set()) == []
