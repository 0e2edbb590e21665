"""The cost model of staging (docs/staging.md): what an op and a DMA transfer cost.

An op costs ``op_overhead + max(compute, memory)`` cycles, ``compute = ceil(FLOPs /
flops_per_cycle)`` and ``memory = ceil(fast_bytes / fast_bytes_per_cycle + slow_bytes /
slow_bytes_per_cycle)``. One DMA engine moves ``dma_bytes_per_cycle`` bytes a cycle plus
``dma_overhead`` cycles per transfer, beside the compute. Every figure is an integer, so
the simulator's cycles are exact (and a cycle-by-cycle brute force can check them).

The FLOP counts per element live here too, since they are part of what the user may
change: convolutions, linear layers and matrix products count 2 FLOPs per MAC,
elementwise ops ``elementwise_flops``, softmax and norms ``normalization_flops``,
transcendental functions ``transcendental_flops``; copies and views count 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from pathlib import Path

from ..io.documents import parse_document

__all__ = ["DEFAULT_COST_MODEL", "CostModel", "cost_model_of", "load_cost_model"]


@dataclass(frozen=True)
class CostModel:
    """The default is the issue's model; every field is a positive integer."""

    op_overhead: int = 100
    flops_per_cycle: int = 16
    fast_bytes_per_cycle: int = 16
    slow_bytes_per_cycle: int = 2
    dma_bytes_per_cycle: int = 4
    dma_overhead: int = 100
    elementwise_flops: int = 1
    normalization_flops: int = 5
    transcendental_flops: int = 8

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"cost model: {field.name} must be an integer, not {value!r}")  # noqa: TRY004
            if value < 0 or (value == 0 and field.name.endswith("per_cycle")):
                raise ValueError(f"cost model: {field.name} must be positive, not {value}")

    def op_cycles(self, flops: int, fast_bytes: int, slow_bytes: int) -> int:
        """Cycles of one op that does ``flops`` and moves the bytes from each memory."""
        compute = -(-flops // self.flops_per_cycle)
        fast, slow = self.fast_bytes_per_cycle, self.slow_bytes_per_cycle
        memory = -(-(fast_bytes * slow + slow_bytes * fast) // (fast * slow))
        return self.op_overhead + max(compute, memory)

    def dma_cycles(self, size: int) -> int:
        """Cycles the DMA engine spends on one transfer of ``size`` bytes."""
        return self.dma_overhead + -(-size // self.dma_bytes_per_cycle)


DEFAULT_COST_MODEL = CostModel()


def load_cost_model(path: str | os.PathLike[str]) -> CostModel:
    """A :class:`CostModel` from a JSON (``.json``) or TOML (any other suffix) file: a table
    of the fields to change; the others keep their defaults. Unknown names are refused."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
        values = parse_document(text, toml=file.suffix != ".json")
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ValueError(f"cannot read the cost model {str(file)!r}: {error}") from error
    if not isinstance(values, dict):
        raise ValueError(f"cost model {str(file)!r}: expected a table of names to integers")  # noqa: TRY004
    known = {field.name for field in fields(CostModel)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(
            f"cost model {str(file)!r}: unknown {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
    return CostModel(**values)


def cost_model_of(cost_model: CostModel | str | os.PathLike[str] | None) -> CostModel:
    """The passes' ``cost_model=``: a :class:`CostModel`, a file :func:`load_cost_model`
    reads, or None for the default."""
    if cost_model is None:
        return DEFAULT_COST_MODEL
    if isinstance(cost_model, CostModel):
        return cost_model
    if isinstance(cost_model, (str, os.PathLike)):
        return load_cost_model(cost_model)
    raise TypeError(f"cost_model must be a CostModel, a file or None, not {cost_model!r}")
