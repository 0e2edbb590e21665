"""Inputs for exir's own planners (``executorch.exir.memory_planning.greedy``,
``executorch.exir.banked_memory_planning.BankedGreedy``, ``Verifier.verify_storage_reuse``):
described by hand and generated, and built into TensorSpecs (needs torch and executorch).
tests/exir_runs.py runs them through exir's function and ours.

A case is a plain description (:class:`GreedyCase`, :class:`BankedCase`): specs by index,
each with its dtype, shape, lifetime, incoming alignment, preset ``mem_id``, storage base
(another spec's index) and device; the planner's arguments; the graph module's
``input_mem_buffer_sizes``. :func:`build_specs` makes the TensorSpecs once; each run gets
a deep copy of them (which keeps the ``storage_base`` links between the copies) and a
graph module of its own (a GraphModule's deep copy drops ``input_mem_buffer_sizes``).
``NAMED_GREEDY_CASES`` are hand-written cases, one feature of exir's greedy each;
:func:`generate_greedy_case` and :func:`generate_banked_case` mix them at random.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from cases import Chooser, generate_lifetime, generate_size
from executorch.exir.banked_memory_planning import Bank, TargetMemoryMap
from executorch.exir.schema import DeviceType
from executorch.exir.tensor import TensorSpec
from torch.fx import Graph, GraphModule

DTYPES = {"uint8": torch.uint8, "float32": torch.float32, "int64": torch.int64}
GRAPH_ALIGNMENTS = (1, 8, 16, 24, 64)
# Incoming spec alignments other than exir's default (16): realign then reorders sizes,
# which trips greedy's "Allocation specs are not sorted" assertion.
INCOMING_ALIGNMENTS = (1, 16, 64)
# A storage base outside the planned specs: the spec that names it can never be resolved.
EXTERNAL_BASE = -1


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class SpecDescription:
    """One TensorSpec before planning."""

    numel: int
    lifetime: tuple[int | None, int | None]
    dtype: str = "uint8"
    rows: int = 1  # shape (rows, numel // rows) when > 1 and it divides numel
    alignment: int = 16  # spec.alignment before planning (TensorSpec's default)
    mem_id: int | None = None
    storage_base: int | None = None  # a spec index, or EXTERNAL_BASE
    storage_base_offset: int = 0
    device: str = "CPU"

    @property
    def nbytes(self) -> int:
        return self.numel * DTYPES[self.dtype].itemsize

    @property
    def shape(self) -> list[int]:
        if self.rows > 1 and self.numel % self.rows == 0:
            return [self.rows, self.numel // self.rows]
        return [self.numel]


@dataclass(frozen=True)
class GreedyCase:
    """``greedy(alignment, specs, graph_module, None, extra_padding,
    allow_overlapping_allocations=...)`` with the specs in ``order`` (indices)."""

    specs: tuple[SpecDescription, ...]
    alignment: int = 16
    extra_padding: int = 0
    allow_overlapping_allocations: bool = True
    input_mem_buffer_sizes: tuple[int, ...] | None = None
    order: tuple[int, ...] | None = None  # None: 0..n-1; an index may repeat

    def visit_order(self) -> tuple[int, ...]:
        return tuple(range(len(self.specs))) if self.order is None else self.order


@dataclass(frozen=True)
class BankDescription:
    name: str
    size: int
    mem_id: int
    alignment: int | None = None


@dataclass(frozen=True)
class BankedCase:
    """``BankedGreedy(TargetMemoryMap(banks), allow_overlapping_allocations)`` called on
    the greedy case's specs, alignment, graph module and extra_padding."""

    greedy: GreedyCase
    banks: tuple[BankDescription, ...]

    def target(self) -> TargetMemoryMap:
        return TargetMemoryMap([Bank(b.name, b.size, b.mem_id, b.alignment) for b in self.banks])


def spec(numel: int, lifetime: tuple[int | None, int | None], **fields: Any) -> SpecDescription:
    """Shorthand for the hand-written cases."""
    return SpecDescription(numel, lifetime, **fields)


def tied(count: int, lifetime: tuple[int, int], numel: int = 32) -> list:
    return [spec(numel, lifetime) for _ in range(count)]


