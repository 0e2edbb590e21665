"""Every private name of executorch and torch the package uses, in one place.

The package runs upstream's steps with upstream's own functions, some of them private
(exir's lifetime helpers, exir's ``_ViewSpec``, torch's ``_LazyGraphModule``, Cadence's
``_lower_ep_to_cadence``, ``MemConstraints``' blocklists, ``BankedGreedy``'s checks...).
They are imported here and only here (tests/test_upstream_names.py holds every other
module to that), under plain names; private attributes of upstream's objects are read
by the small functions below. An executorch upgrade has one place to look.

They were read against executorch 1.5.x (:data:`TESTED_RANGE`), checked at import.
Outside that range the package warns once, and the drop-in pass runs upstream's own
``run()`` (the path graphs with control flow already take) and exir's default planners
run exir's own functions; a private name that no longer imports then stands for a
function that raises, never reached on those paths.
"""

from __future__ import annotations

import importlib.metadata
import re
import warnings
from collections.abc import Callable
from typing import Any

import torch

__all__ = [
    "EXECUTORCH_VERSION",
    "GRAPH_MODULE_CODE",
    "TESTED_RANGE",
    "LazyGraphModule",
    "ViewSpec",
    "alias_inplace_result_specs",
    "aten_overload",
    "check_bank_alignments",
    "check_bank_capacity",
    "check_version",
    "contains_xnnpack_delegate",
    "deserialize_pte",
    "edge_op",
    "element_size",
    "extend_storage_base_lifetimes",
    "fast_paths_supported",
    "has_side_effects",
    "in_tested_range",
    "is_higher_order_operator",
    "is_inplace_node",
    "is_mutable_buffer",
    "lower_ep_to_cadence",
    "mem_id_blocklists",
    "reject_non_cpu",
    "run_view_guards",
    "schema_of",
    "set_alloc_node_spec",
    "set_view_unguarded",
    "spec_holder",
    "tracing_context_active",
    "view_base",
    "view_unguarded",
]

# (major, minor) of the executorch releases these names were read against.
TESTED_RANGE: tuple[tuple[int, int], ...] = ((1, 5),)
# The graph module's code attribute that torch's recompile() sets (graph_code.py stands in
# for it while the code is stale).
GRAPH_MODULE_CODE = "_code"


def _installed_version() -> str:
    try:
        return importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def in_tested_range(version: str) -> bool:
    """Whether executorch ``version`` (``"1.5.1"``, ``"1.5.0.dev20250101+cpu"``) is one
    the private names were read against."""
    match = re.match(r"(\d+)\.(\d+)", version)
    return match is not None and (int(match[1]), int(match[2])) in TESTED_RANGE


def check_version(version: str) -> bool:
    """:func:`in_tested_range`, with the one warning when it is not."""
    if in_tested_range(version):
        return True
    tested = ", ".join(f"{major}.{minor}.x" for major, minor in TESTED_RANGE)
    warnings.warn(
        f"executorch {version} is outside the range cadence_memplan was tested with"
        f" ({tested}): CadenceMemoryPlanning runs upstream's own pass around its placers,"
        " and cadence_memplan.exir's planners run exir's own functions",
        RuntimeWarning,
        stacklevel=2,
    )
    return False


EXECUTORCH_VERSION = _installed_version()
_SUPPORTED = check_version(EXECUTORCH_VERSION)


def fast_paths_supported() -> bool:
    """Whether the package's own pass and exir planners run (else upstream's own do)."""
    return _SUPPORTED


def _missing(name: str, error: Exception) -> Callable[..., Any]:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            f"executorch {EXECUTORCH_VERSION} has no {name}, which cadence_memplan needs"
        ) from error

    return missing


try:
    from executorch.exir.memory_planning import (
        _alias_inplace_result_specs as alias_inplace_result_specs,
    )
    from executorch.exir.memory_planning import (
        _contains_xnnpack_delegate as contains_xnnpack_delegate,
    )
    from executorch.exir.memory_planning import (
        _extend_storage_base_lifetimes as extend_storage_base_lifetimes,
    )
    from executorch.exir.memory_planning import _is_inplace_node as is_inplace_node
    from executorch.exir.memory_planning import _is_mutable_buffer as is_mutable_buffer
    from executorch.exir.passes.replace_view_copy_with_view_pass import _ViewSpec as ViewSpec
except ImportError as error:  # only outside the tested range, where nothing calls them
    if _SUPPORTED:
        raise
    alias_inplace_result_specs = _missing("_alias_inplace_result_specs", error)
    contains_xnnpack_delegate = _missing("_contains_xnnpack_delegate", error)
    extend_storage_base_lifetimes = _missing("_extend_storage_base_lifetimes", error)
    is_inplace_node = _missing("_is_inplace_node", error)
    is_mutable_buffer = _missing("_is_mutable_buffer", error)

    class ViewSpec:  # type: ignore[no-redef]
        """Stands for exir's ``_ViewSpec``: nothing is one, so views are read as specs."""


try:
    from torch.fx._lazy_graph_module import _LazyGraphModule as LazyGraphModule
except ImportError:  # a torch without it: no graph module is lazy

    class LazyGraphModule:  # type: ignore[no-redef]
        """Stands for torch's ``_LazyGraphModule``, which this torch does not have."""


