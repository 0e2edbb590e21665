"""Plan one lowered model at many memory configurations, for ``cadence-memplan sweep``.

The sweep itself (rows, what moved, the table) is numpy only, in
:mod:`cadence_memplan.analysis.sweep`; this module supplies its ``plan_at`` for models.

The model goes through ``to_executorch`` once, with our ``CadenceMemoryPlanning`` whose
algorithm is wrapped: when exir's ``apply_algo`` calls it, the wrapper records what it was
handed (the specs, with lifetimes just computed, the graph module and its signature) and a
:class:`~cadence_memplan.cadence.memory_planning.SpecSnapshot`. Each later :meth:`Replanner.plan`
puts every spec (and every op Cadence's constraint passes rewrite) back as it was at
that call, builds the algorithm for the new
``MemoryConfig`` as upstream's ``CadenceMemoryPlanning`` does, and calls it as
``apply_algo`` did: upstream's ``MemoryPlanningAlgo.__call__``, so upstream's constraint
generation, pinned and relative placements, then our placer. Only that planning step runs
again; export, ``to_edge``, the passes before planning and the emitter do not. torch's
PassManager regenerates the graph's Python code after each of upstream's constraint passes,
which only read the graph (they record constraints and widen lifetimes); the re-plan defers
that (:func:`~cadence_memplan.cadence.graph_code.deferred_recompile`), as our pass does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure
from executorch.exir import EdgeProgramManager
from executorch.exir.tensor import TensorSpec

from .._boundary.algorithm_protocols import MemoryPlanningAlgorithm
from .._types import ALGORITHMS
from ..request import Memory, PlanningOptions
from ..stats import TensorTable
from .graph_code import deferred_recompile
from .lowering import PlannedSpecs, backend_config, compile_mode, memory_config, planning_pass
from .memory_planning import CadenceMemoryPlanning, SpecSnapshot
from .planning_pass import plan_graph_and_submodules

__all__ = ["PLANNING_FAILURES", "Replanner"]

# What a plan that does not fit raises: our placers' failure, and upstream's MemoryError
# for a pinned spec that cannot be placed.
PLANNING_FAILURES = (MemoryPlanningAlgoFailure, MemoryError)


def _operations(graph_module: torch.fx.GraphModule) -> list[torch.fx.Node]:
    """The graph's call_function nodes (to_executorch replaces its output node later)."""
    return [node for node in graph_module.graph.nodes if node.op == "call_function"]


@dataclass
class _AlgoCall:
    alignment: int
    specs: list[TensorSpec]
    graph_module: torch.fx.GraphModule
    graph_signature: Any
    extra_padding: int
    snapshot: SpecSnapshot
    # Constraint generation also rewrites ops in place (cat -> _cat_nop, slice_copy ->
    # _slice_copy_nop) and only constrains ops not yet rewritten, so re-planning puts the
    # targets back too.
    targets: dict[torch.fx.Node, Any]

    def restore(self) -> None:
        """Put the graph and its specs back as they were when apply_algo made this call."""
        if _operations(self.graph_module) != list(self.targets):
            raise ValueError(
                "the graph's operations changed after memory planning (added or removed),"
                " so it cannot be planned again"
            )
        for node, target in self.targets.items():
            if node.target is not target:  # fx's Node.__setattr__ is not cheap
                node.target = target
        self.snapshot.restore()


class _RecordingAlgo:
    """Stands in for a ``MemoryPlanningAlgo``: records each call, then makes it."""

    def __init__(self, algo: MemoryPlanningAlgorithm) -> None:
        self.algo = algo
        self.calls: list[_AlgoCall] = []

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
        specs = list(specs)
        self.calls.append(
            _AlgoCall(
                alignment,
                specs,
                graph_module,
                graph_signature,
                extra_padding,
                SpecSnapshot(graph_module),
                {node: node.target for node in _operations(graph_module)},
            )
        )
        bufsizes: list[int] = self.algo(
            alignment, specs, graph_module, graph_signature, extra_padding
        )
        return bufsizes


