"""Plan files: one row per tensor, written as JSON or CSV and read back.

Columns: ``name`` (the node, with ``[i]`` for the i-th output of a multi-output node, or
the CSV id), ``mem_id`` (1 = fastest), ``offset``, ``size`` (bytes) and the inclusive
lifetime ``start``, ``end`` (node indices). Each file says the lifetimes are inclusive:
the CSV in a comment line before its header (``# ...``), the JSON in its key
``"lifetimes": "inclusive"`` (MiniMalloc's CSV files, by contrast, are half-open
``[lower, upper)``).

JSON (version 3, described by the JSON Schema ``plan.schema.json`` shipped next to this
module, :func:`plan_schema`) also records the input's name, the algorithm, the timings
(seconds), each memory (name, size, alignment, base address, peak usage, peak live of
its tensors, tensor count) and per tensor its absolute ``address`` (the memory's base address
+ offset; null when the memory has no base address) and ``shares_storage`` (it lies
inside another tensor's storage on purpose, see ``TensorTable.shares_storage``).
:func:`read_plan` reads that JSON and the CSV, with or without its comment line.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..stats import TensorTable, memory_stats
from .memories import Memory
from .outputs import write_whole

__all__ = [
    "PLAN_FORMAT",
    "PLAN_VERSION",
    "PlanFile",
    "plan_schema",
    "read_plan",
    "read_plan_file",
    "write_plan",
]

PLAN_FORMAT = "cadence-memplan plan"
PLAN_VERSION = 3
LIFETIMES = "inclusive"  # the JSON's "lifetimes": start and end are both alive
CSV_COMMENT = (
    "# cadence-memplan plan: lifetimes are inclusive [start, end] node indices (end < start:"
    " never alive); offset and size in bytes; mem_id 1 is the fastest memory"
)
PLAN_COLUMNS = ("name", "mem_id", "offset", "size", "start", "end")
_NUMBER_COLUMNS = PLAN_COLUMNS[1:]
_TABLE_COLUMNS = ("mem_ids", "offsets", "sizes", "starts", "ends")
_SCHEMA_PATH = Path(__file__).with_name("plan.schema.json")


def plan_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the plan JSON :func:`write_plan` writes."""
    schema: dict[str, Any] = json.loads(_SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


@dataclass
class PlanFile:
    """What a plan file holds; CSV plan files have only the table."""

    table: TensorTable
    memories: list[Memory] | None = None
    algorithm: str | None = None
    input_name: str | None = None
    version: int | None = None


def write_plan(
    path: str | os.PathLike[str],
    table: TensorTable,
    memories: Sequence[Memory],
    algorithm: str,
    input_name: str | None = None,
    timings: Mapping[str, float] | None = None,
) -> None:
    """Write the per-tensor plan as JSON or CSV, chosen by the file's suffix."""
    path = Path(path)
    rows = list(
        zip(
            (str(label) for label in table.labels),
            *(getattr(table, column).tolist() for column in _TABLE_COLUMNS),
            strict=True,
        )
    )
    if path.suffix.lower() != ".json":
        with write_whole(path) as partial, partial.open("w", newline="", encoding="utf-8") as file:
            file.write(CSV_COMMENT + "\n")
            writer = csv.writer(file)
            writer.writerow(PLAN_COLUMNS)
            writer.writerows(rows)
        return
    stats = memory_stats(table, len(memories))
    bases = [memory.base_address for memory in memories]
    tensors = []
    for row, shares_storage in zip(rows, table.shares_storage.tolist(), strict=True):
        record: dict[str, Any] = dict(zip(PLAN_COLUMNS, row, strict=True))
        base = bases[record["mem_id"] - 1] if 1 <= record["mem_id"] <= len(bases) else None
        record["address"] = None if base is None else base + record["offset"]
        record["shares_storage"] = shares_storage
        tensors.append(record)
    document = {
        "format": PLAN_FORMAT,
        "version": PLAN_VERSION,
        "lifetimes": LIFETIMES,
        "input": input_name,
        "algorithm": algorithm,
        "timings_seconds": dict(timings or {}),
        "memories": [
            {
                "mem_id": mem_id,
                "name": memory.name,
                "size": memory.size,
                "alignment": memory.alignment,
                "base_address": memory.base_address,
                "peak_usage": stat.peak_usage,
                "peak_live_bytes": stat.peak_live_bytes,
                "tensor_count": stat.tensor_count,
            }
            for mem_id, (memory, stat) in enumerate(zip(memories, stats, strict=True), start=1)
        ],
        "tensors": tensors,
    }
    with write_whole(path) as partial:
        partial.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def read_plan(path: str | os.PathLike[str]) -> TensorTable:
    """Read a plan written by :func:`write_plan` (JSON or CSV) back into a table."""
    return read_plan_file(path).table


def read_plan_file(path: str | os.PathLike[str]) -> PlanFile:
    """Read a plan file with what it records; ValueError naming the file if malformed."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        return _read_json(path)
    with path.open(newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        header = next((row for row in reader if not (row and row[0].startswith("#"))), None)
        if header is None or tuple(header) != PLAN_COLUMNS:
            raise ValueError(
                f"{path}: not a plan CSV: expected the header {','.join(PLAN_COLUMNS)}"
                " (plan --out x.csv writes one)"
            )
        rows = [row for row in reader if row]
    names = [row[0] for row in rows]
    try:
        numbers = [[int(value) for value in row[1:]] for row in rows]
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    return PlanFile(_table(path, names, numbers))


def _table(
    path: Path, names: list[str], numbers: list[list[Any]], shares: list[bool] | None = None
) -> TensorTable:
    if any(len(row) != len(_NUMBER_COLUMNS) for row in numbers):
        raise ValueError(f"{path}: every tensor needs {', '.join(PLAN_COLUMNS)}")
    columns = np.array(numbers, dtype=np.int64).reshape(len(names), len(_NUMBER_COLUMNS)).T
    table = TensorTable(names, *columns)
    if shares is not None:
        table.shares_storage = np.array(shares, dtype=bool).reshape(len(names))
    return table


def _read_json(path: Path) -> PlanFile:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error})") from error
    if not isinstance(document, dict) or document.get("format") != PLAN_FORMAT:
        raise ValueError(f'{path}: not a plan file (no "format": "{PLAN_FORMAT}")')
    version = document.get("version")
    if version != PLAN_VERSION:
        raise ValueError(f"{path}: plan file version {version!r}, expected {PLAN_VERSION}")
    if document.get("lifetimes") != LIFETIMES:
        raise ValueError(
            f'{path}: "lifetimes" is {document.get("lifetimes")!r}; this reader knows only'
            f' "{LIFETIMES}" (start and end are both alive)'
        )
    try:
        records = document["tensors"]
        names = [str(record["name"]) for record in records]
        numbers = [[record[column] for column in _NUMBER_COLUMNS] for record in records]
        shares = [bool(record.get("shares_storage", False)) for record in records]
        memories = [
            Memory(
                str(memory["name"]),
                int(memory["size"]),
                int(memory["alignment"]),
                None if memory.get("base_address") is None else int(memory["base_address"]),
            )
            for memory in document["memories"]
        ]
        table = _table(path, names, numbers, shares)
        outside = np.flatnonzero((table.mem_ids < 1) | (table.mem_ids > len(memories)))
        if outside.size:
            raise ValueError(
                f"tensor {names[outside[0]]!r} has mem_id {table.mem_ids[outside[0]]}, but the"
                f" file lists {len(memories)} memories"
            )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(
            f"{path}: malformed plan file ({type(error).__name__}: {error})"
        ) from error
    return PlanFile(
        table,
        memories,
        algorithm=document.get("algorithm"),
        input_name=document.get("input"),
        version=version,
    )
