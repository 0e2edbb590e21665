"""Lower an exported program with a memory-planning pass, timed, and read back its plan.

Used by the command line and by bench/transformer_to_executorch.py: :func:`lower_exported`
takes an exported program to an edge program the way Cadence's compiler does (or with
plain ``to_edge``), :class:`TimedPlanning` wraps a ``CadenceMemoryPlanning`` (ours or
upstream's) and times its placer and the whole pass; :func:`lower_and_plan` runs
``to_executorch`` with it, in the backend config that goes with the lowering, and returns
the program and the plan as a :class:`~cadence_memplan.stats.TensorTable`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir import EdgeProgramManager, ExecutorchBackendConfig, ExecutorchProgramManager
from executorch.exir.memory_planning import collect_specs_from_nodes
from executorch.exir.tensor import TensorSpec

from .._boundary.control_flow import (
    HigherOrderNode,
    escaped,
    footprint,
    higher_order_nodes,
    output_ends,
)
from .._boundary.storage_sharing import op_name, storage_sharing_spec_ids
from .._boundary.tensorspecs import allocated_sizes, placed_mask, read_placements
from .._boundary.upstream import lower_ep_to_cadence
from .._types import ALGORITHMS, NOTHING_SPENT, SearchSpent
from ..request import Hierarchy, Memory, PlanningOptions
from ..stats import TensorTable
from . import LOWERING_DESCRIPTIONS, LOWERINGS
from .algorithms import traffic_weights
from .compiler import cadence_backend_config, import_cadence_compiler

__all__ = [
    "LOWERING_DESCRIPTIONS",
    "LoweredPlan",
    "PlannedSpecs",
    "TimedPlanning",
    "backend_config",
    "compile_mode",
    "export_model",
    "graph_table",
    "lower_and_plan",
    "lower_exported",
    "lower_methods",
    "memory_config",
    "method_edge",
    "node_writers",
    "planning_pass",
    "program_table",
    "run_planning",
]


def _check_lowering(lowering: str) -> None:
    if lowering not in LOWERINGS:
        raise ValueError(f"lowering must be one of {LOWERINGS}, got {lowering!r}")


def export_model(model: torch.nn.Module, inputs: tuple[Any, ...], lowering: str) -> Any:
    """``torch.export`` as the lowering's toolchain does: strict, as Cadence's compiler
    exports (``export_to_executorch_gen_etrecord``), or not."""
    _check_lowering(lowering)
    return torch.export.export(model, inputs, strict=lowering == "cadence")


def lower_exported(exported: Any, lowering: str) -> EdgeProgramManager:
    """The edge program ``to_executorch`` starts from: with ``"cadence"``, Cadence's
    compiler's ``_lower_ep_to_cadence`` (``to_edge`` with its compile config, then its
    passes on exir ops in ``CompileMode.DEFAULT``), which is what
    ``export_to_executorch_gen_etrecord`` lowers with; with ``"exir"``, plain ``to_edge``."""
    _check_lowering(lowering)
    if lowering == "cadence":
        edge: EdgeProgramManager = lower_ep_to_cadence(import_cadence_compiler(), exported)
        return edge
    from executorch.exir import to_edge

    return to_edge(exported)


def lower_methods(exported: dict[str, Any], lowering: str) -> EdgeProgramManager:
    """:func:`lower_exported` of a program of several methods (``{name: exported}``), one
    edge program holding them all, as exir's ``to_edge`` of a dict makes it; Cadence's
    lowering takes one program at a time, so each method is lowered alone and the edge
    programs put together with the first one's compile config."""
    _check_lowering(lowering)
    if lowering == "exir":
        from executorch.exir import to_edge

        return to_edge(exported)
    lowered = {name: lower_exported(program, lowering) for name, program in exported.items()}
    first = next(iter(lowered.values()))
    return EdgeProgramManager(
        {name: edge.exported_program() for name, edge in lowered.items()},
        compile_config=first.compile_config,
    )


def method_edge(edge: EdgeProgramManager, method: str) -> EdgeProgramManager:
    """One method of a program of several as an edge program of its own (its exported
    program copied, the compile config kept): what ``size`` sizes a method with."""
    return EdgeProgramManager(
        {method: copy.deepcopy(edge.exported_program(method))},
        compile_config=edge.compile_config,
    )


def backend_config(lowering: str, memory_planning_pass: Any) -> ExecutorchBackendConfig:
    """The ``to_executorch`` config that goes with the lowering, planned by
    ``memory_planning_pass``: Cadence's compiler's, or exir's default."""
    _check_lowering(lowering)
    if lowering == "cadence":
        config: ExecutorchBackendConfig = cadence_backend_config(memory_planning_pass)
        return config
    return ExecutorchBackendConfig(memory_planning_pass=memory_planning_pass)


