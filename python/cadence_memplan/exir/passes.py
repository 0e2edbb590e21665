"""A ``MemoryPlanningPass`` that plans with :func:`cadence_memplan.exir.greedy`, or with
``greedy`` and :func:`cadence_memplan.exir.best` (``smallest=True``), in the graph's order or,
with ``reorder=True``, in the best order found (:mod:`cadence_memplan.scheduling`), and,
with ``stage=True``, staged through a fast memory first (:mod:`cadence_memplan.staging`).

exir's ``MemoryPlanningPass.run`` runs its O(n^2) Python ``Verifier.verify_storage_reuse``
whenever its algorithm callable is *named* ``greedy`` (``_callable_name``), and whenever
DEBUG logging is on. A ``MemoryPlanningAlgorithmSuite`` has no ``__name__``, so wrapping the
planner in one, as exir's default does and this helper does, never triggers it. Ask for
``verify_storage_reuse=True`` to run the same check, in C++, after planning.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

import torch
from executorch.exir.memory_planning import Verifier, update_all_tensors_lifetime
from executorch.exir.pass_base import PassResult
from executorch.exir.passes.memory_planning_pass import MemoryPlanningPass
from executorch.exir.tensor import ALIGNMENT

from .._boundary.algorithm_protocols import MemoryPlanningAlgorithm, SuiteAlgorithm
from .._boundary.mutable_state import (
    MethodBuffers,
    alias_to_buffers,
    check_unshared,
    method_buffers,
    unread_mutation_outputs,
)
from .._boundary.tensorspecs import allocated_sizes
from .._types import Occupancy
from ..scheduling import Reorder, Reordering
from ..staging.cost_model import CostModel, cost_model_of
from ..staging.report import StagingReport
from ..staging.rewrite import Rewrite, remove_copies, stage_graph
from .planners import greedy
from .search import best
from .suite import MemoryPlanningAlgorithmSuite
from .verifier import verify_storage_reuse as fast_verify_storage_reuse

__all__ = ["WithoutUnreadOutputs", "memory_planning_pass"]


class WithoutUnreadOutputs(MemoryPlanningAlgorithmSuite):
    """Our suite (:class:`cadence_memplan.exir.MemoryPlanningAlgorithmSuite`) without the
    tensors exir plans for mutated buffers' new values, which nothing reads (the
    write-back into the buffer is what the emitter and the runtime use): once planned,
    the output node holds the buffer's spec in place of each, so no byte is spent on it
    and exir's checks of the graph's outputs still hold. What ``smallest=True`` plans
    with; ``dropped`` is the bytes the last call left out."""

    def __init__(self, algo_list: Sequence[Callable[..., Any]] | None = None) -> None:
        super().__init__(algo_list)
        self.dropped = 0
        # Every spec left out so far, by id (held, so no id is reused): a reordering
        # plans the graph again, from its own list of specs, after the first call has
        # aliased them.
        self._left_out: dict[int, Any] = {}

    def __call__(
        self,
        alignment: int,
        specs: Any,
        graph_module: torch.fx.GraphModule,
        graph_signature: Any,
        extra_padding: int = 0,
    ) -> list[int]:
        pairs = unread_mutation_outputs(graph_module, graph_signature)
        self._left_out.update((id(spec), spec) for spec, _ in pairs)
        if self._left_out:
            kept = [spec for spec in specs if id(spec) not in self._left_out]
            specs = set(kept) if isinstance(specs, set) else kept
        bufsizes = super().__call__(alignment, specs, graph_module, graph_signature, extra_padding)
        alias_to_buffers(graph_module, pairs)
        self.dropped = int(allocated_sizes([spec for spec, _ in pairs]).sum()) if pairs else 0
        return bufsizes


class _StatefulMemoryPlanningPass(MemoryPlanningPass):
    """exir's pass that, over a program's methods, says which mutated buffers they do not
    share (``run_multimethod``: ``UnsharedStateWarning``, or ``UnsharedStateError`` with
    ``strict_sharing``)."""

    strict_sharing = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._methods: list[MethodBuffers] = []

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> PassResult:
        result: PassResult = super().run(graph_module, graph_signature)
        self._methods.append(method_buffers(graph_module, graph_signature))
        return result

    def run_multimethod(self) -> None:
        methods, self._methods = self._methods, []
        super().run_multimethod()
        if not self.share_mutable_buffers:
            check_unshared(methods, self.strict_sharing, "memory_planning_pass")


class _VerifyingMemoryPlanningPass(_StatefulMemoryPlanningPass):
    """exir's pass, then the storage-reuse check exir runs for ``greedy``, in C++."""

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> PassResult:
        result = super().run(graph_module, graph_signature)
        verifier = Verifier(
            graph_module,
            self.alloc_graph_input,
            self.alloc_graph_output,
            self.alloc_mutable_buffers and not self.share_mutable_buffers,
            graph_signature,
        )
        fast_verify_storage_reuse(verifier, self.allow_lifetime_and_storage_overlap)
        return result


