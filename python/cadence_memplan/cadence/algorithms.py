"""Drop-in replacements for executorch's Cadence placers, planned by the C++ core.

``PositionBasedGreedyWithHierarchy`` and ``GreedyWithHeuristic`` subclass upstream's
``MemoryPlanningAlgo`` (executorch 1.5.x) and override only ``plan()``. Everything
around it (``__call__`` as exir's ``MemoryPlanningPass`` calls it, constraint
generation, pinned specs, relative placements) is upstream's own code, unchanged.

``plan()`` reads each TensorSpec attribute once, runs the core with the GIL released,
writes ``mem_id``/``mem_offset`` back and leaves ``state`` as upstream's Python would:
the same ``allocated_buffers`` lists in the same order, the same ``bufsizes``. When it
raises, no spec and nothing in ``state`` has changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
from executorch.backends.cadence.aot.memory_constraints import MemConstraints
from executorch.backends.cadence.aot.memory_planning_algo import (
    MemoryPlanningAlgo,
    MemoryPlanningState,
)
from executorch.backends.cadence.aot.utils import MemoryConfig, MemoryPlanningAlgoFailure
from executorch.exir.tensor import TensorSpec

from .._boundary.control_flow import reserved_bytes
from .._boundary.tensorspecs import (
    Offsets,
    gc_paused,
    object_array,
    preset_mem_ids,
    read_cadence_specs,
    write_placements,
    written_whole,
)
from .._boundary.upstream import mem_id_blocklists
from .._types import (
    NOTHING_SPENT,
    OBJECTIVES,
    OCCUPANCIES,
    Algorithm,
    Objective,
    Occupancy,
    PlanningError,
    PlanResult,
    Preplaced,
    SearchSpent,
)
from .._validation import (
    MAX_MEMORIES,
    as_int64,
    check_budget_ms,
    check_choice,
    check_memories,
    check_work_budget,
)
from ..api import DEFAULT_WORK_BUDGET, allowed_mask, plan_prepared

__all__ = [
    "BestOfHierarchy",
    "GreedyWithHeuristic",
    "PositionBasedGreedyWithHierarchy",
    "check_memory_config",
]


_SPECS_HASH_BY_IDENTITY = (
    TensorSpec.__eq__ is object.__eq__ and TensorSpec.__hash__ is object.__hash__
)


def check_memory_config(memory_config: MemoryConfig) -> None:
    """Raise ``ValueError`` unless ``memory_config`` describes memories the placers can use.

    Upstream checks nothing here: a zero or negative size or alignment, or lists of
    different lengths, surface mid-compile as an ``AssertionError``, an ``IndexError``,
    a ``ZeroDivisionError`` or a plan nobody can run.
    """
    sizes = memory_config.memory_sizes
    if not hasattr(sizes, "__len__") or not 1 <= len(sizes) <= MAX_MEMORIES:
        raise ValueError(
            f"memory_config.memory_sizes must list 1..{MAX_MEMORIES} memories, got {sizes!r}"
        )
    alignments = memory_config.memory_alignments
    if alignments is None:
        raise ValueError("memory_config.memory_alignments must be set (MemoryConfig sets it)")
    # Names and base addresses are only printed, but print_memory_planning_info indexes
    # them per memory, so a short list fails only after the whole compile.
    per_memory = {
        "memory_alignments": alignments,
        "memory_names": memory_config.memory_names,
        "base_addrs": memory_config.base_addrs,
    }
    for name, values in per_memory.items():
        if values is not None and len(values) != len(sizes):
            raise ValueError(
                f"memory_config.{name} has {len(values)} entries but memory_sizes has"
                f" {len(sizes)}: {name}={values!r}, memory_sizes={sizes!r}"
            )
    check_memories(sizes, alignments, "memory_config", ("memory_sizes", "memory_alignments"))


class _CorePlannedAlgo(MemoryPlanningAlgo):
    """Upstream's algorithm interface with ``plan()`` done by the C++ core."""

    algorithm: ClassVar[Algorithm]
    # What plan() makes of the specs' incoming mem_offset (Offsets): first fit ignores it.
    incoming_offsets: ClassVar[Offsets] = "incoming"

    def __init__(
        self,
        memory_config: MemoryConfig,
        *args: Any,
        occupancy: Occupancy = "auto",
        work_budget: int | None = None,
        budget_ms: float | None = None,
        objective: Objective = "bytes",
        **kwargs: Any,
    ) -> None:
        """Upstream's constructor; ``occupancy``, ``work_budget`` and ``budget_ms`` (these
        two ``"best"`` only: the work, and an optional wall-clock cap) are
        :func:`cadence_memplan.plan`'s (every occupancy gives the same plan: the tests run
        each). ``objective`` (``"best"`` only): ``"bytes"`` keeps the most bytes in the fast
        memories, ``"traffic"`` the most traffic, each tensor weighing its size times
        (1 + the number of nodes that read it in the graph). ``work_budget``,
        ``budget_ms`` and ``objective`` may also be set on the instance before it plans.
        ``last_result`` is the core's answer to the last ``plan()`` call (its
        ``strategy`` says how ``"best"`` found its plan), None before the first;
        ``last_kept`` what that call kept in memory 1 (in ``kept_bound``'s terms),
        ``calls`` how many calls placed at least one spec, and ``spent`` what every call of
        ``"best"`` spent in all (a ``SearchSpent``)."""
        # Checked here, before upstream's constraint phases place pinned specs.
        check_memory_config(memory_config)
        check_choice("occupancy", occupancy, OCCUPANCIES)
        self.occupancy = occupancy
        self.work_budget = work_budget
        self.budget_ms = budget_ms
        check_choice("objective", objective, OBJECTIVES)
        self.objective = objective
        self.last_result: PlanResult | None = None
        self.last_kept = 0  # last_result's weight in memory 1 (see plan())
        self.calls = 0  # plan() calls that placed at least one spec
        self.spent = NOTHING_SPENT
        super().__init__(memory_config, *args, **kwargs)

    def plan(
        self,
        specs: Iterable[TensorSpec],
        graph_module: Any,
        graph_signature: Any,
        state: MemoryPlanningState,
        placement_constraints: MemConstraints,
        extra_padding: int = 0,
    ) -> None:
        """Place ``specs`` as upstream's ``plan()`` would; ``extra_padding`` is unused, as upstream."""
        del graph_signature, extra_padding  # Unused by upstream's plan() too.
        specs = list(specs)
        memory_count = self.get_num_memories() - 1

        placed: list[TensorSpec] = []
        placed_mem_ids: list[int] = []
        for mem_id, buffers in enumerate(state.allocated_buffers):
            if mem_id == 0 and buffers:
                raise ValueError("state.allocated_buffers[0] must be empty: memory 0 is reserved")
            placed.extend(buffers)
            placed_mem_ids.extend([mem_id] * len(buffers))
        # Plain TensorSpecs hash by identity, so a set of them is a set of identities,
        # built without an id() call per spec.
        by_identity = _SPECS_HASH_BY_IDENTITY and set(map(type, chain(specs, placed))) <= {
            TensorSpec
        }
        spec_ids: set[Any] = set(specs) if by_identity else set(map(id, specs))
        if len(spec_ids) != len(specs):
            seen: set[int] = set()
            for index, spec in enumerate(specs):
                if id(spec) in seen:
                    raise ValueError(f"spec {index} appears twice in specs: {spec!r}")
                seen.add(id(spec))
        for index, (spec, mem_id, preset) in enumerate(
            zip(placed, placed_mem_ids, preset_mem_ids(placed), strict=True)
        ):
            if (spec if by_identity else id(spec)) in spec_ids:
                raise ValueError(f"already-placed spec {index} is also in specs: {spec!r}")
            if preset != mem_id:
                raise ValueError(
                    f"already-placed spec {index} is in state.allocated_buffers[{mem_id}]"
                    f" but has mem_id {preset}: {spec!r}"
                )

        with gc_paused():
            read = read_cadence_specs(specs, "spec", self.incoming_offsets)
            read_placed = read_cadence_specs(placed, "already-placed spec", "placed")
        blocklists = mem_id_blocklists(placement_constraints)  # {id(spec): set of mem ids}
        blocked = np.zeros(len(specs), dtype=np.uint64)
        if blocklists:
            for index, spec in enumerate(specs):
                for mem_id in blocklists.get(id(spec), ()):
                    if not 1 <= mem_id <= memory_count:
                        raise ValueError(
                            f"spec {index}: its blocklist names memory {mem_id}, which does not"
                            f" exist (1..{memory_count}): {spec!r}"
                        )
                    blocked[index] |= np.uint64(1 << mem_id)
        memory_sizes = as_int64("memory_config.memory_sizes", self.memory_config.memory_sizes)
        alignments = as_int64(
            "memory_config.memory_alignments", self.memory_config.memory_alignments
        )
        weights = self._weights(specs, read.sizes, graph_module)
        preplaced = Preplaced(
            read_placed.starts,
            read_placed.ends,
            read_placed.sizes,
            as_int64("already-placed mem_ids", placed_mem_ids),
            read_placed.offsets,
        )
        # What the graph's control-flow submodules hold (planning_pass.py's
        # _plan_around_submodules) is placed already too. The heuristic scans a memory's placed tensors in list
        # order, which upstream keeps sorted by offset: all of them are given so.
        reserved = reserved_bytes(graph_module)
        held = 0 if reserved is None else len(reserved.starts)
        # memory_order's slots to indices into chain(placed, specs), -1 for reserved bytes
        slot_owner = np.arange(len(placed) + len(specs), dtype=np.int64)
        if reserved is not None and held:
            joined = [np.concatenate(columns) for columns in zip(reserved, preplaced, strict=True)]
            by_offset = np.lexsort((joined[4], joined[3]))
            preplaced = Preplaced(*(column[by_offset] for column in joined))
            slot_owner = np.concatenate(
                [np.where(by_offset >= held, by_offset - held, -1), slot_owner[len(placed) :]]
            )
        try:
            result = plan_prepared(
                self.algorithm,
                starts=read.starts,
                ends=read.ends,
                sizes=read.sizes,
                memory_sizes=memory_sizes,
                memory_alignments=alignments,
                blocked=blocked,
                allowed=allowed_mask(
                    np.array(self.memory_id_is_valid[1:], dtype=bool), memory_count
                ),
                preplaced=preplaced,
                incoming_offsets=read.offsets,
                occupancy=self.occupancy,
                work_budget=check_work_budget(self.work_budget, DEFAULT_WORK_BUDGET),
                budget_ms=check_budget_ms(self.budget_ms),
                weights=weights,
            )
        except PlanningError as error:
            failure = MemoryPlanningAlgoFailure(
                f"{error}\n  spec: {specs[error.tensor_index]!r}\n"
                f"  memory config: {self.memory_config}"
            )
            failure.spec = specs[error.tensor_index]  # the one that fits nowhere
            raise failure from error
        self.last_result = result
        self.spent += SearchSpent.of(result)
        if specs:  # Cadence's pass also calls with no specs: those place nothing.
            self.calls += 1
        # What memory 1 keeps of this call's tensors, in kept_bound's terms (bytes, or the
        # objective's weights): the report's "keeps X; at most kept_bound".
        kept_weights = read.sizes if weights is None else weights
        self.last_kept = int(kept_weights[result.mem_ids == 1].sum(dtype=object))

        # Each memory's list by one numpy take: the order is the offsets', so a list's
        # __getitem__ per entry would jump around the specs (8 ms against 1 on Y_1).
        everything = object_array(chain(placed, specs), len(placed) + len(specs))
        lists_before, bufsizes_before = list(state.allocated_buffers), list(state.bufsizes)
        with written_whole(specs) as interrupted:  # the specs and the state, or none
            write_placements(specs, result.mem_ids, result.offsets)
            for mem_id in range(1, memory_count + 1):
                order = slot_owner[result.memory_order[mem_id]]
                state.allocated_buffers[mem_id] = everything[order[order >= 0]].tolist()
            # Upstream raises bufsizes in place_spec, so only for the tensors placed in
            # this call: the core's call_bufsizes.
            for mem_id, bufsize in enumerate(result.call_bufsizes.tolist()):
                if mem_id:
                    state.bufsizes[mem_id] = max(state.bufsizes[mem_id], bufsize)
            if interrupted():
                state.allocated_buffers[:] = lists_before
                state.bufsizes[:] = bufsizes_before

    def _weights(
        self, specs: list[TensorSpec], sizes: npt.NDArray[np.int64], graph_module: Any
    ) -> npt.NDArray[np.int64] | None:
        """The weights of ``objective``: None (the sizes) for ``"bytes"`` or another
        placer; for ``"traffic"``, each spec's size times (1 + its readers)."""
        check_choice("objective", self.objective, OBJECTIVES)
        if self.algorithm != "best" or self.objective == "bytes":
            return None
        return traffic_weights(specs, sizes, graph_module)


