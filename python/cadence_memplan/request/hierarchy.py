"""The memories a plan places tensors in: :class:`Memory` and :class:`Hierarchy`.

A hierarchy is read from ``--memory`` or a config file by ``io/memories.py``, and turned
here, once, into what each consumer takes: the array API's int64 ``sizes`` and
``alignments``, upstream's ``MemoryConfig`` arguments (:meth:`Hierarchy.memory_config_arguments`;
``cadence/lowering.py`` builds the ``MemoryConfig``, which needs executorch).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, SupportsIndex, overload

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = ["Hierarchy", "Memory"]


@dataclass(frozen=True)
class Memory:
    """One memory of the hierarchy; its id is its 1-based position, fastest first."""

    name: str
    size: int
    alignment: int
    base_address: int | None = None


class Hierarchy(tuple[Memory, ...]):
    """Memories, fastest first (memory ``i + 1`` is ``hierarchy[i]``): a tuple of
    :class:`Memory`, so it indexes, iterates and compares as one, with the conversions
    the planners take."""

    __slots__ = ()

    def __new__(cls, memories: Iterable[Memory] = ()) -> Self:
        return super().__new__(cls, memories)

    @overload
    def __getitem__(self, index: SupportsIndex) -> Memory: ...
    @overload
    def __getitem__(self, index: slice) -> Hierarchy: ...
    def __getitem__(self, index: SupportsIndex | slice) -> Memory | Hierarchy:
        if isinstance(index, slice):
            return Hierarchy(super().__getitem__(index))
        return super().__getitem__(index)

    @property
    def sizes(self) -> npt.NDArray[np.int64]:
        """Each memory's size, as the array API takes them."""
        return np.array([memory.size for memory in self], dtype=np.int64)

    @property
    def alignments(self) -> npt.NDArray[np.int64]:
        """Each memory's alignment, as the array API takes them."""
        return np.array([memory.alignment for memory in self], dtype=np.int64)

    @property
    def names(self) -> list[str]:
        return [memory.name for memory in self]

    @property
    def base_addresses(self) -> list[int] | None:
        """Each memory's base address, or None unless every memory has one (as upstream's
        ``MemoryConfig`` takes them)."""
        bases = [memory.base_address for memory in self]
        return None if None in bases else bases  # type: ignore[return-value]

    def memory_config_arguments(self) -> dict[str, Any]:
        """The keyword arguments of upstream's ``MemoryConfig`` for this hierarchy, names
        and base addresses included (its sizes and alignments as Python ints)."""
        return {
            "memory_sizes": self.sizes.tolist(),
            "memory_alignments": self.alignments.tolist(),
            "memory_names": self.names,
            "base_addrs": self.base_addresses,
        }

    def with_size(self, index: int, size: int) -> Hierarchy:
        """The same memories with memory ``index`` (0-based) of ``size`` bytes."""
        memories = list(self)
        memories[index] = dataclasses.replace(memories[index], size=size)
        return Hierarchy(memories)
