"""A program of several methods (a multi-method ``.pt2``) planned by one ``to_executorch``
with our ``CadenceMemoryPlanning``, and read back per method: what the command line's
``plan`` reports for such a program (issue 51).

:func:`plan_methods` plans the edge program's methods together as the options say: with
``share_mutable_buffers`` their state placed once (:mod:`~cadence_memplan.cadence.shared_state`),
without it each method on its own, and then the pass's unshared-state warning (or, with
``strict_sharing``, its error) is what the caller gets: the warnings are returned, never
dropped, whatever filter is on. Each method's plan is read as ``plan`` reads one
program's (:func:`~cadence_memplan.cadence.lowering.graph_table`), and each mutable
buffer's place in every method that uses it through the TensorSpec boundary.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from executorch.exir import EdgeProgramManager, ExecutorchProgramManager

from .._boundary.mutable_state import UnsharedStateWarning, check_unshared, method_buffers
from .._boundary.tensorspecs import allocated_sizes, read_placements
from ..request import Memory, PlanningOptions
from ..request.inputs import StateBuffer
from ..stats import TensorTable
from .lowering import graph_table, run_planning
from .memory_planning import CadenceMemoryPlanning

__all__ = ["PlannedMethods", "plan_methods", "state_buffers", "unshared_state"]


@dataclass
class PlannedMethods:
    """The program, each method's plan table and node names (in the program's order),
    its state's buffers, the unshared-state warnings, and the timings."""

    program: ExecutorchProgramManager
    tables: dict[str, tuple[TensorTable, list[str]]]
    state: list[StateBuffer]
    warnings: list[str]
    timings: dict[str, float]


def plan_methods(
    edge: EdgeProgramManager,
    names: Sequence[str],
    memories: Sequence[Memory],
    options: PlanningOptions,
) -> PlannedMethods:
    """Every method of ``edge`` (``names``: all of them, in the order to report) planned by one ``to_executorch`` with our
    ``CadenceMemoryPlanning`` as ``options`` say (``share_mutable_buffers``,
    ``strict_sharing`` included); raises what the pass raises (``UnsharedStateError``
    with ``strict_sharing``)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnsharedStateWarning)
        _, program, timings = run_planning(
            edge, CadenceMemoryPlanning, memories, options, "C++ core"
        )
    found = [str(w.message) for w in caught if issubclass(w.category, UnsharedStateWarning)]
    for other in caught:  # what else was said goes on to the caller's filters
        if not issubclass(other.category, UnsharedStateWarning):
            warnings.warn_explicit(
                other.message, other.category, other.filename, other.lineno, source=other.source
            )
    if set(names) != set(program.methods):
        raise ValueError(f"names {list(names)} are not the program's {sorted(program.methods)}")
    tables = {
        name: graph_table(
            program.exported_program(name).graph_module,
            program.exported_program(name).graph_signature,
            options.alloc_inputs,
            options.alloc_outputs,
        )
        for name in names
    }
    return PlannedMethods(program, tables, state_buffers(program, names), found, timings)


def state_buffers(program: ExecutorchProgramManager, names: Sequence[str]) -> list[StateBuffer]:
    """Each buffer some method mutates, in name order, with its size and its place in
    every method that uses it (``(mem_id, offset)``; ``(-1, -1)`` where not planned)."""
    methods = {
        name: method_buffers(
            program.exported_program(name).graph_module,
            program.exported_program(name).graph_signature,
        )
        for name in names
    }
    mutated = sorted(set().union(*(buffers.mutated for buffers in methods.values())))
    state = []
    for fqn in mutated:
        places: dict[str, tuple[int, int]] = {}
        size = 0
        for name, buffers in methods.items():
            specs = buffers.specs.get(fqn)
            if not specs:
                continue
            placed = read_placements(specs[:1])
            places[name] = (int(placed.mem_ids[0]), int(placed.offsets[0]))
            size = int(allocated_sizes(specs[:1])[0])
        if places:
            state.append(StateBuffer(fqn, size, places))
    return state


def unshared_state(
    programs: dict[str, ExecutorchProgramManager], strict: bool, planner: str
) -> list[str]:
    """The unshared-state warning (``check_unshared``'s words) for methods each planned in
    a program of its own (``{method: program}``, as ``size`` plans them), returned, not
    raised as a warning; ``UnsharedStateError`` when ``strict``."""
    methods = [
        method_buffers(
            program.exported_program(name).graph_module,
            program.exported_program(name).graph_signature,
        )
        for name, program in programs.items()
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", UnsharedStateWarning)
        check_unshared(methods, strict, planner)
    return [str(w.message) for w in caught if issubclass(w.category, UnsharedStateWarning)]
