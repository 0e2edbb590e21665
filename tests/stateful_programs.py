"""Stateful multi-method programs, and running them on ExecuTorch's portable runtime
against eager over several calls with the state carried (needs torch and executorch;
issue 51).

- :class:`KVCache`: methods ``prefill`` and ``decode`` over two registered buffers (a
  key and a value cache), updated in place by ``index_put_``; ``prefill`` writes the whole
  cache (zeros, then its rows), so no call depends on the buffers' initial bytes.
- :class:`Streaming`: methods ``init`` (the state set by ``copy_``) and ``step`` (the
  state read, updated by ``copy_``, and returned).

Each method is its own ``nn.Module`` (one per ``torch.export``) whose buffers have the same
names as the eager model's, so the multi-method program's methods name the same state.
:func:`run_on_runtime` loads every method first (so no method's load runs after a call),
then calls them in :attr:`StatefulProgram.calls`' order, and compares every output with
the eager model's, called in the same order, bit for bit (the largest difference is
reported where not).
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from executorch.exir import EdgeProgramManager, ExecutorchBackendConfig, to_edge
from executorch.exir._warnings import ExperimentalWarning

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ExperimentalWarning)  # on import: "This API is experimental"
    from executorch.runtime import Runtime

CACHE_ROWS = 16
WIDTH = 32
PREFILL_ROWS = 4
STATE_WIDTH = 64


# --------------------------------------------------------------------------- KV cache


class _KVState(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("k_cache", torch.zeros(CACHE_ROWS, WIDTH))
        self.register_buffer("v_cache", torch.zeros(CACHE_ROWS, WIDTH))

    def attend(self, query: torch.Tensor) -> torch.Tensor:
        scores = (self.k_cache * query).sum(-1, keepdim=True)  # (rows, 1)
        return (scores * self.v_cache).sum(0, keepdim=True) + query * 2.0


class Prefill(_KVState):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(PREFILL_ROWS)
        self.k_cache.copy_(torch.zeros_like(self.k_cache))
        self.v_cache.copy_(torch.zeros_like(self.v_cache))
        self.k_cache.index_put_((rows,), x * 0.5)
        self.v_cache.index_put_((rows,), x + 1.0)
        return self.attend(x.sum(0, keepdim=True) * 0.25)


class Decode(_KVState):
    def forward(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        self.k_cache.index_put_((position,), x * 0.5)
        self.v_cache.index_put_((position,), x + 1.0)
        return self.attend(x)


class KVCache(_KVState):
    """The eager model: one state, both methods."""

    def prefill(self, x: torch.Tensor) -> torch.Tensor:
        return Prefill.forward(self, x)  # type: ignore[arg-type]

    def decode(self, x: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
        return Decode.forward(self, x, position)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- streaming


class _StreamState(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.zeros(STATE_WIDTH))


class Init(_StreamState):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.state.copy_(x * 0.25 + 1.0)
        return self.state + 0.0


class Step(_StreamState):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.relu(self.state * 0.5 + x)
        mixed = hidden * 2.0 - self.state
        self.state.copy_(mixed)
        return mixed + hidden


class Streaming(_StreamState):
    def init(self, x: torch.Tensor) -> torch.Tensor:
        return Init.forward(self, x)  # type: ignore[arg-type]

    def step(self, x: torch.Tensor) -> torch.Tensor:
        return Step.forward(self, x)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- programs


@dataclass(frozen=True)
class StatefulProgram:
    """A stateful model: its methods' modules and example inputs, and the calls to make
    (method name, inputs), in order, with the state carried."""

    name: str
    eager: Callable[[], torch.nn.Module]
    methods: dict[str, tuple[Callable[[], torch.nn.Module], tuple[torch.Tensor, ...]]]
    calls: tuple[tuple[str, tuple[torch.Tensor, ...]], ...]
    buffers: tuple[str, ...]


def _row(step: int) -> torch.Tensor:
    return (torch.arange(WIDTH, dtype=torch.float32) * 0.125 - step).reshape(1, WIDTH)


def _kv_calls(steps: int) -> tuple[tuple[str, tuple[torch.Tensor, ...]], ...]:
    prompt = torch.arange(PREFILL_ROWS * WIDTH, dtype=torch.float32).reshape(-1, WIDTH) / 64.0
    decodes = [
        ("decode", (_row(step), torch.tensor([PREFILL_ROWS + step]))) for step in range(steps)
    ]
    return (("prefill", (prompt,)), *decodes, ("prefill", (prompt * 2.0,)), *decodes[:2])


def _stream_calls(steps: int) -> tuple[tuple[str, tuple[torch.Tensor, ...]], ...]:
    def chunk(step: int) -> torch.Tensor:
        return torch.arange(STATE_WIDTH, dtype=torch.float32) * 0.0625 - float(step)

    steps_ = [("step", (chunk(step),)) for step in range(steps)]
    return (("init", (chunk(-1),)), *steps_, ("init", (chunk(3),)), *steps_[:2])


KV_CACHE = StatefulProgram(
    "kv-cache",
    KVCache,
    {
        "prefill": (Prefill, (torch.ones(PREFILL_ROWS, WIDTH),)),
        "decode": (Decode, (torch.ones(1, WIDTH), torch.tensor([PREFILL_ROWS]))),
    },
    _kv_calls(4),
    ("k_cache", "v_cache"),
)
STREAMING = StatefulProgram(
    "streaming",
    Streaming,
    {
        "init": (Init, (torch.ones(STATE_WIDTH),)),
        "step": (Step, (torch.ones(STATE_WIDTH),)),
    },
    _stream_calls(4),
    ("state",),
)
PROGRAMS = {program.name: program for program in (KV_CACHE, STREAMING)}


def export_methods(program: StatefulProgram, strict: bool = True) -> dict[str, Any]:
    """Each method exported on its own: ``{method name: ExportedProgram}``."""
    return {
        name: torch.export.export(make(), inputs, strict=strict)
        for name, (make, inputs) in program.methods.items()
    }


def edge_program(program: StatefulProgram, lowering: str = "exir") -> EdgeProgramManager:
    """The multi-method edge program: ``to_edge`` of the dict, or (``"cadence"``) each
    method through Cadence's compiler's lowering, then put together."""
    exported = export_methods(program)
    if lowering == "exir":
        return to_edge(exported)
    from cadence_memplan.cadence.lowering import lower_exported

    lowered = {name: lower_exported(ep, "cadence") for name, ep in exported.items()}
    first = next(iter(lowered.values()))
    return EdgeProgramManager(
        {name: edge.exported_program() for name, edge in lowered.items()},
        compile_config=first.compile_config,
    )


def backend_config(
    planning: Any, base: ExecutorchBackendConfig | None = None
) -> ExecutorchBackendConfig:
    """``base`` (exir's default config when None) planned by ``planning``."""
    config = ExecutorchBackendConfig() if base is None else base
    return dataclasses.replace(config, memory_planning_pass=planning)


@dataclass
class Run:
    """A program's calls on the runtime against eager: all equal bit for bit, the
    largest difference."""

    equal: bool
    largest_difference: float


def run_on_runtime(program: StatefulProgram, buffer: bytes) -> Run:
    """``buffer`` (a ``.pte`` of ``program``) called as ``program.calls`` says, against eager."""
    loaded = Runtime.get().load_program(buffer)
    methods = {name: loaded.load_method(name) for name in program.methods}
    eager = copy.deepcopy(program.eager())
    equal, largest = True, 0.0
    for name, inputs in program.calls:
        got = methods[name].execute(list(inputs))
        want = getattr(eager, name)(*inputs)
        want = want if isinstance(want, tuple) else (want,)
        for ours, theirs in zip(got, want, strict=True):
            if ours.shape != theirs.shape or ours.dtype != theirs.dtype:
                return Run(False, float("inf"))
            if ours.numpy().tobytes() != theirs.detach().numpy().tobytes():
                equal = False
                difference = (ours.double() - theirs.double()).abs().nan_to_num(float("inf"))
                largest = max(largest, float(difference.max()))
    return Run(equal, largest)