def traffic_weights(
    specs: Sequence[TensorSpec], sizes: npt.NDArray[np.int64], graph_module: Any
) -> npt.NDArray[np.int64]:
    """The traffic objective's weight of each spec (``sizes`` its sizes): its size times
    (1 + the nodes that read it), the bytes written once and read by each reader."""
    readers = spec_readers(graph_module)
    counts = np.array([readers.get(id(spec), 0) for spec in specs], dtype=np.int64)
    return sizes * (1 + counts)


def spec_readers(graph_module: Any) -> dict[int, int]:
    """For each TensorSpec a node of the graph holds alone (``node.meta["spec"]``), by id:
    how many nodes read that node. A multi-output node's specs are counted where its
    ``getitem`` nodes hold them one by one."""
    readers: dict[int, int] = {}
    if graph_module is None:
        return readers
    for node in graph_module.graph.nodes:
        spec = node.meta.get("spec")
        if isinstance(spec, TensorSpec):
            readers[id(spec)] = readers.get(id(spec), 0) + len(node.users)
    return readers


class PositionBasedGreedyWithHierarchy(_CorePlannedAlgo):
    """Upstream's PositionBasedGreedyWithHierarchy: first fit, largest tensor first, fastest memory first."""

    algorithm = "position"
    incoming_offsets = "ignored"


class GreedyWithHeuristic(_CorePlannedAlgo):
    """Upstream's GreedyWithHeuristic: best fit between lifetime-overlapping tensors (arXiv 2001.03288)."""

    algorithm = "heuristic"


class BestOfHierarchy(_CorePlannedAlgo):
    """Not upstream's: :func:`cadence_memplan.plan`'s ``algorithm="best"``, which keeps the
    smallest of many plans (both placers on several visit orders, then squeaky-wheel
    improvement): the fewest tensor bytes outside memory 1, then outside memories 1-2,
    and so on, then the smallest total bufsize. Never worse than both upstream placers.
    Upstream's constraints (pinned specs, relative placements, blocklists) still apply,
    as only ``plan()`` differs."""

    algorithm = "best"
