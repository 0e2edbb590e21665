"""What a method of a ``.pte`` holds that the runtime allocates for at load: plain records,
read from exir's deserialized program by :mod:`.pte` and replayed by :mod:`.pools`.

Only what moves a byte of a pool or says where the plan put a tensor is kept: each
value's kind (a scalar, a tensor with its rank, whether its shape is dynamic and its
placement, a list with its length and a tensor list's items), the inputs and outputs,
every instruction's arguments and operator, the delegates, the planned arenas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Delegate",
    "Instruction",
    "ListValue",
    "MethodLayout",
    "Placement",
    "ProgramLayout",
    "ScalarValue",
    "TensorValue",
    "Value",
]

ListKind = Literal["int", "bool", "double", "string", "tensor", "optional_tensor"]
InstructionKind = Literal["kernel", "delegate", "other"]


@dataclass(frozen=True)
class ScalarValue:
    """A null, int, double or bool value; ``integer`` holds an int's value (topk's k and
    dim are read from it)."""

    integer: int | None = None


@dataclass(frozen=True)
class Placement:
    """Where the program's plan put a tensor: its memory id (1 and up: the method's
    arenas), its offset in that arena and its bytes (its sizes times its scalar type's)."""

    memory_id: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class TensorValue:
    """A tensor: its serialized sizes (their count is its rank), whether its shape is
    dynamic, whether its data lives outside the program (an external constant), where the
    plan put it (``None``: not planned, a constant or a tensor the runtime points
    elsewhere), and whether it carries initial data from the program (a planned one:
    state, such as a mutable buffer's)."""

    sizes: tuple[int, ...]
    dynamic: bool
    external: bool = False
    placement: Placement | None = None
    initial_data: bool = False

    @property
    def rank(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class ListValue:
    """A list value: of ints, bools, doubles, a string's characters, tensors or optional
    tensors, with its length; a tensor list's ``items`` are its value indices (-1: none)."""

    kind: ListKind
    length: int
    items: tuple[int, ...] = ()


Value = ScalarValue | TensorValue | ListValue


@dataclass(frozen=True)
class Instruction:
    """One instruction: a kernel call (its operator ``name.overload``), a delegate call,
    or another kind (move, jump, free), with the value indices it passes or uses."""

    kind: InstructionKind
    args: tuple[int, ...] = ()
    operator: str = ""


@dataclass(frozen=True)
class Delegate:
    """A delegate: its backend's id and how many compile specs it carries (``None``: the
    program serialized none)."""

    backend: str
    compile_specs: int | None


@dataclass(frozen=True)
class MethodLayout:
    """One method (an execution plan): its values, inputs, chains of instructions,
    delegates, and the planned arenas, one per memory id from 1, with the alignment of
    each arena's base that keeps every tensor where the planner put it (the largest power
    of two, at most 64, that divides every offset planned in it); ``input_values`` and
    ``output_values`` are the value indices of its inputs and outputs."""

    name: str
    values: tuple[Value, ...]
    inputs: int
    chains: tuple[tuple[Instruction, ...], ...]
    delegates: tuple[Delegate, ...]
    arenas: tuple[int, ...]
    arena_alignments: tuple[int, ...] = ()
    input_values: tuple[int, ...] = ()
    output_values: tuple[int, ...] = ()


@dataclass(frozen=True)
class ProgramLayout:
    """A whole program: its methods, and the constant data it carries (the weights in the
    constant buffers and segment, the delegates' processed data, named data)."""

    methods: tuple[MethodLayout, ...]
    constant_bytes: int
    delegate_bytes: int
