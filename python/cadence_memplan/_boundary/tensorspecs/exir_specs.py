"""exir's ``greedy``, ``BankedGreedy`` and ``best``, and its storage-reuse check: the specs
read as exir reads them, realigned as exir realigns them, and exir's result."""

from __future__ import annotations

from collections import Counter
from itertools import repeat
from typing import Any, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult
from executorch.exir.tensor import TensorSpec

from ... import _core
from .. import upstream
from .columns import (
    BYTE_LIMIT,
    EMPTY,
    EXACT_LIMIT,
    MAX_MEM_ID,
    NotExact,
    column,
    int64,
    object_array,
    set_column,
    sized_lifetimes,
)

__all__ = [
    "NO_STORAGE_BASE",
    "OUTSIDE_STORAGE_BASE",
    "Allocations",
    "ExirColumns",
    "ReuseColumns",
    "exir_result",
    "input_sizes",
    "read_exir_specs",
    "read_reuse_specs",
    "realign",
    "restore_alignments",
    "saved_alignments",
]


# ExirColumns.bases for a spec without storage_base, and for one whose storage_base is not
# among the specs: the core's own codes (as exir/records.py has them), carried to its
# records unchanged. Read from the extension, not re-spelled.
NO_STORAGE_BASE: int = _core.NO_STORAGE_BASE
OUTSIDE_STORAGE_BASE: int = _core.OUTSIDE_STORAGE_BASE


class ExirColumns(NamedTuple):
    """exir's planners' view of the specs (:func:`read_exir_specs`), one entry per spec:
    lifetimes, ``allocated_memory`` before realignment (the visit order's key) and
    ``nbytes``; then, None where no spec sets them, the preset ``mem_id`` (1 where unset)
    and whether it is set, the index of the ``storage_base`` among the specs
    (:data:`NO_STORAGE_BASE`, :data:`OUTSIDE_STORAGE_BASE`) and ``storage_base_offset``."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sort_sizes: npt.NDArray[np.int64]
    nbytes: npt.NDArray[np.int64]
    mem_ids: npt.NDArray[np.int64] | None
    pinned: npt.NDArray[np.bool_] | None
    bases: npt.NDArray[np.int64] | None
    base_offsets: npt.NDArray[np.int64] | None


def read_exir_specs(specs: list[TensorSpec]) -> ExirColumns:
    """Raises NotExact for what only exir's own code reproduces, and for everything
    outside the executorch versions the package was tested with."""
    if not upstream.fast_paths_supported():
        raise NotExact
    try:
        return _read_exact_exir_specs(specs)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as error:
        raise NotExact from error  # exir raises its own error, or copes


def _read_exact_exir_specs(specs: list[TensorSpec]) -> ExirColumns:
    count = len(specs)
    if not count:
        return ExirColumns(EMPTY, EMPTY, EMPTY, EMPTY, None, None, None, None)
    sized = sized_lifetimes(specs)
    mem_ids = column(specs, "mem_id")
    bases = column(specs, "storage_base")
    # None stands for unset mem_ids (memory 1, not pinned) and storage bases in every spec.
    pinned = mem_id_array = base_array = offset_array = None
    if mem_ids.count(None) != count:
        pinned = np.array([mem_id is not None for mem_id in mem_ids], dtype=np.bool_)
        mem_id_array = int64(1 if mem_id is None else mem_id for mem_id in mem_ids)
        if mem_id_array.min() < 0 or mem_id_array.max() > MAX_MEM_ID:
            raise NotExact
    if bases.count(None) != count:
        index_of = {id(spec): index for index, spec in enumerate(specs)}
        base_array = int64(
            NO_STORAGE_BASE if base is None else index_of.get(id(base), OUTSIDE_STORAGE_BASE)
            for base in bases
        )
        offset_array = int64(
            0 if base is None else spec.storage_base_offset
            for spec, base in zip(specs, bases, strict=True)
        )
        if np.abs(offset_array).max() >= EXACT_LIMIT:
            raise NotExact
    # Plain TensorSpecs hash by identity: a set of them counts distinct objects.
    by_identity = TensorSpec.__hash__ is object.__hash__ and TensorSpec.__eq__ is object.__eq__
    if len(set(specs) if by_identity else set(map(id, specs))) != count:
        raise NotExact  # exir visits a repeated spec twice, then fails its own count.
    return ExirColumns(
        sized.starts,
        sized.ends,
        sized.allocated,  # before realign
        sized.nbytes,
        mem_id_array,
        pinned,
        base_array,
        offset_array,
    )


def input_sizes(graph_module: torch.fx.GraphModule) -> npt.NDArray[np.int64]:
    """graph_module.input_mem_buffer_sizes as exir's _compute_total_sizes reads it."""
    sizes = getattr(graph_module, "input_mem_buffer_sizes", None)
    if not sizes:
        return EMPTY
    if not isinstance(sizes, list):
        raise NotExact  # exir asserts it is a list, after planning
    array = int64(sizes)
    if np.abs(array).max() >= EXACT_LIMIT:
        raise NotExact
    return array


