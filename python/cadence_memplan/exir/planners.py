"""exir's default memory planner, ``greedy``, and its banked variant, ``BankedGreedy``, with
the shared-object packing done by the C++ core (``csrc/core/exir/shared_objects.h``).

Both read every TensorSpec once into int64 arrays, plan in C++ with the GIL released, and
only then touch the specs: exactly the ``alignment`` that exir's ``spec.realign`` calls
leave, and a ``MemoryAlgoResult`` equal, field for field, to exir's. When exir fails, they
raise exir's exception with exir's message, after the same realignments exir makes before
raising. Input the arrays cannot carry exactly (symbolic shapes, lifetimes or ids that are
not ints, the same spec twice, sizes of 2^53 bytes or more, a negative ``mem_id``...) goes
to exir's own Python function instead, so the result is exir's in every case.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from executorch.exir import banked_memory_planning as exir_banked
from executorch.exir import memory_planning as exir_planning
from executorch.exir.error import InternalError
from executorch.exir.memory_planning import MemoryAlgoResult
from executorch.exir.tensor import TensorSpec

from .._boundary import upstream
from .._boundary.tensorspecs import (
    EXACT_LIMIT,
    NotExact,
    exact_int,
    exir_result,
    gc_paused,
    input_sizes,
    int64,
    read_exir_specs,
    realign,
)
from .._types import OCCUPANCIES, Occupancy
from .._validation import check_choice
from . import records

# exir_greedy, pack_exir_specs, raise_storage_error and read_exir serve search.py's best too.
__all__ = [
    "BankedGreedy",
    "ExirSpecs",
    "exir_greedy",
    "greedy",
    "pack_exir_specs",
    "raise_storage_error",
    "read_exir",
]

# ``occupancy`` is the placers' vocabulary (cadence_memplan.OCCUPANCIES), for shared
# objects: "interval": the allocations alive with each tensor, listed from an index (few
# alive at once); "tree": a tree over the shared objects finds the first free one (many
# alive at once); "scan": exir's loops in C++ (the naive baseline); "auto": per memory, the
# one its lifetimes favour (csrc/core/exir/object_pool.h, ChooseSearch).

_logger = logging.getLogger(__name__)

# exir's own greedy, the function object as this module found it on import: the fallback
# for what the arrays cannot carry. Never looked up by name when it runs, since
# patch_exir() points executorch.exir.memory_planning.greedy at ours.
exir_greedy = exir_planning.greedy


@dataclass
class ExirSpecs:
    """The specs, once, as the core's ExirTensor records (csrc/core/exir/shared_objects.h)."""

    specs: list[TensorSpec]
    tensors: npt.NDArray[np.void]


def read_exir(specs: list[TensorSpec]) -> ExirSpecs:
    """The specs read through the TensorSpec boundary (``read_exir_specs``: raises
    NotExact where exir's own function must plan them), as ExirTensor records."""
    columns = read_exir_specs(specs)
    tensors = records.exir_tensor_records(
        columns.starts,
        columns.ends,
        columns.sort_sizes,
        columns.nbytes,
        mem_ids=columns.mem_ids,
        pinned=columns.pinned,
        bases=columns.bases,
        base_offsets=columns.base_offsets,
    )
    return ExirSpecs(specs, tensors)


def _bank_records(banks: list[exir_banked.Bank]) -> npt.NDArray[np.void]:
    """A TargetMemoryMap's banks as the core's Bank records (alignment 0: the graph's)."""
    bank_records = np.zeros(len(banks), dtype=records.BANK_DTYPE)
    bank_records["mem_id"] = int64(bank.mem_id for bank in banks)
    bank_records["size"] = int64(bank.size for bank in banks)
    bank_records["alignment"] = int64(bank.alignment or 0 for bank in banks)
    return bank_records


