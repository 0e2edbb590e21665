"""The TensorSpec boundary: specs read into int64 columns, and plans written back.

Every module that plans TensorSpecs (Cadence's drop-in placers in
``cadence/algorithms.py``, exir's ``greedy``/``BankedGreedy`` in ``exir/planners.py``, ``best``
in ``exir/search.py``, the storage-reuse check in ``exir/verifier.py``) reads them here,
one attribute of every spec per C-level pass (:func:`column`), and writes placements and
alignments back here (:func:`set_column`, :func:`realign`, :func:`exir_result`).

The exactness policy, written once: the arrays carry a spec only when the core's int64
arithmetic gives, to the bit, what upstream's Python gives. Anything else raises
:class:`NotExact`, and the caller hands the specs to upstream's own function (exir's
planners) or reads them one by one with errors that name the spec (Cadence's placers).
Not exact are: a subclass of TensorSpec (it may size or realign itself otherwise); a
field that is not a Python int (symbolic shapes, floats, None where a number is due); the
same spec twice; a negative or over-large ``mem_id`` (above :data:`MAX_MEM_ID`); sizes,
element counts, alignments, storage offsets, paddings and submodules' input sizes of
:data:`EXACT_LIMIT` (2^53) or more, where exir's ``math.ceil(nbytes / alignment)`` rounds
through a float; node indices (lifetimes, shifted to start at 0) of :data:`TIME_LIMIT`
(2^62) or more, and bytes above :data:`BYTE_LIMIT` (2^62, the core's own limit: sums of
two never overflow int64). No real tensor comes near any of them.
"""

from __future__ import annotations

import gc
import math
from array import array
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain, repeat
from operator import attrgetter
from typing import Any, Literal, NamedTuple, Protocol

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult
from executorch.exir.tensor import TensorSpec

from .. import api
from .._validation import MAX_BYTE_VALUE, as_int64
from . import upstream

__all__ = [
    "BYTE_LIMIT",
    "EXACT_LIMIT",
    "MAX_MEM_ID",
    "TIME_LIMIT",
    "Allocations",
    "ExirSpecs",
    "NotExact",
    "Offsets",
    "SizedLifetimes",
    "SpecArrays",
    "column",
    "element_size",
    "exact_int",
    "exir_result",
    "gc_paused",
    "input_sizes",
    "int64",
    "object_array",
    "read_cadence_specs",
    "read_exir_specs",
    "realign",
    "set_column",
    "sized_lifetimes",
]

# The limits of the policy above.
EXACT_LIMIT = 1 << 53  # bytes, elements, alignments: exir's float rounding starts here
TIME_LIMIT = 1 << 62  # the core's node indices, shifted to start at 0
BYTE_LIMIT = MAX_BYTE_VALUE  # the core's sizes, offsets and capacities
MAX_MEM_ID = 1 << 20
_EMPTY = np.zeros(0, dtype=np.int64)
_element_sizes: dict[torch.dtype, int] = {}


class NotExact(Exception):
    """The specs hold something the arrays cannot carry exactly (the module's policy):
    exir's own function plans them, or Cadence's placers read them one by one."""


def int64(values: Iterable[Any]) -> npt.NDArray[np.int64]:
    """Python ints to int64; array('q') refuses floats and None, unlike numpy's casts.
    It converts a list at about twice the speed of an iterator, so iterators are listed
    first (by a C-level loop)."""
    try:
        return np.frombuffer(
            array("q", values if type(values) is list else list(values)), dtype=np.int64
        )
    except (TypeError, OverflowError) as error:
        raise NotExact from error


