"""The one copy of the input checks that run in Python: integers and memory hierarchies.

Used by the array API, the pure-Python reference, the drop-in classes (on a
``MemoryConfig``) and the command line (on ``--memory``, memory config files and MiniMalloc
CSV fields). The C++ core checks its input again on its own (csrc/bindings/,
csrc/core/placement/planner.cc); ``MAX_MEMORIES`` and ``MAX_BYTE_VALUE`` are its limits, and
tests/test_api.py holds the two copies equal.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

MAX_MEMORIES = 63  # memory ids 1..63 fit the core's 64-bit masks; id 0 is reserved
MAX_BYTE_VALUE = 1 << 62  # sizes, offsets and alignments; sums of two never overflow int64

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def is_integer(value: object) -> bool:
    """True for Python and numpy integers; a bool is an int but never a size."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_int64(value: int, what: str) -> int:
    """``value`` itself, or ValueError when it does not fit in int64."""
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{what} = {value} does not fit in int64")
    return value


def as_int64(name: str, values: object) -> npt.NDArray[np.int64]:
    """Return ``values`` as a contiguous 1-D int64 array, or raise naming the first bad entry."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype == object:
        for index, value in enumerate(array.tolist()):
            if not is_integer(value):
                raise TypeError(f"{name}[{index}] is {value!r}, not an integer")
            check_int64(value, f"{name}[{index}]")
        return array.astype(np.int64)
    if array.size == 0:
        return np.zeros(0, dtype=np.int64)
    if array.dtype.kind not in "iu":
        # Name the first entry that is not a whole number, else the first one.
        whole = array == np.round(array) if array.dtype.kind == "f" else np.zeros(1, bool)
        index = int(np.argmin(whole)) if not whole.all() else 0
        raise TypeError(
            f"{name} must hold integers, got dtype {array.dtype}"
            f" ({name}[{index}] = {array[index]!r})"
        )
    if array.dtype.kind == "u" and array.max() > _INT64_MAX:
        index = int(np.argmax(array > _INT64_MAX))
        raise ValueError(f"{name}[{index}] = {array[index]} does not fit in int64")
    return np.ascontiguousarray(array, dtype=np.int64)


def check_memories(
    sizes: Sequence[object],
    alignments: Sequence[object],
    where: str = "",
    names: tuple[str, str] = ("size", "alignment"),
) -> None:
    """Raise ValueError unless ``sizes``/``alignments`` describe 1..MAX_MEMORIES memories,
    each size and alignment an integer in ``[1, 2^62]``. ``where`` prefixes the message;
    ``names`` are what it calls the two lists (``memory_sizes`` names an entry
    ``memory_sizes[i]``)."""
    prefix = f"{where}: " if where else ""
    if not 1 <= len(sizes) <= MAX_MEMORIES:
        raise ValueError(
            f"{prefix}the number of memories must be in 1..{MAX_MEMORIES}, got {len(sizes)}"
        )
    if len(alignments) != len(sizes):
        raise ValueError(f"{prefix}{len(alignments)} alignments for {len(sizes)} memories")
    for index, (size, alignment) in enumerate(zip(sizes, alignments, strict=True)):
        for name, value in zip(names, (size, alignment), strict=True):
            if not is_integer(value) or not 1 <= value <= MAX_BYTE_VALUE:  # type: ignore[operator]
                what = name if name in ("size", "alignment") else f"{name}[{index}]"
                raise ValueError(
                    f"{prefix}memory {index + 1}: {what} {value!r} is not an integer in [1, 2^62]"
                )


def check_budget_ms(budget_ms: object) -> float:
    """The optional wall-clock cap ``budget_ms`` as a float, ``math.inf`` for None (no
    cap), or ValueError unless it is a number >= 0 (NaN is not)."""
    if budget_ms is None:
        return math.inf
    try:
        budget = float(budget_ms)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        budget = math.nan
    if not budget >= 0:  # NaN too
        raise ValueError(f"budget_ms must be a number >= 0 or None, got {budget_ms!r}")
    return budget


def check_work_budget(work_budget: object, default: int) -> int:
    """``work_budget`` (None: ``default``) as an int, or TypeError/ValueError unless it is
    an integer in 0..2^63-1: the one check of the work budgets of ``best`` and the
    scheduler."""
    if work_budget is None:
        return default
    if not is_integer(work_budget):
        raise TypeError(f"work_budget must be an integer or None, got {work_budget!r}")
    if not 0 <= int(work_budget) <= _INT64_MAX:  # type: ignore[call-overload]
        raise ValueError(f"work_budget must be in 0..2^63-1, got {work_budget!r}")
    return int(work_budget)  # type: ignore[call-overload,no-any-return]


def check_threads(threads: object) -> int:
    """``threads`` of ``algorithm="best"`` (0: one per core) as an int, or
    TypeError/ValueError unless it is an integer in 0..1024."""
    if not is_integer(threads):
        raise TypeError(f"threads must be an integer, got {threads!r}")
    if not 0 <= int(threads) <= 1024:  # type: ignore[call-overload]
        raise ValueError(f"threads must be in 0..1024, got {threads!r}")
    return int(threads)  # type: ignore[call-overload,no-any-return]


def check_choice(name: str, value: object, choices: Sequence[str]) -> None:
    """The one check of a string option (``algorithm``, ``occupancy``) at the public API."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The choice ``word`` is most probably a misspelling of, or None: the one "did you
    mean" of the command line (commands, models, units)."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return close[0] if close else None
