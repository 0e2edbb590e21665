"""executorch's Cadence compiler, importable on Python 3.11, and the backend config it
lowers with.

``executorch.backends.cadence.aot.compiler`` imports ``typing.override``, new in Python
3.12; on older Pythons ``typing_extensions.override`` (the same decorator) stands in.
The memory-planning modules need no such help.
"""

from __future__ import annotations

import importlib
import typing
from types import ModuleType
from typing import Any

__all__ = ["cadence_backend_config", "import_cadence_compiler"]


def import_cadence_compiler() -> ModuleType:
    if not hasattr(typing, "override"):
        import typing_extensions

        typing.override = typing_extensions.override  # type: ignore[attr-defined]
    return importlib.import_module("executorch.backends.cadence.aot.compiler")


def cadence_backend_config(memory_planning_pass: Any) -> Any:
    """The ``ExecutorchBackendConfig`` Cadence's compiler uses for ``to_executorch``, with
    ``memory_planning_pass`` as its memory planning."""
    from executorch.exir import ExecutorchBackendConfig
    from executorch.exir.passes import ToOutVarPass
    from executorch.exir.passes.sym_shape_eval_pass import ConstraintBasedSymShapeEvalPass

    return ExecutorchBackendConfig(
        memory_planning_pass=memory_planning_pass,
        emit_stacktrace=False,
        to_out_var_pass=ToOutVarPass(),
        extract_delegate_segments=False,
        sym_shape_eval_pass=ConstraintBasedSymShapeEvalPass(),
    )
