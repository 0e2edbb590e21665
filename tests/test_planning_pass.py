"""The memory-planning pass around the placer (cadence/planning_pass.py, graph_code.py).

Our ``CadenceMemoryPlanning.run`` cuts what upstream's pass wraps around ``plan()``; these
tests hold it to upstream's: the same ``.pte`` bytes on the zoo's models (both lowerings,
both exact placers, a model with a mutable buffer), every tensor's lifetime equal to
exir's, and the graph module's code regenerated on its next use, never inside the pass.
On a model with control flow ours differs, on purpose: upstream's plan lets the branch
overwrite the cond's input (tests/test_control_flow.py runs such programs).
"""

from __future__ import annotations

import copy
import inspect
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import executorch.backends.cadence.aot.ops_registrations  # noqa: F401  (Cadence's idma ops)
import torch
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import (
    MemoryConfig,
    MemoryPlanningAlgoFailure,
    get_default_memory_config,
)
from executorch.exir import EdgeProgramManager
from executorch.exir.memory_planning import (
    _is_inplace_node,
    _is_mutable_buffer,
    update_all_tensors_lifetime,
)
from executorch.exir.tensor import TensorSpec
from torch.fx._lazy_graph_module import _LazyGraphModule

from cadence_memplan import validate_control_flow
from cadence_memplan._boundary import upstream as _upstream
from cadence_memplan._boundary.control_flow import has_control_flow
from cadence_memplan.cadence import graph_code, memory_planning
from cadence_memplan.cadence.lowering import backend_config, export_model, lower_exported
from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning
from cadence_memplan.cadence.planning_pass import signature_with_maps, update_lifetimes
from cadence_memplan.models import MODELS, build_model

pytestmark = [
    pytest.mark.executorch,
    # The emitter's note on MutableBuffer (its buffer's initial value is not serialized).
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected:UserWarning"),
]


