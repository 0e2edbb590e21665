"""Synthetic planning problems: reproducible graphs with a controlled live-set size."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = ["SyntheticGraph", "synthetic_graph"]


class SyntheticGraph(NamedTuple):
    """Tensors of a made-up graph: inclusive lifetimes ``[starts, ends]`` and byte sizes."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]


def synthetic_graph(
    tensor_count: int,
    *,
    live_tensors: float = 32.0,
    min_size: int = 64,
    max_size: int = 1 << 20,
    seed: int = 0,
) -> SyntheticGraph:
    """A graph of ``tensor_count`` tensors over ``tensor_count`` nodes.

    Tensor i is produced at node i and lives for a geometric number of nodes with mean
    ``live_tensors``, so on average about that many tensors are alive at once, whatever
    the graph size. Sizes are log-uniform in ``[min_size, max_size]``, rounded up to 16
    bytes like ExecuTorch's ``allocated_memory``. The same arguments give the same graph.
    """
    if tensor_count < 0:
        raise ValueError(f"tensor_count must be >= 0, got {tensor_count}")
    if live_tensors < 1:
        raise ValueError(f"live_tensors must be >= 1, got {live_tensors}")
    if not 1 <= min_size <= max_size:
        raise ValueError(f"need 1 <= min_size <= max_size, got {min_size} and {max_size}")
    rng = np.random.default_rng(seed)
    starts = np.arange(tensor_count, dtype=np.int64)
    lengths = rng.geometric(1.0 / live_tensors, size=tensor_count).astype(np.int64)
    ends = np.minimum(starts + lengths - 1, max(tensor_count - 1, 0))
    log_sizes = rng.uniform(np.log(min_size), np.log(max_size), size=tensor_count)
    sizes = (np.ceil(np.exp(log_sizes) / 16) * 16).astype(np.int64)
    return SyntheticGraph(starts, ends, sizes)