def realign(specs: list[TensorSpec], final_alignment: npt.NDArray[np.int64]) -> None:
    """What exir's spec.realign calls leave: each spec's last alignment (0: not reached).
    Set directly, as TensorSpec.realign does; its returned size is not needed."""
    if len(specs) and final_alignment.min() == final_alignment.max() != 0:
        set_column(specs, "alignment", [int(final_alignment[0])] * len(specs))
        return
    for spec, alignment in zip(specs, final_alignment.tolist(), strict=True):
        if alignment:
            spec.alignment = alignment


def saved_alignments(specs: list[Any]) -> list[Any]:
    """Each spec's ``alignment`` (None where it has none), for
    :func:`restore_alignments` to put back after exir's code or a failed realign."""
    return list(map(getattr, specs, repeat("alignment"), repeat(None)))


def restore_alignments(specs: list[Any], alignments: list[Any]) -> None:
    """Sets each spec's alignment back to what :func:`saved_alignments` read, but where it
    read None."""
    for spec, alignment in zip(specs, alignments, strict=True):
        if alignment is not None:
            spec.alignment = alignment


class Allocations(Protocol):
    """Where a packing put each spec (per spec in input order, but ``visit_order``): what
    exir_result turns into exir's result. The core's SharedObjectPacking is one."""

    @property
    def visit_order(self) -> npt.NDArray[np.int64]: ...
    @property
    def mem_ids(self) -> npt.NDArray[np.int64]: ...
    @property
    def objects(self) -> npt.NDArray[np.int64]: ...
    @property
    def offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def bufsizes(self) -> npt.NDArray[np.int64]: ...


def exir_result(specs: list[TensorSpec], packing: Allocations) -> MemoryAlgoResult:
    """exir's result, its spec_dict in exir's visit order; one SpecAllocResult per spec,
    as exir makes, so that no two specs share a mutable record."""
    order = packing.visit_order
    allocations = map(
        SpecAllocResult,
        packing.mem_ids[order].tolist(),
        packing.objects[order].tolist(),
        packing.offsets[order].tolist(),
    )
    ordered_specs = object_array(specs, len(specs))[order].tolist()
    return MemoryAlgoResult(
        dict(zip(ordered_specs, allocations, strict=True)), packing.bufsizes.tolist()
    )


class ReuseColumns(NamedTuple):
    """exir's storage-reuse check's view of planned specs (:func:`read_reuse_specs`), one
    entry per spec: lifetimes, ``mem_offset``, ``allocated_memory``, the ``mem_id`` as a
    code (equal codes for equal ids, as exir compares them), ``mem_obj_id`` (-1 where
    unset); and ``parents``, the storage chains: specs are nodes 0..n-1, storage bases
    outside them come after, -1 at a root."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    mem_obj_ids: npt.NDArray[np.int64]
    parents: npt.NDArray[np.int64]


def _plain_int(value: object) -> int:
    if type(value) is not int:
        raise NotExact
    return value


def read_reuse_specs(specs: list[TensorSpec]) -> ReuseColumns:
    """Raises NotExact where exir's own ``verify_storage_reuse`` must compare the specs:
    specs that disagree on whether ``mem_obj_id`` is set, a ``mem_obj_id`` that is not an
    int, a lifetime that is not two ints or an offset or size that is not an int (or
    whose end reaches :data:`BYTE_LIMIT`) in a memory other specs use, a storage_base
    cycle outside the specs. A spec alone in its memory is never compared by exir, so
    its fields are not read (it stands as an empty lifetime of no bytes)."""
    count = len(specs)
    mem_obj_ids = column(specs, "mem_obj_id")
    if 0 < mem_obj_ids.count(None) < count:
        raise NotExact  # exir raises "Specs do not agree ..." at its first such pair
    mem_id_codes: dict[Any, int] = {}
    mem_ids = [
        mem_id_codes.setdefault(mem_id, len(mem_id_codes)) for mem_id in column(specs, "mem_id")
    ]
    specs_per_memory = Counter(mem_ids)
    lifetimes = column(specs, "lifetime")
    mem_offsets = column(specs, "mem_offset")
    starts, ends, offsets, sizes = [], [], [], []
    for spec, lifetime, mem_offset, mem_id in zip(
        specs, lifetimes, mem_offsets, mem_ids, strict=True
    ):
        try:
            start, end = _plain_int(lifetime[0]), _plain_int(lifetime[1])
            offset, size = _plain_int(mem_offset), _plain_int(spec.allocated_memory)
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
    object_ids = int64(
        -1 if mem_obj_id is None else _plain_int(mem_obj_id) for mem_obj_id in mem_obj_ids
    )
    return ReuseColumns(
        int64(starts),
        int64(ends),
        int64(mem_ids),
        int64(offsets),
        int64(sizes),
        object_ids,
        int64(_storage_parents(specs)),
    )


def _storage_parents(specs: list[TensorSpec]) -> list[int]:
    """ReuseColumns.parents: each spec's and each further storage base's storage_base."""
    count = len(specs)
    node_of = {id(spec): index for index, spec in enumerate(specs)}
    parents = [-1] * count
    extra: list[TensorSpec] = []
    for index, base in enumerate(column(specs, "storage_base")):
        child = index
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
    return parents
