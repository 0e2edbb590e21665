"""How much of memory 1 a program of several methods needs with its mutable state at one
place in every method: what ``cadence-memplan size --share-mutable-buffers`` answers for a
``.pt2`` of several methods (issue 51), beside each method sized alone
(:func:`~cadence_memplan.workflow.size.size_methods`).

The program **fits** at a size ``c`` of memory 1 when the plan of the whole program that
``plan --share-mutable-buffers`` makes (:func:`~cadence_memplan.workflow.plan.plan_program`:
one ``to_executorch``, every method planned around the state placed once) with memory 1 of
``c`` bytes keeps there, in every method, what that method keeps with room for every
tensor (every tensor allowed there, the state included), and the validator accepts every
method's plan. :func:`size_shared` finds the least such size it can:

- first the program with room for every tensor (each method's tensors, aligned, and the
  state's), which fixes what each method keeps; then, as ``size`` does, at the size where
  the last plan's memory 1 ends (the largest method's), since that plan holds there;
- then at the lower bound; then halves between the largest size tried that did not fit
  and the least that did, until they are one alignment apart.

The **lower bound**: per method, the aligned peak live of its tensors as the program
plans them, and ``best``'s lower bound from the method sized alone where that method
alone has the same tensors (sizes and lifetimes) as in the program; the state shared only
adds a constraint (it is held at offset 0 for the whole run), so the method alone's bound
holds. The program's is the largest method's. The answer is **proved** when it equals the
bound; otherwise the least size lies between the two: a size between them where no plan
was found is not proved to fail (``best``'s plan at one size says nothing of another).

Each plan is the one ``plan --algo best --share-mutable-buffers`` makes at that size with
the same options, its budget the options' whole budget (not split), so the answer is a
function of the input and the options (with a wall-clock cap, of the machine too), and the
plan at ``fits_from`` can be made again with ``plan``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

import numpy as np

from ..request import Hierarchy, Memory, PlanningOptions
from ..request.inputs import (
    DoesNotFit,
    InvalidPlan,
    LoadedInput,
    ProgramPlan,
    Progress,
    StateBuffer,
    quiet,
)
from ..request.sizing_results import SharedSizing, Sizing
from ..stats import TensorTable, align_up, aligned_sizes, format_bytes, peak_live_bytes
from .plan import check_plan, plan_program

__all__ = ["Fitted", "SharedSizing", "least_fitting", "size_shared"]


def _aligned_sum(table: TensorTable, alignment: int) -> int:
    return int(aligned_sizes(table.sizes[~table.shares_storage], alignment).sum())


@dataclass(frozen=True)
class _ProgramAt:
    """One plan of the program at a size of memory 1 (``capacity``): memory 1's bufsize,
    the largest method's (``used``); the bytes each method keeps there; the state."""

    capacity: int
    used: int
    kept: dict[str, int]
    state: tuple[StateBuffer, ...]
    tables: dict[str, TensorTable]


class _Program:
    """The program planned whole at sizes of memory 1, each plan checked and kept
    (``made``); it fits where every method keeps there ``totals`` (what each keeps with
    room for every tensor, once known)."""

    def __init__(
        self,
        loaded: LoadedInput,
        memories: Hierarchy,
        options: PlanningOptions,
        progress: Progress,
    ) -> None:
        self.loaded, self.memories, self.options = loaded, memories, options
        self.progress = progress
        self.totals: dict[str, int] = {}
        self.made: list[tuple[int, _ProgramAt | None]] = []  # each size, its plan (None: none)

    def plan(self, capacity: int, why: str) -> _ProgramAt:
        """The plan at ``capacity``; raises DoesNotFit, or InvalidPlan for a plan the
        validator refuses or whose state is not at one place in every method."""
        memory = self.memories[0]
        self.progress(
            f"planning every method, the state shared, with {memory.name} = {capacity:,} B ({why})"
        )
        config = self.memories.with_size(0, capacity)
        try:
            planned = plan_program(self.loaded, config, self.options, progress=quiet)
        except DoesNotFit:
            self.made.append((capacity, None))
            raise
        at = _read(planned, capacity, memory.alignment)
        self.made.append((capacity, at))
        return at

    def tried(self) -> tuple[tuple[int, bool], ...]:
        """Each size planned, in order, and whether the program fitted there."""
        return tuple((size, at is not None and self.fits(at)) for size, at in self.made)

    def fits(self, at: _ProgramAt) -> bool:
        return all(at.kept[name] >= total for name, total in self.totals.items())

    def fitting(self, capacity: int, why: str) -> _ProgramAt | None:
        """The plan at ``capacity`` when the program fits there, else None."""
        try:
            at = self.plan(capacity, why)
        except DoesNotFit:
            return None
        return at if self.fits(at) else None


