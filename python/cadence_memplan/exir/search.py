"""``best``: an exir memory planning algorithm whose plans are never larger than exir's
``greedy``'s, and usually as small as the peak-live bound allows.

exir's ``greedy`` stacks a tensor on the highest allocation it overlaps inside a shared
object and never reuses the holes below it. ``best`` takes, for each memory (``mem_id``),
the smaller of two plans of the same specs:

- exir's ``greedy`` itself: the C++ port of ``planners.py``, whose packing is exir's to the
  byte, ``mem_obj_id`` included;
- the core's ``best`` search (``cadence_memplan.api.plan(..., algorithm="best")``) over the
  specs that own their storage, in one arena starting where greedy's does (after the
  submodules' ``input_mem_buffer_sizes``); a spec backed by another's storage
  (``storage_base``) keeps its byte offset inside its root, as greedy places it, and its
  root is planned over the lifetimes of the whole chain.

Greedy's plan wins a tie, so where ``best`` finds nothing smaller the result is greedy's
exactly, and ``MemoryPlanningAlgorithmSuite([greedy, best])`` (which keeps the first of
equal totals) writes greedy's plan.

``mem_obj_id``: exir's ``Verifier.verify_storage_reuse`` requires every two specs whose
bytes overlap to have the same ``mem_id`` and ``mem_obj_id``. In a memory planned by the
search, the specs' byte ranges are merged into runs of overlapping ranges, and each run,
in offset order, is one object: 0, 1, 2... (greedy's shared objects also lie in the order
of their ids).
"""

from __future__ import annotations

import logging
import operator
import time
from collections.abc import Iterable
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir.memory_planning import MemoryAlgoResult
from executorch.exir.tensor import TensorSpec

from .. import api
from .._boundary.tensorspecs import (
    BYTE_LIMIT,
    EXACT_LIMIT,
    TIME_LIMIT,
    NotExact,
    exir_result,
    gc_paused,
    input_sizes,
    realign,
    restore_alignments,
    saved_alignments,
)
from .._types import Budget, PlanningError
from .._validation import check_budget_ms, check_work_budget
from . import records
from .planners import ExirSpecs, exir_greedy, pack_exir_specs, raise_storage_error, read_exir

__all__ = ["best"]

_logger = logging.getLogger(__name__)


def _integer(name: str, value: object, low: int) -> int:
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    try:
        number = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, got {value!r}") from None
    if not low <= number < EXACT_LIMIT:
        raise ValueError(f"{name} must be an integer in [{low}, 2^53), got {value!r}")
    return int(number)


