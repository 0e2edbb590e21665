"""The reorder's legal-order rules (python/cadence_memplan/scheduling/rules.py), one test
(or more) per rule, each able to fail: with the rule left out, the adversarial order
(tests/schedule_graphs.py: every unit as late as the rules allow) breaks what the test
holds, an ordering or the values a program computes.
"""

from __future__ import annotations

import copy

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import executorch.backends.cadence.aot.ops_registrations  # noqa: F401  (cadence ops)
import torch
from executorch.exir import ExecutorchBackendConfig, memory, to_edge
from schedule_graphs import (
    GraphBuilder,
    adversarial_order,
    before_in_every_order,
    ordered_planning,
    position,
)

from cadence_memplan.scheduling.rules import ALL_RULES, is_side_effecting, unit_graph

runtime = pytest.importorskip("executorch.extension.pybindings.portable_lib")

pytestmark = [
    pytest.mark.executorch,
    pytest.mark.filterwarnings("ignore:Mutation on a buffer in the model is detected"),
]

aten = torch.ops.aten


def without(rule: str) -> frozenset[str]:
    assert rule in ALL_RULES
    return ALL_RULES - {rule}


# --------------------------------------------------------------------- data


def _chain() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    g = GraphBuilder()
    x = g.input("x")
    first = g.out(aten.relu.out, x)
    second = g.out(aten.neg.out, first)
    return g.output(second), first, second


def test_data_a_unit_follows_what_it_reads() -> None:
    assert before_in_every_order(_chain)
    assert not before_in_every_order(_chain, without("data"))


# --------------------------------------------------------------------- units


def test_units_an_alloc_stays_right_before_the_op_that_writes_it() -> None:
    g = GraphBuilder()
    node = g.input("x")
    ops = []
    for _ in range(3):  # a chain, so that the allocs could all run first
        node = g.out(aten.relu.out, node)
        ops.append(node)
    graph_module = g.output(node)

    def adjacent(rules: frozenset[str]) -> bool:
        graph = unit_graph(graph_module, rules)
        nodes = graph.node_order(adversarial_order(graph))
        return all(nodes[nodes.index(op) - 1] is op.kwargs["out"] for op in ops)

    assert adjacent(ALL_RULES)
    assert not adjacent(without("units"))


def test_views_and_getitem_follow_their_source() -> None:
    g = GraphBuilder()
    x = g.input("x")
    source = g.out(aten.relu.out, x)
    view = g.call(memory.view, source, [2, 2], spec_of=source)
    other = g.out(aten.neg.out, source)
    user = g.out(aten.abs.out, view)
    graph_module = g.output(user, other)

    def follows(rules: frozenset[str]) -> bool:
        graph = unit_graph(graph_module, rules)
        at = position(graph, adversarial_order(graph))
        return at[view] == at[source] + 1

    assert follows(ALL_RULES)
    assert not follows(without("follow source"))


# --------------------------------------------------------------------- storage order


class ReadThenUpdate(torch.nn.Module):
    """A mutable buffer read by an op off the write-back's path: the write-back (a
    ``copy_`` into the buffer at the graph's end) must stay after that read."""

    state: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(4, 8), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        before = torch.sigmoid(self.state * 3.0)
        self.state.add_(x)
        return before * 2.0 + 1.0


def _outputs(rules: frozenset[str]) -> list[bytes]:
    model = ReadThenUpdate().eval()
    inputs = (torch.ones(4, 8),)
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    program = edge.to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=ordered_planning(rules))
    )
    module = runtime._load_for_executorch_from_buffer(program.buffer)
    return [output.numpy().tobytes() for _ in range(3) for output in module.forward(inputs)]


def test_mutable_buffer_write_back_stays_after_its_readers() -> None:
    model = ReadThenUpdate().eval()
    inputs = (torch.ones(4, 8),)
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    default = copy.deepcopy(edge).to_executorch()
    module = runtime._load_for_executorch_from_buffer(default.buffer)
    expected = [output.numpy().tobytes() for _ in range(3) for output in module.forward(inputs)]
    assert _outputs(ALL_RULES) == expected
    assert _outputs(without("storage order")) != expected


