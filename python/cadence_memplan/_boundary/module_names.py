"""Module-level names of executorch pointed at the package's objects, and back: what
``patch_cadence`` (``cadence/patching.py``) and ``patch_exir`` (``exir/patching.py``)
share. Imports nothing of executorch itself.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["point_names_at"]


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
