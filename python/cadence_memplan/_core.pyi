"""Type stubs for the C++ extension. Call it through cadence_memplan's public functions
(api.py is its only caller). Every function takes keyword arguments only and returns its
results by name."""

from typing import Literal

import numpy as np
import numpy.typing as npt

MAX_MEMORIES: int
MAX_BYTE_VALUE: int
# The core's structs as numpy record dtypes (csrc/core/exir/shared_objects.h).
EXIR_TENSOR_DTYPE: np.dtype[np.void]
BANK_DTYPE: np.dtype[np.void]
REUSE_TENSOR_DTYPE: np.dtype[np.void]
NO_STORAGE_BASE: int
DEFAULT_BEST_WORK: int
DEFAULT_SCHEDULE_WORK: int
OUTSIDE_STORAGE_BASE: int

class PlanRequest:
    """The core's PlanRequest (csrc/core/placement/planner.h), its arrays converted once,
    when made: the only list of the request's fields on this side of the binding.
    ``blocked``: one bit mask per tensor (or none); ``allowed``: a mask of memory ids
    (None: all); ``placed_*``: the tensors already placed; ``incoming_offsets``: -1 for
    None (or none)."""

    def __init__(
        self,
        *,
        starts: npt.NDArray[np.int64],
        ends: npt.NDArray[np.int64],
        sizes: npt.NDArray[np.int64],
        memory_sizes: npt.NDArray[np.int64],
        memory_alignments: npt.NDArray[np.int64],
        blocked: npt.NDArray[np.uint64] = ...,
        allowed: int | None = None,
        placed_starts: npt.NDArray[np.int64] = ...,
        placed_ends: npt.NDArray[np.int64] = ...,
        placed_sizes: npt.NDArray[np.int64] = ...,
        placed_mem_ids: npt.NDArray[np.int64] = ...,
        placed_offsets: npt.NDArray[np.int64] = ...,
        incoming_offsets: npt.NDArray[np.int64] = ...,
        keep_incoming_offset: bool = True,
        occupancy: str = "auto",
    ) -> None: ...
    @property
    def tensor_count(self) -> int: ...
    @property
    def memory_count(self) -> int: ...

class BestOptions:
    """The core's BestOptions (csrc/core/best/best.h): what ``best`` may spend (work, a
    wall-clock cap in ms, math.inf for none; threads, 0: one per core), the tensors to
    keep in memory 1 together (capacity-first planning), each tensor's weight (none: its
    size). The placers take none of it but the budgets."""

    def __init__(
        self,
        *,
        work_budget: int = ...,
        budget_ms: float = ...,
        threads: int = 0,
        keep_in_memory1: npt.NDArray[np.int64] = ...,
        weights: npt.NDArray[np.int64] = ...,
    ) -> None: ...
    @property
    def work_budget(self) -> int: ...
    @property
    def budget_ms(self) -> float: ...
    @property
    def threads(self) -> int: ...

class PlanOutput:
    """What plan() decided, by name."""

    @property
    def mem_ids(self) -> npt.NDArray[np.int64]: ...
    @property
    def offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def bufsizes(self) -> npt.NDArray[np.int64]: ...
    @property
    def call_bufsizes(self) -> npt.NDArray[np.int64]: ...
    @property
    def memory_order(self) -> tuple[npt.NDArray[np.int64], ...]: ...
    @property
    def occupancy(self) -> Literal["interval", "tree", "scan"]: ...
    @property
    def strategy(self) -> str | None: ...
    @property
    def proved_optimal(self) -> bool: ...
    @property
    def lower_bound(self) -> int | None: ...
    @property
    def progress(self) -> tuple[tuple[float, int], ...] | None: ...
    @property
    def all_in_memory1(
        self,
    ) -> Literal["not asked", "fits", "proved impossible", "not found"] | None: ...
    @property
    def selection_fit(self) -> Literal["fits", "does not fit", "unknown"] | None: ...
    @property
    def work(self) -> int: ...
    @property
    def budget_exhausted(self) -> bool: ...
    @property
    def cut_short(self) -> bool: ...

class ScheduleOutput:
    """What schedule() decided, by name."""

    @property
    def order(self) -> npt.NDArray[np.int64]: ...
    @property
    def peak_live(self) -> int: ...
    @property
    def given_peak_live(self) -> int: ...
    @property
    def lower_bound(self) -> int: ...
    @property
    def proved_optimal(self) -> bool: ...
    @property
    def strategy(self) -> Literal["given", "exact", "beam"]: ...
    @property
    def work(self) -> int: ...
    @property
    def cut_short(self) -> bool: ...

class SharedObjectPacking:
    """What pack_shared_objects() decided, by name."""

    @property
    def error(self) -> str: ...
    @property
    def error_tensor(self) -> int: ...
    @property
    def error_value(self) -> int: ...
    @property
    def visit_order(self) -> npt.NDArray[np.int64]: ...
    @property
    def mem_ids(self) -> npt.NDArray[np.int64]: ...
    @property
    def objects(self) -> npt.NDArray[np.int64]: ...
    @property
    def offsets(self) -> npt.NDArray[np.int64]: ...
    @property
    def bufsizes(self) -> npt.NDArray[np.int64]: ...
    @property
    def final_alignment(self) -> npt.NDArray[np.int64]: ...
    @property
    def used(self) -> npt.NDArray[np.int64]: ...

class StorageReuse:
    """What check_storage_reuse() found, by name."""

    @property
    def reuse_pairs(self) -> int: ...
    @property
    def violation(self) -> bool: ...

def plan(
    *, request: PlanRequest, algorithm: str, options: BestOptions | None = None
) -> PlanOutput: ...
def validate(
    *,
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    mem_ids: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    memory_sizes: npt.NDArray[np.int64],
    memory_alignments: npt.NDArray[np.int64],
) -> str: ...
def schedule(
    *,
    num_units: int,
    edge_before: npt.NDArray[np.int64],
    edge_after: npt.NDArray[np.int64],
    buffer_sizes: npt.NDArray[np.int64],
    buffer_producers: npt.NDArray[np.int64],
    buffer_user_offsets: npt.NDArray[np.int64],
    buffer_users: npt.NDArray[np.int64],
    buffer_live_to_end: npt.NDArray[np.bool_],
    work_budget: int,
    budget_ms: float,
) -> ScheduleOutput: ...
def set_interrupt_hook(*, phase: str | None, poll: int = 1) -> None: ...
def interrupt_hook_fired() -> bool: ...
def pack_shared_objects(
    *,
    tensors: npt.NDArray[np.void],
    alignment: int,
    allow_overlapping_allocations: bool,
    extra_padding: int,
    input_sizes: npt.NDArray[np.int64],
    banks: npt.NDArray[np.void],
    occupancy: str,
) -> SharedObjectPacking: ...
def check_storage_reuse(
    *,
    tensors: npt.NDArray[np.void],
    parents: npt.NDArray[np.int64],
    allow_lifetime_and_storage_overlap: bool,
    occupancy: str,
) -> StorageReuse: ...