# Each case shows one feature of exir's greedy; the name says which. tests/test_exir_greedy.py
# holds ours to exir's on each, tests/test_exir_best.py holds best to greedy.
NAMED_GREEDY_CASES: dict[str, GreedyCase] = {
    "no specs": GreedyCase(()),
    "one spec": GreedyCase((spec(10, (0, 3)),)),
    "ties, disjoint lifetimes: the later spec is visited first": GreedyCase(
        (*tied(3, (0, 1)), *tied(3, (2, 3)))
    ),
    "ties, all overlapping": GreedyCase(tuple(tied(5, (0, 9)))),
    "ties with a shuffled order": GreedyCase(
        (spec(32, (0, 1)), spec(32, (4, 5)), spec(32, (2, 3)), spec(16, (0, 5))),
        order=(2, 0, 3, 1),
    ),
    "zero sizes": GreedyCase(
        (spec(0, (0, 5)), spec(64, (0, 2)), spec(0, (1, 1)), spec(0, (6, 7)), spec(32, (3, 4)))
    ),
    "zero sizes only": GreedyCase(tuple(spec(0, (i, i + 1)) for i in range(4))),
    "touching lifetimes share a node": GreedyCase(
        (spec(48, (0, 2)), spec(48, (2, 4)), spec(48, (4, 6)))
    ),
    "adjacent lifetimes reuse the object": GreedyCase(
        (spec(48, (0, 2)), spec(48, (3, 4)), spec(16, (5, 9)))
    ),
    "empty lifetimes (start > end)": GreedyCase(
        (spec(64, (5, 3)), spec(64, (4, 4)), spec(32, (9, 0)), spec(16, (1, 2)))
    ),
    "second pass: above the largest overlapping end, inside the object": GreedyCase(
        (spec(256, (0, 1)), spec(64, (2, 5)), spec(64, (3, 6)), spec(64, (4, 8)))
    ),
    "second pass: does not fit, a new object": GreedyCase(
        (spec(96, (0, 1)), spec(64, (2, 5)), spec(64, (3, 6)))
    ),
    "overlapping allocations off": GreedyCase(
        (spec(256, (0, 1)), spec(64, (2, 5)), spec(64, (3, 6)), spec(64, (4, 8))),
        allow_overlapping_allocations=False,
    ),
    "preset mem_ids, the default 1 and a gap": GreedyCase(
        (
            spec(64, (0, 3), mem_id=3),
            spec(32, (0, 3)),
            spec(32, (1, 2), mem_id=1),
            spec(16, (0, 9), mem_id=3),
            spec(8, (4, 5), mem_id=2),
        )
    ),
    "preset mem_id 0": GreedyCase((spec(64, (0, 3), mem_id=0), spec(32, (0, 3)))),
    "dtypes and 2-D shapes": GreedyCase(
        (
            spec(12, (0, 2), dtype="float32", rows=3),
            spec(6, (1, 3), dtype="int64", rows=2),
            spec(48, (2, 4)),
        )
    ),
    # 2^61 elements of 8 bytes: 2^64 bytes, which int64 arithmetic would wrap to 0.
    "bytes past 2^64: exir's Python ints": GreedyCase(
        (spec(2**61, (0, 1), dtype="int64"), spec(32, (0, 1)))
    ),
    "alignment 1": GreedyCase((spec(3, (0, 1)), spec(5, (1, 2)), spec(7, (2, 3))), alignment=1),
    "alignment 24 (not a power of two)": GreedyCase(
        (spec(30, (0, 1)), spec(10, (1, 2)), spec(50, (0, 3))), alignment=24
    ),
    "extra_padding": GreedyCase((spec(64, (0, 1)), spec(64, (1, 2), mem_id=2)), extra_padding=13),
    "input_mem_buffer_sizes": GreedyCase(
        (spec(64, (0, 1)), spec(64, (1, 2), mem_id=2), spec(16, (0, 0), mem_id=3)),
        input_mem_buffer_sizes=(7, 100, 200),
    ),
    "input_mem_buffer_sizes empty": GreedyCase((spec(64, (0, 1)),), input_mem_buffer_sizes=()),
    "input_mem_buffer_sizes and extra_padding": GreedyCase(
        (spec(64, (0, 1)), spec(32, (0, 1))), extra_padding=5, input_mem_buffer_sizes=(0, 40)
    ),
    "storage-backed spec inside its base": GreedyCase(
        (
            spec(40, (0, 1), dtype="float32"),
            spec(2, (0, 1), dtype="float32", storage_base=0, storage_base_offset=16),
        ),
        alignment=1,
    ),
    "storage chain, listed child first": GreedyCase(
        (
            spec(2, (0, 1), storage_base=1, storage_base_offset=4),
            spec(6, (0, 1), storage_base=2, storage_base_offset=8),
            spec(16, (0, 1)),
            spec(16, (0, 1)),
        ),
        alignment=1,
    ),
    "storage-backed spec takes its base's mem_id": GreedyCase(
        (
            spec(64, (0, 4), mem_id=2),
            spec(16, (1, 2), mem_id=3, storage_base=0, storage_base_offset=32),
        ),
    ),
    "storage base that is not planned: unresolvable": GreedyCase(
        (spec(64, (0, 4)), spec(16, (1, 2), storage_base=EXTERNAL_BASE)),
    ),
    "storage cycle: unresolvable": GreedyCase(
        (spec(64, (0, 4), storage_base=1), spec(64, (1, 2), storage_base=0), spec(8, (0, 0))),
    ),
    "storage offset misaligned": GreedyCase(
        (spec(64, (0, 4)), spec(16, (1, 2), storage_base=0, storage_base_offset=8)),
    ),
    "storage offset negative": GreedyCase(
        (spec(64, (0, 4)), spec(16, (1, 2), storage_base=0, storage_base_offset=-16)),
    ),
    "storage-backed spec overruns its base": GreedyCase(
        (spec(64, (0, 4)), spec(48, (1, 2), storage_base=0, storage_base_offset=32)),
    ),
    "realign reorders sizes: exir's 'not sorted' assertion": GreedyCase(
        (spec(1, (0, 1), alignment=64), spec(40, (2, 3), alignment=1)),
    ),
    "alignment 0": GreedyCase((spec(64, (0, 1)), spec(32, (2, 3))), alignment=0),
    "a spec listed twice": GreedyCase((spec(64, (0, 1)), spec(32, (2, 3))), order=(0, 1, 0)),
    "a lifetime of None": GreedyCase((spec(64, (0, 1)), spec(32, (None, None)))),
    "input_mem_buffer_sizes not a list": GreedyCase(
        (spec(64, (0, 1)),), input_mem_buffer_sizes=(1, 2)
    ),
}