def _storage_roots(bases: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each spec's root: itself, or the end of its storage_base chain (chains resolved)."""
    roots = np.arange(len(bases), dtype=np.int64)
    parents = bases[roots]
    while (linked := parents >= 0).any():
        roots[linked] = parents[linked]
        parents = bases[roots]
    return roots


def _chain_lifetimes(
    read: ExirSpecs, roots: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Lifetimes under which the roots are planned: each root's own, widened to cover its
    storage-backed specs' (exir's _extend_storage_base_lifetimes does it before planning a
    graph; a direct call may not have). Empty lifetimes (start > end) widen nothing."""
    lifetimes, bases = read.tensors["lifetime"], read.tensors["base"]
    own_starts, own_ends = lifetimes["start"], lifetimes["end"]
    starts, ends = own_starts.copy(), own_ends.copy()
    children = np.flatnonzero((bases >= 0) & (own_starts <= own_ends))
    if not len(children):
        return starts, ends
    empty = np.zeros(len(starts), dtype=bool)  # storage alive only for its children
    empty[roots[children]] = True
    empty &= starts > ends
    starts[empty], ends[empty] = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    np.minimum.at(starts, roots[children], own_starts[children])
    np.maximum.at(ends, roots[children], own_ends[children])
    return starts, ends


def _overlap_objects(
    offsets: npt.NDArray[np.int64], sizes: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """Object ids for specs of one memory: runs of overlapping byte ranges, numbered in
    offset order, so that specs sharing any byte share an id."""
    order = np.argsort(offsets, kind="stable")
    starts = offsets[order]
    reach = np.maximum.accumulate(starts + sizes[order])
    first = np.ones(len(order), dtype=bool)
    first[1:] = starts[1:] >= reach[:-1]
    objects = np.empty(len(order), dtype=np.int64)
    objects[order] = np.cumsum(first) - 1
    return objects


def _search_memory(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    alignment: int,
    budget: Budget,
) -> tuple[npt.NDArray[np.int64], int, int] | None:
    """The core's best plan of one memory's roots: (offsets in the arena, arena size, work
    spent), or None where the core cannot take the instance (greedy's plan then stands)."""
    shift = min(int(starts.min()), int(ends.min()), 0)
    capacity = max(1, int(sizes.sum()))  # first fit never needs more than all of them
    if max(int(starts.max()), int(ends.max())) - shift >= TIME_LIMIT or capacity > BYTE_LIMIT:
        return None
    try:
        plan = api.plan(
            starts - shift,
            ends - shift,
            sizes,
            [capacity],
            [alignment],
            algorithm="best",
            work_budget=budget.work,
            budget_ms=budget.ms,
        )
    except (PlanningError, ValueError):
        return None
    return plan.offsets, int(plan.bufsizes[1]), plan.work


class _Replanned(NamedTuple):
    """Greedy's packing with some memories planned again (tensorspecs.Allocations)."""

    visit_order: npt.NDArray[np.int64]
    mem_ids: npt.NDArray[np.int64]
    objects: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    bufsizes: npt.NDArray[np.int64]


def _smaller_plan(
    read: ExirSpecs,
    packing: records.SharedObjectPacking,
    alignment: int,
    extra_padding: int,
    input_sizes: npt.NDArray[np.int64],
    work_budget: int,
    budget_ms: float,
) -> _Replanned:
    """Greedy's packing with each memory the search packs smaller replaced by its plan: the
    memories in order of their ids, each with the work the ones before it left."""
    work_left = work_budget
    deadline = time.perf_counter() + budget_ms / 1000
    sizes = -(-read.tensors["nbytes"] // alignment) * alignment  # allocated_memory, realigned
    bases = read.tensors["base"]
    roots = _storage_roots(bases)
    starts, ends = _chain_lifetimes(read, roots)
    inside_root = packing.offsets - packing.offsets[roots]
    offsets, objects = packing.offsets.copy(), packing.objects.copy()
    bufsizes = packing.bufsizes.copy()
    owners = np.flatnonzero(bases == records.NO_STORAGE_BASE)
    # sorted(set()), not np.unique: that imports numpy.ma on its first call.
    for mem_id in sorted(set(packing.mem_ids[owners].tolist())):
        start = int(input_sizes[mem_id]) if mem_id < len(input_sizes) else 0
        if start < 0:
            continue  # not a layout the runtime can hold: greedy's, as exir would
        members = owners[packing.mem_ids[owners] == mem_id]
        remaining_ms = max(0.0, (deadline - time.perf_counter()) * 1000)
        found = _search_memory(
            starts[members], ends[members], sizes[members], alignment,
            Budget(work_left, remaining_ms),
        )  # fmt: skip
        if found is None:
            continue
        arena_offsets, arena, work = found
        work_left = max(0, work_left - work)
        bufsize = start + arena + extra_padding
        if bufsize >= bufsizes[mem_id]:
            continue  # greedy's plan wins a tie
        root_offsets = np.zeros(len(offsets), dtype=np.int64)
        root_offsets[members] = start + arena_offsets
        in_memory = np.flatnonzero(packing.mem_ids == mem_id)
        offsets[in_memory] = root_offsets[roots[in_memory]] + inside_root[in_memory]
        objects[in_memory] = _overlap_objects(offsets[in_memory], sizes[in_memory])
        bufsizes[mem_id] = bufsize
    return _Replanned(packing.visit_order, packing.mem_ids, objects, offsets, bufsizes)


def _exir_greedy_untouched(
    alignment: int,
    spec_list: list[TensorSpec],
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    extra_padding: int,
) -> MemoryAlgoResult:
    """exir's own greedy, for specs the arrays cannot carry; when it raises, the
    alignments it changed first are put back."""
    alignments = saved_alignments(spec_list)
    try:
        return exir_greedy(alignment, spec_list, graph_module, graph_signature, extra_padding)
    except BaseException:
        restore_alignments(spec_list, alignments)
        raise


def _raise_untouched(
    spec_list: list[TensorSpec], read: ExirSpecs, packing: records.SharedObjectPacking
) -> None:
    """exir's storage error, worded with the realigned sizes exir's message shows, then
    the alignments as they were."""
    alignments = saved_alignments(spec_list)  # ints: the specs were read exactly
    try:
        realign(spec_list, packing.final_alignment)
        raise_storage_error(read, packing)
        raise AssertionError(f"unexpected packing error {packing.error!r}")
    finally:
        restore_alignments(spec_list, alignments)


def best(
    alignment: int,
    specs: Iterable[TensorSpec],
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    work_budget: int | None = None,
    budget_ms: float | None = None,
) -> MemoryAlgoResult:
    """An exir memory planning algorithm (the signature of exir's ``greedy``; returns its
    ``MemoryAlgoResult``) whose total bufsize is never larger than exir's ``greedy``'s on
    the same specs: per memory, greedy's plan or the core's ``best`` search's, the smaller
    (greedy's on a tie).

    Like exir's ``greedy`` it realigns every spec to ``alignment``, keeps preset
    ``mem_id``s, places a storage-backed spec at its ``storage_base_offset`` inside its
    base, starts each memory after the submodules' ``input_mem_buffer_sizes`` and adds
    ``extra_padding`` to each. Specs the int64 arrays cannot carry exactly are planned
    by exir's own ``greedy``. ``work_budget`` (None: the default) is the work of the search
    over all memories, ``budget_ms`` an optional wall-clock cap on it (see
    :func:`cadence_memplan.plan`). Every plan keeps lifetime-overlapping allocations
    apart within one arena; exir's ``allow_overlapping_allocations=False`` has no
    counterpart here (plan with ``greedy`` for that).

    Raises TypeError or ValueError for a bad ``alignment``, ``extra_padding`` or
    ``work_budget`` or ``budget_ms``, and exir's ``InternalError`` for storage_base chains
    exir refuses, before any spec is changed."""
    work = check_work_budget(work_budget, api.DEFAULT_WORK_BUDGET)
    cap = check_budget_ms(budget_ms)
    alignment = _integer("alignment", alignment, 1)
    extra_padding = _integer("extra_padding", extra_padding, 0)
    spec_list = list(specs)
    try:
        with gc_paused():
            read = read_exir(spec_list)
            packing = pack_exir_specs(
                read, alignment, extra_padding, graph_module, True, "auto", None
            )
            if packing.error == "not_sorted":
                # exir's greedy sorts by the sizes before realignment and then asserts
                # that they are sorted; in the order of the realigned sizes it plans.
                tensors = read.tensors.copy()
                tensors["sort_size"] = -(-tensors["nbytes"] // alignment) * alignment
                packing = pack_exir_specs(
                    ExirSpecs(read.specs, tensors), alignment, extra_padding,
                    graph_module, True, "auto", None,
                )  # fmt: skip
            submodule_sizes = input_sizes(graph_module)
    except NotExact:
        return _exir_greedy_untouched(
            alignment, spec_list, graph_module, graph_signature, extra_padding
        )
    if packing.error:
        _raise_untouched(spec_list, read, packing)
    greedy_bufsizes = packing.bufsizes.tolist()
    replanned = _smaller_plan(read, packing, alignment, extra_padding, submodule_sizes, work, cap)
    realign(spec_list, packing.final_alignment)
    with gc_paused():
        result = exir_result(read.specs, replanned)
    _logger.debug("best returns bufsizes %s (greedy's: %s)", result.bufsizes, greedy_bufsizes)
    return result
