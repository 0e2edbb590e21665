"""What a method of a ``.pte`` holds that the runtime allocates for at load: plain records,
read from exir's deserialized program by :mod:`.pte` and replayed by :mod:`.pools`.

Only what moves a byte of a pool is kept: each value's kind (a scalar, a tensor with its
rank and whether its shape is dynamic, a list with its length), the inputs, every
instruction's arguments and operator, the delegates, the planned arenas.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Delegate",
    "Instruction",
    "ListValue",
    "MethodLayout",
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
class TensorValue:
    """A tensor: its serialized sizes (their count is its rank), whether its shape is
    dynamic, and whether its data lives outside the program (an external constant)."""

    sizes: tuple[int, ...]
    dynamic: bool
    external: bool = False

    @property
    def rank(self) -> int:
        return len(self.sizes)


@dataclass(frozen=True)
class ListValue:
    """A list value: of ints, bools, doubles, a string's characters, tensors or optional
    tensors, with its length."""

    kind: ListKind
    length: int


Value = ScalarValue | TensorValue | ListValue


@dataclass(frozen=True)
class Instruction:
    """One instruction: a kernel call (its operator ``name.overload``), a delegate call,
    or another kind (move, jump, free), with the value indices it passes."""

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
    of two, at most 64, that divides every offset planned in it)."""

    name: str
    values: tuple[Value, ...]
    inputs: int
    chains: tuple[tuple[Instruction, ...], ...]
    delegates: tuple[Delegate, ...]
    arenas: tuple[int, ...]
    arena_alignments: tuple[int, ...] = ()


@dataclass(frozen=True)
class ProgramLayout:
    """A whole program: its methods, and the constant data it carries (the weights in the
    constant buffers and segment, the delegates' processed data, named data)."""

    methods: tuple[MethodLayout, ...]
    constant_bytes: int
    delegate_bytes: int