class Replanner:
    """A model lowered once, planned again at any memory configuration.

    ``memories`` is the configuration of the one real planning run inside
    ``to_executorch``; if it does not fit, that is not an error here (each configuration
    the caller asks for is planned on its own). ``options`` are that run's
    (:class:`~cadence_memplan.request.PlanningOptions`); its ``lowering`` is the one that
    made ``edge``: ``to_executorch`` runs in its backend config, as
    :func:`~cadence_memplan.cadence.lowering.lower_and_plan` does, so each replay is
    the plan a whole lowering makes. Each replay plans as ``options`` say unless
    :meth:`plan` is given others (what is allocated stays the lowering's). With
    ``options.reorder``, the one run plans better node orders too
    (``CadenceMemoryPlanning(reorder=True)``), and every replay plans the order it kept.
    ``last_placer`` is the placer of the last replay (``last_result``, ``last_kept``,
    ``calls``, ``work``: what it planned and proved), None before the first.
    """

    def __init__(
        self, edge: EdgeProgramManager, memories: Sequence[Memory], options: PlanningOptions
    ) -> None:
        self.options = options
        self.last_placer: Any = None
        planning = planning_pass(CadenceMemoryPlanning, memories, options)
        recorder = _RecordingAlgo(planning.algo)
        planning.algo = recorder
        self.program: Any = None  # the program that to_executorch made (pools: device/)
        try:
            self.program = edge.to_executorch(backend_config(options.lowering, planning))
        except PLANNING_FAILURES:
            if not recorder.calls:
                raise
        if not recorder.calls:
            raise ValueError("to_executorch never called the memory planner")
        # apply_algo plans control-flow submodules first, each with its own call, and
        # the graph itself last: a replay plans them all again, in the pass's steps.
        # With reorder, the pass plans its graph in several orders and the kept one last,
        # leaving the graph in that order: each graph's last call is the one to replay.
        self.calls = list({id(call.graph_module): call for call in recorder.calls}.values())
        self.call = recorder.calls[-1]
        self.node_names: list[str] = [node.name for node in self.call.graph_module.graph.nodes]
        self.planned_specs = PlannedSpecs(
            self.call.graph_module,
            self.call.graph_signature,
            options.alloc_inputs,
            options.alloc_outputs,
        )

    def _restore(self) -> None:
        """Every graph the pass planned as it was when planned: the graph itself first,
        then its submodules, latest first, so each spec ends as its first call found it."""
        for call in reversed(self.calls):
            call.restore()

    def plan(
        self, memories: Sequence[Memory], options: PlanningOptions | None = None
    ) -> TensorTable:
        """The plan at ``memories``, as ``plan`` would make it, with ``options``' placer,
        budget and objective (default: the lowering's); raises one of
        :data:`PLANNING_FAILURES` (every spec put back) when it does not fit."""
        call = self.call
        self._restore()
        replay = self.options if options is None else options
        algo = CadenceMemoryPlanning.get_mem_algos(
            memory_config(memories),
            compile_mode(self.options.lowering),
            self.options.alloc_inputs,
            self.options.alloc_outputs,
            None,
        )[ALGORITHMS.index(replay.algorithm)]
        replay.configure(algo)
        self.last_placer = algo
        try:
            with deferred_recompile(call.graph_module):
                if len(self.calls) == 1:
                    algo(
                        call.alignment,
                        call.specs,
                        call.graph_module,
                        call.graph_signature,
                        call.extra_padding,
                    )
                else:
                    plan_graph_and_submodules(
                        algo, call.alignment, call.graph_module, call.graph_signature,
                        self.options.alloc_inputs, self.options.alloc_outputs,
                    )  # fmt: skip
        except BaseException:
            self._restore()
            raise
        return self.planned_specs.table()
