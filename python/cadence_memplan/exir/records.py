"""exir's planners on record arrays: the core's second entry point.

``api.py`` hands the core the array API's columns; this module hands it exir's tensors,
banks and finished plans as structured arrays whose dtypes are the core's own structs
(``csrc/core/exir/shared_objects.h``: ``ExirTensor``, ``Bank``, ``ReuseTensor``), so their
fields are listed only there. It imports numpy and the extension, never torch: the
TensorSpecs are read into int64 columns by ``_boundary/tensorspecs/``, and the columns
become records here (:func:`exir_tensor_records`, :func:`reuse_tensor_records`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .. import _core

__all__ = [
    "BANK_DTYPE",
    "EXIR_TENSOR_DTYPE",
    "NO_STORAGE_BASE",
    "OUTSIDE_STORAGE_BASE",
    "REUSE_TENSOR_DTYPE",
    "SharedObjectPacking",
    "StorageReuse",
    "check_storage_reuse",
    "exir_tensor_records",
    "exir_tensors",
    "pack_shared_objects",
    "reuse_tensor_records",
]

EXIR_TENSOR_DTYPE: np.dtype[np.void] = _core.EXIR_TENSOR_DTYPE
BANK_DTYPE: np.dtype[np.void] = _core.BANK_DTYPE
REUSE_TENSOR_DTYPE: np.dtype[np.void] = _core.REUSE_TENSOR_DTYPE
# ExirTensor.base for a tensor without storage_base, and for one whose storage_base is not
# among the tensors (exir reports it as unresolvable).
NO_STORAGE_BASE: int = _core.NO_STORAGE_BASE
OUTSIDE_STORAGE_BASE: int = _core.OUTSIDE_STORAGE_BASE
_NO_BANKS = np.zeros(0, dtype=BANK_DTYPE)
# The results of pack_shared_objects and check_storage_reuse, read by name.
SharedObjectPacking = _core.SharedObjectPacking
StorageReuse = _core.StorageReuse


def exir_tensors(count: int) -> npt.NDArray[np.void]:
    """``count`` ExirTensor records for :func:`pack_shared_objects` to fill: no storage
    base, memory 1, not pinned, everything else 0."""
    tensors = np.zeros(count, dtype=EXIR_TENSOR_DTYPE)
    tensors["mem_id"] = 1
    tensors["base"] = NO_STORAGE_BASE
    return tensors


def exir_tensor_records(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sort_sizes: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    *,
    mem_ids: npt.NDArray[np.int64] | None = None,
    pinned: npt.NDArray[np.bool_] | None = None,
    bases: npt.NDArray[np.int64] | None = None,
    base_offsets: npt.NDArray[np.int64] | None = None,
) -> npt.NDArray[np.void]:
    """ExirTensor records of int64 columns, one entry per tensor. None leaves a field at
    :func:`exir_tensors`' default: memory 1, not pinned, no storage base. ``bases`` holds
    the index of each tensor's storage base among the tensors, NO_STORAGE_BASE or
    OUTSIDE_STORAGE_BASE; ``base_offsets`` its ``storage_base_offset``."""
    tensors = exir_tensors(len(starts))
    tensors["lifetime"]["start"] = starts
    tensors["lifetime"]["end"] = ends
    tensors["sort_size"] = sort_sizes
    tensors["nbytes"] = nbytes
    if mem_ids is not None:
        tensors["mem_id"] = mem_ids
    if pinned is not None:
        tensors["pinned"] = pinned
    if bases is not None:
        tensors["base"] = bases
    if base_offsets is not None:
        tensors["base_offset"] = base_offsets
    return tensors


def reuse_tensor_records(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    mem_obj_ids: npt.NDArray[np.int64],
) -> npt.NDArray[np.void]:
    """ReuseTensor records of int64 columns, one entry per tensor, for
    :func:`check_storage_reuse`: ``mem_ids`` are codes (equal where the memories are),
    ``mem_obj_ids`` -1 where unset."""
    tensors = np.zeros(len(starts), dtype=REUSE_TENSOR_DTYPE)
    tensors["lifetime"]["start"] = starts
    tensors["lifetime"]["end"] = ends
    tensors["mem_id"] = mem_ids
    tensors["offset"] = offsets
    tensors["size"] = sizes
    tensors["mem_obj_id"] = mem_obj_ids
    return tensors


def pack_shared_objects(
    tensors: npt.NDArray[np.void],
    *,
    alignment: int,
    allow_overlapping_allocations: bool,
    extra_padding: int,
    input_sizes: npt.NDArray[np.int64],
    banks: npt.NDArray[np.void] | None,
    occupancy: str,
) -> SharedObjectPacking:
    """exir's shared-object packing on ExirTensor records (:func:`exir_tensors`): ``greedy``
    when ``banks`` is None, else ``BankedGreedy`` over the BANK_DTYPE records (alignment 0
    = the graph's), in preference order. ``occupancy``: "auto", "interval" (the
    allocations alive with each tensor, from an index), "tree" (a tree over the objects)
    or "scan" (exir's loops in C++). The result's ``error`` is "" on success, else the name of exir's failure (``PackErrorKind`` in
    csrc/core/exir/shared_objects.h) with the tensor and value its message names. Raises
    ValueError for input exir could not have produced."""
    return _core.pack_shared_objects(
        tensors=tensors,
        alignment=alignment,
        allow_overlapping_allocations=allow_overlapping_allocations,
        extra_padding=extra_padding,
        input_sizes=input_sizes,
        banks=_NO_BANKS if banks is None else banks,
        occupancy=occupancy,
    )


def check_storage_reuse(
    tensors: npt.NDArray[np.void],
    parents: npt.NDArray[np.int64],
    *,
    allow_lifetime_and_storage_overlap: bool,
    occupancy: str,
) -> StorageReuse:
    """exir's ``Verifier.verify_storage_reuse`` on REUSE_TENSOR_DTYPE records: the pairs of
    tensors whose bytes overlap (``reuse_pairs``) and whether a pair exir rejects exists
    (``violation``). ``parents`` links tensors (nodes 0..n-1) and further storage bases to
    their storage_base, -1 at a root."""
    return _core.check_storage_reuse(
        tensors=tensors,
        parents=parents,
        allow_lifetime_and_storage_overlap=allow_lifetime_and_storage_overlap,
        occupancy=occupancy,
    )
