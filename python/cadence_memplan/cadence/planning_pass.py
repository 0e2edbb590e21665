"""The memory-planning pass around Cadence's placer, at the placer's speed, same program.

Upstream's ``CadenceMemoryPlanning.run()`` (executorch 1.5.x) is exir's
``MemoryPlanningPass.run`` followed by ``SimplifyIdmaOpsPass`` under a ``PassManager``.
``MemoryPlanningPass.run`` sets the alloc nodes' specs, then ``apply_algo``: tensor
lifetimes (``update_all_tensors_lifetime``), the specs to plan, control-flow submodules,
the placer (Cadence's constraints, then ``plan()``), calls to free dynamic tensors, the
buffer sizes; then exir's verifier checks graph inputs and outputs.

:func:`plan_graph` runs those steps in that order, with exir's and Cadence's own
functions, for every graph: every spec in one memory pool (``enable_non_cpu_memory_planning``
is off, as upstream's pass never sets it), mutable buffers neither left out nor shared
(upstream's pass builds its ``MemoryPlanningPass`` that way). For a graph without
control flow (all Cadence lowers) it differs in how, never in what:

- Lifetimes come from :func:`update_lifetimes`, which gives every spec the lifetime exir's
  ``update_all_tensors_lifetime`` gives it (tests/test_planning_pass.py holds them equal),
  in one walk: exir flattens every node's arguments with pytree and re-derives each
  argument's specs once per use, and reads the signature's maps for every use of a
  placeholder.
- ``SimplifyIdmaOpsPass`` is called directly instead of through a ``PassManager``, whose
  only additions are a check (recompile, lint, no ``call_method`` nodes) of the graph that
  constraint generation's own ``PassManager`` checked at its start, changed since only by
  retargeted nops and inserted free calls, and a recompile after the pass; and it is not
  called at all on a graph it would leave as it is (no idma load or store, no dead code).
- exir's ``_apply_algo_to_submodules`` walks the graph four times to find no
  higher-order node; :func:`_plan_scope` walks it once.

A graph with cond, while, map or scan nodes is planned differently on purpose: upstream's
placers ignore the submodules' arenas (exir's ``input_mem_buffer_sizes``), so upstream's
plan lets the graph's tensors, and later submodules, overwrite what a submodule holds
while the graph still needs it. :func:`_plan_around_submodules` plans the submodules in
graph order, each around the outputs of earlier ones still alive when it runs, and the
graph's own tensors around what the submodules hold while they hold it
(``_boundary/control_flow.py``).

The caller (``CadenceMemoryPlanning.run``), on every graph, also defers ``recompile()``
(:mod:`.graph_code`), hands exir a signature whose name maps are computed once
(:func:`signature_with_maps`), and lets views run their guards once after the pass
instead of on every read (:func:`views_checked_once`).
"""

from __future__ import annotations

import contextlib
import functools
import logging
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from executorch.backends.cadence.aot.memory_planning import SimplifyIdmaOpsPass
from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure
from executorch.exir import memory
from executorch.exir.memory_planning import (
    Verifier,
    collect_specs_from_nodes,
    filter_nodes,
    get_node_tensor_specs,
    insert_calls_to_free,
)
from executorch.exir.passes import MemoryPlanningPass
from executorch.exir.tensor import TensorSpec
from torch.export import ExportGraphSignature
from torch.fx.immutable_collections import immutable_dict, immutable_list

from .._boundary import upstream
from .._boundary.algorithm_protocols import MemoryPlanningAlgorithm
from .._boundary.control_flow import (
    ArenaDoesNotFit,
    ArenaPlacer,
    HigherOrderNode,
    higher_order_nodes,
    reserving,
)
from .._boundary.mutable_state import alias_to_buffers, unread_mutation_outputs
from .._boundary.upstream import (
    ViewSpec,
    alias_inplace_result_specs,
    contains_xnnpack_delegate,
    extend_storage_base_lifetimes,
    is_inplace_node,
    is_mutable_buffer,
    spec_holder,
)

__all__ = [
    "graph_specs",
    "plan_graph",
    "plan_graph_and_submodules",
    "signature_with_maps",
    "spec_holder",
    "update_lifetimes",
    "views_checked_once",
]


