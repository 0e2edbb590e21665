"""The TensorSpec boundary: specs read into int64 columns, and plans written back.

The only package that reads or writes a TensorSpec's placement fields (``mem_id``,
``mem_offset``, ``lifetime``, ``allocated_memory``, ``alignment``, ``mem_obj_id``;
tests/test_spec_boundary.py holds it so), one function per job and one module per
consumer: Cadence's drop-in placers (``cadence_specs.py``: :func:`read_cadence_specs`,
:func:`preset_mem_ids`, :func:`write_placements` inside :func:`written_whole`), exir's
``greedy``/``BankedGreedy`` and ``best`` and its storage-reuse check (``exir_specs.py``:
:func:`read_exir_specs`, :func:`realign`, :func:`saved_alignments`/
:func:`restore_alignments`, :func:`exir_result`, :func:`read_reuse_specs`), the reports
and plan tables, submodule arenas and the pass's snapshots (``placements.py``:
:func:`read_placements`, :func:`placed_mask`, :func:`allocated_sizes`,
:func:`shift_offsets`, :func:`save_placements`/:func:`restore_placements`,
:func:`require_lifetimes`, and the reorder's fresh start :func:`clear_lifetimes`: exir's
lifetime pass widens what a spec holds). Each reads one attribute of every spec per C-level
pass (``columns.py``: :func:`column`) and writes by one (:func:`set_column`); callers import
from the package.

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

from .cadence_specs import (
    Offsets,
    SpecArrays,
    preset_mem_ids,
    read_cadence_specs,
    write_placements,
    written_whole,
)
from .columns import (
    BYTE_LIMIT,
    EXACT_LIMIT,
    MAX_MEM_ID,
    TIME_LIMIT,
    NotExact,
    SizedLifetimes,
    column,
    element_size,
    exact_int,
    gc_paused,
    int64,
    object_array,
    set_column,
    sized_lifetimes,
)
from .exir_specs import (
    NO_STORAGE_BASE,
    OUTSIDE_STORAGE_BASE,
    Allocations,
    ExirColumns,
    ReuseColumns,
    exir_result,
    input_sizes,
    read_exir_specs,
    read_reuse_specs,
    realign,
    restore_alignments,
    saved_alignments,
)
from .placements import (
    Placements,
    SavedPlacements,
    allocated_sizes,
    clear_lifetimes,
    placed_mask,
    read_placements,
    require_lifetimes,
    restore_placements,
    save_placements,
    shift_offsets,
)

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
