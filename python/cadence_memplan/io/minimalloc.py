"""Read buffer-placement problems in MiniMalloc's CSV format (github.com/google/minimalloc).

A file has a header naming the columns ``id,lower,upper,size`` (in any order; other columns,
such as a solution's ``offset``, are ignored) and one buffer per row. A buffer is alive over
the HALF-OPEN interval ``[lower, upper)``; ExecuTorch lifetimes are inclusive, so buffer
``[lower, upper)`` becomes ``start = lower, end = upper - 1``. Sizes are bytes.

The file is UTF-8 text; a byte order mark (as Excel writes one) is skipped, and so are
lines that start with ``#`` (comments) and blank lines. What is rejected, with the file
and line in the message (ValueError):

* bytes that are not UTF-8 text (a binary file), or a line the CSV module cannot read;
* a missing header (a first line that names none of the four columns), a header without
  one of the four columns, a repeated column;
* a row with a different number of fields from the header;
* a lower, upper or size that is not a plain decimal integer (``12``, ``+12``; not ``12.0``,
  ``1e3`` or ``1_000``);
* a negative ``lower`` or ``size`` (zero-size buffers are fine: they overlap nothing);
* ``upper <= lower``: MiniMalloc's buffers live for at least one step, and an empty
  half-open interval has no inclusive ``[start, end]`` with ``start >= 0`` to map to;
* an empty or repeated ``id``: ids name buffers in results, so they must be unique.

Ids are kept as the strings the file has (``"b1"``, ``"4093"``). A file with a header and
no buffers is read as an empty instance (the command line warns about it).

:func:`write_minimalloc_solution` writes the other way: MiniMalloc's solution format,
``id,lower,upper,size,offset``, one memory's buffers with their offsets.
"""

from __future__ import annotations

import _csv
import csv
import io
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from .._validation import check_int64
from .outputs import write_whole

__all__ = [
    "MinimallocInstance",
    "capacity_from_filename",
    "read_minimalloc_csv",
    "write_minimalloc_solution",
]

REQUIRED_COLUMNS = ("id", "lower", "upper", "size")
SOLUTION_COLUMNS = (*REQUIRED_COLUMNS, "offset")
_INTEGER = re.compile(r"[+-]?[0-9]+")


class MinimallocInstance(NamedTuple):
    """The buffers of one file, in file order, with ExecuTorch's inclusive lifetimes.

    ``starts, ends, sizes`` are int64 and go straight into :func:`cadence_memplan.plan`
    (``plan(*instance[1:], ...)``); ``ids`` is a numpy array of the file's id strings;
    ``buffer_count`` is how many there are.
    """

    ids: npt.NDArray[np.str_]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]

    @property
    def buffer_count(self) -> int:
        """How many buffers the file has (``count`` is the tuple's method, not this)."""
        return len(self.ids)


def capacity_from_filename(path: str | os.PathLike[str]) -> int | None:
    """The memory capacity MiniMalloc's benchmark files carry in their name, e.g. 1048576 for
    ``A.1048576.csv``; None when the name has no such number."""
    parts = Path(path).name.split(".")
    if len(parts) >= 3 and parts[-2].isdigit():
        return int(parts[-2])
    return None