def graph_specs(graph_module: torch.fx.GraphModule) -> Iterator[TensorSpec]:
    """Every TensorSpec in the node metadata of ``graph_module`` and its submodules."""
    for module in graph_module.modules():
        if not isinstance(module, torch.fx.GraphModule):
            continue
        for node in module.graph.nodes:
            specs = node.meta.get("spec")
            # TensorSpec first: an isinstance check that fails on exir's _ViewSpec reads its
            # __class__, which runs all its guards.
            if isinstance(specs, TensorSpec):
                yield specs
            elif isinstance(specs, (list, tuple)):
                yield from (spec for spec in specs if isinstance(spec, TensorSpec))


@contextlib.contextmanager
def views_checked_once(graph_module: torch.fx.GraphModule) -> Iterator[None]:
    """Within the block exir's ``_ViewSpec`` guards are off; after it each view runs them once.

    A view's guards check that its shape, rank, dtype, layout and dynamism still agree
    with its base's, and run on every attribute read: the pass reads views' placements
    and lifetimes tens of thousands of times. The pass writes only placements and
    lifetimes (its base's fields), which no guard reads, so a guard that would fail
    inside the block fails the same way when each view runs its guards after it, before
    anything else reads the view (the emitter would run them at its first read)."""
    views = [
        spec for spec in dict.fromkeys(graph_specs(graph_module)) if isinstance(spec, ViewSpec)
    ]
    previous = [upstream.view_unguarded(view) for view in views]
    for view in views:
        upstream.set_view_unguarded(view, True)
    try:
        yield
    finally:
        for view, unguarded in zip(views, previous, strict=True):
            upstream.set_view_unguarded(view, unguarded)
    for view in views:
        upstream.run_view_guards(view)


# --------------------------------------------------------------------------- signature


class _SignatureWithMaps(ExportGraphSignature):
    """The same signature (the same input and output spec objects) with the two name maps
    exir's planning reads computed once.

    ``ExportGraphSignature.inputs_to_buffers`` and ``buffers_to_mutate`` build a new
    mapping from every input (output) spec on each access, and exir's lifetime pass reads
    them for every use of every placeholder: quadratic in the number of parameters.
    Nothing in the pass changes the signature, so the maps read once are the maps
    upstream reads each time."""

    @functools.cached_property
    def inputs_to_buffers(self) -> Mapping[str, str]:
        return super().inputs_to_buffers

    @functools.cached_property
    def buffers_to_mutate(self) -> Mapping[str, str]:
        return super().buffers_to_mutate


def signature_with_maps(signature: Any) -> Any:
    """``signature`` with its name maps computed once; ``None`` and subclasses (which may
    compute them otherwise) are returned as they are."""
    if type(signature) is not ExportGraphSignature:
        return signature
    return _SignatureWithMaps(signature.input_specs, signature.output_specs)


# --------------------------------------------------------------------------- lifetimes

_SEQUENCES = frozenset([list, tuple, immutable_list])
_MAPPINGS = frozenset([dict, immutable_dict])
# Argument types pytree treats as leaves and that are never Nodes: skipped without a call.
_LEAVES = frozenset(
    [
        int,
        float,
        bool,
        str,
        type(None),
        torch.dtype,
        torch.device,
        torch.layout,
        torch.memory_format,
    ]
)


def _collect_nodes(value: Any, nodes: list[torch.fx.Node]) -> bool:
    """Append the Nodes in ``value`` as pytree flattens it; False where ``value`` holds a
    container whose flattening this does not mirror (the caller then asks pytree)."""
    kind = type(value)
    if kind in _SEQUENCES:
        items = value
    elif kind in _MAPPINGS:
        items = value.values()
    elif isinstance(value, torch.fx.Node):
        nodes.append(value)
        return True
    else:  # namedtuples, structseqs, OrderedDict...: pytree's own rules
        return not isinstance(value, (list, tuple, dict))
    for item in items:
        item_kind = type(item)
        if item_kind is torch.fx.Node:
            nodes.append(item)
        elif item_kind not in _LEAVES and not _collect_nodes(item, nodes):
            return False
    return True


