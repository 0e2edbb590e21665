"""exir's default memory planner, ``greedy``, and its banked variant, ``BankedGreedy``, with
the shared-object packing done by the C++ core (``csrc/core/shared_objects.h``).

Both read every TensorSpec once into int64 arrays, plan in C++ with the GIL released, and
only then touch the specs: exactly the ``alignment`` that exir's ``spec.realign`` calls
leave, and a ``MemoryAlgoResult`` equal, field for field, to exir's. When exir fails, they
raise exir's exception with exir's message, after the same realignments exir makes before
raising. Input the arrays cannot carry exactly (symbolic shapes, lifetimes or ids that are
not ints, the same spec twice, sizes of 2^53 bytes or more, a negative ``mem_id``...) goes
to exir's own Python function instead, so the result is exir's in every case.
"""

from __future__ import annotations

import gc
import logging
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
from executorch.exir import banked_memory_planning as exir_banked
from executorch.exir import memory_planning as exir_planning
from executorch.exir.error import InternalError
from executorch.exir.memory_planning import MemoryAlgoResult, SpecAllocResult
from executorch.exir.tensor import TensorSpec

from .. import api
from ..executorch import _upstream as upstream

__all__ = ["OBJECT_SEARCHES", "BankedGreedy", "ObjectSearch", "greedy"]

ObjectSearch = Literal["auto", "interval", "tree", "scan"]
# The placers' occupancy vocabulary (cadence_memplan.OCCUPANCIES), for shared objects:
# "interval": the allocations alive with each tensor, listed from an index (few alive at
# once); "tree": a tree over the shared objects finds the first free one (many alive at
# once); "scan": exir's loops in C++ (the naive baseline); "auto": per memory, the one its
# lifetimes favour (csrc/core/object_pool.h, ChooseSearch).
OBJECT_SEARCHES: tuple[ObjectSearch, ...] = ("auto", "interval", "tree", "scan")

# Beyond 2^53 bytes exir's math.ceil(nbytes / alignment) rounds through a float, which the
# integer arithmetic of the core does not reproduce; no real tensor comes near.
_EXACT_LIMIT = 1 << 53
_MAX_MEM_ID = 1 << 20
_EMPTY = np.zeros(0, dtype=np.int64)
_logger = logging.getLogger(__name__)

_element_sizes: dict[torch.dtype, int] = {}


def check_object_search(occupancy: str) -> None:
    """The one check of an ``occupancy`` argument, for the planners and the verifier."""
    if occupancy not in OBJECT_SEARCHES:
        raise ValueError(f"occupancy must be one of {OBJECT_SEARCHES}, got {occupancy!r}")


class _NotExact(Exception):
    """The specs hold something the arrays cannot carry; exir's own function plans them."""


def _int64(values: Iterable[Any]) -> npt.NDArray[np.int64]:
    """Python ints to int64; array('q') refuses floats and None, unlike numpy's casts.
    It converts a list at about twice the speed of an iterator, so iterators are listed
    first (by a C-level loop)."""
    try:
        return np.frombuffer(
            array("q", values if type(values) is list else list(values)), dtype=np.int64
        )
    except (TypeError, OverflowError) as error:
        raise _NotExact from error


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Reading 10^5 specs makes a few hundred thousand small objects; the collections they
    set off would traverse every spec of the graph, and cost more than the reading."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _element_size(dtype: torch.dtype) -> int:
    size = _element_sizes.get(dtype)
    if size is None:
        size = _element_sizes[dtype] = upstream.element_size(dtype)
    return size