def _read(planned: ProgramPlan, capacity: int, alignment: int) -> _ProgramAt:
    """What a plan of the program says, each method's plan checked by the validator."""
    where = f"{planned.input.label} at {format_bytes(capacity)}"
    tables: dict[str, TensorTable] = {}
    kept: dict[str, int] = {}
    used = 0
    for name, plan in planned.methods.items():
        table = plan.table
        problem = check_plan(table, planned.memories)
        if problem is not None:
            raise InvalidPlan(f"the plan of method {name} of {where} is invalid: {problem}")
        in_memory1 = (table.mem_ids == 1) & ~table.shares_storage
        kept[name] = int(table.sizes[in_memory1].sum(dtype=object))
        if in_memory1.any():
            end = int((table.offsets[in_memory1] + table.sizes[in_memory1]).max())
            used = max(used, align_up(end, alignment))
        tables[name] = table
    apart = [buffer.name for buffer in planned.state if not buffer.shared]
    if apart:
        raise InvalidPlan(f"{where}: the state {apart} is not at one place in every method")
    state_end = sum(buffer.size for buffer in planned.state if _in_memory1(buffer))
    used = max(used, align_up(state_end, alignment))
    return _ProgramAt(capacity, used, kept, tuple(planned.state), tables)


def _in_memory1(buffer: StateBuffer) -> bool:
    return next(iter(buffer.places.values()))[0] == 1


def _same_tensors(alone: TensorTable, shared: TensorTable) -> bool:
    """Whether a method alone has the tensors (sizes and lifetimes) it has in the program."""

    def rows(table: TensorTable) -> list[tuple[int, int, int]]:
        own = ~table.shares_storage
        columns = (table.sizes[own], table.starts[own], table.ends[own])
        return sorted(zip(*(column.tolist() for column in columns), strict=True))

    return rows(alone) == rows(shared)


def _alone_tables(
    sizings: dict[str, Sizing], options: PlanningOptions
) -> dict[str, TensorTable | None]:
    """Each method's tensors as it was sized alone (the program that sizing lowered; None
    where its lowering found no plan at the memories given, so kept no program)."""
    from ..cadence.lowering import graph_table

    tables: dict[str, TensorTable | None] = {}
    for name, sizing in sizings.items():
        if sizing.program is None:
            tables[name] = None
            continue
        method = sizing.program.exported_program(name)
        tables[name], _ = graph_table(
            method.graph_module, method.graph_signature,
            options.alloc_inputs, options.alloc_outputs,
        )  # fmt: skip
    return tables


