"""Cadence's drop-in placers: the specs read for the core, and the plan written back
whole or not at all."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
from executorch.exir.tensor import TensorSpec

from ..._signals import sigint_deferred
from ..._validation import as_int64
from .columns import EMPTY, NotExact, column, int64, set_column, sized_lifetimes

__all__ = [
    "Offsets",
    "SpecArrays",
    "preset_mem_ids",
    "read_cadence_specs",
    "write_placements",
    "written_whole",
]


class SpecArrays(NamedTuple):
    """Lifetimes, allocated sizes and mem_offsets of specs, as int64."""

    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]


# What a spec's mem_offset means to the reader: "placed", where it must be set (already-
# placed specs); "incoming", where None stands for -1 (the specs GreedyWithHeuristic may
# keep the offset of); "ignored", where it is not read (first fit overwrites it unread).
Offsets = Literal["placed", "incoming", "ignored"]


def _read_exact_cadence_specs(specs: list[TensorSpec], offsets: Offsets) -> SpecArrays:
    """Each attribute in one pass over the specs, ``allocated_memory`` computed as exir
    does but on arrays. Raises NotExact for anything but plain TensorSpecs of exact int
    fields."""
    if not specs:
        return SpecArrays(EMPTY, EMPTY, EMPTY, EMPTY)
    try:
        sized = sized_lifetimes(specs)
        offset_array = EMPTY
        if offsets != "ignored":
            values = column(specs, "mem_offset")
            unset = values.count(None)
            if unset and offsets == "placed":
                raise NotExact
            if unset == len(values):  # The usual case: nothing planned these specs yet.
                offset_array = np.full(len(values), -1, dtype=np.int64)
            else:
                offset_array = int64(-1 if value is None else value for value in values)
    except (TypeError, ValueError, OverflowError, KeyError, AttributeError) as error:
        raise NotExact from error
    return SpecArrays(sized.starts, sized.ends, sized.allocated, offset_array)


def read_cadence_specs(specs: list[TensorSpec], what: str, offsets: Offsets) -> SpecArrays:
    """The arrays the core plans from; ``allocated_memory`` is computed, so read once. Specs
    the fast path cannot read exactly are read attribute by attribute, with the errors
    naming the spec (``what``: "spec" or "already-placed spec")."""
    try:
        return _read_exact_cadence_specs(specs, offsets)
    except NotExact:
        pass
    name = what.removesuffix(" spec")
    starts: list[Any] = []
    ends: list[Any] = []
    sizes: list[int] = []
    for index, spec in enumerate(specs):
        lifetime = spec.lifetime
        if lifetime is None or len(lifetime) != 2:
            raise ValueError(
                f"{what} {index} has lifetime {lifetime!r}, expected [start, end]: {spec!r}"
            )
        starts.append(lifetime[0])
        ends.append(lifetime[1])
        sizes.append(spec.allocated_memory)
    offset_array = EMPTY
    if offsets == "incoming":
        values = [-1 if spec.mem_offset is None else spec.mem_offset for spec in specs]
        offset_array = as_int64(f"{name} incoming offsets", values)
    elif offsets == "placed":
        offset_array = as_int64(f"{name} offsets", [spec.mem_offset for spec in specs])
    return SpecArrays(
        as_int64(f"{name} lifetime starts", starts),
        as_int64(f"{name} lifetime ends", ends),
        as_int64(f"{name} sizes", sizes),
        offset_array,
    )


def write_placements(
    specs: list[TensorSpec], mem_ids: npt.NDArray[np.int64], offsets: npt.NDArray[np.int64]
) -> None:
    """Sets each spec's ``mem_id`` and ``mem_offset``, as Python ints, by C-level loops."""
    set_column(specs, "mem_id", mem_ids.tolist())
    set_column(specs, "mem_offset", offsets.tolist())


@contextmanager
def written_whole(specs: list[TensorSpec]) -> Iterator[Callable[[], bool]]:
    """A block that writes the specs' placements (:func:`write_placements`) whole or not at
    all. A SIGINT during it is held back (``_signals.sigint_deferred``); when one came, every
    spec's ``mem_id`` and ``mem_offset`` are put back as they were before the block, and
    KeyboardInterrupt is raised when it ends: a planner that raises leaves every spec as it
    found them. Yields whether a SIGINT came, for the caller to put back its own state."""
    mem_ids, offsets = column(specs, "mem_id"), column(specs, "mem_offset")
    with sigint_deferred() as interrupted:
        yield interrupted
        if interrupted():
            set_column(specs, "mem_id", mem_ids)
            set_column(specs, "mem_offset", offsets)


def preset_mem_ids(specs: list[TensorSpec]) -> list[Any]:
    """Each spec's ``mem_id`` as it is (None, or whatever was set): values to compare, as
    upstream compares them, never to compute with, so returned unconverted."""
    return column(specs, "mem_id")
