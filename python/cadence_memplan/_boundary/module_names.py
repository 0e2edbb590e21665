"""Module-level names of executorch pointed at the package's objects, and back: what
``patch_cadence`` (``cadence/patching.py``) and ``patch_exir`` (``exir/patching.py``)
share, with the handle both return. Imports nothing of executorch itself.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["PatchHandle", "point_names_at"]


class PatchHandle:
    """What a patch returns; as a context manager, leaving the block calls ``undo``,
    which puts back the state from before the patch (unpatched, or patched otherwise)."""

    def __init__(self, undo: Callable[[], object]) -> None:
        self._undo = undo

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self._undo()


def point_names_at(
    package: str, replacements: dict[str, Any], current: dict[str, set[int]]
) -> None:
    """In every loaded module of ``package`` (the package itself and its submodules),
    each name that holds an object in ``current[name]`` (by identity) now holds
    ``replacements[name]``; names holding anything else are left alone."""
    for name, module in list(sys.modules.items()):
        if name != package and not name.startswith(package + "."):
            continue
        namespace = getattr(module, "__dict__", {})  # sys.modules may hold stand-ins
        for attribute, replacement in replacements.items():
            if attribute in namespace and id(namespace[attribute]) in current[attribute]:
                setattr(module, attribute, replacement)