class MutableBuffer(torch.nn.Module):
    """A buffer updated in place: exir writes it back with an in-place copy_, and its
    placeholder is a mutable buffer (never freed)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.register_buffer("total", torch.zeros(8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x.sum(0))
        y = self.linear(x) + self.total
        return torch.cat([y, y[:2]], 0)


class Branches(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result: torch.Tensor = torch.cond(
            x.sum() > 0, lambda x: (x * 2).relu(), lambda x: x - 1, (x,)
        )
        return result


def build(name: str) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    if name == "mutable-buffer":
        return MutableBuffer().eval(), (torch.randn(4, 8),)
    if name == "cond":
        return Branches().eval(), (torch.randn(4, 8),)
    return build_model(name)


# (model, lowering): the zoo at its built-in sizes, as `cadence-memplan plan NAME` lowers it.
CASES = [(name, lowering) for name in MODELS for lowering in ("cadence", "exir")] + [
    ("mutable-buffer", "cadence"),
    ("mutable-buffer", "exir"),
    ("cond", "exir"),  # Cadence's passes do not take control flow
]
# A model lowered in one way, as a deep copy of its own for each call.
Lowered = Callable[[str, str], EdgeProgramManager]


@pytest.fixture(scope="module")
def lowered_program() -> Lowered:
    """Each (model, lowering) lowered once per module (the slow part); every call returns
    a deep copy, because planning writes into the program it is given."""
    programs: dict[tuple[str, str], EdgeProgramManager] = {}

    def copy_of(name: str, lowering: str) -> EdgeProgramManager:
        if (name, lowering) not in programs:
            model, inputs = build(name)
            programs[name, lowering] = lower_exported(
                export_model(model, inputs, lowering), lowering
            )
        return copy.deepcopy(programs[name, lowering])

    return copy_of


def case_id(case: tuple[str, str]) -> str:
    return "-".join(case)


# --------------------------------------------------------------------------- the program


@pytest.mark.parametrize("mem_algo", [0, 1], ids=["position", "heuristic"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_same_program_as_upstreams_pass(
    case: tuple[str, str], mem_algo: int, monkeypatch: pytest.MonkeyPatch, lowered_program: Lowered
) -> None:
    name, lowering = case
    fast_runs: list[int] = []
    fast_path = memory_planning.plan_graph

    def counted(*args: Any) -> None:
        fast_runs.append(1)
        fast_path(*args)

    monkeypatch.setattr(memory_planning, "plan_graph", counted)
    programs = {}
    for label, planner in (
        ("upstream", UpstreamCadenceMemoryPlanning),
        ("ours", CadenceMemoryPlanning),
    ):
        planning = planner(get_default_memory_config(), CompileMode.DEFAULT, mem_algo)
        program = lowered_program(name, lowering).to_executorch(backend_config(lowering, planning))
        programs[label] = program
    if name == "cond":
        theirs = programs["upstream"].exported_program().graph_module
        ours = programs["ours"].exported_program().graph_module
        # Upstream's placers ignore the branches' arenas: its plan puts the branch's
        # tensors on the cond's input, alive while they run. Ours differs, and is right.
        problem = validate_control_flow(theirs)
        assert problem is not None
        assert "overwrites" in problem
        assert validate_control_flow(ours) is None
    else:
        assert bytes(programs["ours"].buffer) == bytes(programs["upstream"].buffer)
    assert fast_runs == [1]


@pytest.mark.parametrize(
    ("version", "tested"),
    [
        ("1.5.0", True),
        ("1.5.1", True),
        ("1.5.0.dev20250101+cpu", True),
        ("1.4.0", False),
        ("1.6.0", False),
        ("2.5.0", False),
        ("unknown", False),
    ],
)
def test_the_executorch_version_is_checked(version: str, tested: bool) -> None:
    assert _upstream.in_tested_range(version) is tested
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert _upstream.check_version(version) is tested
    assert len(caught) == (0 if tested else 1)
    if not tested:
        assert version in str(caught[0].message)
        assert "1.5.x" in str(caught[0].message)


def test_the_installed_executorch_is_in_the_tested_range() -> None:
    # Else every test of the fast paths below holds upstream's path to itself.
    assert _upstream.fast_paths_supported(), _upstream.EXECUTORCH_VERSION


def test_an_untested_executorch_runs_upstreams_own_pass(
    monkeypatch: pytest.MonkeyPatch, lowered_program: Lowered
) -> None:
    """Outside the tested range every graph takes upstream's ``run()`` (the control-flow
    path), with none of the package's own steps around it: the same program."""

    def never(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a fast path ran on an untested executorch")

    monkeypatch.setattr(_upstream, "_SUPPORTED", False)
    for name in ("plan_graph", "deferred_recompile", "views_checked_once"):
        monkeypatch.setattr(memory_planning, name, never)
    name, lowering = CASES[0]
    programs = {}
    for label, planner in (
        ("upstream", UpstreamCadenceMemoryPlanning),
        ("ours", CadenceMemoryPlanning),
    ):
        planning = planner(get_default_memory_config(), CompileMode.DEFAULT, 0)
        program = lowered_program(name, lowering).to_executorch(backend_config(lowering, planning))
        programs[label] = bytes(program.buffer)
    assert programs["ours"] == programs["upstream"]


# --------------------------------------------------------------------------- lifetimes


class _Recorded(Exception):
    pass


def at_planning(
    edge: EdgeProgramManager, lowering: str, step: Callable[[torch.fx.GraphModule, Any], None]
) -> None:
    """Run ``step`` on the graph module and signature the memory-planning pass receives
    inside ``to_executorch``, then stop."""

    class Stop:
        def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> Any:
            step(graph_module, graph_signature)
            raise _Recorded

    with pytest.raises(_Recorded):
        edge.to_executorch(backend_config(lowering, Stop()))


def planning_input(
    lowered_program: Lowered, name: str, lowering: str
) -> tuple[torch.fx.GraphModule, Any]:
    """The graph module and signature our pass receives for a model, before it runs."""
    captured: list[Any] = []
    at_planning(
        lowered_program(name, lowering), lowering, lambda *received: captured.extend(received)
    )
    graph_module, signature = captured
    return graph_module, signature


def views_of(graph_module: torch.fx.GraphModule) -> list[Any]:
    return [
        node.meta["spec"]
        for node in graph_module.graph.nodes
        if type(node.meta.get("spec")).__name__ == "_ViewSpec"
    ]


def lifetimes(graph_module: torch.fx.GraphModule) -> list[tuple[str, int, Any, Any]]:
    """Per node and output: the spec's first (node, output) (so shared specs show) and its
    lifetime."""
    first_seen: dict[int, tuple[str, int]] = {}
    rows = []
    for node in graph_module.graph.nodes:
        specs = node.meta.get("spec")
        for index, spec in enumerate(specs if isinstance(specs, (list, tuple)) else [specs]):
            if isinstance(spec, TensorSpec):
                owner = first_seen.setdefault(id(spec), (node.name, index))
                rows.append((node.name, index, owner, copy.copy(spec.lifetime)))
    return rows


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_lifetimes_are_exirs(case: tuple[str, str], lowered_program: Lowered) -> None:
    name, lowering = case
    results: dict[str, Any] = {}

    def exirs(graph_module: torch.fx.GraphModule, signature: Any) -> None:
        update_all_tensors_lifetime(graph_module, signature)
        results["exir"] = lifetimes(graph_module)

    def ours(graph_module: torch.fx.GraphModule, signature: Any) -> None:
        results["before"] = lifetimes(graph_module)
        update_lifetimes(graph_module, signature_with_maps(signature))
        results["ours"] = lifetimes(graph_module)
        results["in-place"] = [n for n in graph_module.graph.nodes if _is_inplace_node(n)]
        results["mutable"] = [
            n for n in graph_module.graph.nodes if _is_mutable_buffer(n, signature)
        ]

    at_planning(lowered_program(name, lowering), lowering, exirs)
    at_planning(lowered_program(name, lowering), lowering, ours)
    assert results["ours"] == results["exir"]
    assert results["ours"] != results["before"]  # lifetimes were computed, not found
    if name == "mutable-buffer":  # the paths only this model takes were taken
        assert results["in-place"]
        assert results["mutable"]


def test_signature_maps_are_the_signatures(lowered_program: Lowered) -> None:
    _, signature = planning_input(lowered_program, "mutable-buffer", "exir")
    with_maps = signature_with_maps(signature)
    assert with_maps is not signature
    assert dict(with_maps.inputs_to_buffers) == dict(signature.inputs_to_buffers) != {}
    assert dict(with_maps.buffers_to_mutate) == dict(signature.buffers_to_mutate) != {}
    assert with_maps.input_specs is signature.input_specs
    assert with_maps.inputs_to_buffers is with_maps.inputs_to_buffers  # built once
    assert signature_with_maps(None) is None
    assert signature_with_maps(with_maps) is with_maps


# --------------------------------------------------------------------------- the graph's code


def test_the_pass_never_regenerates_the_code(
    monkeypatch: pytest.MonkeyPatch, lowered_program: Lowered
) -> None:
    """Upstream's pass recompiles the graph module about ten times; ours not once, and the
    program's code is the graph's afterwards (to_executorch regenerates it)."""
    recompiles: dict[str, int] = {}
    real_recompile = torch.fx.GraphModule.recompile
    counting = {"label": ""}

    def counted(self: torch.fx.GraphModule) -> Any:
        recompiles[counting["label"]] = recompiles.get(counting["label"], 0) + 1
        return real_recompile(self)

    monkeypatch.setattr(torch.fx.GraphModule, "recompile", counted)

    class Counting:
        def __init__(self, inner: Any, label: str) -> None:
            self.inner, self.label = inner, label

        def run(self, graph_module: torch.fx.GraphModule, graph_signature: Any = None) -> Any:
            counting["label"] = self.label
            try:
                return self.inner.run(graph_module, graph_signature)
            finally:
                counting["label"] = ""

    for label, planner in (
        ("upstream", UpstreamCadenceMemoryPlanning),
        ("ours", CadenceMemoryPlanning),
    ):
        planning = Counting(planner(get_default_memory_config(), CompileMode.DEFAULT, 0), label)
        program = lowered_program("cnn", "cadence").to_executorch(
            backend_config("cadence", planning)
        )
    assert recompiles.get("upstream", 0) >= 5
    assert recompiles.get("ours", 0) == 0
    graph_module = program.exported_program().graph_module
    assert graph_module.code == graph_module.graph.python_code(root_module="self").src
    assert "_cat_nop" in graph_module.code


def test_the_pass_on_its_own_leaves_code_that_follows_the_graph(lowered_program: Lowered) -> None:
    """Called directly (not in to_executorch), the pass's retargeted nops show in the code
    the next time it is read."""
    graph_module, signature = planning_input(lowered_program, "cnn", "cadence")
    assert "_cat_nop" not in graph_module.code
    planning = CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 1)
    planning.run(graph_module, signature)
    assert graph_code.code_is_stale(graph_module)
    assert "_cat_nop" in graph_module.code
    assert not graph_code.code_is_stale(graph_module)
    assert graph_module.code == graph_module.graph.python_code(root_module="self").src


