"""``reorder=True``: a memory-planning algorithm that also plans the graph in a better order.

exir's ``apply_algo`` computes the graph's lifetimes, then calls its algorithm with the
specs to plan. :class:`Reordering` stands for that algorithm on one graph (the pass's;
control-flow submodules keep their order and are planned as before, and a graph with
control flow keeps its own: its submodules' arenas are placed around the outputs alive at
their call sites in that order). It plans the given order first, then each candidate
order, and keeps the best plan:

1. the **structural** order (:func:`~.problem.structural_order`): each unit that
   allocates nothing, above all a mutable buffer's write-back (``copy_``), moved up to
   just after the last unit it must follow;
2. the **scheduled** order: :func:`cadence_memplan.api.schedule` started from the
   structural order (so never above its peak-live), over the legal orders of
   :mod:`.rules`.

Each candidate is put into the graph, the lifetimes are computed again with the pass's
own function (exir's ``update_all_tensors_lifetime``, or the Cadence pass's equal one),
from fresh lifetimes, and the algorithm runs on the same specs in the new node order, as
``apply_algo`` would have handed them. A candidate is kept only if its planned arena (the
sum of the bufsizes) is no larger and memory 1 keeps no fewer bytes, one of them strictly
better: the decision is on the plan, never on peak-live. The graph (node order,
lifetimes, placements, the ops Cadence's constraint passes rewrite) is put back as it was
before each plan; the plan that is kept is made last, so the graph, its specs and the
algorithm's own state are that plan's. Everything is deterministic: the scheduler runs on
work budgets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from executorch.exir.memory_planning import collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec

from .. import api
from .._boundary.algorithm_protocols import MemoryPlanningAlgorithm
from .._boundary.control_flow import has_control_flow
from .._boundary.storage_sharing import storage_hosts, storage_sharing_spec_ids
from .._boundary.tensorspecs import (
    allocated_sizes,
    clear_lifetimes,
    read_placements,
    restore_placements,
    save_placements,
)
from .._boundary.upstream import spec_holder
from ..stats import peak_live_bytes
from .problem import (
    ScheduleProblem,
    apply_node_order,
    buffer_root,
    schedule_problem,
    structural_order,
)
from .rules import UnitGraph, is_write_back, node_specs, unit_graph

__all__ = ["Moves", "Reorder", "Reordering"]

Lifetimes = Callable[[torch.fx.GraphModule, Any], Any]


@dataclass(frozen=True)
class Moves:
    """What an order moved against the given one: ``write_backs`` mutable buffers'
    write-backs now earlier, ``earlier`` and ``later`` the other units now earlier or
    later relative to the rest (a unit counts once, by where it went), ``units`` in all."""

    units: int
    write_backs: int = 0
    earlier: int = 0
    later: int = 0

    @property
    def any(self) -> bool:
        return bool(self.write_backs or self.earlier or self.later)

    def describe(self) -> str:
        """``"12 write-backs moved up, 3 ops moved up, 1 op moved down"`` (or
        ``"nothing moved"``)."""
        parts = []
        for count, what in (
            (self.write_backs, "write-back"),
            (self.earlier, "op"),
        ):
            if count:
                parts.append(f"{count} {what}{'s' if count != 1 else ''} moved up")
        if self.later:
            parts.append(f"{self.later} op{'s' if self.later != 1 else ''} moved down")
        return ", ".join(parts) or "nothing moved"


@dataclass(frozen=True)
class Reorder:
    """What ``reorder=True`` did to one graph.

    ``given_*`` describe the graph's own order, the others the order kept (the given one
    when no candidate planned better). Peak-live is the most bytes of the planned specs
    alive at one node under the lifetimes of that order (no plan of that order is
    smaller); ``lower_bound`` no order's peak-live is below; ``proved_optimal``: the kept
    order's peak-live is at it. ``arena`` is the planned bufsizes' sum (every memory),
    ``bufsizes`` per memory as the algorithm returned them; ``kept_in_memory1`` the bytes
    of the specs memory 1 holds (those inside another's storage left out). ``kept`` names
    the order kept: "given", "structural" or "scheduled"; ``strategy`` is the
    scheduler's, ``work`` its work, ``planned`` how many plans were made, ``seconds`` the
    wall time of the whole step (plans included)."""

    given_peak_live: int
    peak_live: int
    given_arena: int
    arena: int
    given_bufsizes: tuple[int, ...]
    bufsizes: tuple[int, ...]
    given_kept_in_memory1: int
    kept_in_memory1: int
    lower_bound: int
    proved_optimal: bool
    kept: str
    strategy: str
    moves: Moves
    units: int
    work: int
    planned: int
    seconds: float
    candidates: dict[str, int] = field(default_factory=dict)  # name -> its planned arena

    @property
    def reordered(self) -> bool:
        return self.kept != "given"


@dataclass
class _Plan:
    name: str
    order: list[int]
    bufsizes: list[int]
    peak_live: int
    kept_in_memory1: int

    @property
    def arena(self) -> int:
        return int(sum(self.bufsizes[1:]))

    def beats(self, other: _Plan) -> bool:
        no_worse = self.arena <= other.arena and self.kept_in_memory1 >= other.kept_in_memory1
        better = self.arena < other.arena or self.kept_in_memory1 > other.kept_in_memory1
        return no_worse and better


def _top_level_holders(graph_module: torch.fx.GraphModule) -> list[TensorSpec]:
    """The specs holding the placements and lifetimes of the graph's own nodes (not its
    submodules'), each once."""
    holders: dict[int, TensorSpec] = {}
    for node in graph_module.graph.nodes:
        for spec in node_specs(node):
            holder = spec_holder(spec)
            holders.setdefault(id(holder), holder)
    return list(holders.values())


class Reordering:
    """exir's memory-planning algorithm interface around ``algo``: on ``graph_module``
    (and nothing else) it plans the given order and the candidate orders and keeps the
    best plan (the module's docstring); ``lifetimes(graph_module, graph_signature)``
    computes the lifetimes as the pass does. ``result`` is what it did (a
    :class:`Reorder`), once called. ``work_budget`` goes to the scheduler."""

    def __init__(
        self,
        algo: MemoryPlanningAlgorithm,
        graph_module: torch.fx.GraphModule,
        lifetimes: Lifetimes,
        *,
        work_budget: int | None = None,
    ) -> None:
        self.algo = algo
        self.graph_module = graph_module
        self.lifetimes = lifetimes
        self.work_budget = work_budget
        self.result: Reorder | None = None

    @property
    def memory_config(self) -> Any:
        """The wrapped algorithm's (the pass reads it to place control flow's arenas)."""
        return getattr(self.algo, "memory_config")  # noqa: B009  (algo: any callable)

    def __call__(
        self,
        alignment: int,
        specs: Any,
        graph_module: torch.fx.GraphModule,
        graph_signature: Any,
        extra_padding: int = 0,
    ) -> list[int]:
        if graph_module is not self.graph_module:
            return self.algo(alignment, specs, graph_module, graph_signature, extra_padding)
        began = time.perf_counter()
        specs = list(specs)
        nodes = list(graph_module.graph.nodes)
        targets = {node: node.target for node in nodes if node.op == "call_function"}
        holders = _top_level_holders(graph_module)
        before = save_placements(holders)
        graph = unit_graph(graph_module)

        def plan(name: str, order: list[int] | None) -> _Plan:
            if order is not None:
                self._restore(nodes, targets, before)
                apply_node_order(graph_module, graph.node_order(order))
                clear_lifetimes(holders)
                self.lifetimes(graph_module, graph_signature)
            ordered = self._in_node_order(specs, graph_module, graph_signature)
            bufsizes = list(
                self.algo(alignment, ordered, graph_module, graph_signature, extra_padding)
            )
            # After the plan: the tensors the placer put inside another's storage (Cadence's
            # nops) and the lifetimes it widened for them, as the plan's report counts them.
            peak = self._peak_live(ordered, alignment, storage_hosts(graph_module))
            kept = self._kept_in_memory1(ordered, graph_module)
            return _Plan(name, order or list(range(len(graph.units))), bufsizes, peak, kept)

        given = plan("given", None)
        # The scheduler's model counts a tensor inside another's storage as its host's
        # bytes, as the planners do: which ones is known once the given order is planned
        # (Cadence's constraint passes make cat and slice nops while they plan).
        problem = schedule_problem(
            graph, specs, graph_signature, alignment, storage_hosts(graph_module)
        )
        plans = [given]
        structural = structural_order(graph, problem)
        candidates, strategy, work, lower_bound = self._candidates(
            graph_module, problem, structural
        )
        best = given
        tried = [given.order]
        for name, order in candidates:
            if order in tried:
                continue
            tried.append(order)
            plans.append(plan(name, order))
            if plans[-1].beats(best):
                best = plans[-1]
        if best is not plans[-1]:  # make the kept plan last
            if best is given:
                self._restore(nodes, targets, before)
                best = plan("given", None)
            else:
                best = plan(best.name, best.order)
        # The bound is printed as computed, never cut down to the kept order's peak live:
        # the kept order is a legal order, so a bound above its peak live is a wrong bound
        # (as the problem without storage sharing gave, issue 52), and it must show, not
        # read as a proof (test_reorder_bounds holds it at or below on every model).
        lower_bound = max(lower_bound, problem.end_bytes)
        self.result = Reorder(
            given_peak_live=given.peak_live,
            peak_live=best.peak_live,
            given_arena=given.arena,
            arena=best.arena,
            given_bufsizes=tuple(given.bufsizes),
            bufsizes=tuple(best.bufsizes),
            given_kept_in_memory1=given.kept_in_memory1,
            kept_in_memory1=best.kept_in_memory1,
            lower_bound=lower_bound,
            proved_optimal=best.peak_live == lower_bound,
            kept=best.name,
            strategy=strategy,
            moves=_moves(graph, problem, best.order),
            units=problem.num_units,
            work=work,
            planned=len(plans) + (best is not plans[-1]),
            seconds=time.perf_counter() - began,
            candidates={plan.name: plan.arena for plan in plans},
        )
        return best.bufsizes

    def _candidates(
        self, graph_module: torch.fx.GraphModule, problem: ScheduleProblem, structural: list[int]
    ) -> tuple[list[tuple[str, list[int]]], str, int, int]:
        """The orders to plan beside the given one (the structural order and the
        scheduler's), with the scheduler's strategy, work and lower bound. With control
        flow, each submodule's arena is placed around the outputs alive at its call site in
        this order (_boundary/control_flow.py): another order would need the arenas placed
        again, so such a graph keeps its order (no candidates)."""
        if not problem.num_units or has_control_flow(graph_module):
            return [], "given", 0, 0
        scheduled = api.schedule(**problem.arguments(structural), work_budget=self.work_budget)
        order = [structural[unit] for unit in np.asarray(scheduled.order).tolist()]
        return (
            [("structural", structural), ("scheduled", order)],
            scheduled.strategy,
            int(scheduled.work),
            int(scheduled.lower_bound),
        )

    @staticmethod
    def _restore(
        nodes: Sequence[torch.fx.Node], targets: dict[torch.fx.Node, Any], before: Any
    ) -> None:
        """The graph as the algorithm was handed it: node order, the targets Cadence's
        constraint passes rewrite in place (cat -> _cat_nop...), placements, lifetimes."""
        graph_module = nodes[0].graph.owning_module
        assert graph_module is not None
        current = [node for node in graph_module.graph.nodes]
        if set(current) != set(nodes):
            raise RuntimeError(
                "the memory planner added or removed graph nodes: reorder=True cannot plan"
                " the graph again"
            )
        apply_node_order(graph_module, nodes)
        for node, target in targets.items():
            if node.target is not target:
                node.target = target
        restore_placements(before)

    @staticmethod
    def _in_node_order(
        specs: list[TensorSpec], graph_module: torch.fx.GraphModule, graph_signature: Any
    ) -> list[TensorSpec]:
        """``specs`` in the order exir's ``apply_algo`` collects them from the graph as it
        is now (order-sensitive algorithms break ties by it)."""
        rank = {
            id(spec): position
            for position, spec in enumerate(
                collect_specs_from_nodes(
                    graph_module.graph.nodes,
                    graph_signature,
                    do_assertion=False,
                    ignore_dynamic_unbound_tensor=False,
                    ignore_const=False,
                )
            )
        }
        last = len(rank)
        return sorted(specs, key=lambda spec: rank.get(id(spec), last))

    @staticmethod
    def _peak_live(specs: list[TensorSpec], alignment: int, hosts: Mapping[int, TensorSpec]) -> int:
        roots = list(
            {id(root): root for root in (buffer_root(spec, hosts) for spec in specs)}.values()
        )
        planned = {id(spec) for spec in specs}
        roots = [root for root in roots if id(root) in planned]
        if not roots:
            return 0
        placements = read_placements(roots)
        sizes = allocated_sizes(roots)
        sizes = (sizes + alignment - 1) // alignment * alignment
        alive = placements.ends >= placements.starts
        return peak_live_bytes(placements.starts[alive], placements.ends[alive], sizes[alive])

    @staticmethod
    def _kept_in_memory1(specs: list[TensorSpec], graph_module: torch.fx.GraphModule) -> int:
        shared = storage_sharing_spec_ids(graph_module)
        owners = [spec for spec in specs if spec.storage_base is None and id(spec) not in shared]
        if not owners:
            return 0
        placements = read_placements(owners)
        return int(allocated_sizes(owners)[placements.mem_ids == 1].sum())


def _moves(graph: UnitGraph, problem: ScheduleProblem, order: Sequence[int]) -> Moves:
    """Each unit whose position relative to the others changed: a write-back, else up or
    down by where it went against the given order's longest kept subsequence."""
    count = len(order)
    if list(order) == list(range(count)):
        return Moves(count)
    kept = _longest_increasing(order)
    write_backs = earlier = later = 0
    position = {unit: at for at, unit in enumerate(order)}
    for unit in range(count):
        if unit in kept:
            continue
        if is_write_back(graph, unit, problem.mutable_buffers):
            write_backs += 1
        elif position[unit] < unit:
            earlier += 1
        else:
            later += 1
    return Moves(count, write_backs, earlier, later)


def _longest_increasing(order: Sequence[int]) -> set[int]:
    """The units of a longest increasing subsequence of ``order``: those that kept their
    relative order (patience sorting, O(n log n))."""
    import bisect

    tails: list[int] = []
    tail_at: list[int] = []
    parent = [-1] * len(order)
    for at, unit in enumerate(order):
        slot = bisect.bisect_left(tails, unit)
        if slot == len(tails):
            tails.append(unit)
            tail_at.append(at)
        else:
            tails[slot] = unit
            tail_at[slot] = at
        parent[at] = tail_at[slot - 1] if slot else -1
    kept: set[int] = set()
    at = tail_at[-1] if tail_at else -1
    while at >= 0:
        kept.add(order[at])
        at = parent[at]
    return kept