class _ReorderingMemoryPlanningPass(_StatefulMemoryPlanningPass):
    """exir's pass whose algorithm, on the graph it runs on, also plans better orders
    (:class:`~cadence_memplan.scheduling.Reordering`); ``last_reorder`` says what it did."""

    last_reorder: Reorder | None = None

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> PassResult:
        algorithm: MemoryPlanningAlgorithm = self.memory_planning_algo
        reordering = Reordering(algorithm, graph_module, update_all_tensors_lifetime)
        # exir's run() plans with self.memory_planning_algo: the reordering stands in.
        setattr(self, "memory_planning_algo", reordering)  # noqa: B010
        try:
            result: PassResult = super().run(graph_module, graph_signature)
        finally:
            setattr(self, "memory_planning_algo", algorithm)  # noqa: B010
        self.last_reorder = reordering.result
        return result


class _VerifyingReorderingMemoryPlanningPass(
    _VerifyingMemoryPlanningPass, _ReorderingMemoryPlanningPass
):
    """Both: the better order, then the storage-reuse check."""


class _StagingMemoryPlanningPass(_StatefulMemoryPlanningPass):
    """Put before one of the passes above (``_with_staging``): the graph staged through
    a fast memory of ``fast_memory_bytes`` (copies inserted as ``aten.clone.out``, which
    the portable runtime runs), then planned as that pass plans; the copies taken out
    again if planning raises. ``last_staging`` and ``last_rewrite`` say what it did."""

    fast_memory_bytes = 0
    cost_model: CostModel | None = None
    last_staging: StagingReport | None = None
    last_rewrite: Rewrite | None = None

    def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> PassResult:
        model = cost_model_of(self.cost_model)
        alignment = int(self.alignment)
        report, rewrite = stage_graph(
            graph_module, graph_signature, model, self.fast_memory_bytes, alignment, "exir"
        )
        try:
            result: PassResult = super().run(graph_module, graph_signature)
        except BaseException:
            remove_copies(graph_module, rewrite)
            raise
        self.last_staging, self.last_rewrite = report, rewrite
        return result


@functools.cache
def _with_staging(pass_type: type[MemoryPlanningPass]) -> type[MemoryPlanningPass]:
    """``pass_type`` with the staging first."""
    return type(
        f"_Staging{pass_type.__name__.lstrip('_')}", (_StagingMemoryPlanningPass, pass_type), {}
    )


def _check_staging(stage: bool, fast_memory_bytes: int | None, cost_model: Any) -> CostModel | None:
    if not isinstance(stage, bool):
        raise TypeError(f"stage must be True or False, got {stage!r}")
    if not stage:
        if fast_memory_bytes is not None or cost_model is not None:
            raise ValueError("fast_memory_bytes and cost_model go with stage=True")
        return None
    if fast_memory_bytes is None:
        raise ValueError("stage=True needs fast_memory_bytes, the fast memory's size in bytes")
    if isinstance(fast_memory_bytes, bool) or not isinstance(fast_memory_bytes, int):
        raise TypeError(f"fast_memory_bytes must be an int, got {fast_memory_bytes!r}")
    if fast_memory_bytes <= 0:
        raise ValueError(f"fast_memory_bytes must be positive, got {fast_memory_bytes}")
    return cost_model_of(cost_model)