# What exir's num_bytes_from_shape_and_dtype multiplies by (untyped in torch).
element_size: Callable[[torch.dtype], int] = torch._utils._element_size


def tracing_context_active() -> bool:
    """Whether torch is inside a tracing context (where purity follows inductor's config)."""
    return torch._guards.TracingContext.try_get() is not None


# --------------------------------------------------------------------- operators


def aten_overload(target: Any) -> Any:
    """A node target's ATen operator (``torch._ops.OpOverload``; an edge dialect op's is
    the one it wraps), or None for anything else (Python functions, higher-order ops)."""
    if isinstance(target, torch._ops.OpOverload):
        return target
    inner = getattr(target, "_op", None)
    return inner if isinstance(inner, torch._ops.OpOverload) else None


def edge_op(namespace: str, name: str) -> Any:
    """An edge dialect op, ``exir_ops.edge.<namespace>.<name>`` (``"aten"``,
    ``"clone.default"``), from exir's private ``dialects._ops``."""
    from executorch.exir.dialects._ops import ops as exir_ops

    target: Any = getattr(exir_ops.edge, namespace)
    for part in name.split("."):
        target = getattr(target, part)
    return target


def schema_of(overload: Any) -> Any:
    """An ATen operator's schema (``torch.FunctionSchema``)."""
    return overload._schema


def is_higher_order_operator(target: Any) -> bool:
    """Whether a node target is a higher-order operator (cond, map, while, scan, a
    delegate call...)."""
    return isinstance(target, torch._ops.HigherOrderOperator)


def has_side_effects(target: Any) -> bool:
    """Whether torch's FX lists a node target as side-effectful (asserts, prints,
    profiler records, collectives...)."""
    try:
        return target in torch.fx.node._side_effectful_functions
    except TypeError:  # an unhashable target
        return False


# --------------------------------------------------------------------- exir's views


def view_base(view: Any) -> Any:
    """A ``_ViewSpec``'s base, read without running its guards."""
    return object.__getattribute__(view, "_base")


def spec_holder(spec: Any) -> Any:
    """The spec that holds ``spec``'s placement and lifetime: a view's base.

    exir's ``_ViewSpec`` (memory.view nodes) forwards ``mem_id``, ``mem_offset`` and
    ``lifetime`` to its base and runs its guards on every attribute read, so the base is
    read instead (``object.__getattribute__`` reads ``_base`` without the guards)."""
    while isinstance(spec, ViewSpec):
        spec = view_base(spec)
    return spec


def view_unguarded(view: Any) -> bool:
    """Whether a ``_ViewSpec``'s guards are off, read without running them."""
    unguarded: bool = object.__getattribute__(view, "_unguarded_access")
    return unguarded


def set_view_unguarded(view: Any, unguarded: bool) -> None:
    """Turn a ``_ViewSpec``'s guards off (``True``) or back on."""
    object.__setattr__(view, "_unguarded_access", unguarded)


def run_view_guards(view: Any) -> None:
    """Run a ``_ViewSpec``'s guards once (what every read of it does)."""
    view._run_guards()


# --------------------------------------------------------------------- passes and placers


def set_alloc_node_spec(planning: Any, graph_module: torch.fx.GraphModule) -> None:
    """exir's ``MemoryPlanningPass._set_alloc_node_spec``: the alloc nodes' specs."""
    planning._set_alloc_node_spec(graph_module)


def mem_id_blocklists(placement_constraints: Any) -> dict[int, set[int]]:
    """Cadence's ``MemConstraints`` blocklists: ``{id(spec): mem ids it may not use}``."""
    blocklists: dict[int, set[int]] = placement_constraints._mem_id_blocklist
    return blocklists


def lower_ep_to_cadence(compiler: Any, exported: Any) -> Any:
    """Cadence's compiler's ``_lower_ep_to_cadence``: what
    ``export_to_executorch_gen_etrecord`` lowers an exported program with."""
    return compiler._lower_ep_to_cadence(exported)


def check_bank_alignments(planner: Any, alignment: int) -> None:
    """exir's ``BankedGreedy._check_bank_alignments``."""
    planner._check_bank_alignments(alignment)


def reject_non_cpu(planner: Any, specs: list[Any]) -> None:
    """exir's ``BankedGreedy._reject_non_cpu``."""
    planner._reject_non_cpu(specs)


def check_bank_capacity(planner: Any, bufsizes: list[int]) -> None:
    """exir's ``BankedGreedy._check_capacity``."""
    planner._check_capacity(bufsizes)


def deserialize_pte(data: bytes) -> Any:
    """exir's own reading of a ``.pte`` file's bytes: its ``PTEFile`` (the ``Program``
    dataclasses of ``executorch.exir.schema``, segments restored into it). exir keeps the
    reader in a private module; cadence_memplan.device reads programs through this."""
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(data)


def load_pt2_programs(path: Any) -> dict[str, Any]:
    """The programs a ``.pt2`` archive of several holds (torch's
    ``pt2_archive._package.load_pt2``, the reader of ``package_pt2``'s archives), by
    name, in the archive's order; raises what torch raises."""
    from torch.export.pt2_archive._package import load_pt2

    return dict(load_pt2(path).exported_programs)