# --------------------------------------------------------------------------- building


def build_specs(descriptions: Sequence[SpecDescription]) -> list[TensorSpec]:
    specs = []
    for description in descriptions:
        tensor_spec = TensorSpec(DTYPES[description.dtype], torch.Size(description.shape))
        tensor_spec.lifetime = list(description.lifetime)
        tensor_spec.alignment = description.alignment
        tensor_spec.mem_id = description.mem_id
        tensor_spec.device = getattr(DeviceType, description.device)
        specs.append(tensor_spec)
    for tensor_spec, description in zip(specs, descriptions, strict=True):
        if description.storage_base is None:
            continue
        if description.storage_base == EXTERNAL_BASE:
            outside = TensorSpec(torch.uint8, torch.Size([description.numel + 64]))
            outside.lifetime = list(description.lifetime)
            tensor_spec.storage_base = outside
        else:
            tensor_spec.storage_base = specs[description.storage_base]
        tensor_spec.storage_base_offset = description.storage_base_offset
    return specs


def graph_module_with(input_mem_buffer_sizes: Sequence[int] | None) -> GraphModule:
    graph_module = GraphModule(torch.nn.Module(), Graph())
    if input_mem_buffer_sizes is not None:
        graph_module.input_mem_buffer_sizes = list(input_mem_buffer_sizes)
    return graph_module


# --------------------------------------------------------------------------- generators


def _permutation(choose: Chooser, count: int) -> tuple[int, ...]:
    order = list(range(count))
    for i in range(count - 1, 0, -1):
        j = choose.integer(0, i)
        order[i], order[j] = order[j], order[i]
    return tuple(order)