def pack_exir_specs(
    read: ExirSpecs,
    alignment: int,
    extra_padding: int,
    graph_module: torch.fx.GraphModule,
    allow_overlapping_allocations: bool,
    occupancy: str,
    banks: npt.NDArray[np.void] | None,
) -> records.SharedObjectPacking:
    exact_int(alignment, 1, EXACT_LIMIT - 1)
    exact_int(extra_padding, 1 - EXACT_LIMIT, EXACT_LIMIT - 1)
    if banks is not None and any(
        len(banks) and banks[field].max() >= EXACT_LIMIT
        for field in ("mem_id", "size", "alignment")
    ):
        raise NotExact  # a bank of 2^53 bytes or more: exir's Python ints
    packing = records.pack_shared_objects(
        read.tensors,
        alignment=alignment,
        allow_overlapping_allocations=bool(allow_overlapping_allocations),
        extra_padding=extra_padding,
        input_sizes=input_sizes(graph_module),
        banks=banks,
        occupancy=occupancy,
    )
    if packing.error == "overflow":
        raise NotExact
    return packing


def raise_storage_error(read: ExirSpecs, packing: records.SharedObjectPacking) -> None:
    """exir's _resolve_storage_base_specs errors (specs already realigned)."""
    if not packing.error:
        return
    if packing.error == "unresolvable_storage":
        bases = read.tensors["base"]
        unresolved = [
            read.specs[index]
            for index in packing.visit_order.tolist()
            if bases[index] != records.NO_STORAGE_BASE and packing.objects[index] < 0
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


def greedy(
    alignment: int,
    specs: Iterable[TensorSpec],
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    extra_padding: int = 0,
    *,
    allow_overlapping_allocations: bool = True,
    occupancy: Occupancy = "auto",
) -> MemoryAlgoResult:
    """exir's ``executorch.exir.memory_planning.greedy``, with the same result, side effects
    and exceptions, in time about linear in the number of specs.

    ``occupancy="scan"`` runs exir's loops over shared objects and allocations in C++ (the
    simplest correct port, for comparison); every choice gives the same result."""
    check_choice("occupancy", occupancy, OCCUPANCIES)
    spec_list = list(specs)
    try:
        with gc_paused():
            read = read_exir(spec_list)
            packing = pack_exir_specs(
                read,
                alignment,
                extra_padding,
                graph_module,
                allow_overlapping_allocations,
                occupancy,
                None,
            )
    except NotExact:
        return exir_greedy(
            alignment,
            spec_list,
            graph_module,
            graph_signature,
            extra_padding,
            allow_overlapping_allocations=allow_overlapping_allocations,
        )
    realign(spec_list, packing.final_alignment)
    if packing.error == "not_sorted":
        raise AssertionError("Allocation specs are not sorted")
    raise_storage_error(read, packing)
    with gc_paused():
        result = exir_result(read.specs, packing)
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
        occupancy: Occupancy = "auto",
    ) -> None:
        super().__init__(target, allow_overlapping_allocations)
        check_choice("occupancy", occupancy, OCCUPANCIES)
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
            with gc_paused():
                read = read_exir(all_specs)
                packing = pack_exir_specs(
                    read,
                    alignment,
                    extra_padding,
                    graph_module,
                    self.allow_overlapping_allocations,
                    self.occupancy,
                    _bank_records(banks),
                )
        except NotExact:
            # The checks and realignments above are idempotent: exir repeats them.
            return super().__call__(
                alignment, all_specs, graph_module, graph_signature, extra_padding
            )
        realign(all_specs, packing.final_alignment)
        if packing.error == "not_sorted":
            raise AssertionError("Allocation specs are not sorted")
        if packing.error == "pinned_does_not_fit":
            spec = all_specs[packing.error_tensor]
            mem_id = int(read.tensors["mem_id"][packing.error_tensor])  # the spec's, pinned
            bank = self.target.bank(mem_id)
            raise exir_banked.BankPlacementError(
                f"A {spec.allocated_memory}-byte buffer (shape "
                f"{list(spec.shape)}) is pinned to bank {bank.name} "
                f"(mem_id={mem_id}), which has {packing.error_value} of "
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
        raise_storage_error(read, packing)
        with gc_paused():
            result = exir_result(read.specs, packing)
        upstream.check_bank_capacity(self, result.bufsizes)
        _logger.debug("banked greedy returns bufsizes: %s", result.bufsizes)
        return result
