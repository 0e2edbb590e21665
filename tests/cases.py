"""Planning problems for the tests, with numpy alone: the :class:`Case` a problem is, random
generators of them (hypothesis or ``random.Random``), the array API replay of a case, the
validator run on every plan a test makes, and where MiniMalloc's public instances are
(``PLANNING_INSTANCES``).

Slots: outcomes name tensors by *slot*, the numbering of the array API's
``PlanResult.memory_order``: slots ``0..len(preplaced)-1`` are the already-placed tensors in
the order they were put into ``state.allocated_buffers``, slot ``len(preplaced) + i``
is tensor ``i`` of ``Case.sizes``. tests/upstream_runs.py runs the same cases through
upstream's classes and ours (needs executorch).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pytest

import cadence_memplan

ALIGNMENT_CHOICES = (1, 16, 37, 64)

# MiniMalloc's public instances (half-open lifetimes), beside the repository and never
# copied into it: tests that read them skip where the folder is missing.
PLANNING_INSTANCES = Path(__file__).resolve().parents[2] / "shared" / "data" / "planning-instances"


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class PreplacedTensor:
    """A tensor already in ``state.allocated_buffers[mem_id]`` before planning."""

    lifetime: tuple[int, int]
    size: int
    mem_id: int
    offset: int


@dataclass(frozen=True)
class Case:
    """One planning problem. Memory ids are 1..N; tensor lists are indexed by tensor."""

    memory_sizes: tuple[int, ...]
    memory_alignments: tuple[int, ...]
    lifetimes: tuple[tuple[int, int], ...]
    sizes: tuple[int, ...]
    # Per tensor: the memory ids on its blocklist (MemConstraints.add_mem_id_to_blocklist).
    blocked: tuple[frozenset[int], ...] = ()
    # Per memory id 1..N: algo.memory_id_is_valid[m]; empty means all allowed.
    allowed: tuple[bool, ...] = ()
    # In the order they are appended to state.allocated_buffers (via state.place_spec).
    preplaced: tuple[PreplacedTensor, ...] = ()
    # Per tensor: spec.mem_offset before planning (None = unset); empty means all None.
    incoming_offsets: tuple[int | None, ...] = ()

    @property
    def tensor_count(self) -> int:
        return len(self.sizes)

    @property
    def memory_count(self) -> int:
        return len(self.memory_sizes)

    def blocked_for(self, index: int) -> frozenset[int]:
        return self.blocked[index] if self.blocked else frozenset()

    def allowed_for(self, mem_id: int) -> bool:
        return self.allowed[mem_id - 1] if self.allowed else True

    def incoming_offset_for(self, index: int) -> int | None:
        return self.incoming_offsets[index] if self.incoming_offsets else None

    def offsets_given_are_aligned(self) -> bool:
        """True when every pre-placed offset is aligned for its memory and every incoming
        offset is aligned for every memory, so a correct plan is fully aligned."""
        alignment_lcm = math.lcm(*self.memory_alignments)
        return all(
            p.offset % self.memory_alignments[p.mem_id - 1] == 0 for p in self.preplaced
        ) and all(o is None or o % alignment_lcm == 0 for o in self.incoming_offsets)


# --------------------------------------------------------------------------- validating


def validate_slots(
    case: Case,
    placements: Sequence[tuple[int | None, int | None]],
    memory_alignments: Sequence[int] | None = None,
) -> str | None:
    """``cadence_memplan.validate`` on every slot (pre-placed and planned) of a plan."""
    lifetimes = [p.lifetime for p in case.preplaced] + list(case.lifetimes)
    sizes = [p.size for p in case.preplaced] + list(case.sizes)
    return cadence_memplan.validate(
        [start for start, _ in lifetimes],
        [end for _, end in lifetimes],
        sizes,
        [mem_id for mem_id, _ in placements],
        [offset for _, offset in placements],
        case.memory_sizes,
        case.memory_alignments if memory_alignments is None else memory_alignments,
    )


def assert_valid_plan(case: Case, placements: Sequence[tuple[int | None, int | None]]) -> None:
    """Fail with the validator's message unless the plan is valid.

    When the case hands in unaligned offsets (pre-placed tensors or kept incoming offsets),
    alignment cannot hold, so only bounds and overlaps are checked."""
    alignments = None if case.offsets_given_are_aligned() else [1] * case.memory_count
    problem = validate_slots(case, placements, alignments)
    if problem is not None:
        pytest.fail(f"invalid plan: {problem}\nplacements={placements}\ncase={case}")


# --------------------------------------------------------------------------- array API


def plan_with_array_api(
    case: Case, algorithm: str, planner: Any = cadence_memplan.plan, **options: Any
) -> cadence_memplan.PlanResult:
    """The same problem through the array API: ``cadence_memplan.plan`` or, as ``planner``,
    anything with its signature (``cadence_memplan.reference.plan``)."""
    blocked = np.array(
        [
            [mem_id in case.blocked_for(i) for mem_id in range(1, case.memory_count + 1)]
            for i in range(case.tensor_count)
        ],
        dtype=bool,
    ).reshape(case.tensor_count, case.memory_count)
    preplaced = cadence_memplan.Preplaced(
        starts=[p.lifetime[0] for p in case.preplaced],
        ends=[p.lifetime[1] for p in case.preplaced],
        sizes=[p.size for p in case.preplaced],
        mem_ids=[p.mem_id for p in case.preplaced],
        offsets=[p.offset for p in case.preplaced],
    )
    return planner(
        [start for start, _ in case.lifetimes],
        [end for _, end in case.lifetimes],
        list(case.sizes),
        case.memory_sizes,
        case.memory_alignments,
        algorithm=algorithm,
        blocked=blocked,
        allowed=np.array(
            [case.allowed_for(m) for m in range(1, case.memory_count + 1)], dtype=bool
        ),
        preplaced=preplaced,
        incoming_offsets=[
            -1 if case.incoming_offset_for(i) is None else case.incoming_offset_for(i)
            for i in range(case.tensor_count)
        ],
        **options,
    )


# --------------------------------------------------------------------------- generating


class Chooser(Protocol):
    """The random choices a case generator makes; backed by hypothesis or by random.Random."""

    def integer(self, low: int, high: int) -> int: ...  # inclusive
    def choice(self, options: Sequence[Any]) -> Any: ...
    def chance(self, probability: float) -> bool: ...


class RandomChooser:
    def __init__(self, rng: Any) -> None:
        self._rng = rng

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)

    def choice(self, options: Sequence[Any]) -> Any:
        return self._rng.choice(list(options))

    def chance(self, probability: float) -> bool:
        return self._rng.random() < probability


class HypothesisChooser:
    def __init__(self, draw: Callable[[Any], Any]) -> None:
        from hypothesis import strategies as st

        self._draw = draw
        self._st = st

    def integer(self, low: int, high: int) -> int:
        return self._draw(self._st.integers(low, high))

    def choice(self, options: Sequence[Any]) -> Any:
        return self._draw(self._st.sampled_from(list(options)))

    def chance(self, probability: float) -> bool:
        # Shrinks towards False (the simpler case).
        return self._draw(self._st.integers(0, 999)) >= round(1000 * (1 - probability))


def generate_lifetime(
    choose: Chooser, earlier: list[tuple[int, int]], horizon: int
) -> tuple[int, int]:
    """Ordinary, empty (start > end >= 0), identical to or touching an earlier lifetime."""
    kind = choose.choice(["ordinary"] * 5 + ["empty", "identical", "touching", "adjacent"])
    if kind in ("identical", "touching", "adjacent") and earlier:
        start, end = choose.choice(earlier)
        if kind == "identical":
            return (start, end)
        if kind == "touching":  # shares exactly node `end` (lifetimes are inclusive)
            return (end, end + choose.integer(0, 4))
        return (end + 1, end + 1 + choose.integer(0, 4))  # next to it, no shared node
    if kind == "empty":
        end = choose.integer(0, horizon)
        return (end + choose.integer(1, 3), end)
    start = choose.integer(0, horizon)
    return (start, start + choose.integer(0, max(0, horizon // 2)))


def generate_size(choose: Chooser, tie_pool: Sequence[int]) -> int:
    kind = choose.choice(["zero", "tie", "tie", "any", "any", "any"])
    if kind == "zero":
        return 0
    if kind == "tie":
        return choose.choice(tie_pool)
    return choose.integer(1, 300)


def generate_preplaced(
    choose: Chooser,
    memory_sizes: Sequence[int],
    memory_alignments: Sequence[int],
    horizon: int,
    count: int,
) -> list[PreplacedTensor]:
    """Non-overlapping tensors inside their memories, in a random or offset-sorted order."""
    placed: list[PreplacedTensor] = []
    lifetimes: list[tuple[int, int]] = []
    for _ in range(count):
        mem_id = choose.integer(1, len(memory_sizes))
        memory_size, alignment = memory_sizes[mem_id - 1], memory_alignments[mem_id - 1]
        size = choose.integer(0, min(200, memory_size))
        lifetime = generate_lifetime(choose, lifetimes, horizon)
        slots = (memory_size - size) // alignment
        offset = choose.integer(0, slots) * alignment
        if choose.chance(0.15):  # an unaligned pre-placed offset, upstream accepts it
            offset = choose.integer(0, memory_size - size)
        candidate = PreplacedTensor(lifetime, size, mem_id, offset)
        if not any(preplaced_conflict(candidate, other) for other in placed):
            placed.append(candidate)
            lifetimes.append(lifetime)
    if choose.chance(0.6):  # the order upstream's heuristic keeps lists in after a placement
        placed.sort(key=lambda p: p.offset)
    return placed


def intervals_overlap(lhs: tuple[int, int], rhs: tuple[int, int]) -> bool:
    """Inclusive intervals; an empty interval (start > end) overlaps nothing."""
    if lhs[0] > lhs[1] or rhs[0] > rhs[1]:
        return False
    return lhs[0] <= rhs[1] and rhs[0] <= lhs[1]


def preplaced_conflict(lhs: PreplacedTensor, rhs: PreplacedTensor) -> bool:
    return (
        lhs.mem_id == rhs.mem_id
        and intervals_overlap(lhs.lifetime, rhs.lifetime)
        and intervals_overlap(
            (lhs.offset, lhs.offset + lhs.size - 1), (rhs.offset, rhs.offset + rhs.size - 1)
        )
    )


def generate_case(choose: Chooser, max_tensors: int = 40) -> Case:
    """A random problem: 1-4 memories sized to force spills (and sometimes failure)."""
    memory_count = choose.integer(1, 4)
    memory_alignments = tuple(choose.choice(ALIGNMENT_CHOICES) for _ in range(memory_count))
    tensor_count = choose.integer(0, max_tensors)
    horizon = choose.integer(0, 3 * tensor_count + 2)
    tie_pool = [choose.integer(1, 300) for _ in range(3)]
    sizes: list[int] = []
    lifetimes: list[tuple[int, int]] = []
    for _ in range(tensor_count):
        sizes.append(generate_size(choose, tie_pool))
        lifetimes.append(generate_lifetime(choose, lifetimes, horizon))

    # Sized relative to the total demand: small fast memories, a last one that is usually
    # but not always big enough.
    demand = sum(sizes) + tensor_count * max(memory_alignments)
    memory_sizes = []
    for mem_id in range(1, memory_count + 1):
        fraction = choose.choice([0.05, 0.1, 0.25, 0.5, 1.0])
        if mem_id == memory_count and choose.chance(0.8):
            fraction = choose.choice([0.5, 1.0, 2.0])
        memory_sizes.append(max(1, int(demand * fraction)) + choose.integer(0, 64))

    blocked: tuple[frozenset[int], ...] = ()
    if choose.chance(0.3):
        blocked = tuple(
            frozenset(m for m in range(1, memory_count + 1) if choose.chance(0.2))
            for _ in range(tensor_count)
        )
    allowed: tuple[bool, ...] = ()
    if choose.chance(0.2):
        allowed = tuple(choose.chance(0.7) for _ in range(memory_count))
    preplaced: tuple[PreplacedTensor, ...] = ()
    if choose.chance(0.35):
        preplaced = tuple(
            generate_preplaced(
                choose, memory_sizes, memory_alignments, horizon, choose.integer(1, 6)
            )
        )
    incoming: tuple[int | None, ...] = ()
    if choose.chance(0.3):
        alignment_lcm = math.lcm(*memory_alignments)
        any_offset = choose.chance(0.3)  # unaligned offsets too: then alignment is not checked
        incoming = tuple(
            (
                choose.integer(0, max(memory_sizes))
                if any_offset
                else choose.integer(0, 3) * alignment_lcm
            )
            if choose.chance(0.5)
            else None
            for _ in range(tensor_count)
        )
    return Case(
        memory_sizes=tuple(memory_sizes),
        memory_alignments=memory_alignments,
        lifetimes=tuple(lifetimes),
        sizes=tuple(sizes),
        blocked=blocked,
        allowed=allowed,
        preplaced=preplaced,
        incoming_offsets=incoming,
    )


def cut_rectangle(rng: random.Random, height: int, span: int, pieces: int, alignment: int):
    """A height x span rectangle (in units of the alignment) cut into tensors by random
    guillotine cuts, each up to alignment - 1 bytes short of its units: it packs into
    height * alignment bytes, and nothing packs lower."""
    boxes = [(0, height, 0, span - 1)]  # (low, height, first node, last node)
    while len(boxes) < pieces:
        k = rng.randrange(len(boxes))
        low, tall, first, last = boxes[k]
        if rng.random() < 0.5 and tall > 1:
            cut = rng.randint(1, tall - 1)
            boxes[k] = (low, cut, first, last)
            boxes.append((low + cut, tall - cut, first, last))
        elif last > first:
            cut = rng.randint(first, last - 1)
            boxes[k] = (low, tall, first, cut)
            boxes.append((low, tall, cut + 1, last))
    starts = [first for _, _, first, _ in boxes]
    ends = [last for _, _, _, last in boxes]
    sizes = [tall * alignment - rng.randrange(alignment) for _, tall, _, _ in boxes]
    return starts, ends, sizes


def brute_force_bufsize(starts, ends, sizes, capacity: int, alignment: int) -> int | None:
    """The smallest bufsize of one memory over every aligned offset of every tensor."""
    best: list[int | None] = [None]
    offsets: list[int] = []

    def end(offset: int, size: int) -> int:
        return -(-(offset + size) // alignment) * alignment

    def place(i: int, bufsize: int) -> None:
        if best[0] is not None and bufsize >= best[0]:
            return
        if i == len(sizes):
            best[0] = bufsize
            return
        for offset in range(0, capacity, alignment):
            if end(offset, sizes[i]) > capacity:
                break
            clash = any(
                sizes[i]
                and sizes[j]
                and starts[i] <= ends[j]
                and starts[j] <= ends[i]
                and offset < offsets[j] + sizes[j]
                and offsets[j] < offset + sizes[i]
                for j in range(i)
            )
            if not clash:
                offsets.append(offset)
                place(i + 1, max(bufsize, end(offset, sizes[i])))
                offsets.pop()

    place(0, 0)
    return best[0]


def random_schedule_problem(seed: int, units: int = 300, buffers: int = 400) -> dict:
    """``cadence_memplan.schedule``'s arguments for a random program the given order does
    not already schedule best: ``buffers`` buffers of 16 to 1,584 bytes, each made by a
    random unit (or there from the start) and read by up to three later ones."""
    rng = np.random.default_rng(seed)
    producers = rng.integers(-1, units - 1, size=buffers)
    users: list[int] = []
    offsets = [0]
    for producer in producers:
        users += rng.integers(max(producer, 0), units, size=rng.integers(0, 4)).tolist()
        offsets.append(len(users))
    return {
        "num_units": units,
        "edges": np.zeros((0, 2), dtype=np.int64),
        "buffer_sizes": rng.integers(1, 100, size=buffers) * 16,
        "buffer_producers": producers,
        "buffer_user_offsets": offsets,
        "buffer_users": users,
    }