def memory_planning_pass(
    *,
    alignment: int = ALIGNMENT,
    allow_overlapping_allocations: bool = True,
    verify_storage_reuse: bool = False,
    occupancy: Occupancy = "auto",
    smallest: bool = False,
    reorder: bool = False,
    share_mutable_buffers: bool = False,
    strict_sharing: bool = False,
    stage: bool = False,
    fast_memory_bytes: int | None = None,
    cost_model: CostModel | str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> MemoryPlanningPass:
    """exir's ``MemoryPlanningPass`` with :func:`cadence_memplan.exir.greedy` as its only
    algorithm: the same ``.pte`` as exir's default pass, planned in C++. Give it to
    ``ExecutorchBackendConfig(memory_planning_pass=...)``. Other keyword arguments
    (``alloc_graph_input`` and friends) go to ``MemoryPlanningPass``.

    ``smallest=True`` runs exir's suite with ``[greedy, best]``: the suite keeps the
    algorithm with the smallest total bufsize, the first one on a tie, so the program
    is greedy's unless :func:`cadence_memplan.exir.best` found a smaller plan, and
    never larger. ``best`` has no counterpart of ``allow_overlapping_allocations=False``,
    which is refused with it.

    ``reorder=True`` also plans the graph in better orders (mutable buffers' write-backs
    moved up, then the scheduler's order: :mod:`cadence_memplan.scheduling`) and keeps the
    order whose plan has the smallest arena, the graph's own on a tie, so the arena is
    never larger than without it; it changes the program's instruction order, never
    what it computes. The pass's ``last_reorder`` then says what it did.

    ``verify_storage_reuse=True`` checks the plan afterwards as exir does for its own
    ``greedy`` (same errors), with the C++ check, and across control flow's submodules.

    ``share_mutable_buffers=True`` is exir's: a program's mutable buffers (a KV cache,
    a stream's state) placed once, in memory id 2, at the same offset in every method
    (its ``run_multimethod``, which ``to_executorch`` calls); each method's own tensors
    in memory id 1, planned by ours; with the default options, exir's ``.pte`` byte for
    byte. Without it, methods that use a buffer one of them mutates get an
    ``UnsharedStateWarning`` naming it (``strict_sharing=True``: an
    ``UnsharedStateError``), as each plans its own copy of the state.

    ``smallest=True`` also leaves out the tensor exir plans for each mutated buffer's new
    value, which nothing reads (the write-back into the buffer is what runs): it gets the
    buffer's placement (:class:`WithoutUnreadOutputs`). The default mode keeps exir's bytes.

    Programs with control flow get each submodule's arena placed at its call site
    (:class:`cadence_memplan.exir.MemoryPlanningAlgorithmSuite`), and compute the right
    values where exir's plan lets a later submodule overwrite a live output.

    ``stage=True`` (off by default) stages the graph through a fast memory of
    ``fast_memory_bytes`` before planning it (docs/staging.md, "In the passes"): the
    copies the staging chooses under ``cost_model`` (a ``CostModel``, a JSON or TOML
    file, None: the default) become ``aten.clone.out`` nodes, which the portable runtime
    runs, and the graph is planned as without it. The choice is the static plan, no copy
    at all, unless its modelled cycles are fewer. The pass's ``last_staging`` (a
    ``StagingReport``: the modelled cycles of the static and staged plans) and
    ``last_rewrite`` then say what it did. exir plans one memory: the fast memory is the
    size the staging models, not a second arena."""
    model = _check_staging(stage, fast_memory_bytes, cost_model)
    if smallest and not allow_overlapping_allocations:
        raise ValueError(
            "smallest=True plans lifetime-overlapping allocations side by side in one"
            " arena; it cannot honour allow_overlapping_allocations=False"
        )
    algorithm: SuiteAlgorithm = greedy
    if not allow_overlapping_allocations or occupancy != "auto":
        algorithm = functools.partial(
            greedy,
            allow_overlapping_allocations=allow_overlapping_allocations,
            occupancy=occupancy,
        )
    algorithms = [algorithm, best] if smallest else [algorithm]
    suite_type = WithoutUnreadOutputs if smallest else MemoryPlanningAlgorithmSuite
    suite = suite_type(algo_list=algorithms)
    pass_type = {
        (False, False): _StatefulMemoryPlanningPass,
        (True, False): _VerifyingMemoryPlanningPass,
        (False, True): _ReorderingMemoryPlanningPass,
        (True, True): _VerifyingReorderingMemoryPlanningPass,
    }[verify_storage_reuse, reorder]
    if model is not None:
        pass_type = _with_staging(pass_type)
    planning = pass_type(
        memory_planning_algo=suite,
        alignment=alignment,
        share_mutable_buffers=share_mutable_buffers,
        **kwargs,
    )
    planning.strict_sharing = bool(strict_sharing)
    if isinstance(planning, _StagingMemoryPlanningPass):
        planning.fast_memory_bytes, planning.cost_model = int(fast_memory_bytes or 0), model
    return planning