def compile_mode(lowering: str) -> CompileMode:
    """The ``CompileMode`` our ``CadenceMemoryPlanning`` plans the lowering's program in:
    Cadence's compiler's (``DEFAULT``: cat, slice and select become in-place nops), or,
    for exir's program, ``MINIMAL``, whose constraints are only the ones every program
    needs (views and idma ops): no op is rewritten into a Cadence nop, so the program
    holds exir's portable ops and runs on the portable runtime."""
    _check_lowering(lowering)
    return CompileMode.DEFAULT if lowering == "cadence" else CompileMode.MINIMAL


class TimedPlanning:
    """Wraps a ``CadenceMemoryPlanning`` pass: times its placer's ``plan()`` calls and the
    whole pass (constraints, exir's MemoryPlanningPass, SimplifyIdmaOpsPass)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.placer_seconds = 0.0
        self.pass_seconds = 0.0
        plan = inner.algo.plan

        def timed_plan(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return plan(*args, **kwargs)
            finally:
                self.placer_seconds += time.perf_counter() - began

        inner.algo.plan = timed_plan

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> Any:
        began = time.perf_counter()
        try:
            return self.inner.run(graph_module, graph_signature)
        finally:
            self.pass_seconds += time.perf_counter() - began

    def run_multimethod(self) -> None:
        """exir's call after every method's ``run``, passed on (ours plans a program's
        methods together there, or warns of unshared state; upstream's has none)."""
        inner = getattr(self.inner, "run_multimethod", None)
        if inner is None:
            return
        began = time.perf_counter()
        try:
            inner()
        finally:
            self.pass_seconds += time.perf_counter() - began


def memory_config(memories: Sequence[Memory]) -> MemoryConfig:
    """Upstream's ``MemoryConfig`` for a hierarchy, names and base addresses included."""
    return MemoryConfig(**Hierarchy(memories).memory_config_arguments())


@dataclass
class LoweredPlan:
    program: ExecutorchProgramManager
    table: TensorTable
    node_names: list[str]
    timings: dict[str, float] = field(default_factory=dict)
    strategy: str | None = None  # how "best" found its plan (PlanResult.strategy)
    # (kept in memory 1, kept_bound) of "best"'s one placer call on a hierarchy, else None
    # (with several calls, no one bound covers the program).
    kept: tuple[int, int] | None = None
    reorder: Any = None  # with reorder=True: what it did (cadence_memplan.scheduling.Reorder)
    # What "best" spent over every placer call; nothing for the other placers.
    spent: SearchSpent = NOTHING_SPENT
    # objective="traffic": each row's weight in the table (PlannedSpecs.traffic), else None
    weights: npt.NDArray[np.int64] | None = None
    staging: Any = None  # with options.stage: the pass's StagingReport


def program_table(
    program: ExecutorchProgramManager, alloc_inputs: bool, alloc_outputs: bool
) -> tuple[TensorTable, list[str]]:
    """The planned specs as a table labelled by node name (``name[i]`` for the i-th output
    of a multi-output node), and the graph's node names (index = node index)."""
    exported = program.exported_program()
    return graph_table(exported.graph_module, exported.graph_signature, alloc_inputs, alloc_outputs)


def graph_table(
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    alloc_inputs: bool,
    alloc_outputs: bool,
) -> tuple[TensorTable, list[str]]:
    """:func:`program_table` of a planned graph module and its signature."""
    specs = PlannedSpecs(graph_module, graph_signature, alloc_inputs, alloc_outputs)
    return specs.table(), [node.name for node in graph_module.graph.nodes]


def submodule_rows(
    graph_module: torch.fx.GraphModule,
) -> list[tuple[TensorSpec, str, tuple[int, int]]]:
    """The tensors of a graph's control-flow submodules (nested ones too) as rows of its
    plan table: each spec a submodule writes, named ``cond/submodule_0/node``, alive in
    the graph's time at its higher-order node, and until the last use of the op's output
    it holds (a cond's outputs stay in its branch's memory). They lie inside the bytes
    the pass keeps for the op, so the table marks them as inside another's storage."""
    rows: dict[int, tuple[TensorSpec, str, tuple[int, int]]] = {}
    for hop in higher_order_nodes(graph_module):
        names = _spec_names(hop)
        ends = output_ends(hop)
        held = {id(spec): max(hop.index, ends[k]) for k, spec in escaped(hop)}
        for spec in footprint(hop):
            label = f"{hop.node.name}/{names.get(id(spec), '?')}"
            rows.setdefault(id(spec), (spec, label, (hop.index, held.get(id(spec), hop.index))))
    return list(rows.values())


def _spec_names(hop: HigherOrderNode) -> dict[int, str]:
    """``submodule/node`` of each spec in ``hop``'s submodules, nested ones included."""
    names: dict[int, str] = {}
    for name, submodule in hop.submodules:
        for path, module in submodule.named_modules():
            if not isinstance(module, torch.fx.GraphModule):
                continue
            where = f"{name}/{path}" if path else name
            for node in module.graph.nodes:
                specs = node.meta.get("spec")
                for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
                    if isinstance(spec, TensorSpec):
                        names.setdefault(id(spec), f"{where}/{node.name}")
    return names


class PlannedSpecs:
    """The specs a plan table lists, named and marked once; :meth:`table` reads where
    they are now (so a graph planned again is read again without looking them up)."""

    def __init__(
        self,
        graph_module: torch.fx.GraphModule,
        graph_signature: Any,
        alloc_inputs: bool,
        alloc_outputs: bool,
    ) -> None:
        self.graph_module = graph_module
        nodes = list(graph_module.graph.nodes)
        spec_names: dict[int, str] = {}
        for node in nodes:
            specs = node.meta.get("spec")
            several = isinstance(specs, (list, tuple))
            for index, spec in enumerate(specs if several else [specs]):
                if isinstance(spec, TensorSpec):
                    name = f"{node.name}[{index}]" if several else node.name
                    spec_names.setdefault(id(spec), name)
        # The selection upstream's placer and reports use: graph inputs/outputs as
        # configured, constants left out, each spec once, in node order.
        self.specs: list[TensorSpec] = list(
            collect_specs_from_nodes(
                nodes,
                graph_signature,
                ignore_graph_input=not alloc_inputs,
                ignore_graph_output=not alloc_outputs,
            )
        )
        self.labels = [spec_names.get(id(spec), "?") for spec in self.specs]
        shared = storage_sharing_spec_ids(graph_module)
        self.shares_storage = np.array([id(spec) in shared for spec in self.specs], dtype=bool)
        self.sizes = allocated_sizes(self.specs)
        self.own_rows = len(self.specs)  # the graph's; then its submodules' (control flow)
        self.lifetimes: dict[int, tuple[int, int]] = {}
        for spec, label, lifetime in submodule_rows(graph_module):
            self.specs.append(spec)
            self.labels.append(label)
            self.lifetimes[len(self.specs) - 1] = lifetime
        if self.lifetimes:
            extra = len(self.specs) - self.own_rows
            self.shares_storage = np.concatenate([self.shares_storage, np.ones(extra, bool)])
            self.sizes = np.concatenate([self.sizes, allocated_sizes(self.specs[self.own_rows :])])

    def traffic(self) -> npt.NDArray[np.int64]:
        """Per row of :meth:`table`, the traffic objective's weight, as ``best`` weighs it
        (:func:`~cadence_memplan.cadence.algorithms.traffic_weights`)."""
        own = self.specs[: self.own_rows]
        weights = traffic_weights(own, self.sizes[: self.own_rows], self.graph_module)
        weights = np.concatenate([weights, np.zeros(len(self.specs) - self.own_rows, np.int64)])
        return weights[placed_mask(self.specs)]

    def table(self) -> TensorTable:
        """The placed specs (those with a ``mem_id`` and a ``mem_offset``), as they are now."""
        keep = placed_mask(self.specs)
        placed = keep.tolist()
        placements = read_placements(
            [spec for spec, kept in zip(self.specs, placed, strict=True) if kept]
        )
        if self.lifetimes:  # a submodule's tensors, in the graph's time
            rows = np.flatnonzero(keep).tolist()
            for position, row in enumerate(rows):
                if row in self.lifetimes:
                    placements.starts[position], placements.ends[position] = self.lifetimes[row]
        return TensorTable(
            labels=[label for label, kept in zip(self.labels, placed, strict=True) if kept],
            mem_ids=placements.mem_ids,
            offsets=placements.offsets,
            sizes=self.sizes[keep],
            starts=placements.starts,
            ends=placements.ends,
            shares_storage=self.shares_storage[keep],
        )


def lower_and_plan(
    edge: EdgeProgramManager,
    planning_class: type,
    memories: Sequence[Memory],
    options: PlanningOptions,
    *,
    who: str = "C++ core",
) -> LoweredPlan:
    """``edge.to_executorch`` with ``planning_class`` (ours or upstream's
    ``CadenceMemoryPlanning``) as the memory-planning pass, planned as ``options`` say, in
    the backend config of the lowering that made ``edge`` (``options.lowering``); raises
    what the pass raises. ``who`` names the placer in the timings."""
    pass_, program, timings = run_planning(edge, planning_class, memories, options, who)
    table, node_names = program_table(program, options.alloc_inputs, options.alloc_outputs)
    result = getattr(pass_.algo, "last_result", None)  # ours only
    strategy = None if result is None else result.strategy
    reordered = getattr(pass_, "last_reorder", None)
    # The placer is called once, or once per order reorder=True planned (the kept one last).
    calls = 1 if reordered is None else reordered.planned
    kept = None
    if result is not None and result.kept_bound is not None and pass_.algo.calls == calls:
        kept = (pass_.algo.last_kept, result.kept_bound)
    if reordered is not None:
        timings["reorder (all its plans)"] = reordered.seconds
    weights = None
    if options.objective == "traffic":  # its rows are program_table's
        exported = program.exported_program()
        weights = PlannedSpecs(
            exported.graph_module,
            exported.graph_signature,
            options.alloc_inputs,
            options.alloc_outputs,
        ).traffic()
    spent = getattr(pass_.algo, "spent", NOTHING_SPENT)  # ours only
    staging = getattr(pass_, "last_staging", None)  # ours only
    return LoweredPlan(
        program, table, node_names, timings, strategy, kept, reordered, spent, weights, staging
    )


def run_planning(
    edge: EdgeProgramManager,
    planning_class: type,
    memories: Sequence[Memory],
    options: PlanningOptions,
    who: str,
) -> tuple[Any, ExecutorchProgramManager, dict[str, float]]:
    """(the pass, the program, the timings) of ``edge.to_executorch`` planned by
    ``planning_class`` as ``options`` say, in the backend config of their lowering."""
    pass_ = planning_pass(planning_class, memories, options)
    planning = TimedPlanning(pass_)
    began = time.perf_counter()
    program = edge.to_executorch(backend_config(options.lowering, planning))
    total_seconds = time.perf_counter() - began
    timings = {
        f"placer ({who})": planning.placer_seconds,
        "memory-planning pass": planning.pass_seconds,
        "whole to_executorch": total_seconds,
    }
    return pass_, program, timings


def planning_pass(planning_class: Any, memories: Sequence[Memory], options: PlanningOptions) -> Any:
    """``planning_class`` (our ``CadenceMemoryPlanning`` or upstream's) built as ``options``
    say: the one place the options become a ``CadenceMemoryPlanning``."""
    pass_ = planning_class(
        memory_config(memories),
        compile_mode(options.lowering),
        ALGORITHMS.index(options.algorithm),
        alloc_graph_input=options.alloc_inputs,
        alloc_graph_output=options.alloc_outputs,
        **({"reorder": True} if options.reorder else {}),  # ours only, as the next two
        **options.sharing_arguments,
        **_staging_keywords(options),
    )
    if options.algorithm == "best":  # ours only: upstream's placers take no options
        options.configure(pass_.algo)
    return pass_


def _staging_keywords(options: PlanningOptions) -> dict[str, Any]:
    """``CadenceMemoryPlanning``'s keywords for ``options.stage`` (ours only): the copies
    are Cadence's idma ops on Cadence's lowering, clones on exir's."""
    if not options.stage:
        return {}
    return {"stage": True, "cost_model": options.cost_model, "stage_dialect": options.lowering}


def node_writers(
    program: ExecutorchProgramManager, method: str = "forward"
) -> list[tuple[str, str]]:
    """Per node of the planned graph (index = node index): the node that writes its tensor
    and that node's op (``aten.addmm.out``; ``placeholder`` for inputs). After
    ``to_executorch`` a tensor is an ``alloc`` node, written by the out-variant op that
    takes it as an ``out`` argument; any other node writes its own."""
    writers = []
    for node in program.exported_program(method).graph_module.graph.nodes:
        writer = node
        if node.op == "call_function" and op_name(node.target).endswith("memory.alloc"):
            takes_as_out = [
                user
                for user in node.users
                if any(
                    value is node or (isinstance(value, (list, tuple)) and node in value)
                    for value in user.kwargs.values()
                )
            ]
            writer = takes_as_out[0] if takes_as_out else node
        op = op_name(writer.target) if writer.op == "call_function" else writer.op
        writers.append((writer.name, op))
    return writers