def traced_add() -> torch.fx.GraphModule:
    # Unannotated: the string annotations of this module would not pickle.
    def add_one(x):  # type: ignore[no-untyped-def]
        return x + 1

    return torch.fx.symbolic_trace(add_one)


def retarget_to_mul(graph_module: torch.fx.GraphModule) -> None:
    import operator

    for node in graph_module.graph.nodes:
        if node.target is operator.add:
            node.target = operator.mul


def test_deferred_code_regenerates_on_first_use() -> None:
    x = torch.full((3,), 4.0)
    for use in ("call", "code", "str", "signature", "pickle", "deepcopy", "recompile"):
        graph_module = traced_add()
        with graph_code.deferred_recompile(graph_module):
            retarget_to_mul(graph_module)
            graph_module.recompile()
            assert graph_code.code_is_stale(graph_module)
        assert "recompile" not in vars(graph_module)  # the class's method again
        assert graph_code.code_is_stale(graph_module)
        fresh = graph_module.graph.python_code(root_module="self").src
        if use == "call":
            assert graph_module(x).tolist() == [4.0, 4.0, 4.0]
        elif use == "code":
            assert graph_module.code == fresh
        elif use == "str":
            assert fresh in str(graph_module)
        elif use == "signature":
            assert list(inspect.signature(graph_module.forward).parameters) == ["x"]
        elif use == "pickle":
            assert pickle.loads(pickle.dumps(graph_module))(x).tolist() == [4.0] * 3
        elif use == "deepcopy":
            assert copy.deepcopy(graph_module)(x).tolist() == [4.0] * 3
        else:
            graph_module.recompile()
        # A copy is built from the graph and leaves the original's code as it was.
        assert graph_code.code_is_stale(graph_module) == (use == "deepcopy"), use
        assert graph_module.code == fresh
        assert graph_module(x).tolist() == [4.0] * 3