def _exact_int(value: object, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise _NotExact
    return value


@dataclass
class _Specs:
    """The specs, once, as the core's ExirTensor records (csrc/core/shared_objects.h)."""

    specs: list[TensorSpec]
    tensors: npt.NDArray[np.void]


def _read_specs(specs: list[TensorSpec]) -> _Specs:
    """Raises _NotExact for what only exir's own code reproduces, and for everything
    outside the executorch versions the package was tested with."""
    if not upstream.fast_paths_supported():
        raise _NotExact
    try:
        return _read_exact_specs(specs)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as error:
        raise _NotExact from error  # exir raises its own error, or copes


class _SizedLifetimes(NamedTuple):
    """Plain TensorSpecs' lifetimes, exir's ``nbytes``, and ``allocated_memory`` (``nbytes``
    rounded up to the spec's alignment), as exact int64."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    nbytes: npt.NDArray[np.int64]
    allocated: npt.NDArray[np.int64]


def _column(specs: list[TensorSpec], name: str) -> list[Any]:
    """One attribute of every spec, read by a C-level loop. A pass per attribute is
    faster than one pass that reads them all as a tuple per spec and transposes: on Y_1's
    62,185 specs, 24 ms for the five columns the drop-in reads against 37 ms."""
    return list(map(attrgetter(name), specs))


def _set_column(specs: list[TensorSpec], name: str, values: list[Any]) -> None:
    """Sets one attribute of every spec, by a C-level loop."""
    deque(map(setattr, specs, repeat(name), values), maxlen=0)


def _object_array(objects: Iterable[Any], count: int) -> npt.NDArray[np.object_]:
    """``count`` objects as a numpy array, for reordering them by an index array."""
    return np.fromiter(objects, dtype=object, count=count)


def _sized_lifetimes(specs: list[TensorSpec]) -> _SizedLifetimes:
    """What both spec readers (exir's planners, Cadence's drop-in placers) take from a
    non-empty list of specs. Raises _NotExact for anything but plain TensorSpecs whose
    values the arrays carry exactly; a field of the wrong type raises what reading it
    raises (TypeError, ...), which the callers turn into _NotExact."""
    if not set(map(type, specs)) <= {TensorSpec}:
        raise _NotExact  # A subclass may size or realign itself differently.
    lifetimes = _column(specs, "lifetime")
    if set(map(len, lifetimes)) != {2}:
        raise _NotExact
    lifetime_array = _int64(chain.from_iterable(lifetimes))
    # `scalar_type` is what TensorSpec.dtype returns, without the property call.
    dtypes = _column(specs, "scalar_type")
    distinct_dtypes = set(dtypes)
    elements = _int64(map(math.prod, map(attrgetter("shape"), specs)))
    # From 0 to 2^53 elements, times an element size, the product cannot wrap around int64.
    if elements.min() < 0 or elements.max() >= _EXACT_LIMIT:
        raise _NotExact
    if len(distinct_dtypes) == 1:
        nbytes = elements * _element_size(dtypes[0])
    else:
        element_sizes = {dtype: _element_size(dtype) for dtype in distinct_dtypes}
        nbytes = elements * _int64(map(element_sizes.__getitem__, dtypes))
    alignment_array = _int64(_column(specs, "alignment"))
    if (
        nbytes.min() < 0
        or nbytes.max() >= _EXACT_LIMIT
        or alignment_array.min() < 1
        or alignment_array.max() >= _EXACT_LIMIT
    ):
        raise _NotExact
    allocated = -(-nbytes // alignment_array) * alignment_array
    return _SizedLifetimes(lifetime_array[0::2], lifetime_array[1::2], nbytes, allocated)


def _read_exact_specs(specs: list[TensorSpec]) -> _Specs:
    count = len(specs)
    tensors = api.exir_tensors(count)
    if not count:
        return _Specs(specs, tensors)
    sized = _sized_lifetimes(specs)
    mem_ids = _column(specs, "mem_id")
    bases = _column(specs, "storage_base")
    # exir_tensors' defaults stand for unset mem_ids (memory 1, not pinned) and storage bases.
    if mem_ids.count(None) != count:
        tensors["pinned"] = [mem_id is not None for mem_id in mem_ids]
        mem_id_array = _int64(1 if mem_id is None else mem_id for mem_id in mem_ids)
        if mem_id_array.min() < 0 or mem_id_array.max() > _MAX_MEM_ID:
            raise _NotExact
        tensors["mem_id"] = mem_id_array
    if bases.count(None) != count:
        index_of = {id(spec): index for index, spec in enumerate(specs)}
        tensors["base"] = _int64(
            api.NO_STORAGE_BASE
            if base is None
            else index_of.get(id(base), api.OUTSIDE_STORAGE_BASE)
            for base in bases
        )
        offset_array = _int64(
            0 if base is None else spec.storage_base_offset
            for spec, base in zip(specs, bases, strict=True)
        )
        if np.abs(offset_array).max() >= _EXACT_LIMIT:
            raise _NotExact
        tensors["base_offset"] = offset_array
    # Plain TensorSpecs hash by identity: a set of them counts distinct objects.
    by_identity = TensorSpec.__hash__ is object.__hash__ and TensorSpec.__eq__ is object.__eq__
    if len(set(specs) if by_identity else set(map(id, specs))) != count:
        raise _NotExact  # exir visits a repeated spec twice, then fails its own count.
    tensors["lifetime"]["start"] = sized.starts
    tensors["lifetime"]["end"] = sized.ends
    tensors["sort_size"] = sized.allocated  # before realign
    tensors["nbytes"] = sized.nbytes
    return _Specs(specs, tensors)


def _bank_records(banks: list[exir_banked.Bank]) -> npt.NDArray[np.void]:
    """A TargetMemoryMap's banks as the core's Bank records (alignment 0: the graph's)."""
    records = np.zeros(len(banks), dtype=api.BANK_DTYPE)
    records["mem_id"] = _int64(bank.mem_id for bank in banks)
    records["size"] = _int64(bank.size for bank in banks)
    records["alignment"] = _int64(bank.alignment or 0 for bank in banks)
    return records


def _input_sizes(graph_module: torch.fx.GraphModule) -> npt.NDArray[np.int64]:
    """graph_module.input_mem_buffer_sizes as exir's _compute_total_sizes reads it."""
    sizes = getattr(graph_module, "input_mem_buffer_sizes", None)
    if not sizes:
        return _EMPTY
    if not isinstance(sizes, list):
        raise _NotExact  # exir asserts it is a list, after planning
    array = _int64(sizes)
    if np.abs(array).max() >= _EXACT_LIMIT:
        raise _NotExact
    return array


def _pack(
    read: _Specs,
    alignment: int,
    extra_padding: int,
    graph_module: torch.fx.GraphModule,
    allow_overlapping_allocations: bool,
    occupancy: str,
    banks: npt.NDArray[np.void] | None,
) -> api.SharedObjectPacking:
    _exact_int(alignment, 1, _EXACT_LIMIT - 1)
    _exact_int(extra_padding, 1 - _EXACT_LIMIT, _EXACT_LIMIT - 1)
    if banks is not None and any(
        len(banks) and banks[field].max() >= _EXACT_LIMIT
        for field in ("mem_id", "size", "alignment")
    ):
        raise _NotExact  # a bank of 2^53 bytes or more: exir's Python ints
    packing = api.pack_shared_objects(
        read.tensors,
        alignment=alignment,
        allow_overlapping_allocations=bool(allow_overlapping_allocations),
        extra_padding=extra_padding,
        input_sizes=_input_sizes(graph_module),
        banks=banks,
        occupancy=occupancy,
    )
    if packing.error == "overflow":
        raise _NotExact
    return packing


def _realign(specs: list[TensorSpec], final_alignment: npt.NDArray[np.int64]) -> None:
    """What exir's spec.realign calls leave: each spec's last alignment (0: not reached).
    Set directly, as TensorSpec.realign does; its returned size is not needed."""
    if len(specs) and final_alignment.min() == final_alignment.max() != 0:
        _set_column(specs, "alignment", [int(final_alignment[0])] * len(specs))
        return
    for spec, alignment in zip(specs, final_alignment.tolist(), strict=True):
        if alignment:
            spec.alignment = alignment


def _raise_storage_error(read: _Specs, packing: api.SharedObjectPacking) -> None:
    """exir's _resolve_storage_base_specs errors (specs already realigned)."""
    if not packing.error:
        return
    if packing.error == "unresolvable_storage":
        bases = read.tensors["base"]
        unresolved = [
            read.specs[index]
            for index in packing.visit_order.tolist()
            if bases[index] != api.NO_STORAGE_BASE and packing.objects[index] < 0
        ]
        raise InternalError(
            "Circular or unresolvable storage_base dependency chain: "
            + ", ".join(f"allocated_memory={spec.allocated_memory}" for spec in unresolved)
        )
    spec = read.specs[packing.error_tensor]
    if packing.error == "negative_storage_offset":
        raise InternalError("storage_base_offset must be non-negative.")
    if packing.error == "misaligned_storage":
        raise InternalError(
            "Storage-backed TensorSpec allocation must respect alignment, got offset "
            f"{spec.storage_base_offset} inside parent with offset {packing.error_value} for "
            f"alignment {spec.alignment}."
        )
    if packing.error == "storage_does_not_fit":
        raise InternalError("Storage-backed TensorSpec allocation must fit within storage_base.")


class _Allocations(Protocol):
    """Where a packing put each spec (per spec in input order, but ``visit_order``): what
    _result turns into exir's result. The core's SharedObjectPacking is one."""

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


def _result(read: _Specs, packing: _Allocations) -> MemoryAlgoResult:
    """exir's result, its spec_dict in exir's visit order; one SpecAllocResult per spec,
    as exir makes, so that no two specs share a mutable record."""
    order = packing.visit_order
    allocations = map(
        SpecAllocResult,
        packing.mem_ids[order].tolist(),
        packing.objects[order].tolist(),
        packing.offsets[order].tolist(),
    )
    ordered_specs = _object_array(read.specs, len(read.specs))[order].tolist()
    return MemoryAlgoResult(
        dict(zip(ordered_specs, allocations, strict=True)), packing.bufsizes.tolist()
    )


def greedy(
    alignment: int,
    specs: Iterable[TensorSpec],
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    allow_overlapping_allocations: bool = True,
    occupancy: ObjectSearch = "auto",
) -> MemoryAlgoResult:
    """exir's ``executorch.exir.memory_planning.greedy``, with the same result, side effects
    and exceptions, in time about linear in the number of specs.

    ``occupancy="scan"`` runs exir's loops over shared objects and allocations in C++ (the
    simplest correct port, for comparison); every choice gives the same result."""
    check_object_search(occupancy)
    spec_list = list(specs)
    try:
        with _gc_paused():
            read = _read_specs(spec_list)
            packing = _pack(
                read,
                alignment,
                extra_padding,
                graph_module,
                allow_overlapping_allocations,
                occupancy,
                None,
            )
    except _NotExact:
        return exir_planning.greedy(
            alignment,
            spec_list,
            graph_module,
            graph_signature,
            extra_padding,
            allow_overlapping_allocations=allow_overlapping_allocations,
        )
    _realign(spec_list, packing.final_alignment)
    if packing.error == "not_sorted":
        raise AssertionError("Allocation specs are not sorted")
    _raise_storage_error(read, packing)
    with _gc_paused():
        result = _result(read, packing)
    _logger.debug("greedy algorithm returns bufsizes: %s", result.bufsizes)
    return result


class BankedGreedy(exir_banked.BankedGreedy):
    """exir's ``executorch.exir.banked_memory_planning.BankedGreedy``, with the same
    placements, bank report and errors (``BankPlacementError``), in time about linear in the
    number of specs. A subclass, so it passes wherever exir's class is expected.

    ``occupancy="scan"`` runs exir's loops in C++ instead (same result)."""

    def __init__(
        self,
        target: exir_banked.TargetMemoryMap,
        allow_overlapping_allocations: bool = True,
        *,
        occupancy: ObjectSearch = "auto",
    ) -> None:
        super().__init__(target, allow_overlapping_allocations)
        check_object_search(occupancy)
        self.occupancy = occupancy

    def __call__(
        self,
        alignment: int,
        specs: Iterable[TensorSpec],
        graph_module: torch.fx.GraphModule,
        graph_signature: Any = None,
        extra_padding: int = 0,
    ) -> MemoryAlgoResult:
        upstream.check_bank_alignments(self, alignment)
        all_specs = list(specs)
        for spec in all_specs:
            if spec.storage_base is not None:
                spec.realign(alignment)
        upstream.reject_non_cpu(self, all_specs)
        banks = self.target.banks
        try:
            with _gc_paused():
                read = _read_specs(all_specs)
                packing = _pack(
                    read,
                    alignment,
                    extra_padding,
                    graph_module,
                    self.allow_overlapping_allocations,
                    self.occupancy,
                    _bank_records(banks),
                )
        except _NotExact:
            # The checks and realignments above are idempotent: exir repeats them.
            return super().__call__(
                alignment, all_specs, graph_module, graph_signature, extra_padding
            )
        _realign(all_specs, packing.final_alignment)
        if packing.error == "not_sorted":
            raise AssertionError("Allocation specs are not sorted")
        if packing.error == "pinned_does_not_fit":
            spec = all_specs[packing.error_tensor]
            bank = self.target.bank(spec.mem_id)
            raise exir_banked.BankPlacementError(
                f"A {spec.allocated_memory}-byte buffer (shape "
                f"{list(spec.shape)}) is pinned to bank {bank.name} "
                f"(mem_id={spec.mem_id}), which has {packing.error_value} of "
                f"{bank.size} bytes left. A pinned buffer has no fallback bank."
            )
        if packing.error == "no_bank_fits":
            spec = all_specs[packing.error_tensor]
            used = packing.used.tolist()
            remaining = ", ".join(
                f"{bank.name} {bank.size - bank_used} of {bank.size} free"
                for bank, bank_used in zip(banks, used, strict=True)
            )
            raise exir_banked.BankPlacementError(
                f"No declared bank can hold a {spec.allocated_memory}-byte buffer "
                f"(shape {list(spec.shape)}): {remaining}. Give a bank more room, or "
                f"declare another one. Undeclared pools are never used as spill "
                f"targets. Target memory map: {self.target.describe()}"
            )
        _raise_storage_error(read, packing)
        with _gc_paused():
            result = _result(read, packing)
        upstream.check_bank_capacity(self, result.bufsizes)
        _logger.debug("banked greedy returns bufsizes: %s", result.bufsizes)
        return result
