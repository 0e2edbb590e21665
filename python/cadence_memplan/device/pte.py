"""A ``.pte`` read with exir's own deserializer (through ``_boundary/upstream.py``) into
the plain records of :mod:`.layout`. Needs executorch; imported only when a program is
read, so the rest of ``device/`` loads without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .layout import (
    Delegate,
    Instruction,
    ListValue,
    MethodLayout,
    Placement,
    ProgramLayout,
    ScalarValue,
    TensorValue,
    Value,
)

__all__ = ["read_program_layout"]

# exir.schema's list classes -> the record's kind.
_LIST_KINDS = {
    "IntList": "int",
    "BoolList": "bool",
    "DoubleList": "double",
    "TensorList": "tensor",
    "OptionalTensorList": "optional_tensor",
}
_SCALARS = ("Null", "Int", "Double", "Bool")


def read_program_layout(pte: bytes | str | Path) -> ProgramLayout:
    """The layout of a ``.pte`` given as its bytes or its path. Raises ``ValueError`` when
    exir cannot read it."""
    from .._boundary.upstream import deserialize_pte

    data = pte if isinstance(pte, bytes) else Path(pte).read_bytes()
    try:
        pte_file = deserialize_pte(data)
    except Exception as error:  # exir raises anything from a bad flatbuffer
        raise ValueError(f"not a .pte program exir can read: {error}") from error
    program = pte_file.program
    return ProgramLayout(
        methods=tuple(_method_layout(plan) for plan in program.execution_plan),
        constant_bytes=sum(len(buffer.storage) for buffer in program.constant_buffer)
        + _named_data_bytes(pte_file.named_data),
        delegate_bytes=sum(len(inline.data) for inline in program.backend_delegate_data),
    )


def _named_data_bytes(named_data: Any) -> int:
    if named_data is None:
        return 0
    return sum(len(bytes(buffer)) for buffer in named_data.buffers)


def _method_layout(plan: Any) -> MethodLayout:
    operators = [
        f"{op.name}.{op.overload}" if op.overload else str(op.name) for op in plan.operators
    ]
    return MethodLayout(
        name=str(plan.name),
        values=tuple(_value(value.val) for value in plan.values),
        inputs=len(plan.inputs),
        chains=tuple(
            tuple(
                _instruction(instruction.instr_args, operators)
                for instruction in chain.instructions
            )
            for chain in plan.chains
        ),
        delegates=tuple(
            Delegate(
                backend=str(delegate.id),
                compile_specs=None
                if delegate.compile_specs is None
                else len(delegate.compile_specs),
            )
            for delegate in plan.delegates
        ),
        # Entry 0 is reserved for constants; the runtime's planned buffers start at 1.
        arenas=tuple(int(size) for size in plan.non_const_buffer_sizes[1:]),
        arena_alignments=_arena_alignments(plan),
        input_values=tuple(int(index) for index in plan.inputs),
        output_values=tuple(int(index) for index in plan.outputs),
    )


MAX_ARENA_ALIGNMENT = 64


def _arena_alignments(plan: Any) -> tuple[int, ...]:
    """Per arena, the largest power of two (at most 64) dividing every offset in it."""
    alignments = [MAX_ARENA_ALIGNMENT] * (len(plan.non_const_buffer_sizes) - 1)
    for value in plan.values:
        info = getattr(value.val, "allocation_info", None)
        if info is None or not 1 <= info.memory_id <= len(alignments):
            continue
        offset = (int(info.memory_offset_high) << 32) | int(info.memory_offset_low)
        while offset % alignments[info.memory_id - 1]:
            alignments[info.memory_id - 1] //= 2
    return tuple(alignments)


def _value(val: Any) -> Value:
    kind = type(val).__name__
    if kind in _SCALARS:
        return ScalarValue(integer=int(val.int_val) if kind == "Int" else None)
    if kind == "Tensor":
        extra = val.extra_tensor_info
        external = extra is not None and int(extra.location) == _EXTERNAL_LOCATION
        sizes = tuple(int(size) for size in val.sizes)
        return TensorValue(
            sizes=sizes,
            dynamic=int(val.shape_dynamism) != _STATIC,
            external=external,
            placement=_placement(val, sizes),
            initial_data=int(val.data_buffer_idx) != 0,
        )
    if kind == "String":
        return ListValue(kind="string", length=len(val.string_val.encode()))
    if kind in _LIST_KINDS:
        items = tuple(int(item) for item in val.items) if kind in _TENSOR_LISTS else ()
        return ListValue(kind=_LIST_KINDS[kind], length=len(val.items), items=items)  # type: ignore[arg-type]
    raise ValueError(f"a value of a kind the replay does not know: {kind}")


_TENSOR_LISTS = ("TensorList", "OptionalTensorList")

# Bytes per element of exir.schema's ScalarType, by its value (the runtime's elementSize).
_ELEMENT_BYTES = {
    0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 8: 4, 9: 8, 10: 16, 11: 1, 12: 1,
    13: 1, 14: 4, 15: 2, 16: 1, 17: 1, 22: 2, 23: 1, 24: 1, 25: 1, 26: 1, 27: 2, 28: 4,
    29: 8,
}  # fmt: skip


def _placement(val: Any, sizes: tuple[int, ...]) -> Placement | None:
    """Where the plan put a tensor (``allocation_info``), ``None`` when it is not planned."""
    info = val.allocation_info
    if info is None:
        return None
    scalar_type = int(val.scalar_type)
    if scalar_type not in _ELEMENT_BYTES:
        raise ValueError(f"a tensor of a scalar type the reader does not know: {scalar_type}")
    elements = 1
    for size in sizes:
        elements *= size
    offset = (int(info.memory_offset_high) << 32) | int(info.memory_offset_low)
    return Placement(int(info.memory_id), offset, elements * _ELEMENT_BYTES[scalar_type])


# exir.schema's TensorShapeDynamism.STATIC and TensorDataLocation.EXTERNAL.
_STATIC = 0
_EXTERNAL_LOCATION = 1


def _instruction(args: Any, operators: list[str]) -> Instruction:
    kind = type(args).__name__
    if kind == "KernelCall":
        return Instruction(
            kind="kernel", args=tuple(int(a) for a in args.args), operator=operators[args.op_index]
        )
    if kind == "DelegateCall":
        return Instruction(kind="delegate", args=tuple(int(a) for a in args.args))
    # A move, a jump or a free: what it uses, for the lifetimes (the pools skip them).
    used: tuple[Any, ...] = ()
    if kind == "MoveCall":
        used = (args.move_from, args.move_to)
    elif kind == "JumpFalseCall":
        used = (args.cond_value_index,)
    elif kind == "FreeCall":
        used = (args.value_index,)
    return Instruction(kind="other", args=tuple(int(index) for index in used))
