"""exir's ``Verifier.verify_storage_reuse`` with its pair loop in C++, output-sensitive.

exir compares every pair of planned specs in Python (and formats an f-string per pair in
its debug path), which takes minutes at tens of thousands of specs. Here the core counts
the pairs whose bytes overlap by sorting, and looks for a pair exir rejects with a sweep
(``csrc/core/shared_objects.h``, ``CheckStorageReuse``). A valid plan, the common case,
never runs exir's loop. When the core finds a rejected pair, or a spec holds something the
arrays cannot carry (a ``mem_offset`` of None in a memory other specs use, a lifetime that
is not two ints, specs that disagree on whether ``mem_obj_id`` is set, a storage_base
cycle), exir's own method runs and raises its exception, with its message, for the first
pair in its order.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt
from executorch.exir.memory_planning import Verifier, collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec

from .. import api
from .._boundary import upstream
from .._boundary.tensorspecs import BYTE_LIMIT, NotExact
from .._types import OCCUPANCIES, Occupancy
from .._validation import check_choice

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


def _as_int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise NotExact
    return value


def _records(specs: list[TensorSpec]) -> tuple[npt.NDArray[np.void], npt.NDArray[np.int64]]:
    """The specs as the core's ReuseTensor records, and their storage chains' parents."""
    count = len(specs)
    if len({spec.mem_obj_id is None for spec in specs}) > 1:
        raise NotExact  # exir raises "Specs do not agree ..." at its first such pair
    mem_id_codes: dict[Any, int] = {}
    mem_ids = [mem_id_codes.setdefault(spec.mem_id, len(mem_id_codes)) for spec in specs]
    specs_per_memory = Counter(mem_ids)
    starts, ends, offsets, sizes, mem_obj_ids = [], [], [], [], []
    checked_mem_ids = []
    for spec, mem_id in zip(specs, mem_ids, strict=True):
        lifetime = spec.lifetime
        try:
            start, end = _as_int(lifetime[0]), _as_int(lifetime[1])
            offset, size = _as_int(spec.mem_offset), _as_int(spec.allocated_memory)
            if offset < 0 or size < 0 or offset + size >= BYTE_LIMIT:
                raise NotExact
        except (NotExact, TypeError, IndexError):
            if specs_per_memory[mem_id] > 1:
                raise NotExact from None  # exir asserts on it, or needs Python ints
            # Alone in its memory: exir never compares its storage, nor its lifetime.
            start, end, offset, size = 0, -1, 0, 0
        starts.append(start)
        ends.append(end)
        offsets.append(offset)
        sizes.append(size)
        mem_obj_ids.append(-1 if spec.mem_obj_id is None else _as_int(spec.mem_obj_id))
        checked_mem_ids.append(mem_id)
    # Storage chains: the specs are nodes 0..count-1, bases outside them come after.
    node_of = {id(spec): index for index, spec in enumerate(specs)}
    parents = [-1] * count
    extra: list[TensorSpec] = []
    for index, spec in enumerate(specs):
        child, base = index, spec.storage_base
        while base is not None:
            known = node_of.get(id(base))
            if known is not None:
                parents[child] = known
                break
            node = node_of[id(base)] = count + len(extra)
            extra.append(base)
            parents.append(-1)
            parents[child] = node
            if len(extra) > 4 * count + 16:
                raise NotExact  # a cycle outside the specs
            child, base = node, base.storage_base
    tensors = np.zeros(count, dtype=api.REUSE_TENSOR_DTYPE)
    tensors["lifetime"]["start"] = starts
    tensors["lifetime"]["end"] = ends
    tensors["mem_id"] = checked_mem_ids
    tensors["offset"] = offsets
    tensors["size"] = sizes
    tensors["mem_obj_id"] = mem_obj_ids
    return tensors, np.array(parents, dtype=np.int64)


def verify_storage_reuse(
    verifier: Verifier,
    allow_lifetime_and_storage_overlap: bool = False,
    *,
    occupancy: Occupancy = "auto",
) -> int:
    """``verifier.verify_storage_reuse(allow_lifetime_and_storage_overlap)``, fast: the
    number of spec pairs whose storage overlaps, or exir's ``InternalError`` for a pair it
    rejects. ``occupancy="scan"`` compares every pair in C++ (the naive baseline)."""
    check_choice("occupancy", occupancy, OCCUPANCIES)
    if not upstream.fast_paths_supported():  # an untested executorch: exir's own loop
        return int(verifier.verify_storage_reuse(allow_lifetime_and_storage_overlap))
    specs = _specs_of(verifier)
    try:
        tensors, parents = _records(specs)
        found = api.check_storage_reuse(
            tensors,
            parents,
            allow_lifetime_and_storage_overlap=bool(allow_lifetime_and_storage_overlap),
            occupancy=occupancy,
        )
        pairs, violation = found.reuse_pairs, found.violation
    except (NotExact, OverflowError, ValueError):  # ValueError: a storage_base cycle
        violation = True
    if violation:
        # exir's loop finds the first rejected pair in its order and raises for it.
        return int(verifier.verify_storage_reuse(allow_lifetime_and_storage_overlap))
    return pairs
