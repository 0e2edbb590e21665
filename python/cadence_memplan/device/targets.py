"""The sizes and alignments of what the runtime allocates while it loads a method, per
target: the struct-size table the replay (:mod:`.pools`) reads.

Each figure names where it comes from (:attr:`Target.sources`). ``host`` (x86-64 and
aarch64, LP64) and ``arm32`` (ARM EABI, hard float, ILP32) are the sizes of executorch
1.5.1's own types, compiled from the headers its wheel ships (``tests/runtime_probe/
sizeof_probe.cpp``, checked by ``tests/test_device_targets.py`` with ``g++`` and with
Debian's ``arm-linux-gnueabihf-g++``); the three types private to ``method.cpp``
(``Chain``, ``BackendDelegate``, ``NamedData``) are mirrored member for member there.
``xtensa`` is not compiled here (no Xtensa C++ toolchain on this machine): the Xtensa
ABI is ILP32 with 64-bit types 8-byte aligned, as ARM EABI, so it takes arm32's figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["TARGETS", "Layout", "Target", "target"]


@dataclass(frozen=True)
class Layout:
    """A type's ``sizeof`` and ``alignof`` in bytes."""

    size: int
    align: int


# What the runtime allocates, by the probe's names.
TYPES = (
    "evalue",  # EValue: values_
    "pointer",  # EValue*, the boxed lists and instruction arguments
    "tensor_impl",  # TensorImpl: one per tensor value
    "tensor",  # Tensor: a tensor list's unboxed entries
    "optional_tensor",  # std::optional<Tensor>: an optional tensor list's entries
    "tensor_meta",  # TensorMeta: a kernel's argument metadata at load
    "boxed_list",  # BoxedEvalueList<int64_t>
    "boxed_tensor_list",  # BoxedEvalueList<Tensor>
    "boxed_optional_tensor_list",  # BoxedEvalueList<std::optional<Tensor>>
    "array_ref",  # ArrayRef<bool|double|char>: bool and double lists, strings
    "int64",  # an int list's unboxed entries
    "sizes_type",  # SizesType: a dynamic tensor's sizes
    "strides_type",  # StridesType: every tensor's strides
    "dim_order_type",  # DimOrderType: a dynamic tensor's and a kernel argument's dim order
    "op_function",  # OpFunction: one kernel per instruction
    "instruction_args",  # Span<EValue*>: one argument list per instruction
    "chain",  # method.cpp's Chain
    "backend_delegate",  # method.cpp's BackendDelegate
    "compile_spec",  # CompileSpec: a delegate's compile specs
    "named_data",  # NamedData: an external constant
    "topk_queue_entry",  # topk's temp: std::pair<CTYPE, int64_t>, at most this
)


@dataclass(frozen=True)
class Target:
    """One target: its name, the layout of each type in :data:`TYPES`, what each
    backend's ``init`` takes from the method pool where it is known, and the sources."""

    name: str
    description: str
    layouts: dict[str, Layout]
    backend_init: dict[str, tuple[Layout, ...]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, type_name: str) -> Layout:
        return self.layouts[type_name]


def _layouts(figures: dict[str, tuple[int, int]]) -> dict[str, Layout]:
    missing = set(TYPES) - set(figures)
    assert not missing, missing
    return {name: Layout(*figures[name]) for name in TYPES}


_HOST = {
    "evalue": (16, 8), "pointer": (8, 8), "tensor_impl": (64, 8), "tensor": (8, 8),
    "optional_tensor": (16, 8), "tensor_meta": (24, 8), "boxed_list": (24, 8),
    "boxed_tensor_list": (24, 8), "boxed_optional_tensor_list": (24, 8),
    "array_ref": (16, 8), "int64": (8, 8), "sizes_type": (4, 4), "strides_type": (4, 4),
    "dim_order_type": (1, 1), "op_function": (8, 8), "instruction_args": (16, 8),
    "chain": (32, 8), "backend_delegate": (56, 8), "compile_spec": (24, 8),
    "named_data": (48, 8), "topk_queue_entry": (16, 8),
}  # fmt: skip
_ILP32 = {
    "evalue": (16, 8), "pointer": (4, 4), "tensor_impl": (32, 4), "tensor": (4, 4),
    "optional_tensor": (8, 4), "tensor_meta": (12, 4), "boxed_list": (12, 4),
    "boxed_tensor_list": (12, 4), "boxed_optional_tensor_list": (12, 4),
    "array_ref": (8, 4), "int64": (8, 8), "sizes_type": (4, 4), "strides_type": (4, 4),
    "dim_order_type": (1, 1), "op_function": (4, 4), "instruction_args": (8, 4),
    "chain": (16, 4), "backend_delegate": (40, 8), "compile_spec": (12, 4),
    "named_data": (40, 8), "topk_queue_entry": (16, 8),
}  # fmt: skip

_PROBE = (
    "sizeof/alignof of executorch 1.5.1's types from the wheel's headers "
    "(tests/runtime_probe/sizeof_probe.cpp"
)

TARGETS: dict[str, Target] = {
    "host": Target(
        name="host",
        description="x86-64 or aarch64 (LP64): pointers 8 B",
        layouts=_layouts(_HOST),
        # XNNPACK's init takes one XNNExecutor (allocateInstance) from the method pool;
        # its size is not in any header the wheel ships, so it is the figure the runner
        # measured against libexecutorch_backend_xnnpack.so (tests/test_device_pools.py).
        backend_init={"XnnpackBackend": (Layout(272, 8),)},
        sources={
            "types": _PROBE + ", g++ for x86-64; tests/test_device_targets.py)",
            "XnnpackBackend": "measured: the pool runner against the wheel's "
            "libexecutorch_backend_xnnpack.so (tests/test_device_pools.py)",
        },
    ),
    "arm32": Target(
        name="arm32",
        description="32-bit ARM EABI (Cortex-M, Cortex-A32): pointers 4 B, int64 8-aligned",
        layouts=_layouts(_ILP32),
        sources={
            "types": _PROBE
            + ", Debian's arm-linux-gnueabihf-g++ 12; tests/test_device_targets.py)",
        },
    ),
    "xtensa": Target(
        name="xtensa",
        description="Cadence Xtensa (ILP32, 64-bit types 8-aligned): arm32's figures",
        layouts=_layouts(_ILP32),
        sources={
            "types": "arm32's figures: the Xtensa ABI is ILP32 with 8-byte alignment of "
            "64-bit types (GCC's config/xtensa/xtensa.h), as ARM EABI; not compiled here",
        },
    ),
}


def target(name: str) -> Target:
    """The target called ``name``; ``ValueError`` names the known ones otherwise."""
    if name not in TARGETS:
        raise ValueError(f"unknown target {name!r}: known targets are {', '.join(TARGETS)}")
    return TARGETS[name]