@contextmanager
def gc_paused() -> Iterator[None]:
    """Reading 10^5 specs makes a few hundred thousand small objects; the collections they
    set off would traverse every spec of the graph, and cost more than the reading."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def element_size(dtype: torch.dtype) -> int:
    size = _element_sizes.get(dtype)
    if size is None:
        size = _element_sizes[dtype] = upstream.element_size(dtype)
    return size


def exact_int(value: object, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise NotExact
    return value


class SizedLifetimes(NamedTuple):
    """Plain TensorSpecs' lifetimes, exir's ``nbytes``, and ``allocated_memory`` (``nbytes``
    rounded up to the spec's alignment), as exact int64."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    nbytes: npt.NDArray[np.int64]
    allocated: npt.NDArray[np.int64]


def column(specs: list[TensorSpec], name: str) -> list[Any]:
    """One attribute of every spec, read by a C-level loop. A pass per attribute is
    faster than one pass that reads them all as a tuple per spec and transposes: on Y_1's
    62,185 specs, 24 ms for the five columns the drop-in reads against 37 ms."""
    return list(map(attrgetter(name), specs))


def set_column(specs: list[TensorSpec], name: str, values: list[Any]) -> None:
    """Sets one attribute of every spec, by a C-level loop."""
    deque(map(setattr, specs, repeat(name), values), maxlen=0)


def object_array(objects: Iterable[Any], count: int) -> npt.NDArray[np.object_]:
    """``count`` objects as a numpy array, for reordering them by an index array."""
    return np.fromiter(objects, dtype=object, count=count)


def sized_lifetimes(specs: list[TensorSpec]) -> SizedLifetimes:
    """What both spec readers (exir's planners, Cadence's drop-in placers) take from a
    non-empty list of specs. Raises NotExact for anything but plain TensorSpecs whose
    values the arrays carry exactly; a field of the wrong type raises what reading it
    raises (TypeError, ...), which the callers turn into NotExact."""
    if not set(map(type, specs)) <= {TensorSpec}:
        raise NotExact  # A subclass may size or realign itself differently.
    lifetimes = column(specs, "lifetime")
    if set(map(len, lifetimes)) != {2}:
        raise NotExact
    lifetime_array = int64(chain.from_iterable(lifetimes))
    # `scalar_type` is what TensorSpec.dtype returns, without the property call.
    dtypes = column(specs, "scalar_type")
    distinct_dtypes = set(dtypes)
    elements = int64(map(math.prod, map(attrgetter("shape"), specs)))
    # From 0 to 2^53 elements, times an element size, the product cannot wrap around int64.
    if elements.min() < 0 or elements.max() >= EXACT_LIMIT:
        raise NotExact
    if len(distinct_dtypes) == 1:
        nbytes = elements * element_size(dtypes[0])
    else:
        element_sizes = {dtype: element_size(dtype) for dtype in distinct_dtypes}
        nbytes = elements * int64(map(element_sizes.__getitem__, dtypes))
    alignment_array = int64(column(specs, "alignment"))
    if (
        nbytes.min() < 0
        or nbytes.max() >= EXACT_LIMIT
        or alignment_array.min() < 1
        or alignment_array.max() >= EXACT_LIMIT
    ):
        raise NotExact
    allocated = -(-nbytes // alignment_array) * alignment_array
    return SizedLifetimes(lifetime_array[0::2], lifetime_array[1::2], nbytes, allocated)


# --------------------------------------------------------------------- exir's planners


@dataclass
class ExirSpecs:
    """The specs, once, as the core's ExirTensor records (csrc/core/shared_objects.h)."""

    specs: list[TensorSpec]
    tensors: npt.NDArray[np.void]


def read_exir_specs(specs: list[TensorSpec]) -> ExirSpecs:
    """Raises NotExact for what only exir's own code reproduces, and for everything
    outside the executorch versions the package was tested with."""
    if not upstream.fast_paths_supported():
        raise NotExact
    try:
        return _read_exact_exir_specs(specs)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as error:
        raise NotExact from error  # exir raises its own error, or copes


def _read_exact_exir_specs(specs: list[TensorSpec]) -> ExirSpecs:
    count = len(specs)
    tensors = api.exir_tensors(count)
    if not count:
        return ExirSpecs(specs, tensors)
    sized = sized_lifetimes(specs)
    mem_ids = column(specs, "mem_id")
    bases = column(specs, "storage_base")
    # exir_tensors' defaults stand for unset mem_ids (memory 1, not pinned) and storage bases.
    if mem_ids.count(None) != count:
        tensors["pinned"] = [mem_id is not None for mem_id in mem_ids]
        mem_id_array = int64(1 if mem_id is None else mem_id for mem_id in mem_ids)
        if mem_id_array.min() < 0 or mem_id_array.max() > MAX_MEM_ID:
            raise NotExact
        tensors["mem_id"] = mem_id_array
    if bases.count(None) != count:
        index_of = {id(spec): index for index, spec in enumerate(specs)}
        tensors["base"] = int64(
            api.NO_STORAGE_BASE
            if base is None
            else index_of.get(id(base), api.OUTSIDE_STORAGE_BASE)
            for base in bases
        )
        offset_array = int64(
            0 if base is None else spec.storage_base_offset
            for spec, base in zip(specs, bases, strict=True)
        )
        if np.abs(offset_array).max() >= EXACT_LIMIT:
            raise NotExact
        tensors["base_offset"] = offset_array
    # Plain TensorSpecs hash by identity: a set of them counts distinct objects.
    by_identity = TensorSpec.__hash__ is object.__hash__ and TensorSpec.__eq__ is object.__eq__
    if len(set(specs) if by_identity else set(map(id, specs))) != count:
        raise NotExact  # exir visits a repeated spec twice, then fails its own count.
    tensors["lifetime"]["start"] = sized.starts
    tensors["lifetime"]["end"] = sized.ends
    tensors["sort_size"] = sized.allocated  # before realign
    tensors["nbytes"] = sized.nbytes
    return ExirSpecs(specs, tensors)


def input_sizes(graph_module: torch.fx.GraphModule) -> npt.NDArray[np.int64]:
    """graph_module.input_mem_buffer_sizes as exir's _compute_total_sizes reads it."""
    sizes = getattr(graph_module, "input_mem_buffer_sizes", None)
    if not sizes:
        return _EMPTY
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


def exir_result(read: ExirSpecs, packing: Allocations) -> MemoryAlgoResult:
    """exir's result, its spec_dict in exir's visit order; one SpecAllocResult per spec,
    as exir makes, so that no two specs share a mutable record."""
    order = packing.visit_order
    allocations = map(
        SpecAllocResult,
        packing.mem_ids[order].tolist(),
        packing.objects[order].tolist(),
        packing.offsets[order].tolist(),
    )
    ordered_specs = object_array(read.specs, len(read.specs))[order].tolist()
    return MemoryAlgoResult(
        dict(zip(ordered_specs, allocations, strict=True)), packing.bufsizes.tolist()
    )


# --------------------------------------------------------------------- Cadence's placers


class SpecArrays(NamedTuple):
    """Lifetimes, allocated sizes and mem_offsets of specs, as int64."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]


# What a spec's mem_offset means to the reader: "placed", where it must be set (already-
# placed specs); "incoming", where None stands for -1 (the specs GreedyWithHeuristic may
# keep the offset of); "ignored", where it is not read (first fit overwrites it unread).
Offsets = Literal["placed", "incoming", "ignored"]


def _read_exact_cadence_specs(specs: list[TensorSpec], offsets: Offsets) -> SpecArrays:
    """Each attribute in one pass over the specs, ``allocated_memory`` computed as exir
    does but on arrays. Raises NotExact for anything but plain TensorSpecs of exact int
    fields."""
    if not specs:
        return SpecArrays(_EMPTY, _EMPTY, _EMPTY, _EMPTY)
    try:
        sized = sized_lifetimes(specs)
        offset_array = _EMPTY
        if offsets != "ignored":
            values = column(specs, "mem_offset")
            unset = values.count(None)
            if unset and offsets == "placed":
                raise NotExact
            if unset == len(values):  # The usual case: nothing planned these specs yet.
                offset_array = np.full(len(values), -1, dtype=np.int64)
            else:
                offset_array = int64(-1 if value is None else value for value in values)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as error:
        raise NotExact from error
    return SpecArrays(sized.starts, sized.ends, sized.allocated, offset_array)


def read_cadence_specs(specs: list[TensorSpec], what: str, offsets: Offsets) -> SpecArrays:
    """The arrays the core plans from; ``allocated_memory`` is computed, so read once. Specs
    the fast path cannot read exactly are read attribute by attribute, with the errors
    naming the spec (``what``: "spec" or "already-placed spec")."""
    try:
        return _read_exact_cadence_specs(specs, offsets)
    except NotExact:
        pass
    name = what.removesuffix(" spec")
    starts: list[Any] = []
    ends: list[Any] = []
    sizes: list[int] = []
    for index, spec in enumerate(specs):
        lifetime = spec.lifetime
        if lifetime is None or len(lifetime) != 2:
            raise ValueError(
                f"{what} {index} has lifetime {lifetime!r}, expected [start, end]: {spec!r}"
            )
        starts.append(lifetime[0])
        ends.append(lifetime[1])
        sizes.append(spec.allocated_memory)
    offset_array = _EMPTY
    if offsets == "incoming":
        values = [-1 if spec.mem_offset is None else spec.mem_offset for spec in specs]
        offset_array = as_int64(f"{name} incoming offsets", values)
    elif offsets == "placed":
        offset_array = as_int64(f"{name} offsets", [spec.mem_offset for spec in specs])
    return SpecArrays(
        as_int64(f"{name} lifetime starts", starts),
        as_int64(f"{name} lifetime ends", ends),
        as_int64(f"{name} sizes", sizes),
        offset_array,
    )
