"""Drop-in replacement for executorch's ``CadenceMemoryPlanning``, planned by the C++ core.

:class:`CadenceMemoryPlanning` is upstream's class (executorch 1.5.x,
``backends/cadence/aot/memory_planning.py``) with its two placers swapped for ours. Its
pass runs upstream's steps in upstream's order (exir's ``MemoryPlanningPass``: lifetimes,
the specs to plan, the placer, exir's checks; then ``SimplifyIdmaOpsPass``) with exir's and
Cadence's own functions, without the work upstream wraps around them
(:mod:`~cadence_memplan.cadence.planning_pass`); constraint generation (pinned specs,
relative placements for cat/slice/select/idma/view, blocklists) is upstream's. Switch by
changing one import (or, for Cadence's compiler, ``cadence_memplan.patch_cadence()``)::

    from cadence_memplan import CadenceMemoryPlanning
    ExecutorchBackendConfig(memory_planning_pass=CadenceMemoryPlanning(memory_config, mode, 0))

Two things differ, on purpose: a bad memory config raises ``ValueError`` in the
constructor instead of failing (or planning garbage) mid-compile, and a run that fails
puts back every spec's ``mem_id``, ``mem_offset`` and ``lifetime`` as they were. One is
added, off by default: ``reorder=True`` also plans the graph in better node orders and
keeps the best plan (:mod:`cadence_memplan.scheduling`; ``last_reorder`` says what it did),
and ``stage=True`` stages the graph through memory 1 with the DSP's DMA before planning it
(:mod:`cadence_memplan.staging`; ``last_staging`` says what it modelled).

The module also keeps the standalone planning functions of Cadence's memory planning before
its ``MemoryPlanningAlgo`` classes (``position_based_greedy_with_hierarchy``,
``greedy_by_size_for_offset_calculation_with_hierarchy``: a graph module in, the buffer
sizes out), for callers written against that older API.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import torch
from executorch.backends.cadence.aot.memory_constraints import ConstraintsGenPass, MemConstraints
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.memory_planning_algo import (
    MemoryPlanningAlgo,
    MemoryPlanningState,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig, MemoryPlanningAlgoFailure
from executorch.exir.memory_planning import collect_specs_from_nodes, update_all_tensors_lifetime
from executorch.exir.tensor import TensorSpec
from torch.export import ExportGraphSignature
from torch.fx.passes.infra.pass_base import PassResult

from .._boundary import upstream
from .._boundary.mutable_state import check_unshared, method_buffers
from .._boundary.tensorspecs import (
    read_placements,
    require_lifetimes,
    restore_placements,
    save_placements,
)
from .._validation import check_choice, is_integer
from ..scheduling import Reorder, Reordering
from ..staging.cost_model import CostModel, cost_model_of
from ..staging.graph import GraphProblem, problem_of_graph
from ..staging.problem import Copy
from ..staging.report import StagingReport, stage_problem
from ..staging.rewrite import Rewrite, insert_copies, remove_copies
from ..staging.simulate import IllegalSchedule, Simulation, simulate
from .algorithms import BestOfHierarchy, GreedyWithHeuristic, PositionBasedGreedyWithHierarchy
from .graph_code import deferred_recompile
from .planning_pass import (
    graph_specs,
    plan_graph,
    signature_with_maps,
    spec_holder,
    update_lifetimes,
    views_checked_once,
)
from .shared_state import PendingMethod, plan_sharing_state

__all__ = [
    "MEM_ALGOS",
    "CadenceMemoryPlanning",
    "SpecSnapshot",
    "greedy_by_size_for_offset_calculation_with_hierarchy",
    "position_based_greedy_with_hierarchy",
]

# Indexed by the ``mem_algo`` argument: upstream's two in upstream's order, then ours.
MEM_ALGOS: tuple[type[MemoryPlanningAlgo], ...] = (
    PositionBasedGreedyWithHierarchy,
    GreedyWithHeuristic,
    BestOfHierarchy,
)


# --------------------------------------------------------------------------- the pass


class SpecSnapshot:
    """Every TensorSpec's ``mem_id``, ``mem_offset`` and ``lifetime`` in a graph module, to
    put back later: after a failed run, or before planning the same graph again.

    Lifetime lists are shared between specs and also changed in place (Cadence's
    constraints widen them), so the list object is kept (to restore the sharing) along
    with a copy of what it held (the boundary's ``save_placements``). A view's fields live
    in its base, which is what is kept.
    """

    def __init__(self, graph_module: torch.fx.GraphModule) -> None:
        self.saved = save_placements(
            list(dict.fromkeys(spec_holder(spec) for spec in graph_specs(graph_module)))
        )

    def restore(self) -> None:
        restore_placements(self.saved)


class CadenceMemoryPlanning(UpstreamCadenceMemoryPlanning):
    """Upstream's ``CadenceMemoryPlanning`` with the placement done by the C++ core.

    Same constructor: ``memory_config``, ``mode``, ``mem_algo`` (0: first fit,
    :class:`~cadence_memplan.PositionBasedGreedyWithHierarchy`; 1: best fit,
    :class:`~cadence_memplan.GreedyWithHeuristic`; and ours, 2: the smallest of many plans,
    :class:`~cadence_memplan.BestOfHierarchy`), ``alloc_graph_input``,
    ``alloc_graph_output``, ``additional_constraint_gen_passes``. Same ``__call__`` and
    ``run`` (exir's ``MemoryPlanningPass``, then upstream's ``SimplifyIdmaOpsPass``), so it
    goes in ``ExecutorchBackendConfig(memory_planning_pass=...)`` and gives upstream's
    placements byte for byte.

    ``reorder`` (keyword only; default :attr:`reorder_by_default`, False here) also plans
    the graph in better node orders and keeps the order whose plan keeps no fewer bytes in
    memory 1 and has no larger arena, one of them strictly better (the graph's own order
    otherwise): :class:`cadence_memplan.scheduling.Reordering`. After a run,
    ``last_reorder`` (a :class:`~cadence_memplan.scheduling.Reorder`) says what it did.

    ``share_mutable_buffers`` (keyword only; exir's keyword, default
    :attr:`share_by_default`, False here) plans the program's methods together, their
    mutable state (every buffer a method mutates) placed once, at one ``(mem_id, offset)``
    in every method, in the fastest memory where it fits beside every method's own
    tensors (:mod:`cadence_memplan.cadence.shared_state`): ``run`` records each method
    and ``run_multimethod`` (which ``to_executorch`` calls after every method's ``run``)
    plans them; ``last_state_mem_id`` then says where the state went. Without it, methods
    that use a buffer one of them mutates get an ``UnsharedStateWarning`` naming it, or,
    with ``strict_sharing=True``, an ``UnsharedStateError``, from ``run_multimethod``.

    ``stage`` (keyword only; default False) stages each graph through memory 1 (the
    fast memory: ``memory_config``'s first size) before planning it (docs/staging.md,
    "In the passes"): the copies the staging chooses under ``cost_model`` (a
    ``CostModel``, a JSON or TOML file, None: the default) become Cadence's
    ``idma_load``/``idma_store`` and ``idma_wait``, whose fast copies Cadence's
    constraints pin to memory 1, and ``SimplifyIdmaOpsPass`` makes them ``idma_copy``
    after planning (``stage_dialect="exir"``: clones instead, which the portable runtime
    runs, for a program ``to_edge`` made). The choice is the static plan, no copy at all,
    unless its modelled cycles are fewer and the placer realises it (:meth:`_stage`);
    ``last_staging`` (a ``StagingReport``) and ``last_rewrite`` then say what it did. If planning raises, the copies are taken out again. Not with
    ``share_mutable_buffers=True``, which plans after ``run`` has returned.
    """

    reorder_by_default = False  # what ``patch_cadence(reorder=True)``'s subclasses change
    share_by_default = False  # and patch_cadence(share_mutable_buffers=True)'s
    strict_by_default = False  # and patch_cadence(strict_sharing=True)'s
    last_reorder: Reorder | None = None
    last_state_mem_id: int | None = None
    last_staging: StagingReport | None = None
    last_rewrite: Rewrite | None = None

    def __init__(
        self,
        memory_config: MemoryConfig,
        mode: CompileMode,
        mem_algo: int,
        alloc_graph_input: bool = True,
        alloc_graph_output: bool = True,
        additional_constraint_gen_passes: Sequence[ConstraintsGenPass] | None = None,
        *,
        reorder: bool | None = None,
        share_mutable_buffers: bool | None = None,
        strict_sharing: bool | None = None,
        stage: bool = False,
        cost_model: CostModel | str | os.PathLike[str] | None = None,
        stage_dialect: str = "cadence",
    ) -> None:
        self.reorder = self.reorder_by_default if reorder is None else bool(reorder)
        self.share_mutable_buffers = (
            self.share_by_default if share_mutable_buffers is None else bool(share_mutable_buffers)
        )
        self.strict_sharing = (
            self.strict_by_default if strict_sharing is None else bool(strict_sharing)
        )
        self.cost_model = _staging_model(stage, cost_model, self.share_mutable_buffers)
        check_choice("stage_dialect", stage_dialect, ("cadence", "exir"))
        self.stage_dialect = stage_dialect
        self._pending: list[PendingMethod] = []
        # The algorithm classes check memory_config when upstream's __init__ builds them.
        # Upstream indexes a list with mem_algo, so -1 silently meant "the last one".
        if not is_integer(mem_algo) or not 0 <= mem_algo < len(MEM_ALGOS):
            raise ValueError(
                f"mem_algo must be 0 (position-based), 1 (heuristic) or 2 (best), got {mem_algo!r}"
            )
        super().__init__(
            memory_config,
            mode,
            mem_algo,
            alloc_graph_input,
            alloc_graph_output,
            additional_constraint_gen_passes,
        )

    @staticmethod
    def get_mem_algos(
        memory_config: MemoryConfig,
        mode: CompileMode,
        alloc_graph_input: bool,
        alloc_graph_output: bool,
        additional_constraint_gen_passes: Sequence[ConstraintsGenPass] | None,
    ) -> list[MemoryPlanningAlgo]:
        """Our placers, in upstream's ``mem_algo`` order; upstream's __init__ picks one."""
        return [
            algo_class(
                memory_config=memory_config,
                mode=mode,
                alloc_graph_input=alloc_graph_input,
                alloc_graph_output=alloc_graph_output,
                additional_constraint_gen_passes=additional_constraint_gen_passes,
            )
            for algo_class in MEM_ALGOS
        ]

    def run(
        self,
        graph_module: torch.fx.GraphModule,
        graph_signature: ExportGraphSignature | None = None,
    ) -> PassResult:
        """Upstream's run(): the same steps on the same objects, so the same program, at
        the placer's speed; if it raises, every spec's placement and lifetime is put back.

        What differs is how, never what (:mod:`cadence_memplan.cadence.planning_pass`
        says why each is safe):

        - ``recompile()`` only marks the graph module's code stale, to be regenerated when
          it is next used (:mod:`~cadence_memplan.cadence.graph_code`): upstream
          regenerates it about ten times, nothing in the pass reads it, and
          ``to_executorch`` regenerates it after the pass anyway;
        - exir gets a signature whose name maps are built once instead of per use;
        - views (exir's ``_ViewSpec``) run their guards once, after the pass, instead of
          on every read;
        - the steps are :func:`~cadence_memplan.cadence.planning_pass.plan_graph`'s:
          exir's and Cadence's functions in upstream's order, lifetimes in one walk, no
          second ``PassManager`` check.

        One thing differs in what, on purpose, and only for graphs with control flow
        (cond, while, map, scan): upstream's placers ignore the submodules' arenas, so
        its plan lets the graph's tensors and later submodules overwrite what a
        submodule holds while the graph still needs it (the bug of executorch #21490,
        and more). Ours plans each submodule around the outputs still alive when it runs
        and the graph's tensors around the submodules (docs/cadence.md).

        With an executorch outside the tested range
        (:mod:`~cadence_memplan._boundary.upstream`), every graph runs upstream's
        ``run()`` itself, with none of the above.

        Upstream places pinned specs and resolves relative placements before the last
        ``plan()`` call, so without the snapshot a failure would leave part of the graph
        placed.
        """
        buffers = method_buffers(graph_module, graph_signature)
        # The program keeps the graph module's meta as it is when run() returns: the list
        # is filled in place once run_multimethod() has planned every method.
        sizes: list[int] = []
        self._pending.append(PendingMethod(buffers, sizes))
        if self.share_mutable_buffers:
            graph_module.meta["non_const_buffer_sizes"] = sizes
            return PassResult(graph_module, True)
        staged = self._stage(graph_module, graph_signature)
        rewrite = staged[0] if staged else None
        try:
            self._plan(graph_module, graph_signature)
        except BaseException:
            if rewrite is not None:
                remove_copies(graph_module, rewrite)
            raise
        self.last_rewrite = rewrite
        if staged and staged[2] and self.last_staging is not None:
            # The figure of this graph's plan (the trial's, the placer being deterministic).
            placed = _modelled(self.cost_model, staged[1], staged[2])
            self.last_staging = replace(self.last_staging, placed=placed)
        return PassResult(graph_module, True)

    def _stage(
        self, graph_module: torch.fx.GraphModule, graph_signature: ExportGraphSignature | None
    ) -> tuple[Rewrite, GraphProblem, tuple[Copy, ...]] | None:
        """With ``stage=True``, the graph staged through memory 1 (Cadence's idma ops) if
        the placer realises the staging: it plans a copy of the staged graph first, and
        the copies go into this graph only when that plan, modelled, has no more cycles
        than the static plan, or fewer than the placer's plan of the unstaged graph (a
        second copy, planned only then); ``last_staging`` says which. The copies put in,
        the problem they were put in, and the copies of the schedule."""
        if self.cost_model is None:
            return None
        alignments = self.memory_config.memory_alignments or [1]
        mine = problem_of_graph(graph_module, graph_signature, self.cost_model, cadence_nops=True)
        report = stage_problem(
            mine.problem,
            self.cost_model,
            int(self.memory_config.memory_sizes[0]),
            int(alignments[0]),
        )
        self.last_staging = report
        schedule = report.choice.schedule
        if schedule:
            placed = _placed(self, graph_module, graph_signature, schedule)
            unstaged = None
            if placed is not None and placed.cycles > report.static.cycles:
                unstaged = _placed(self, graph_module, graph_signature, ())
            if placed is not None and (
                placed.cycles <= report.static.cycles
                or (unstaged is not None and placed.cycles < unstaged.cycles)
            ):
                self.last_staging = replace(report, placed=placed, placed_unstaged=unstaged)
            else:
                self.last_staging, schedule = report.not_realised(placed, unstaged), ()
        return insert_copies(mine, schedule, self.stage_dialect), mine, tuple(schedule)

    def run_multimethod(self) -> None:
        """After every method's ``run``: plan them together when sharing mutable buffers
        (put back whole if it raises), else say which state they do not share."""
        pending, self._pending = self._pending, []
        if not self.share_mutable_buffers:
            check_unshared(
                [method.buffers for method in pending], self.strict_sharing, "CadenceMemoryPlanning"
            )
            return
        snapshots = [SpecSnapshot(method.buffers.graph_module) for method in pending]

        def restore() -> None:
            for snapshot in snapshots:
                snapshot.restore()

        def plan_method(graph_module: Any, signature: Any, outside: Any, unplanned: Any) -> None:
            self._plan(graph_module, signature, outside, unplanned)

        try:
            self.last_state_mem_id = plan_sharing_state(
                pending, self.memory_config, plan_method, restore
            )
        except BaseException:
            restore()
            raise

    def _plan(
        self,
        graph_module: torch.fx.GraphModule,
        graph_signature: ExportGraphSignature | None,
        outside: list[tuple[int, int, int]] | None = None,
        unplanned: frozenset[int] = frozenset(),
    ) -> None:
        """One graph planned as ``run`` says, around ``outside``'s bytes, without the
        specs in ``unplanned`` (their ids)."""
        snapshot = SpecSnapshot(graph_module)
        signature = signature_with_maps(graph_signature)
        algo: MemoryPlanningAlgo = self.algo
        reordering = None
        if self.reorder:  # with the lifetimes of the path the graph takes
            fast = upstream.fast_paths_supported()
            lifetimes = update_lifetimes if fast else update_all_tensors_lifetime
            reordering = Reordering(algo, graph_module, lifetimes)
        try:
            # Upstream's run() plans with self.algo: the reordering stands in for it there.
            if not upstream.fast_paths_supported():  # an untested executorch: its own pass
                if outside or unplanned:
                    raise NotImplementedError(
                        "share_mutable_buffers=True needs an executorch in the tested range"
                    )
                setattr(self, "algo", reordering or algo)  # noqa: B010  (not a MemoryPlanningAlgo)
                super().run(graph_module, graph_signature)
                return
            with deferred_recompile(graph_module), views_checked_once(graph_module):
                plan_graph(
                    reordering or algo,
                    graph_module,
                    signature,
                    self.alloc_graph_input,
                    self.alloc_graph_output,
                    outside,
                    unplanned,
                    isinstance(algo, BestOfHierarchy),  # drop_unread
                )
        except BaseException:
            snapshot.restore()
            raise
        finally:
            setattr(self, "algo", algo)  # noqa: B010
            self.last_reorder = reordering.result if reordering else None


def _placed(
    planning: CadenceMemoryPlanning,
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    schedule: Sequence[Copy],
) -> Simulation | None:
    """The cycles modelled for the plan ``planning`` makes of a copy of ``graph_module``
    with ``schedule``'s copies: the copies as modelled, every other tensor where the
    placer put it; None if it cannot plan it or the model cannot run the placement."""
    assert planning.cost_model is not None
    # A deep copy of a graph module copies each node's meta shallowly: the copy's
    # TensorSpecs are this graph's, put back as they were after the trial.
    snapshot = SpecSnapshot(graph_module)
    trial = copy.deepcopy(graph_module)
    graph = problem_of_graph(trial, graph_signature, planning.cost_model, cadence_nops=True)
    insert_copies(graph, schedule, planning.stage_dialect)
    try:
        planning._plan(trial, graph_signature)
        return _modelled(planning.cost_model, graph, schedule)
    except (MemoryPlanningAlgoFailure, MemoryError):  # planned unstaged, or raises then
        return None
    finally:
        snapshot.restore()


def _modelled(
    model: CostModel | None, graph: GraphProblem, schedule: Sequence[Copy]
) -> Simulation | None:
    """The cycles modelled for ``graph`` as placed, with ``schedule``'s copies."""
    assert model is not None
    kept = _in_memory_1(graph) - {copy.tensor for copy in schedule}
    try:
        return simulate(graph.problem, model, kept, schedule)
    except IllegalSchedule:
        return None


def _in_memory_1(graph: GraphProblem) -> frozenset[int]:
    """The problem's tensors whose specs the placer put in memory 1 (a tuple's by place)."""
    tensors: list[int] = []
    specs: list[TensorSpec] = []
    places: dict[torch.fx.Node, int] = {}
    for tensor, node in enumerate(graph.tensors):
        place = places.get(node, 0)
        places[node] = place + 1
        spec = node.meta.get("spec")
        if isinstance(spec, (list, tuple)):
            spec = spec[place] if place < len(spec) else None
        if isinstance(spec, TensorSpec):
            tensors.append(tensor)
            specs.append(spec)
    if not specs:
        return frozenset()
    mem_ids = read_placements(specs).mem_ids.tolist()
    return frozenset(tensor for tensor, mem_id in zip(tensors, mem_ids, strict=True) if mem_id == 1)


def _staging_model(stage: bool, cost_model: Any, share_mutable_buffers: bool) -> CostModel | None:
    """The cost model ``stage=True`` stages under; None without it. Checks the keywords."""
    if not isinstance(stage, bool):
        raise TypeError(f"stage must be True or False, got {stage!r}")
    if not stage:
        if cost_model is not None:
            raise ValueError("cost_model goes with stage=True")
        return None
    if share_mutable_buffers:
        raise ValueError(
            "stage=True stages each method as run() plans it; share_mutable_buffers=True"
            " plans the methods later, together: use one or the other"
        )
    return cost_model_of(cost_model)


# ------------------------------------------------- the standalone functions (older API)


def _plan_graph_module(
    algo_class: type[MemoryPlanningAlgo],
    graph_module: torch.fx.GraphModule,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    memory_config: MemoryConfig,
) -> list[int]:
    # The same selection as executorch 1.5.x's collect_specs_from_graph_module
    # (collect_specs_from_nodes with the graph signature, constants left out,
    # deduplicated, in node order).
    specs = list(
        collect_specs_from_nodes(
            graph_module.graph.nodes,
            graph_signature,
            ignore_graph_input=not alloc_graph_input,
            ignore_graph_output=not alloc_graph_output,
        )
    )
    require_lifetimes(specs)
    algo = algo_class(
        memory_config,
        alloc_graph_input=alloc_graph_input,
        alloc_graph_output=alloc_graph_output,
    )
    state = MemoryPlanningState(memory_config)
    # Seed-era planning knew no constraints: every collected spec is placed on its own.
    constraints = MemConstraints(
        alloc_graph_input=alloc_graph_input, alloc_graph_output=alloc_graph_output
    )
    algo.plan(specs, graph_module, graph_signature, state, constraints)
    return list(state.bufsizes)


def position_based_greedy_with_hierarchy(
    graph_module: torch.fx.GraphModule,
    alignment: int,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    *,
    memory_config: MemoryConfig,
) -> list[int]:
    """Place every planned spec of ``graph_module`` first-fit; return bufsizes per memory id.

    The older API's function, run on the C++ core through
    :class:`~cadence_memplan.PositionBasedGreedyWithHierarchy`. Specs are collected as
    executorch 1.5.x's ``collect_specs_from_nodes`` does for upstream's
    ``collect_specs_from_graph_module``, and must already have lifetimes. ``alignment`` is
    unused, as in the seed: each memory's alignment comes from ``memory_config``, and
    ``bufsizes[m]`` is memory m's end rounded up to it (index 0 is reserved, always 0).
    Raises upstream's ``MemoryPlanningAlgoFailure`` (the seed raised ``MemoryError``) when
    a spec fits nowhere, leaving every spec as it was.
    """
    del alignment  # Per-memory alignments come from memory_config.
    return _plan_graph_module(
        PositionBasedGreedyWithHierarchy,
        graph_module,
        graph_signature,
        alloc_graph_input,
        alloc_graph_output,
        memory_config,
    )


def greedy_by_size_for_offset_calculation_with_hierarchy(
    graph_module: torch.fx.GraphModule,
    alignment: int,
    graph_signature: ExportGraphSignature | None,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    *,
    memory_config: MemoryConfig,
) -> list[int]:
    """Place every planned spec of ``graph_module`` best-fit (arXiv 2001.03288); return bufsizes.

    The older API's function, run on the C++ core through
    :class:`~cadence_memplan.GreedyWithHeuristic`; otherwise as
    :func:`position_based_greedy_with_hierarchy`.
    """
    del alignment  # Per-memory alignments come from memory_config.
    return _plan_graph_module(
        GreedyWithHeuristic,
        graph_module,
        graph_signature,
        alloc_graph_input,
        alloc_graph_output,
        memory_config,
    )
