"""Shared workloads for the benchmarks (run with ``python -m pytest bench``)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("executorch")

from executorch.backends.cadence.aot.utils import MemoryConfig
from executorch.exir.tensor import TensorSpec

from cadence_memplan.synthetic import SyntheticGraph

# A Cadence-like hierarchy: small fast memory, then bigger, slower ones.
MEMORY_SIZES = [256 << 10, 4 << 20, 1 << 30]
MEMORY_ALIGNMENTS = [16, 64, 64]


def memory_config() -> MemoryConfig:
    return MemoryConfig(MEMORY_SIZES, memory_alignments=MEMORY_ALIGNMENTS)


def tensor_specs(graph: SyntheticGraph) -> list[TensorSpec]:
    """One uint8 TensorSpec per tensor, so that ``allocated_memory`` equals its size."""
    specs = []
    for start, end, size in zip(*(column.tolist() for column in graph), strict=True):
        spec = TensorSpec(torch.uint8, torch.Size([size]))
        spec.alignment = 1
        spec.lifetime = [start, end]
        specs.append(spec)
    return specs
