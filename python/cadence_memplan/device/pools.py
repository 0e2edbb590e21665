"""Every pool an ExecuTorch program needs on the device, per method, computed by
replaying the runtime's allocations (:mod:`.allocations`) for a target's struct sizes
(:mod:`.targets`): :func:`program_memory`.

The pools are defined so that they are enough together. ``temp_pool`` is the smallest
temp pool with which the method loads with its smallest method pool and runs (every
kernel's load-time metadata fits there, and whatever a kernel takes while it runs);
``method_pool`` is the smallest method pool that works with that temp pool. Both assume
each pool's base is aligned to :data:`BASE_ALIGNMENT` bytes: the runtime aligns every
request to its type's alignment (at most 8), so a base off by k bytes costs up to
8 - k more. A figure that cannot be known here (a Cadence HiFi kernel's temp, a
delegate whose init the table does not cover) is an :class:`Unknown` naming the node,
never a silent 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .allocations import CATEGORIES, Request, load_requests, scalar
from .layout import MethodLayout, ProgramLayout, TensorValue
from .runtime_versions import runtime_for
from .targets import Target
from .targets import target as find_target

__all__ = [
    "BASE_ALIGNMENT",
    "MethodMemory",
    "ProgramMemory",
    "Unknown",
    "method_memory",
    "program_memory",
    "replay",
]

BASE_ALIGNMENT = 8
# Operator namespaces whose kernels (executorch's portable and optimized libraries, the
# runtime's prim ops) take no temp while they run, topk aside.
_NO_TEMP_NAMESPACES = ("aten::", "dim_order_ops::", "executorch_prim::")
_TOPK = "aten::topk.values"


@dataclass(frozen=True)
class Unknown:
    """A figure not known here: what it is, and the node (operator, backend) it is for."""

    what: str
    node: str


@dataclass(frozen=True)
class MethodMemory:
    """One method's pools in bytes. ``breakdown`` splits ``method_pool`` by what takes
    the bytes (each request's padding counted with it)."""

    name: str
    method_pool: int
    temp_pool: int
    temp_at_load: int
    temp_at_execute: int
    method_pool_without_temp: int
    arenas: tuple[int, ...]
    breakdown: dict[str, int]
    unknowns: tuple[Unknown, ...] = ()
    arena_alignments: tuple[int, ...] = ()

    @property
    def total(self) -> int:
        """The method pool, the temp pool and the planned arenas."""
        return self.method_pool + self.temp_pool + sum(self.arenas)


@dataclass(frozen=True)
class ProgramMemory:
    """A program's pools for a target and runtime: each method's, and the constant data
    it carries (weights, delegates' data), which stays in the program's buffer."""

    target: str
    runtime: str
    base_alignment: int
    methods: tuple[MethodMemory, ...]
    constants: int
    delegate_data: int
    unknowns: tuple[Unknown, ...] = field(default=())

    @property
    def total(self) -> int:
        """Every method's pools and arenas (all loaded at once) and the constants."""
        return sum(m.total for m in self.methods) + self.constants + self.delegate_data


@dataclass(frozen=True)
class Replay:
    """What a replay at one temp size gives: the method pool's high-water mark, its
    bytes per category, and the most any kernel's metadata took from the temp pool."""

    method_pool: int
    breakdown: dict[str, int]
    temp_used: int


def _align(offset: int, align: int) -> int:
    return (offset + align - 1) // align * align


def replay(requests: Iterable[Request], temp_pool: int) -> Replay:
    """The method pool ``requests`` take with a temp pool of ``temp_pool`` bytes (each
    pool's base aligned to :data:`BASE_ALIGNMENT`)."""
    used = 0
    breakdown = dict.fromkeys(CATEGORIES, 0)
    temp_used: dict[int, int] = {}
    for request in requests:
        if request.kernel >= 0 and temp_pool > 0 and request.temp_threshold <= temp_pool:
            start = _align(temp_used.get(request.kernel, 0), request.align)
            temp_used[request.kernel] = start + request.size
            continue
        end = _align(used, request.align) + request.size
        breakdown[request.category] += end - used
        used = end
    return Replay(used, breakdown, max(temp_used.values(), default=0))


def method_memory(method: MethodLayout, target_: Target) -> MethodMemory:
    """The pools of one method on ``target_``."""
    requests = load_requests(method, target_)
    temp_at_load = max((r.temp_threshold for r in requests if r.kernel >= 0), default=0)
    temp_at_execute, unknowns = _execute_temp(method, target_)
    temp_pool = max(temp_at_load, temp_at_execute)
    smallest = replay(requests, temp_pool)
    return MethodMemory(
        name=method.name,
        method_pool=smallest.method_pool,
        temp_pool=temp_pool,
        temp_at_load=temp_at_load,
        temp_at_execute=temp_at_execute,
        method_pool_without_temp=replay(requests, 0).method_pool,
        arenas=method.arenas,
        breakdown=smallest.breakdown,
        unknowns=unknowns + _delegate_unknowns(method, target_),
        arena_alignments=method.arena_alignments,
    )


def _execute_temp(method: MethodLayout, target_: Target) -> tuple[int, tuple[Unknown, ...]]:
    """The most a kernel takes from the temp pool while it runs (the pool is reset
    before each instruction), and the kernels whose temp is not known here."""
    most = 0
    unknowns: list[Unknown] = []
    for chain in method.chains:
        for instruction in chain:
            if instruction.kind != "kernel":
                continue
            if instruction.operator == _TOPK:
                most = max(most, _topk_temp(method, instruction.args, target_))
            elif not instruction.operator.startswith(_NO_TEMP_NAMESPACES):
                what = "temp at execute (a Cadence HiFi kernel allocates temp by shape)"
                if not instruction.operator.startswith("cadence::"):
                    what = "temp at execute (a kernel outside executorch's portable set)"
                unknowns.append(Unknown(what, instruction.operator))
    return most, tuple(dict.fromkeys(unknowns))


def _topk_temp(method: MethodLayout, args: tuple[int, ...], target_: Target) -> int:
    """portable op_topk's queue: one (value, index) pair per element along ``dim``."""
    source = method.values[args[0]]
    dim = scalar(method, args[2])
    if not isinstance(source, TensorValue) or dim is None:
        raise ValueError(f"method {method.name}: a topk whose input or dim is not known")
    length = 1 if source.rank == 0 else source.sizes[dim % source.rank]
    return length * target_["topk_queue_entry"].size


def _delegate_unknowns(method: MethodLayout, target_: Target) -> tuple[Unknown, ...]:
    backends = dict.fromkeys(d.backend for d in method.delegates)
    return tuple(
        Unknown("method pool taken by the backend's init", backend)
        for backend in backends
        if backend not in target_.backend_init
    )


def program_memory(
    pte: bytes | str | Path | ProgramLayout,
    target: str = "host",
    runtime_version: str | None = None,
) -> ProgramMemory:
    """Every pool each method of a ``.pte`` (its bytes, its path, or a layout already
    read) needs on ``target`` (``host``, ``arm32``, ``xtensa``), for executorch
    ``runtime_version`` (default: the installed one; another than 1.5.x raises
    ``ValueError``)."""
    runtime = runtime_for(runtime_version or _installed_executorch())
    target_ = find_target(target)  # the parameter shadows targets.target
    if isinstance(pte, ProgramLayout):
        layout = pte
    else:
        from .pte import read_program_layout

        layout = read_program_layout(pte)
    methods = tuple(method_memory(method, target_) for method in layout.methods)
    return ProgramMemory(
        target=target_.name,
        runtime=runtime,
        base_alignment=BASE_ALIGNMENT,
        methods=methods,
        constants=layout.constant_bytes,
        delegate_data=layout.delegate_bytes,
        unknowns=tuple(dict.fromkeys(u for m in methods for u in m.unknowns)),
    )


def _installed_executorch() -> str:
    import importlib.metadata

    try:
        return importlib.metadata.version("executorch")
    except importlib.metadata.PackageNotFoundError:
        raise ValueError("executorch is not installed: give the runtime's version") from None