def _visited_nodes(node: torch.fx.Node) -> list[torch.fx.Node]:
    """``node`` and the Nodes in its arguments: exir's ``filter_nodes`` of them."""
    nodes = [node]
    if _collect_nodes(node.args, nodes) and _collect_nodes(node.kwargs, nodes):
        return nodes
    found: list[torch.fx.Node] = filter_nodes([node, *node.args, *node.kwargs.values()])
    return found


def _node_tensor_specs(node: torch.fx.Node) -> list[TensorSpec]:
    """exir's ``get_node_tensor_specs``: the node's specs (a memory.view's are its base's),
    scalars left out. A TensorSpec is kept without asking whether it is a scalar, as an
    isinstance check that fails on a ``_ViewSpec`` reads its ``__class__`` and runs its
    guards."""
    if node.target == memory.view:
        return list(get_node_tensor_specs(node))
    specs = node.meta.get("spec")
    if isinstance(specs, TensorSpec):
        return [specs]
    if not isinstance(specs, (list, tuple)):
        return []
    return [
        spec
        for spec in specs
        if isinstance(spec, TensorSpec) or not isinstance(spec, (int, float, bool, str, type(None)))
    ]


class _SpecsWhenVisited:
    """The specs whose lifetime a use of a node extends: exir's ``collect_specs_from_nodes``
    on ``[node]`` with every filter off, as ``update_all_tensors_lifetime`` calls it, for
    each node once. An in-place node's result specs become its input's
    (``_alias_inplace_result_specs``) and it contributes none."""

    def __init__(self) -> None:
        self.holders: dict[torch.fx.Node, list[TensorSpec]] = {}
        self.visited: set[TensorSpec] = set()
        self._inplace: dict[Any, bool] = {}  # by target: parsing the schema is not cheap

    def _is_inplace(self, node: torch.fx.Node) -> bool:
        if node.op != "call_function":
            return False
        try:
            return self._inplace[node.target]
        except KeyError:
            inplace: bool = is_inplace_node(node)
            self._inplace[node.target] = inplace
            return inplace
        except TypeError:  # an unhashable target
            unhashable: bool = is_inplace_node(node)
            return unhashable

    def of(self, node: torch.fx.Node) -> list[TensorSpec]:
        """The holders (:func:`spec_holder`) of the specs a use of ``node`` extends."""
        holders = self.holders.get(node)
        if holders is not None:
            return holders
        specs = [] if node.op == "get_attr" else _node_tensor_specs(node)
        if specs and self._is_inplace(node):
            # exir aliases on every visit; the first one (at the node's own index, before
            # any user) decides, as the inputs' specs it reads are final by then.
            alias_inplace_result_specs(node)
            specs = []
        specs = [spec for spec in specs if spec is not None]
        self.visited.update(specs)
        holders = self.holders[node] = [spec_holder(spec) for spec in specs]
        return holders


def update_lifetimes(
    graph_module: torch.fx.GraphModule, graph_signature: Any = None
) -> set[TensorSpec]:
    """Set every tensor's lifetime in ``graph_module`` (not its submodules) as exir's
    ``update_all_tensors_lifetime`` does, and return the specs it visited.

    A spec's lifetime is ``[first, last]``: the indices of the first and last node that
    produces or uses it (0 for graph inputs; the last node for mutable buffers), widened
    from what it held before; storage-backed specs then widen their bases'
    (``_extend_storage_base_lifetimes``). Each node's specs are derived once, each view's
    lifetime is read and written in its base, and each spec gets one new list at the end
    (exir makes a new one per use) holding the same numbers."""
    nodes = graph_module.graph.nodes
    last_index = len(nodes) - 1
    specs = _SpecsWhenVisited()
    spans: dict[TensorSpec, list[Any]] = {}  # by holder: [start, end] so far
    for index, node in enumerate(nodes):
        is_input = node.op == "placeholder"
        never_freed = is_input and is_mutable_buffer(node, graph_signature)
        for used in _visited_nodes(node):
            for holder in specs.of(used):
                span = spans.get(holder)
                if span is None:
                    start, end = holder.lifetime
                    span = spans[holder] = [start, end]
                start, end = span
                span[0] = 0 if is_input else (index if start is None or start > index else start)
                span[1] = (
                    last_index if never_freed else (index if end is None or end < index else end)
                )
    for holder, span in spans.items():
        holder.lifetime = span
    extend_storage_base_lifetimes(specs.visited)
    return specs.visited


