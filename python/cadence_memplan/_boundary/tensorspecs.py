"""The TensorSpec boundary: specs read into int64 columns, and plans written back.

The only module that reads or writes a TensorSpec's placement fields (``mem_id``,
``mem_offset``, ``lifetime``, ``allocated_memory``, ``alignment``, ``mem_obj_id``;
tests/test_spec_boundary.py holds it so), one function per job: Cadence's drop-in placers
(:func:`read_cadence_specs`, :func:`preset_mem_ids`, :func:`write_placements`), exir's
``greedy``/``BankedGreedy`` and ``best`` (:func:`read_exir_specs`, :func:`realign`,
:func:`saved_alignments`/:func:`restore_alignments`, :func:`exir_result`), exir's
storage-reuse check (:func:`read_reuse_specs`), the reports and plan tables
(:func:`read_placements`, :func:`placed_mask`, :func:`allocated_sizes`), submodule arenas
placed in their parent (:func:`shift_offsets`), the pass's snapshots
(:func:`save_placements`/:func:`restore_placements`), its lifetime check
(:func:`require_lifetimes`) and the reorder's fresh start (:func:`clear_lifetimes`: exir's
lifetime pass widens what a spec holds). Each reads one attribute of every spec per C-level pass
(:func:`column`) and writes by one (:func:`set_column`).

The exactness policy, written once: the arrays carry a spec only when the core's int64
arithmetic gives, to the bit, what upstream's Python gives. Anything else raises
:class:`NotExact`, and the caller hands the specs to upstream's own function (exir's
planners and reuse check) or reads them one by one with errors that name the spec
(Cadence's placers).
Not exact are: a subclass of TensorSpec (it may size or realign itself otherwise); a
field that is not a Python int (symbolic shapes, floats, None where a number is due); the
same spec twice; a negative or over-large ``mem_id`` (above :data:`MAX_MEM_ID`); sizes,
element counts, alignments, storage offsets, paddings and submodules' input sizes of
:data:`EXACT_LIMIT` (2^53) or more, where exir's ``math.ceil(nbytes / alignment)`` rounds
through a float; node indices (lifetimes, shifted to start at 0) of :data:`TIME_LIMIT`
(2^62) or more, and bytes above :data:`BYTE_LIMIT` (2^62, the core's own limit: sums of
two never overflow int64). No real tensor comes near any of them. The reuse check reads
the same way (:func:`read_reuse_specs` says what it leaves to exir). The readers that
serve no planning (reports, plan tables, the lifetime check) raise TypeError or
ValueError naming the column and entry instead, never cast a float or None. Two read
values as they are, for what is not computed with: :func:`preset_mem_ids` (compared, as
upstream compares them) and the snapshots (put back unchanged).
"""

from __future__ import annotations

import gc
import math
from array import array
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
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

from .. import _core
from .._signals import sigint_deferred
from .._validation import MAX_BYTE_VALUE, as_int64
from . import upstream

__all__ = [
    "BYTE_LIMIT",
    "EXACT_LIMIT",
    "MAX_MEM_ID",
    "NO_STORAGE_BASE",
    "OUTSIDE_STORAGE_BASE",
    "TIME_LIMIT",
    "Allocations",
    "ExirColumns",
    "NotExact",
    "Offsets",
    "Placements",
    "ReuseColumns",
    "SavedPlacements",
    "SizedLifetimes",
    "SpecArrays",
    "allocated_sizes",
    "clear_lifetimes",
    "column",
    "element_size",
    "exact_int",
    "exir_result",
    "gc_paused",
    "input_sizes",
    "int64",
    "object_array",
    "placed_mask",
    "preset_mem_ids",
    "read_cadence_specs",
    "read_exir_specs",
    "read_placements",
    "read_reuse_specs",
    "realign",
    "require_lifetimes",
    "restore_alignments",
    "restore_placements",
    "save_placements",
    "saved_alignments",
    "set_column",
    "shift_offsets",
    "sized_lifetimes",
    "write_placements",
    "written_whole",
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
        return ExirColumns(_EMPTY, _EMPTY, _EMPTY, _EMPTY, None, None, None, None)
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


def write_placements(
    specs: list[TensorSpec], mem_ids: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]
) -> None:
    """Sets each spec's ``mem_id`` and ``mem_offset``, as Python ints, by C-level loops."""
    set_column(specs, "mem_id", mem_ids.tolist())
    set_column(specs, "mem_offset", offsets.tolist())


@contextmanager
def written_whole(specs: list[TensorSpec]) -> Iterator[Callable[[], bool]]:
    """A block that writes the specs' placements (:func:`write_placements`) whole or not at
    all. A SIGINT during it is held back (``_signals.sigint_deferred``); when one came, every
    spec's ``mem_id`` and ``mem_offset`` are put back as they were before the block, and
    KeyboardInterrupt is raised when it ends: a planner that raises leaves every spec as it
    found them. Yields whether a SIGINT came, for the caller to put back its own state."""
    mem_ids, offsets = column(specs, "mem_id"), column(specs, "mem_offset")
    with sigint_deferred() as interrupted:
        yield interrupted
        if interrupted():
            set_column(specs, "mem_id", mem_ids)
            set_column(specs, "mem_offset", offsets)


