"""exir's ``Verifier.verify_storage_reuse`` with its pair loop in C++, output-sensitive.

exir compares every pair of planned specs in Python (and formats an f-string per pair in
its debug path), which takes minutes at tens of thousands of specs. Here the core counts
the pairs whose bytes overlap by sorting, and looks for a pair exir rejects with a sweep
(``csrc/core/exir/shared_objects.h``, ``CheckStorageReuse``). A valid plan, the common case,
never runs exir's loop. When the core finds a rejected pair, or a spec holds something the
arrays cannot carry (a ``mem_offset`` of None in a memory other specs use, a lifetime that
is not two ints, specs that disagree on whether ``mem_obj_id`` is set, a storage_base
cycle), exir's own method runs and raises its exception, with its message, for the first
pair in its order. A graph with control flow is then checked across its submodules, which
exir's check does not look into (:func:`verify_storage_reuse`).
"""

from __future__ import annotations

from typing import Any

from executorch.exir.error import InternalError
from executorch.exir.memory_planning import Verifier, collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec

from .._boundary import upstream
from .._boundary.control_flow_check import validate_control_flow
from .._boundary.tensorspecs import NotExact, read_reuse_specs
from .._types import OCCUPANCIES, Occupancy
from .._validation import check_choice
from . import records

__all__ = ["verify_storage_reuse"]


class _MemoizedSignature:
    """An ExportGraphSignature whose derived properties are computed once. exir asks for
    ``inputs_to_buffers`` and friends per node, and each ask rebuilds a dict over all the
    graph's inputs, which made collecting the specs cost more than checking them."""

    def __init__(self, signature: Any) -> None:
        self._signature = signature

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._signature, name)
        if not callable(value):
            setattr(self, name, value)  # later reads skip __getattr__
        return value


def _specs_of(verifier: Verifier) -> list[TensorSpec]:
    """The specs exir's verify_storage_reuse compares, in its order."""
    signature = verifier.graph_signature
    return list(
        collect_specs_from_nodes(
            verifier.graph_module.graph.nodes,
            None if signature is None else _MemoizedSignature(signature),
            ignore_const=True,
            ignore_graph_input=not verifier.alloc_graph_input,
            ignore_graph_output=not verifier.alloc_graph_output,
            ignore_mutable_buffers=not verifier.alloc_mutable_buffers,
            do_assertion=False,
            ignore_out_var_node=False,
            dedup=True,
        )
    )


def verify_storage_reuse(
    verifier: Verifier,
    allow_lifetime_and_storage_overlap: bool = False,
    *,
    occupancy: Occupancy = "auto",
) -> int:
    """``verifier.verify_storage_reuse(allow_lifetime_and_storage_overlap)``, fast: the
    number of spec pairs whose storage overlaps, or exir's ``InternalError`` for a pair it
    rejects. ``occupancy="scan"`` compares every pair in C++ (the naive baseline).

    exir compares the top graph's specs only. This also checks the graph's control flow
    (:func:`cadence_memplan.validate_control_flow`), and raises ``InternalError`` saying
    which tensor a submodule overwrites while it is alive, where exir's own check
    passes."""
    check_choice("occupancy", occupancy, OCCUPANCIES)
    if not upstream.fast_paths_supported():  # an untested executorch: exir's own loop
        return int(verifier.verify_storage_reuse(allow_lifetime_and_storage_overlap))
    specs = _specs_of(verifier)
    try:
        read = read_reuse_specs(specs)
        tensors = records.reuse_tensor_records(
            read.starts, read.ends, read.mem_ids, read.offsets, read.sizes, read.mem_obj_ids
        )
        found = records.check_storage_reuse(
            tensors,
            read.parents,
            allow_lifetime_and_storage_overlap=bool(allow_lifetime_and_storage_overlap),
            occupancy=occupancy,
        )
        pairs, violation = found.reuse_pairs, found.violation
    except (NotExact, OverflowError, ValueError):  # ValueError: a storage_base cycle
        violation = True
    if violation:
        # exir's loop finds the first rejected pair in its order and raises for it.
        return int(verifier.verify_storage_reuse(allow_lifetime_and_storage_overlap))
    problem = validate_control_flow(verifier.graph_module)
    if problem is not None:
        raise InternalError(f"a submodule's memory overlaps a live tensor: {problem}")
    return pairs