def test_deferred_recompile_without_a_request_or_on_error() -> None:
    graph_module = traced_add()
    with graph_code.deferred_recompile(graph_module):
        pass
    assert not graph_code.code_is_stale(graph_module)

    def fail_after_a_recompile() -> None:
        with graph_code.deferred_recompile(graph_module):
            graph_module.recompile()
            raise ZeroDivisionError

    with pytest.raises(ZeroDivisionError):
        fail_after_a_recompile()
    assert "recompile" not in vars(graph_module)
    assert graph_code.code_is_stale(graph_module)
    assert graph_module(torch.ones(2)).tolist() == [2.0, 2.0]


def test_lazy_graph_modules_recompile_as_asked() -> None:
    lazy = _LazyGraphModule.from_graphmodule(traced_add())
    with graph_code.deferred_recompile(lazy):
        retarget_to_mul(lazy)
        lazy.recompile()  # _LazyGraphModule's own lazy recompile
    assert not graph_code.code_is_stale(lazy)
    assert lazy(torch.full((2,), 3.0)).tolist() == [3.0, 3.0]


def test_dead_code_goes_as_in_upstreams_pass() -> None:
    """SimplifyIdmaOpsPass's dead-code elimination runs where there is dead code (and is
    skipped only where there is none)."""
    from executorch.backends.test.graph_builder import GraphBuilder
    from executorch.exir.dialects._ops import ops as exir_ops
    from executorch.exir.passes.spec_prop_pass import SpecPropPass

    results = {}
    for label, planner in (
        ("upstream", UpstreamCadenceMemoryPlanning),
        ("ours", CadenceMemoryPlanning),
    ):
        builder = GraphBuilder()
        x = builder.placeholder("x", torch.ones(8, 8))
        kept = builder.call_operator(op=exir_ops.edge.aten.add.Tensor, args=(x, x))
        builder.call_operator(op=exir_ops.edge.aten.mul.Tensor, args=(x, x))  # no users
        builder.output([kept])
        graph_module = SpecPropPass().call(builder.get_graph_module()).graph_module
        assert any("mul" in str(node.target) for node in graph_module.graph.nodes)
        config = MemoryConfig([1024, 8192], memory_alignments=[16, 64])
        planned = planner(config, CompileMode.DEFAULT, 0)(graph_module).graph_module
        results[label] = [
            (node.name, str(node.target), *spec_states(planned).get(id(node.meta.get("spec")), ()))
            for node in planned.graph.nodes
        ]
    assert results["ours"] == results["upstream"]
    assert not any("mul" in target for _, target, *_ in results["ours"])


