"""The replay of the runtime's allocations (cadence_memplan.device) on hand-made method
layouts, numpy only: the rules each figure follows (the temp pool's threshold for a
kernel's metadata, each request aligned, dynamic tensors' sizes and dim orders, topk's
temp, what is unknown), the versions it knows, the JSON document against its schema, and
the C header. tests/test_device_pools.py proves the figures on the runtime itself.
"""

from __future__ import annotations

import pytest

from cadence_memplan.device import TARGETS, program_memory
from cadence_memplan.device.allocations import load_requests
from cadence_memplan.device.layout import (
    Delegate,
    Instruction,
    ListValue,
    MethodLayout,
    ProgramLayout,
    ScalarValue,
    TensorValue,
)
from cadence_memplan.device.pools import replay
from cadence_memplan.io.program_memory import (
    pool_header,
    program_memory_document,
    program_memory_schema,
)

HOST = TARGETS["host"]


def method(*instructions: Instruction, dynamic: bool = False, **fields: object) -> MethodLayout:
    values = (
        TensorValue((2, 8), dynamic),  # 0: input
        TensorValue((8,), False),  # 1: weight
        TensorValue((2, 8), False),  # 2: output
        ScalarValue(integer=1),  # 3: an int
        ListValue("int", 3),  # 4: an int list
    )
    layout = MethodLayout(
        name="forward",
        values=values,
        inputs=1,
        chains=(instructions or (Instruction("kernel", (0, 1, 2), "aten::mul.out"),),),
        delegates=(),
        arenas=(128,),
        arena_alignments=(16,),
    )
    return layout if not fields else MethodLayout(**{**layout.__dict__, **fields})  # type: ignore[arg-type]


def program(layout: MethodLayout, target: str = "host") -> object:
    return program_memory(ProgramLayout((layout,), 64, 0), target, runtime_version="1.5.1")


def test_the_method_pool_adds_up_each_request_aligned() -> None:
    layout = method()
    # values: 5 EValues (80) + 1 input flag (1); tensors: strides (4 B a dim) then a
    # TensorImpl (64, 8-aligned); the int list: 3 pointers, 3 int64, a boxed list (24);
    # the chain (32), 1 kernel (8), 1 argument list (16), 3 argument pointers (24).
    expected = 80 + 1
    offset = expected
    for rank in (2, 1, 2):
        offset = -(-offset // 4) * 4 + 4 * rank
        offset = -(-offset // 8) * 8 + 64
    offset = -(-offset // 8) * 8 + 24 + 24 + 24
    offset += 32 + 8 + 16 + 24
    memory = program(layout).methods[0]  # type: ignore[attr-defined]
    assert memory.method_pool == offset
    assert sum(memory.breakdown.values()) == memory.method_pool


def test_a_kernels_metadata_goes_to_temp_from_its_threshold_only() -> None:
    requests = load_requests(method(), HOST)
    threshold = 3 * (24 + 16)  # (sizeof(TensorMeta) + 16 dim-order bytes) x arguments
    with_temp = replay(requests, threshold)
    just_short = replay(requests, threshold - 1)
    # Below the threshold: 3 TensorMetas (72) and the three dim orders (2 + 1 + 2) stay.
    assert just_short.method_pool - with_temp.method_pool == 72 + 5
    assert with_temp.temp_used == 72 + 5
    assert replay(requests, 0).method_pool == just_short.method_pool
    memory = program(method()).methods[0]  # type: ignore[attr-defined]
    assert (memory.temp_pool, memory.temp_at_load) == (threshold, threshold)
    assert memory.method_pool_without_temp == just_short.method_pool


def test_a_dynamic_tensor_copies_its_sizes_and_dim_order() -> None:
    static = [(r.size, r.align) for r in load_requests(method(), HOST) if r.category == "tensors"]
    dynamic = [
        (r.size, r.align)
        for r in load_requests(method(dynamic=True), HOST)
        if r.category == "tensors"
    ]
    # The dynamic input's sizes (int32) and dim order (uint8), before its strides.
    assert dynamic == [(2 * 4, 4), (2, 1), *static]


def test_topk_takes_a_pair_per_element_along_its_dim() -> None:
    topk = Instruction("kernel", (0, 3, 3, 3, 3, 2, 2), "aten::topk.values")
    memory = program(method(topk)).methods[0]  # type: ignore[attr-defined]
    assert memory.temp_at_execute == 8 * 16  # dim 1 of (2, 8)
    assert memory.temp_pool == max(memory.temp_at_load, 8 * 16)


def test_what_is_not_known_is_named_never_zero() -> None:
    hifi = Instruction("kernel", (0, 1, 2), "cadence::quantized_conv2d_nchw.out")
    delegated = method(
        hifi,
        Instruction("delegate", (0, 2)),
        delegates=(Delegate("XnnpackBackend", 0), Delegate("VendorBackend", None)),
    )
    host = program(delegated)
    nodes = {(u.what.split(" (")[0], u.node) for u in host.unknowns}  # type: ignore[attr-defined]
    assert ("temp at execute", "cadence::quantized_conv2d_nchw.out") in nodes
    assert ("method pool taken by the backend's init", "VendorBackend") in nodes
    assert all(node != "XnnpackBackend" for _, node in nodes)  # measured on the host
    arm32 = program(delegated, "arm32")
    assert ("method pool taken by the backend's init", "XnnpackBackend") in {
        (u.what, u.node)
        for u in arm32.unknowns  # type: ignore[attr-defined]
    }


def test_another_runtime_version_is_refused_naming_the_known_ones() -> None:
    layout = ProgramLayout((method(),), 0, 0)
    with pytest.raises(
        ValueError, match=r"known for executorch 1\.5\.x, not for executorch '1\.6\.0'"
    ):
        program_memory(layout, runtime_version="1.6.0")
    with pytest.raises(ValueError, match="known targets are host, arm32, xtensa"):
        program_memory(layout, target="riscv", runtime_version="1.5.1")


def test_32_bit_targets_need_less_than_the_host() -> None:
    host, arm32 = program(method()), program(method(), "arm32")
    assert arm32.methods[0].method_pool < host.methods[0].method_pool  # type: ignore[attr-defined]


def test_the_document_follows_its_schema_and_sizes_are_integers() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    memory = program(method(Instruction("kernel", (0, 1, 2), "cadence::x.out")))
    document = program_memory_document(memory, "m.pte")  # type: ignore[arg-type]
    jsonschema.validate(document, program_memory_schema())
    (entry,) = document["methods"]
    assert isinstance(entry["method_pool"], int)
    assert entry["arenas"] == [128]
    document["methods"][0]["temp_pool"] = 1.5
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, program_memory_schema())


def test_the_header_has_a_size_and_an_alignment_per_pool() -> None:
    memory = program(method())
    header = pool_header(memory, "m.pte")  # type: ignore[arg-type]
    figures = memory.methods[0]  # type: ignore[attr-defined]
    assert f"#define ET_FORWARD_METHOD_POOL_SIZE {figures.method_pool}u" in header
    assert f"#define ET_FORWARD_TEMP_POOL_SIZE {figures.temp_pool}u" in header
    assert "#define ET_FORWARD_ARENA_1_SIZE 128u" in header
    assert "#define ET_FORWARD_ARENA_1_ALIGNMENT 16u" in header
    assert header.count("_ALIGNMENT ") == 3