def _in_place() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    g = GraphBuilder()
    x = g.input("x")
    copied = g.out(aten.relu.out, x)
    reader = g.out(aten.neg.out, copied)
    writer = g.call(aten.add_.Tensor, copied, 1.0, spec_of=copied)  # in place
    return g.output(reader, writer), reader, writer


def _out_into_input() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    g = GraphBuilder()
    x, y = g.input("x"), g.input("y")
    reader = g.out(aten.neg.out, y)
    writer = g.graph.call_function(aten.relu.out, (x,), {"out": y})  # writes an input
    writer.meta["spec"] = y.meta["spec"]
    return g.output(reader, writer), reader, writer


def _cadence_in_place() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    g = GraphBuilder()
    x, source = g.input("x"), g.input("source")
    target = g.out(aten.relu.out, x)
    reader = g.out(aten.neg.out, target)
    writer = g.call(torch.ops.cadence.slice_scatter_.default, target, source, spec_of=target)
    return g.output(reader, writer), reader, writer


def _cadence_slice_nop() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    """A slice Cadence may place inside its input: the slice's reader reads the input's
    bytes, so it stays before the input's next write."""
    g = GraphBuilder()
    x = g.input("x")
    base = g.out(aten.relu.out, x)
    part = g.out(aten.slice_copy.Tensor_out, base, 0, 0, 2)
    reader = g.out(aten.neg.out, part)
    writer = g.call(aten.add_.Tensor, base, 1.0, spec_of=base)
    return g.output(reader, writer), reader, writer


def _cadence_cat_nop() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    """A cat Cadence may build in place: its inputs lie inside its output, so a reader of
    an input stays before the output's next write."""
    g = GraphBuilder()
    x = g.input("x")
    left, right = g.out(aten.relu.out, x), g.out(aten.neg.out, x)
    reader = g.out(aten.abs.out, left)
    both = g.out(aten.cat.out, [left, right])
    writer = g.call(aten.add_.Tensor, both, 1.0, spec_of=both)
    return g.output(reader, writer), reader, writer


def _storage_base() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    """exir's shared allocation: an op's output placed inside its input's storage
    (``storage_base``) writes that storage again."""
    g = GraphBuilder()
    x = g.input("x")
    base = g.out(aten.relu.out, x)
    reader = g.out(aten.neg.out, base)
    writer = g.out(aten.abs.out, base)
    writer.meta["spec"].storage_base = base.meta["spec"]
    return g.output(reader, writer), reader, writer


@pytest.mark.parametrize(
    "build",
    [_in_place, _out_into_input, _cadence_in_place, _cadence_slice_nop, _cadence_cat_nop, _storage_base],
    ids=["in-place", "out-variant into an input", "cadence in-place", "cadence slice nop",
         "cadence cat nop", "storage_base"],
)  # fmt: skip
def test_storage_written_twice_keeps_its_access_order(build) -> None:  # type: ignore[no-untyped-def]
    assert before_in_every_order(build)
    assert not before_in_every_order(build, without("storage order"))


# --------------------------------------------------------------------- side effects


def effect(x: torch.Tensor) -> torch.Tensor:
    """A Python function as an op: nothing says what it touches."""
    return x


def _two_effects() -> tuple[torch.fx.GraphModule, torch.fx.Node, torch.fx.Node]:
    g = GraphBuilder()
    x, y = g.input("x"), g.input("y")
    first = g.call(effect, x)
    second = g.call(effect, y)
    return g.output(first, second), first, second


def test_side_effects_keep_their_relative_order() -> None:
    assert before_in_every_order(_two_effects)
    assert not before_in_every_order(_two_effects, without("side effects"))


def test_what_counts_as_side_effecting() -> None:
    g = GraphBuilder()
    x = g.input("x")
    from executorch.exir.delegate import executorch_call_delegate

    nodes = {
        "delegate": g.call(executorch_call_delegate, x),
        "cond": g.call(torch.ops.higher_order.cond, x),
        "random": g.call(aten.rand_like.default, x),
        "idma": g.call(torch.ops.cadence.idma_wait.out, x),
        "python": g.call(effect, x),
        "free": g.call(memory.free, x),
        "pure": g.call(aten.relu.default, x),
        "view": g.call(memory.view, x, [4]),
    }
    effecting = {name for name, node in nodes.items() if is_side_effecting(node)}
    assert effecting == {"delegate", "cond", "random", "idma", "python", "free"}