def test_views_run_their_guards_after_the_pass(lowered_program: Lowered) -> None:
    """Views skip their guards inside our pass and run them once after it: a view made
    incompatible with its base fails there as it fails in upstream's pass."""
    graph_module, signature = planning_input(lowered_program, "encoder", "cadence")
    CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 0).run(
        graph_module, signature
    )
    views = views_of(graph_module)
    assert views
    assert not any(object.__getattribute__(view, "_unguarded_access") for view in views)

    for planner in (UpstreamCadenceMemoryPlanning, CadenceMemoryPlanning):
        graph_module, signature = planning_input(lowered_program, "encoder", "cadence")
        view = views_of(graph_module)[0]
        view.shape = [*view.shape, 1]  # one more dimension than when it was made
        planning = planner(get_default_memory_config(), CompileMode.DEFAULT, 0)
        with pytest.raises(Exception) as raised:  # noqa: PT011  (exir raises Exception)
            planning.run(graph_module, signature)
        # Upstream's PassManager wraps the guard's failure; ours raises it as it is.
        chain = [raised.value, raised.value.__cause__]
        assert any("Guard rank failed" in str(error) for error in chain), chain


# --------------------------------------------------------------------------- failures


def spec_states(graph_module: torch.fx.GraphModule) -> dict[int, tuple[Any, ...]]:
    """Read through each spec, views included (their fields are their bases')."""
    states = {}
    for node in graph_module.graph.nodes:
        specs = node.meta.get("spec")
        for spec in specs if isinstance(specs, (list, tuple)) else [specs]:
            if isinstance(spec, TensorSpec):
                states[id(spec)] = (spec.mem_id, spec.mem_offset, copy.copy(spec.lifetime))
    return states


def test_a_failed_plan_puts_back_every_spec_views_included(lowered_program: Lowered) -> None:
    """The encoder has memory.view nodes, whose specs keep their fields in their bases."""
    graph_module, signature = planning_input(lowered_program, "encoder", "cadence")
    assert views_of(graph_module)
    before = spec_states(graph_module)
    planning = CadenceMemoryPlanning(
        MemoryConfig([4096], memory_alignments=[16]), CompileMode.DEFAULT, 0
    )
    with pytest.raises(MemoryPlanningAlgoFailure):
        planning.run(graph_module, signature)
    assert spec_states(graph_module) == before
    assert not has_control_flow(graph_module)
