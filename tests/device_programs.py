"""The programs tests/test_device_pools.py proves the pools on: each a ``.pte`` and, per
method, the inputs to run it on. Small, so the default run stays short; the built-in
models at their default sizes are the slow set.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from executorch.exir import to_edge, to_edge_transform_and_lower

from cadence_memplan.models import MODELS, build_model


@dataclass(frozen=True)
class Program:
    """A ``.pte`` and the inputs of each of its methods."""

    pte: bytes
    inputs: dict[str, list[np.ndarray]]


def _arrays(tensors: tuple[torch.Tensor, ...]) -> list[np.ndarray]:
    return [t.detach().contiguous().numpy() for t in tensors]


def _exir(model: torch.nn.Module, inputs: tuple[torch.Tensor, ...], **export: Any) -> Program:
    exported = torch.export.export(model, inputs, strict=True, **export)
    with warnings.catch_warnings():
        # The decoders' KV cache: exir warns that a mutated buffer starts uninitialised
        # (both runtimes start from zeroed planned memory here).
        warnings.filterwarnings("ignore", "Mutation on a buffer", UserWarning)
        pte = to_edge(exported).to_executorch().buffer
    return Program(pte, {"forward": _arrays(inputs)})


def tiny_mlp() -> Program:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    return _exir(model.eval(), (torch.randn(2, 8),))


class _TopK(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = torch.topk(x * 2, 3, dim=1)
        return values + 1, indices


def topk() -> Program:
    torch.manual_seed(0)
    return _exir(_TopK(), (torch.randn(4, 37),))


class _Dynamic(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.relu(x * 3 + 1).sum(dim=1, keepdim=True)


def dynamic_shapes() -> Program:
    """Exported for a batch of up to 16, run on 5."""
    torch.manual_seed(0)
    batch = torch.export.Dim("batch", min=1, max=16)
    return _exir(_Dynamic(), (torch.randn(5, 6),), dynamic_shapes=({0: batch},))


class _Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([x * 2, x - 1], dim=0).relu()


def two_methods() -> Program:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh()).eval()
    first, second = (torch.randn(3, 6),), (torch.randn(2, 5),)
    edge = to_edge(
        {
            "forward": torch.export.export(mlp, first, strict=True),
            "scale": torch.export.export(_Scale(), second, strict=True),
        }
    )
    pte = edge.to_executorch().buffer
    return Program(pte, {"forward": _arrays(first), "scale": _arrays(second)})


def xnnpack(name: str = "cnn") -> Program:
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

    model, inputs = build_model(name)
    exported = torch.export.export(model, inputs, strict=True)
    lowered = to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])
    return Program(lowered.to_executorch().buffer, {"forward": _arrays(inputs)})


def builtin_exir(name: str, **options: Any) -> Program:
    model, inputs = build_model(name, **options)
    return _exir(model, inputs)


def builtin_cadence(name: str, **options: Any) -> Program:
    """A built-in model through Cadence's lowering and backend config (our placer)."""
    from executorch.backends.cadence.aot.pass_utils import CompileMode
    from executorch.backends.cadence.aot.utils import get_default_memory_config

    from cadence_memplan.cadence.compiler import cadence_backend_config, import_cadence_compiler
    from cadence_memplan.cadence.memory_planning import CadenceMemoryPlanning

    compiler = import_cadence_compiler()
    model, inputs = build_model(name, **options)
    edge = compiler._lower_ep_to_cadence(torch.export.export(model, inputs, strict=True))
    planning = CadenceMemoryPlanning(get_default_memory_config(), CompileMode.DEFAULT, 1)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Mutation on a buffer", UserWarning)
        pte = edge.to_executorch(cadence_backend_config(planning)).buffer
    return Program(pte, {"forward": _arrays(inputs)})


FAST: dict[str, Callable[[], Program]] = {
    "tiny-mlp": tiny_mlp,
    "cnn-exir": lambda: builtin_exir("cnn", image=8),
    "mlp-cadence": lambda: builtin_cadence("mlp"),
    "topk": topk,
    "dynamic-shapes": dynamic_shapes,
    "two-methods": two_methods,
}
# XNNPACK's partitioner alone takes some 20 s to import: slow.
SLOW: dict[str, Callable[[], Program]] = {
    "xnnpack-mlp": lambda: xnnpack("mlp"),
    **{f"{name}-exir": (lambda name=name: builtin_exir(name)) for name in MODELS},
    **{f"{name}-cadence": (lambda name=name: builtin_cadence(name)) for name in MODELS},
    "xnnpack-cnn": xnnpack,
}


def python_outputs(pte: bytes, method: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """What executorch's Python runtime gives for the method on these inputs."""
    from executorch.exir._warnings import ExperimentalWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)  # on import: "experimental"
        from executorch.runtime import Runtime

    loaded = Runtime.get().load_program(pte).load_method(method)
    outputs = loaded.execute([torch.from_numpy(np.array(a)) for a in inputs])
    return [o.numpy() if isinstance(o, torch.Tensor) else np.array(None) for o in outputs]