# --------------------------------------------------------------------------- the pass


def _free_of_dead_code(graph_module: torch.fx.GraphModule) -> bool:
    """Whether torch's ``eliminate_dead_code`` would remove nothing: it removes, last node
    first, the nodes without users that are not impure, so with none to start with it
    removes none. Outside a tracing context (where purity follows inductor's config) and
    without child graph modules (which it cleans too)."""
    if upstream.tracing_context_active():
        return False
    if any(isinstance(child, torch.fx.GraphModule) for child in graph_module.children()):
        return False
    return all(node.users or node.is_impure() for node in graph_module.graph.nodes)


def _simplify_idma_ops(graph_module: torch.fx.GraphModule) -> None:
    """Upstream's ``SimplifyIdmaOpsPass`` (idma_load/idma_store to idma_copy, then dead-code
    elimination, then a recompile), skipped on a graph it would leave as it is: no idma
    load or store and no dead code. Its dead-code elimination (a lint and a purity check
    of every node) is most of its time."""
    graph = graph_module.graph
    rewritten = (torch.ops.cadence.idma_load.out, torch.ops.cadence.idma_store.out)
    if any(graph.find_nodes(op="call_function", target=op) for op in rewritten) or not (
        _free_of_dead_code(graph_module)
    ):
        SimplifyIdmaOpsPass()(graph_module)


def plan_graph(
    algo: MemoryPlanningAlgorithm,
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    outside: list[tuple[int, int, int]] | None = None,
    unplanned: frozenset[int] = frozenset(),
    drop_unread: bool = False,
) -> None:
    """Upstream's ``CadenceMemoryPlanning.run`` with ``algo`` (see the module's
    docstring), control flow's submodules planned at their call sites (:func:`_plan_scope`).
    ``outside``: ``(mem_id, low, high)`` bytes held for the whole graph (a program's shared
    state, ``shared_state.py``); ``unplanned``: the ids of specs placed already (that
    state's), left out of the graph's planning. ``drop_unread``: the tensors exir plans
    for mutated buffers' new values, which nothing reads, are left out too, and the
    output node holds the buffers' specs in their place (``_boundary/mutable_state.py``)."""
    unread = unread_mutation_outputs(graph_module, graph_signature) if drop_unread else []
    unplanned = unplanned | {id(spec) for spec, _ in unread}
    # Upstream's run() builds exactly this pass; its alignment and its alloc-node specs.
    planning = MemoryPlanningPass(
        algo,
        allow_lifetime_and_storage_overlap=True,
        alloc_graph_input=alloc_graph_input,
        alloc_graph_output=alloc_graph_output,
    )
    upstream.set_alloc_node_spec(planning, graph_module)
    _plan_scope(
        algo, planning.alignment, graph_module, graph_signature,
        alloc_graph_input, alloc_graph_output, outside=list(outside or []),
        unplanned=unplanned,
    )  # fmt: skip
    alias_to_buffers(graph_module, unread)

    verifier = Verifier(graph_module, alloc_graph_input, alloc_graph_output, True, graph_signature)
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        pairs = verifier.verify_storage_reuse(True)
        name = getattr(algo, "__name__", repr(algo))
        logging.debug("The %s algorithm reuses storage for %d pair of tensors", name, pairs)  # noqa: LOG015
    verifier.verify_graph_input_output()

    _simplify_idma_ops(graph_module)


def plan_graph_and_submodules(
    algo: Any,
    alignment: int,
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
) -> list[int]:
    """The placing step of :func:`plan_graph` alone (lifetimes, each submodule at its
    call site, the graph's own tensors, the calls to free), for a replay of a graph
    already through the pass (``cadence/sweep.py``); returns its buffer sizes."""
    return _plan_scope(
        algo, alignment, graph_module, graph_signature,
        alloc_graph_input, alloc_graph_output, outside=[],
    )  # fmt: skip