def preset_mem_ids(specs: list[TensorSpec]) -> list[Any]:
    """Each spec's ``mem_id`` as it is (None, or whatever was set): values to compare, as
    upstream compares them, never to compute with, so returned unconverted."""
    return column(specs, "mem_id")


# --------------------------------------------------------------------- reports, snapshots


class Placements(NamedTuple):
    """Where specs are and when they live, as int64: ``mem_id`` and ``mem_offset`` (-1
    where unset) and the lifetime (``[0, -1]``, never alive, where its start is unset)."""

    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]


def read_placements(specs: list[TensorSpec]) -> Placements:
    """The placements of specs, planned or not. Raises TypeError naming the column and
    entry for a value that is not an integer (a float; None where a number is due), and
    what unpacking a lifetime raises for one that is not two values."""
    mem_ids = [-1 if mem_id is None else mem_id for mem_id in column(specs, "mem_id")]
    offsets = [-1 if offset is None else offset for offset in column(specs, "mem_offset")]
    starts: list[Any] = []
    ends: list[Any] = []
    for start, end in column(specs, "lifetime"):
        starts.append(0 if start is None else start)
        ends.append(-1 if start is None else end)
    return Placements(
        as_int64("spec mem_ids", mem_ids),
        as_int64("spec mem_offsets", offsets),
        as_int64("spec lifetime starts", starts),
        as_int64("spec lifetime ends", ends),
    )


def placed_mask(specs: list[TensorSpec]) -> npt.NDArray[np.bool_]:
    """Which specs have both a ``mem_id`` and a ``mem_offset``."""
    return np.array(
        [
            mem_id is not None and offset is not None
            for mem_id, offset in zip(
                column(specs, "mem_id"), column(specs, "mem_offset"), strict=True
            )
        ],
        dtype=np.bool_,
    )


def shift_offsets(specs: list[TensorSpec], shifts: npt.NDArray[np.int64]) -> None:
    """Moves each spec's ``mem_offset`` (set, an int) up by ``shifts[i]`` bytes: a
    submodule's arena placed in its parent (``_boundary/control_flow.py``)."""
    offsets = as_int64("spec mem_offsets", column(specs, "mem_offset")) + shifts
    set_column(specs, "mem_offset", offsets.tolist())


def allocated_sizes(specs: list[TensorSpec]) -> npt.NDArray[np.int64]:
    """Each spec's ``allocated_memory`` (computed on every read: read it once), as int64;
    TypeError naming the entry for one that is not an integer (a symbolic size)."""
    return as_int64("spec allocated_memory", column(specs, "allocated_memory"))


def require_lifetimes(specs: list[TensorSpec]) -> None:
    """Raises ValueError naming the first spec whose lifetime is not two numbers."""
    for index, (spec, lifetime) in enumerate(zip(specs, column(specs, "lifetime"), strict=True)):
        if lifetime is None or len(lifetime) != 2 or None in lifetime:
            raise ValueError(
                f"spec {index} has lifetime {lifetime!r}: compute lifetimes first"
                f" (executorch.exir.memory_planning.update_all_tensors_lifetime): {spec!r}"
            )


@dataclass
class SavedPlacements:
    """Specs' ``mem_id``, ``mem_offset`` and ``lifetime`` (:func:`save_placements`).
    Lifetime lists are shared between specs and also changed in place (Cadence's
    constraints widen them), so the list object is kept, to restore the sharing, along
    with a copy of what it held."""

    specs: list[TensorSpec]
    mem_ids: list[Any]
    offsets: list[Any]
    lifetimes: list[Any]
    contents: list[Any]


def _copy_lifetime(lifetime: Any) -> Any:
    return list(lifetime) if isinstance(lifetime, list) else lifetime


def save_placements(specs: list[TensorSpec]) -> SavedPlacements:
    """What :func:`restore_placements` puts back, read by a C-level pass per attribute."""
    lifetimes = column(specs, "lifetime")
    return SavedPlacements(
        specs,
        column(specs, "mem_id"),
        column(specs, "mem_offset"),
        lifetimes,
        list(map(_copy_lifetime, lifetimes)),
    )


def restore_placements(saved: SavedPlacements) -> None:
    """Puts every spec's ``mem_id``, ``mem_offset`` and ``lifetime`` back as saved: the
    same lifetime list, holding what it held."""
    for lifetime, contents in zip(saved.lifetimes, saved.contents, strict=True):
        if isinstance(lifetime, list):
            lifetime[:] = contents
    set_column(saved.specs, "mem_id", saved.mem_ids)
    set_column(saved.specs, "mem_offset", saved.offsets)
    set_column(saved.specs, "lifetime", saved.lifetimes)


def clear_lifetimes(specs: list[TensorSpec]) -> None:
    """Give every spec a new ``[None, None]`` lifetime, as exir's spec propagation does,
    so that lifetimes computed for another node order widen from nothing."""
    set_column(specs, "lifetime", [[None, None] for _ in specs])
