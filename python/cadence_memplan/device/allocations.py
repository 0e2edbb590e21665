"""The runtime's allocations while it loads one method, in its order: executorch 1.5.x's
``Method::init`` (values, delegates, chains and instructions, each kernel's argument
metadata) and tensor parser, as a list of requests (:class:`Request`) that
:mod:`.pools` replays on a pool of a given size.

Every request names what it is for (a :data:`CATEGORIES` entry). A kernel's argument
metadata (``resolve_operator``: a ``TensorMeta`` per argument, then each tensor
argument's dim order) goes to the temp pool when that pool holds at least
``(sizeof(TensorMeta) + 16) x arguments`` bytes, else stays in the method pool: its
requests carry that threshold.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from .layout import Instruction, ListValue, MethodLayout, ScalarValue, TensorValue
from .targets import Target

__all__ = ["CATEGORIES", "TENSOR_DIMENSION_LIMIT", "Request", "load_requests"]

CATEGORIES = (
    "values",
    "tensors",
    "lists",
    "delegates",
    "instructions",
    "kernel_arguments",
    "kernel_metadata",
)
# runtime/core/exec_aten/util/tensor_dimension_limit.h: kTensorDimensionLimit.
TENSOR_DIMENSION_LIMIT = 16


@dataclass(frozen=True)
class Request:
    """One ``allocate(size, align)``; ``temp_threshold`` > 0 for a kernel's metadata,
    which goes to a temp pool of at least that many bytes (and only then)."""

    category: str
    size: int
    align: int
    temp_threshold: int = 0
    kernel: int = -1


def load_requests(method: MethodLayout, target: Target) -> list[Request]:
    """The method pool's requests while ``method`` loads, in the runtime's order."""
    requests = list(_value_requests(method, target))
    requests += _delegate_requests(method, target)
    requests += _chain_requests(method, target)
    return requests


def _list(category: str, count: int, type_name: str, target: Target) -> Request:
    layout = target[type_name]
    return Request(category, count * layout.size, layout.align)


def _value_requests(method: MethodLayout, target: Target) -> Iterator[Request]:
    yield _list("values", len(method.values), "evalue", target)
    if method.inputs > 0:
        yield Request("values", method.inputs, 1)  # input_set_: a bool per input
    externals = sum(isinstance(v, TensorValue) and v.external for v in method.values)
    if externals:
        yield _list("values", externals, "named_data", target)
    for value in method.values:
        if isinstance(value, TensorValue):
            yield from _tensor_requests(value, target)
        elif isinstance(value, ListValue):
            yield from _list_requests(value, target)


def _tensor_requests(tensor: TensorValue, target: Target) -> Iterator[Request]:
    if tensor.dynamic:  # sizes and dim order copied out of the flatbuffer
        yield _list("tensors", tensor.rank, "sizes_type", target)
        yield _list("tensors", tensor.rank, "dim_order_type", target)
    yield _list("tensors", tensor.rank, "strides_type", target)
    yield _list("tensors", 1, "tensor_impl", target)


def _list_requests(value: ListValue, target: Target) -> Iterator[Request]:
    if value.kind == "int":
        yield _list("lists", value.length, "pointer", target)
        yield _list("lists", value.length, "int64", target)
        yield _list("lists", 1, "boxed_list", target)
    elif value.kind == "tensor":
        yield _list("lists", value.length, "tensor", target)
        yield _list("lists", value.length, "pointer", target)
        yield _list("lists", 1, "boxed_tensor_list", target)
    elif value.kind == "optional_tensor":
        yield _list("lists", value.length, "pointer", target)
        yield _list("lists", value.length, "optional_tensor", target)
        yield _list("lists", 1, "boxed_optional_tensor_list", target)
    else:  # bool, double, string: an ArrayRef onto the flatbuffer's data
        yield _list("lists", 1, "array_ref", target)


def _delegate_requests(method: MethodLayout, target: Target) -> Iterator[Request]:
    yield _list("delegates", len(method.delegates), "backend_delegate", target)
    for delegate in method.delegates:
        if delegate.compile_specs is not None:
            yield _list("delegates", delegate.compile_specs, "compile_spec", target)
        for layout in target.backend_init.get(delegate.backend, ()):
            yield Request("delegates", layout.size, layout.align)


def _chain_requests(method: MethodLayout, target: Target) -> Iterator[Request]:
    yield _list("instructions", len(method.chains), "chain", target)
    kernel = 0
    for chain in method.chains:
        yield _list("instructions", len(chain), "op_function", target)
        yield _list("instructions", len(chain), "instruction_args", target)
        for instruction in chain:
            if instruction.kind == "other":
                continue
            yield _list("kernel_arguments", len(instruction.args), "pointer", target)
            if instruction.kind == "kernel":
                yield from _metadata_requests(method, instruction, kernel, target)
                kernel += 1


def _metadata_requests(
    method: MethodLayout, instruction: Instruction, kernel: int, target: Target
) -> Iterator[Request]:
    meta = target["tensor_meta"]
    count = len(instruction.args)
    threshold = count * (meta.size + TENSOR_DIMENSION_LIMIT * target["dim_order_type"].size)
    yield Request("kernel_metadata", count * meta.size, meta.align, threshold, kernel)
    for index in instruction.args:
        value = method.values[index]
        if isinstance(value, TensorValue):
            yield Request("kernel_metadata", value.rank, 1, threshold, kernel)


def scalar(method: MethodLayout, index: int) -> int | None:
    """The int value at ``index``, ``None`` if it is not an int."""
    value = method.values[index]
    return value.integer if isinstance(value, ScalarValue) else None
