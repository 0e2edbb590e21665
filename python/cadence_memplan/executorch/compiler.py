"""executorch's Cadence compiler, importable on Python 3.11.

``executorch.backends.cadence.aot.compiler`` imports ``typing.override``, new in Python
3.12; on older Pythons ``typing_extensions.override`` (the same decorator) stands in.
The memory-planning modules need no such help.
"""

from __future__ import annotations

import importlib
import typing
from types import ModuleType

__all__ = ["import_cadence_compiler"]


def import_cadence_compiler() -> ModuleType:
    if not hasattr(typing, "override"):
        import typing_extensions

        typing.override = typing_extensions.override  # type: ignore[attr-defined]
    return importlib.import_module("executorch.backends.cadence.aot.compiler")