def _plan_scope(
    algo: MemoryPlanningAlgorithm,
    alignment: int,
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    alloc_graph_input: bool,
    alloc_graph_output: bool,
    outside: list[tuple[int, int, int]],
    unplanned: frozenset[int] = frozenset(),
) -> list[int]:
    """exir's ``apply_algo`` for one memory pool (base memory id 1, so exir's remap of the
    placer's mem ids leaves them as they are); returns the graph's buffer sizes. A graph
    with control flow, or inside one (``outside``: ``(mem_id, low, high)`` bytes its
    enclosing graphs need while it runs), is planned around its submodules
    (:func:`_plan_around_submodules`): upstream's placers ignore the submodules' arenas
    (exir's ``input_mem_buffer_sizes``), so upstream's plan of such a graph lets its
    tensors overwrite a running submodule's."""
    update_lifetimes(graph_module, graph_signature)
    specs = list(
        collect_specs_from_nodes(
            graph_module.graph.nodes,
            graph_signature,
            do_assertion=False,
            ignore_graph_input=not alloc_graph_input,
            ignore_graph_output=not alloc_graph_output,
            ignore_mutable_buffers=False,
        )
    )
    if unplanned:
        specs = [spec for spec in specs if id(spec) not in unplanned]
    hops = higher_order_nodes(graph_module)
    extra_padding = 64 if contains_xnnpack_delegate(graph_module) else 0
    if not hops and not outside:  # all Cadence lowers: nothing to plan around
        graph_module.input_mem_buffer_sizes = []  # type: ignore[assignment]
        bufsizes = algo(alignment, specs, graph_module, graph_signature, extra_padding)
    else:
        bufsizes = _plan_around_submodules(
            algo, alignment, specs, graph_module, graph_signature, extra_padding, hops, outside
        )
    buffer_sizes = [0, *bufsizes[1:]]  # index 0 is the constants', as apply_algo reserves it
    if len(buffer_sizes) < 2:
        buffer_sizes.append(0)
    insert_calls_to_free(graph_module, specs)
    graph_module.meta["non_const_buffer_sizes"] = buffer_sizes
    return buffer_sizes


def _plan_around_submodules(
    algo: Any,  # Cadence's MemoryPlanningAlgo: its memory_config is read too
    alignment: int,
    specs: list[TensorSpec],
    graph_module: torch.fx.GraphModule,
    graph_signature: Any,
    extra_padding: int,
    hops: list[HigherOrderNode],
    outside: list[tuple[int, int, int]],
) -> list[int]:
    """:func:`_plan_scope`'s placer call for a graph with submodules, or inside one: each
    higher-order op's submodules planned in graph order, around ``outside`` and the
    outputs of earlier ops still alive when it runs, so that their arenas stay where the
    placer put them (``ArenaPlacer`` moves one only where the placer could not avoid
    those bytes, as for pinned offsets, or fails); then the graph's own tensors placed
    around what the submodules and the enclosing graphs hold, while they hold it."""
    # Wrappers (scheduling.Reordering, the sweep's recorder) forward the placer's config.
    config = algo.memory_config
    placer = ArenaPlacer(
        graph_module,
        lambda mem_id: int(config.memory_alignments[mem_id - 1]),
        lambda mem_id: int(config.memory_sizes[mem_id - 1]),
        outside,
    )
    for hop in hops:
        for _, submodule in hop.submodules:
            submodule.meta["non_const_buffer_sizes"] = _plan_scope(
                algo, alignment, submodule, graph_signature,
                hop.allocates_inputs, True, placer.live_at(hop),
            )  # fmt: skip
        try:
            placer.place(hop)
        except ArenaDoesNotFit as error:
            raise MemoryPlanningAlgoFailure(f"{error}; memory config: {config}") from error
    arenas = placer.arenas()
    graph_module.input_mem_buffer_sizes = arenas.ends  # type: ignore[assignment]
    with reserving(graph_module, arenas.reserved):
        bufsizes: list[int] = algo(alignment, specs, graph_module, graph_signature, extra_padding)
    ends = arenas.ends + [0] * (len(bufsizes) - len(arenas.ends))
    return [max(size, end) for size, end in zip(bufsizes, ends, strict=False)]
