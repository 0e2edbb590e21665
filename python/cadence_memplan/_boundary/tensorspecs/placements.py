"""The reports' and plan tables' readers, submodule arenas moved in their parent, and the
pass's snapshots of placements and lifetimes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt
from executorch.exir.tensor import TensorSpec

from ..._validation import as_int64
from .columns import column, set_column

__all__ = [
    "Placements",
    "SavedPlacements",
    "allocated_sizes",
    "clear_lifetimes",
    "placed_mask",
    "read_placements",
    "require_lifetimes",
    "restore_placements",
    "save_placements",
    "shift_offsets",
]


class Placements(NamedTuple):
    """Where specs are and when they live, as int64: ``mem_id`` and ``mem_offset`` (-1
    where unset) and the lifetime (``[0, -1]``, never alive, where its start is unset)."""

    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]


def read_placements(specs: list[TensorSpec]) -> Placements:
    """The placements of specs, planned or not. Raises TypeError naming the column and
    entry for a value that is not an integer (a float; None where a number is due), and
    what unpacking a lifetime raises for one that is not two values."""
    mem_ids = [-1 if mem_id is None else mem_id for mem_id in column(specs, "mem_id")]
    offsets = [-1 if offset is None else offset for offset in column(specs, "mem_offset")]
    starts: list[Any] = []
    ends: list[Any] = []
    for start, end in column(specs, "lifetime"):
        starts.append(0 if start is None else start)
        ends.append(-1 if start is None else end)
    return Placements(
        as_int64("spec mem_ids", mem_ids),
        as_int64("spec mem_offsets", offsets),
        as_int64("spec lifetime starts", starts),
        as_int64("spec lifetime ends", ends),
    )


def placed_mask(specs: list[TensorSpec]) -> npt.NDArray[np.bool_]:
    """Which specs have both a ``mem_id`` and a ``mem_offset``."""
    return np.array(
        [
            mem_id is not None and offset is not None
            for mem_id, offset in zip(
                column(specs, "mem_id"), column(specs, "mem_offset"), strict=True
            )
        ],
        dtype=np.bool_,
    )


def shift_offsets(specs: list[TensorSpec], shifts: npt.NDArray[np.int64]) -> None:
    """Moves each spec's ``mem_offset`` (set, an int) up by ``shifts[i]`` bytes: a
    submodule's arena placed in its parent (``_boundary/control_flow.py``)."""
    offsets = as_int64("spec mem_offsets", column(specs, "mem_offset")) + shifts
    set_column(specs, "mem_offset", offsets.tolist())


def allocated_sizes(specs: list[TensorSpec]) -> npt.NDArray[np.int64]:
    """Each spec's ``allocated_memory`` (computed on every read: read it once), as int64;
    TypeError naming the entry for one that is not an integer (a symbolic size)."""
    return as_int64("spec allocated_memory", column(specs, "allocated_memory"))


def require_lifetimes(specs: list[TensorSpec]) -> None:
    """Raises ValueError naming the first spec whose lifetime is not two numbers."""
    for index, (spec, lifetime) in enumerate(zip(specs, column(specs, "lifetime"), strict=True)):
        if lifetime is None or len(lifetime) != 2 or None in lifetime:
            raise ValueError(
                f"spec {index} has lifetime {lifetime!r}: compute lifetimes first"
                f" (executorch.exir.memory_planning.update_all_tensors_lifetime): {spec!r}"
            )


@dataclass
class SavedPlacements:
    """Specs' ``mem_id``, ``mem_offset`` and ``lifetime`` (:func:`save_placements`).
    Lifetime lists are shared between specs and also changed in place (Cadence's
    constraints widen them), so the list object is kept, to restore the sharing, along
    with a copy of what it held."""

    specs: list[TensorSpec]
    mem_ids: list[Any]
    offsets: list[Any]
    lifetimes: list[Any]
    contents: list[Any]


def _copy_lifetime(lifetime: Any) -> Any:
    return list(lifetime) if isinstance(lifetime, list) else lifetime


def save_placements(specs: list[TensorSpec]) -> SavedPlacements:
    """What :func:`restore_placements` puts back, read by a C-level pass per attribute."""
    lifetimes = column(specs, "lifetime")
    return SavedPlacements(
        specs,
        column(specs, "mem_id"),
        column(specs, "mem_offset"),
        lifetimes,
        list(map(_copy_lifetime, lifetimes)),
    )


def restore_placements(saved: SavedPlacements) -> None:
    """Puts every spec's ``mem_id``, ``mem_offset`` and ``lifetime`` back as saved: the
    same lifetime list, holding what it held."""
    for lifetime, contents in zip(saved.lifetimes, saved.contents, strict=True):
        if isinstance(lifetime, list):
            lifetime[:] = contents
    set_column(saved.specs, "mem_id", saved.mem_ids)
    set_column(saved.specs, "mem_offset", saved.offsets)
    set_column(saved.specs, "lifetime", saved.lifetimes)


def clear_lifetimes(specs: list[TensorSpec]) -> None:
    """Give every spec a new ``[None, None]`` lifetime, as exir's spec propagation does,
    so that lifetimes computed for another node order widen from nothing."""
    set_column(specs, "lifetime", [[None, None] for _ in specs])