def read_minimalloc_csv(path: str | os.PathLike[str]) -> MinimallocInstance:
    """Read a MiniMalloc CSV file; raise ValueError naming the line for a malformed one."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8-sig")  # -sig: a leading byte order mark is skipped
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"{path}:{line}: byte {data[error.start]:#04x} is not UTF-8 text (a binary file?);"
            f" expected a CSV file with the header {','.join(REQUIRED_COLUMNS)}"
        ) from None
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        return _read_rows(path, rows)
    except csv.Error as error:  # e.g. a NUL byte
        raise ValueError(f"{path}:{rows.line_num}: {error}") from error


def _is_data(row: list[str]) -> bool:
    """Not a blank line, not a comment."""
    return bool(row) and not row[0].lstrip().startswith("#")


def _read_rows(path: str | os.PathLike[str], rows: _csv.Reader) -> MinimallocInstance:
    header = next((row for row in rows if _is_data(row)), None)
    if header is None:
        raise ValueError(f"{path}: empty file, expected the header {','.join(REQUIRED_COLUMNS)}")
    where = f"{path}:{rows.line_num}"
    names = [name.strip() for name in header]
    if not set(names) & set(REQUIRED_COLUMNS):
        raise ValueError(
            f"{where}: no header: the first line must name the columns"
            f" {','.join(REQUIRED_COLUMNS)}, it is {','.join(header)!r}"
        )
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"{where}: column {name!r} appears twice")
    missing = [name for name in REQUIRED_COLUMNS if name not in names]
    if missing:
        raise ValueError(
            f"{where}: header {header} lacks the column(s) {missing};"
            f" expected {','.join(REQUIRED_COLUMNS)}"
        )
    id_at, lower_at, upper_at, size_at = (names.index(name) for name in REQUIRED_COLUMNS)
    seen_ids: set[str] = set()
    ids: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    sizes: list[int] = []
    for row in rows:
        if not _is_data(row):
            continue
        where = f"{path}:{rows.line_num}"

        def integer(column: int, row: list[str] = row, where: str = where) -> int:
            text = row[column].strip()
            if not _INTEGER.fullmatch(text):
                raise ValueError(f"{where}: {names[column]} is {row[column]!r}, not an integer")
            return check_int64(int(text), f"{where}: {names[column]}")

        if len(row) != len(names):
            raise ValueError(f"{where}: {len(row)} fields, the header has {len(names)}")
        buffer_id = row[id_at].strip()
        if not buffer_id:
            raise ValueError(f"{where}: empty id")
        if buffer_id in seen_ids:
            raise ValueError(f"{where}: id {buffer_id!r} appears twice")
        seen_ids.add(buffer_id)
        lower, upper, size = integer(lower_at), integer(upper_at), integer(size_at)
        if lower < 0:
            raise ValueError(f"{where}: buffer {buffer_id!r} has a negative lower {lower}")
        if upper <= lower:
            raise ValueError(
                f"{where}: buffer {buffer_id!r} has upper {upper} <= lower {lower};"
                " the lifetime [lower, upper) must hold at least one step"
            )
        if size < 0:
            raise ValueError(f"{where}: buffer {buffer_id!r} has a negative size {size}")
        ids.append(buffer_id)
        starts.append(lower)
        ends.append(upper - 1)  # half-open [lower, upper) -> inclusive [lower, upper - 1]
        sizes.append(size)
    return MinimallocInstance(
        ids=np.array(ids, dtype=np.str_),
        starts=np.array(starts, dtype=np.int64),
        ends=np.array(ends, dtype=np.int64),
        sizes=np.array(sizes, dtype=np.int64),
    )


def write_minimalloc_solution(
    path: str | os.PathLike[str],
    ids: Sequence[object],
    starts: npt.NDArray[np.int64],
    ends: npt.NDArray[np.int64],
    sizes: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
) -> None:
    """Write buffers of one memory as a MiniMalloc solution, ``id,lower,upper,size,offset``.

    Inclusive lifetimes become half-open ``[start, end + 1)``; a buffer that is never
    alive (``end < start``) has no such interval, so it is refused (ValueError), as
    :func:`read_minimalloc_csv` refuses ``upper <= lower``.
    """
    never_alive = np.flatnonzero(ends < starts)
    if never_alive.size:
        first = int(never_alive[0])
        raise ValueError(
            f"buffer {ids[first]!r} is never alive (lifetime [{starts[first]}, {ends[first]}]);"
            " MiniMalloc's format needs at least one step"
        )
    with write_whole(path) as partial, partial.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(SOLUTION_COLUMNS)
        writer.writerows(
            zip(
                (str(buffer_id) for buffer_id in ids),
                starts.tolist(),
                (ends + 1).tolist(),
                sizes.tolist(),
                offsets.tolist(),
                strict=True,
            )
        )
