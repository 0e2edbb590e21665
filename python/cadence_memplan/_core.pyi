"""Type stubs for the C++ extension. Call it through cadence_memplan's public functions."""

from typing import Literal

import numpy as np
import numpy.typing as npt

MAX_MEMORIES: int
MAX_BYTE_VALUE: int

class PlanningError(RuntimeError):
    """A tensor fits in no memory; ``tensor_index`` is its position in the input."""

    tensor_index: int

def plan(
    algorithm: str,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    memory_sizes: npt.NDArray[np.int64],
    memory_alignments: npt.NDArray[np.int64],
    blocked: npt.NDArray[np.uint64],
    allowed: int,
    placed_starts: npt.NDArray[np.int64],
    placed_ends: npt.NDArray[np.int64],
    placed_sizes: npt.NDArray[np.int64],
    placed_mem_ids: npt.NDArray[np.int64],
    placed_offsets: npt.NDArray[np.int64],
    incoming_offsets: npt.NDArray[np.int64],
    keep_incoming_offset: bool,
    occupancy: str = "auto",
    budget_ms: float = 5000.0,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    list[npt.NDArray[np.int64]],
    Literal["interval", "tree", "scan"],
    str,
]: ...
def validate(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    memory_sizes: npt.NDArray[np.int64],
    memory_alignments: npt.NDArray[np.int64],
) -> str: ...
def pack_shared_objects(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sort_sizes: npt.NDArray[np.int64],
    nbytes: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    pinned: npt.NDArray[np.int64],
    bases: npt.NDArray[np.int64],
    base_offsets: npt.NDArray[np.int64],
    alignment: int,
    allow_overlapping_allocations: bool,
    extra_padding: int,
    input_sizes: npt.NDArray[np.int64],
    bank_mem_ids: npt.NDArray[np.int64],
    bank_sizes: npt.NDArray[np.int64],
    bank_alignments: npt.NDArray[np.int64],
    occupancy: str = "auto",
) -> tuple[
    str,
    int,
    int,
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
]: ...
def check_storage_reuse(
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    mem_obj_ids: npt.NDArray[np.int64],
    parents: npt.NDArray[np.int64],
    allow_lifetime_and_storage_overlap: bool,
    occupancy: str = "auto",
) -> tuple[int, bool]: ...
