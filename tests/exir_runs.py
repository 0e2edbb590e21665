"""Running one input of exir's planners (a case of tests/exir_cases.py) through exir's
function and through ours, on copies of the same specs, and comparing what each did; and
exir's Verifier over planned specs, with the mutations that break a plan (needs torch and
executorch).

Outcomes name specs by their index in the case, so two runs on different copies compare
directly: :class:`Planned` (every spec's (mem_id, mem_offset, mem_obj_id), the bufsizes
and every spec's fields afterwards, which shows the ``realign`` side effect) or
:class:`Raised` (the exception and the spec fields it left).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from cases import Chooser
from executorch.exir.banked_memory_planning import format_placement_report
from executorch.exir.memory_planning import Verifier
from executorch.exir.tensor import TensorSpec
from exir_cases import EXTERNAL_BASE, BankedCase, GreedyCase, graph_module_with
from torch.fx import Graph, GraphModule

# --------------------------------------------------------------------------- outcomes


SpecFields = tuple[Any, ...]


def _allocated_memory(tensor_spec: TensorSpec) -> int | str:
    try:
        return tensor_spec.allocated_memory
    except Exception as error:  # noqa: BLE001 - an alignment of 0 leaves a spec unsizable
        return type(error).__name__


def spec_fields(specs: Sequence[TensorSpec]) -> tuple[SpecFields, ...]:
    """Every field a planner may touch, per spec (the storage base by index)."""
    index = {id(s): i for i, s in enumerate(specs)}
    return tuple(
        (
            s.alignment,
            _allocated_memory(s),
            tuple(s.lifetime),
            s.mem_id,
            s.mem_offset,
            s.mem_obj_id,
            None if s.storage_base is None else index.get(id(s.storage_base), EXTERNAL_BASE),
            s.storage_base_offset,
        )
        for s in specs
    )


@dataclass(frozen=True)
class Planned:
    # spec index -> (mem_id, mem_offset, mem_obj_id) from the result's spec_dict
    placements: dict[int, tuple[int, int, int]]
    bufsizes: list[int]
    fields_after: tuple[SpecFields, ...]
    report: str | None = None  # the bank report (format_placement_report), banked only


@dataclass(frozen=True)
class Raised:
    error: BaseException
    fields_before: tuple[SpecFields, ...]
    fields_after: tuple[SpecFields, ...]

    @property
    def summary(self) -> tuple[str, str]:
        return type(self.error).__name__, str(self.error)


Outcome = Planned | Raised


def capture(
    call: Callable[[list[TensorSpec], GraphModule], Any],
    specs: list[TensorSpec],
    graph_module: GraphModule,
    report: Callable[[Any], str] | None = None,
) -> Outcome:
    """Run a planner on ``specs`` (this run's own copies) and record what it did."""
    before = spec_fields(specs)
    try:
        result = call(specs, graph_module)
    except Exception as error:  # noqa: BLE001 - the error is the outcome
        return Raised(error, before, spec_fields(specs))
    index = {id(s): i for i, s in enumerate(specs)}
    unknown = [s for s in result.spec_dict if id(s) not in index]
    assert not unknown, f"spec_dict holds specs that were not planned: {unknown}"
    placements = {
        index[id(s)]: (alloc.mem_id, alloc.mem_offset, alloc.mem_obj_id)
        for s, alloc in result.spec_dict.items()
    }
    return Planned(
        placements,
        list(result.bufsizes),
        spec_fields(specs),
        None if report is None else report(result),
    )


def assert_same_outcome(exir: Outcome, ours: Outcome, case: Any) -> None:
    """Ours must do what exir did: the same placements, bufsizes and spec fields after; or
    the same exception (an instance of exir's type, the same message), leaving the spec
    fields exir leaves (exir has realigned the specs it visited before it raised)."""
    if isinstance(exir, Raised):
        assert isinstance(ours, Raised), (
            f"exir raised {exir.summary}, ours planned {ours}\ncase={case}"
        )
        assert isinstance(ours.error, type(exir.error)), (
            f"exir raised {exir.summary}, ours {ours.summary}\ncase={case}"
        )
        assert str(ours.error) == str(exir.error), (
            f"messages differ:\n  exir: {exir.error}\n  ours: {ours.error}\ncase={case}"
        )
        assert ours.fields_after == exir.fields_after, (
            f"ours raised {ours.summary} leaving other spec fields than exir\n"
            f"  exir: {exir.fields_after}\n  ours: {ours.fields_after}\ncase={case}"
        )
        return
    assert not isinstance(ours, Raised), f"ours raised {ours.summary}, exir planned\ncase={case}"
    assert ours.placements == exir.placements, (
        f"placements differ\n  exir: {exir.placements}\n  ours: {ours.placements}\ncase={case}"
    )
    assert ours.bufsizes == exir.bufsizes, (
        f"bufsizes differ: exir {exir.bufsizes}, ours {ours.bufsizes}\ncase={case}"
    )
    assert ours.fields_after == exir.fields_after, (
        f"spec fields after planning differ\n  exir: {exir.fields_after}\n"
        f"  ours: {ours.fields_after}\ncase={case}"
    )
    assert ours.report == exir.report, f"bank reports differ\n{exir.report}\n{ours.report}"


# --------------------------------------------------------------------------- runs


def run_greedy(greedy: Callable[..., Any], case: GreedyCase, specs: list[TensorSpec]) -> Outcome:
    """``greedy`` on a deep copy of ``specs`` (the case's, built once)."""
    copies = copy.deepcopy(specs)
    ordered = [copies[i] for i in case.visit_order()]

    def call(_: list[TensorSpec], graph_module: GraphModule) -> Any:
        return greedy(
            case.alignment,
            ordered,
            graph_module,
            None,
            case.extra_padding,
            allow_overlapping_allocations=case.allow_overlapping_allocations,
        )

    return capture(call, copies, graph_module_with(case.input_mem_buffer_sizes))


def run_banked(
    banked_class: Callable[..., Any], case: BankedCase, specs: list[TensorSpec]
) -> Outcome:
    """``banked_class(target, allow_overlapping_allocations)`` on a deep copy of ``specs``;
    the outcome carries the bank report of the plan."""
    copies = copy.deepcopy(specs)
    ordered = [copies[i] for i in case.greedy.visit_order()]
    target = case.target()
    planner = banked_class(
        target, allow_overlapping_allocations=case.greedy.allow_overlapping_allocations
    )

    def call(_: list[TensorSpec], graph_module: GraphModule) -> Any:
        return planner(
            case.greedy.alignment, ordered, graph_module, None, case.greedy.extra_padding
        )

    def report(result: Any) -> str:
        mem_ids = [alloc.mem_id for alloc in result.spec_dict.values()]
        return format_placement_report(target, result.bufsizes, mem_ids)

    return capture(call, copies, graph_module_with(case.greedy.input_mem_buffer_sizes), report)


# --------------------------------------------------------------------------- verifier


def verifier_over(specs: Sequence[TensorSpec], alloc_graph_input: bool = True) -> Verifier:
    """exir's Verifier over a graph whose placeholders carry ``specs`` (in that order, the
    order the verifier pairs them in), each also on a second node to exercise dedup."""
    graph = Graph()
    nodes = []
    for index, tensor_spec in enumerate(specs):
        node = graph.placeholder(f"t{index}")
        node.meta["spec"] = tensor_spec
        nodes.append(node)
    if specs:
        again = graph.placeholder("again")
        again.meta["spec"] = specs[0]
    graph.output(tuple(nodes))
    return Verifier(
        GraphModule(torch.nn.Module(), graph),
        alloc_graph_input=alloc_graph_input,
        alloc_graph_output=True,
        alloc_mutable_buffers=True,
    )


@dataclass(frozen=True)
class Mutation:
    """A change to one planned spec's fields, to break a plan."""

    index: int
    field: str
    value: Any = field(default=None)


def apply_mutations(specs: Sequence[TensorSpec], mutations: Sequence[Mutation]) -> None:
    for mutation in mutations:
        setattr(specs[mutation.index], mutation.field, mutation.value)


def generate_mutations(
    choose: Chooser, specs: Sequence[TensorSpec], max_mutations: int = 3
) -> list[Mutation]:
    """Offsets moved onto another spec's or unset, mem_obj_ids changed or dropped, mem_ids
    moved."""
    if not specs:
        return []
    mutations = []
    for _ in range(choose.integer(0, max_mutations)):
        index = choose.integer(0, len(specs) - 1)
        other = specs[choose.integer(0, len(specs) - 1)]
        kind = choose.choice(["offset", "offset", "obj_id", "obj_id_none", "mem_id", "unset"])
        if kind == "offset":
            mutations.append(Mutation(index, "mem_offset", other.mem_offset))
        elif kind == "unset":
            mutations.append(Mutation(index, "mem_offset", None))
        elif kind == "obj_id":
            mutations.append(Mutation(index, "mem_obj_id", other.mem_obj_id))
        elif kind == "obj_id_none":
            mutations.append(Mutation(index, "mem_obj_id", None))
        else:
            mutations.append(Mutation(index, "mem_id", other.mem_id))
    return mutations