def _lower_bound(
    tables: dict[str, TensorTable],
    alone: dict[str, TensorTable | None],
    sizings: dict[str, Sizing],
    alignment: int,
) -> tuple[int, str]:
    """The program's lower bound on memory 1 and the method that gives it (module
    docstring): ``tables`` each method's in the program, ``alone`` each method's alone."""
    bounds: dict[str, int] = {}
    for name, table in tables.items():
        own = ~table.shares_storage
        aligned = -(-np.asarray(table.sizes[own], dtype=np.int64) // alignment) * alignment
        bound = peak_live_bytes(table.starts[own], table.ends[own], aligned)
        same = alone[name]
        if same is not None and _same_tensors(same, table):
            bound = max(bound, sizings[name].sized[0].lower_bound)
        bounds[name] = align_up(bound, alignment)
    bound_by = max(bounds, key=bounds.__getitem__)
    return bounds[bound_by], bound_by


def size_shared(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    sizings: dict[str, Sizing],
    *,
    progress: Progress | None = None,
) -> SharedSizing:
    """Memory 1 of ``memories`` sized for a program of several methods
    (``loaded.input.methods``) with its state at one place in every method (module
    docstring); ``sizings`` are :func:`~cadence_memplan.workflow.size.size_methods`'s (each
    method alone, with the same memories and options). ``options`` must have
    ``share_mutable_buffers`` and ``best``, and no ``reorder`` (ValueError: the order kept
    may change with the size, and no bound covers every order); raises
    :class:`DoesNotFit` when the program fits in no plan even with room for every tensor,
    :class:`InvalidPlan` when a plan is refused."""
    if not options.share_mutable_buffers:
        raise ValueError("size_shared sizes the state shared: options.share_mutable_buffers")
    if options.algorithm != "best":
        raise ValueError(f"size plans with best: options.algorithm is {options.algorithm!r}")
    if options.reorder:
        raise ValueError(
            "reorder with share_mutable_buffers: not sized (the node order plan keeps may"
            " change with the size, and no lower bound covers every order)"
        )
    if set(sizings) != set(loaded.input.methods):
        raise ValueError(f"sizings of {sorted(sizings)}, not of {list(loaded.input.methods)}")
    began = time.perf_counter()
    hierarchy = Hierarchy(memories)
    alignment = int(hierarchy.alignments[0])
    program = _Program(loaded, hierarchy, options, progress or quiet)
    first = max(sizing.sized[0].all_fit_from for sizing in sizings.values())
    first = max(align_up(first, alignment), alignment)
    everything, too_small = _everything(program, first, alignment)
    alone = _alone_tables(sizings, options)
    bound, bound_by = _lower_bound(everything.tables, alone, sizings, alignment)
    least = least_fitting(program.fitting, everything, max(bound, alignment), alignment, too_small)
    return SharedSizing(
        hierarchy[0], least.capacity, bound, bound_by, least.state, program.tried(),
        time.perf_counter() - began,
    )  # fmt: skip


def _everything(program: _Program, first: int, alignment: int) -> tuple[_ProgramAt, int]:
    """The first plan that fits, and the largest size found too small before it: at
    ``first`` (the largest method alone's size), or else, from each size where a plan was
    made, with room for every tensor (each method's own, aligned, added up, twice: the
    state beside them); below that, sizes twice the last. ``program.totals`` is set: what
    each method keeps with room for every tensor."""
    size, why, too_small = first, "the largest method alone's", 0
    made: list[tuple[_ProgramAt, int]] = []  # each plan made, and the size too small before it
    while True:
        try:
            at = program.plan(size, why)
        except DoesNotFit:
            if size >= _MOST_TRIED:
                raise
            size, why, too_small = min(2 * size, _MOST_TRIED), "twice the last", size
            continue
        made.append((at, too_small))
        whole = {name: _aligned_sum(table, 1) for name, table in at.tables.items()}
        room = 2 * max(_aligned_sum(table, alignment) for table in at.tables.values())
        if at.kept == whole or at.capacity >= room:  # nothing keeps more: what fits means
            program.totals = dict(at.kept)
            return next((plan, below) for plan, below in made if program.fits(plan))
        size, why, too_small = room, "room for every tensor", size


# A size of memory 1 past which the program is not planned again when it fits nowhere.
_MOST_TRIED = 1 << 40


class Fitted(Protocol):
    """A plan that fits at a size (``capacity``), its memory 1 ending at ``used``."""

    @property
    def capacity(self) -> int: ...

    @property
    def used(self) -> int: ...


Planned = TypeVar("Planned", bound=Fitted)


def least_fitting(
    fitting: Callable[[int, str], Planned | None],
    first: Planned,
    bound: int,
    alignment: int,
    too_small: int = 0,
) -> Planned:
    """The least size at which ``fitting`` (a plan at a size, and why that size; None when
    the program does not fit there) found a plan, from ``first``, a plan that fits, down to
    ``bound`` (no smaller size fits): at the size where the last plan ends, then at the
    bound, then halfway between the largest size not found to fit and the least found to,
    until they are one ``alignment`` apart (module docstring). ``too_small``: a size
    already found not to fit (not asked again)."""
    least = first
    not_found = max(bound - alignment, too_small)  # the largest size known (or assumed) too small
    while least.capacity - not_found > alignment:
        if not_found < least.used < least.capacity:  # the last plan holds there
            size, why = least.used, "where the last plan ends"
        elif not_found < bound < least.capacity:
            size, why = bound, "the lower bound"
        else:
            middle = (not_found + least.capacity) // 2 // alignment * alignment
            size, why = max(middle, not_found + alignment), "halfway"
        found = fitting(size, why)
        if found is not None:
            least = found
        else:
            not_found = size
    return least
