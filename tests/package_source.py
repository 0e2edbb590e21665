"""The package's source, for the tests that read it rather than run it
(test_private_imports, test_upstream_names, test_layers, test_public_api,
test_spec_boundary): where it is, and where an import in it points."""

from __future__ import annotations

import ast
from pathlib import Path

import cadence_memplan

# The package as imported: the source tree in a checkout, site-packages for a wheel.
PACKAGE = Path(cadence_memplan.__file__).resolve().parent


def import_origin(path: Path, node: ast.ImportFrom, package: Path = PACKAGE) -> Path | None:
    """The directory or module file that ``node``, in the module at ``path``, imports from
    (``from .x import y`` in ``package/a/b.py`` -> ``package/a/x``), or None outside the
    package."""
    if node.level == 0:
        parts = (node.module or "").split(".")
        if parts[0] != package.name:
            return None
        base, rest = package, parts[1:]
    else:
        base = path.parent
        for _ in range(node.level - 1):
            base = base.parent
        rest = (node.module or "").split(".") if node.module else []
    for part in rest:
        base = base / part
    return base