def _aligned(nbytes: int, alignment: int) -> int:
    return -(-nbytes // alignment) * alignment


def _storage_backed(
    choose: Chooser, base_index: int, base: SpecDescription, alignment: int, horizon: int
) -> SpecDescription:
    """A uint8 spec inside ``base``: usually aligned and fitting, sometimes neither."""
    base_bytes = _aligned(base.nbytes, alignment)
    slots = base_bytes // alignment
    offset = choose.integer(0, max(0, slots - 1)) * alignment if slots else 0
    numel = choose.integer(0, max(0, base_bytes - offset))
    if choose.chance(0.1):  # unaligned offset
        offset += choose.integer(1, alignment) if alignment > 1 else 0
    if choose.chance(0.1):  # overruns its base
        numel += choose.integer(1, 64)
    start, end = generate_lifetime(choose, [], horizon)
    if choose.chance(0.5) and base.lifetime[0] is not None:  # the in-place case: base's lifetime
        start, end = base.lifetime  # type: ignore[assignment]
    return SpecDescription(
        numel,
        (start, end),
        alignment=base.alignment,
        mem_id=choose.choice([None, None, base.mem_id, 2]),
        storage_base=base_index,
        storage_base_offset=offset,
    )


def generate_greedy_case(choose: Chooser, max_specs: int = 40) -> GreedyCase:
    """A random input of exir's greedy: ties, zero sizes, empty, identical and touching
    lifetimes; sometimes preset mem_ids, storage-backed specs (chains, bases outside the
    specs, cycles, misaligned or overrunning), incoming alignments that realign reorders,
    extra_padding, input_mem_buffer_sizes, overlapping allocations off, a shuffled order."""
    count = choose.integer(0, max_specs)
    alignment = choose.choice(GRAPH_ALIGNMENTS)
    horizon = choose.integer(0, 2 * count + 2)
    tie_pool = [choose.integer(1, 300) for _ in range(3)]
    presets = choose.chance(0.3)
    mixed_alignments = choose.chance(0.1)
    storage = choose.chance(0.3)
    specs: list[SpecDescription] = []
    lifetimes: list[tuple[int, int]] = []
    for _ in range(count):
        if storage and specs and choose.chance(0.25):
            base_index = choose.integer(0, len(specs) - 1)
            described = _storage_backed(choose, base_index, specs[base_index], alignment, horizon)
            if choose.chance(0.05):
                described = replace(described, storage_base=EXTERNAL_BASE)
            specs.append(described)
            continue
        dtype = choose.choice(["uint8", "uint8", "float32", "int64"])
        lifetime = generate_lifetime(choose, lifetimes, horizon)
        lifetimes.append(lifetime)
        specs.append(
            SpecDescription(
                generate_size(choose, tie_pool),  # the element count
                lifetime,
                dtype=dtype,
                rows=choose.choice([1, 1, 2, 3]),
                alignment=choose.choice(INCOMING_ALIGNMENTS) if mixed_alignments else 16,
                mem_id=choose.choice([None, None, 1, 2, 3]) if presets else None,
            )
        )
    if storage and count >= 2 and choose.chance(0.1):  # a cycle: 0 -> 1 -> 0
        specs[0] = replace(specs[0], storage_base=1, storage_base_offset=0)
        specs[1] = replace(specs[1], storage_base=0, storage_base_offset=0)
    input_sizes: tuple[int, ...] | None = None
    if choose.chance(0.25):
        input_sizes = tuple(choose.integer(0, 500) for _ in range(choose.integer(0, 4)))
    order: tuple[int, ...] | None = None
    if choose.chance(0.3):
        order = _permutation(choose, count)
    return GreedyCase(
        specs=tuple(specs),
        alignment=alignment,
        extra_padding=choose.integer(1, 100) if choose.chance(0.25) else 0,
        allow_overlapping_allocations=choose.chance(0.7),
        input_mem_buffer_sizes=input_sizes,
        order=order,
    )


def without_inverted_lifetimes(case: GreedyCase) -> GreedyCase:
    """``case`` with every inverted lifetime (start > end) turned around. exir's overlap
    test of inverted lifetimes is no interval test, so the core keeps memories that hold
    one on exir's loops; without them, ``occupancy="tree"`` searches its tree."""

    def turned(description: SpecDescription) -> SpecDescription:
        start, end = description.lifetime
        if start is None or end is None or start <= end:
            return description
        return replace(description, lifetime=(end, start))

    return replace(case, specs=tuple(map(turned, case.specs)))


def generate_banked_case(choose: Chooser, max_specs: int = 40) -> BankedCase:
    """A greedy case over 1-3 banks (declared out of id order, sized from a fraction of the
    demand, with alignments that are multiples of the graph's or, rarely, not), pins to
    declared and undeclared banks, and rarely a spec on another device."""
    greedy = generate_greedy_case(choose, max_specs)
    bank_count = choose.integer(1, 3)
    mem_ids = list(range(1, 5))
    chosen_ids = []
    for _ in range(bank_count):
        chosen_ids.append(mem_ids.pop(choose.integer(0, len(mem_ids) - 1)))
    demand = sum(_aligned(s.nbytes, 64) for s in greedy.specs) + 64
    banks = []
    for position, mem_id in enumerate(chosen_ids):
        fraction = choose.choice([0.05, 0.2, 0.5, 1.0])
        if position == bank_count - 1 and choose.chance(0.8):
            fraction = choose.choice([1.0, 2.0])
        alignment: int | None = None
        if choose.chance(0.4):
            alignment = greedy.alignment * choose.choice([1, 2, 4])
            if choose.chance(0.1):
                alignment += 1  # not a multiple of the graph's alignment
        banks.append(
            BankDescription(f"bank{mem_id}", max(1, int(demand * fraction)), mem_id, alignment)
        )
    pins = [None, None, None, None, *chosen_ids, 5]  # 5: a mem_id no bank declares
    specs = [
        replace(s, mem_id=choose.choice(pins) if choose.chance(0.3) else None)
        if s.storage_base is None
        else s
        for s in greedy.specs
    ]
    if specs and choose.chance(0.05):
        victim = choose.integer(0, len(specs) - 1)
        specs[victim] = replace(specs[victim], device="CUDA")
    return BankedCase(replace(greedy, specs=tuple(specs)), tuple(banks))
