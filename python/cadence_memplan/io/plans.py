"""Plan files: one row per tensor, written as JSON or CSV and read back.

Columns: ``name`` (the node, with ``[i]`` for the i-th output of a multi-output node, or
the CSV id), ``mem_id`` (1 = fastest), ``offset``, ``size`` (bytes) and the inclusive
lifetime ``start``, ``end`` (node indices). JSON also records the memories and the
algorithm.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..stats import TensorTable
from .memories import Memory

__all__ = ["read_plan", "write_plan"]

PLAN_COLUMNS = ("name", "mem_id", "offset", "size", "start", "end")
_NUMBER_COLUMNS = PLAN_COLUMNS[1:]
_TABLE_COLUMNS = ("mem_ids", "offsets", "sizes", "starts", "ends")


def write_plan(
    path: str | os.PathLike[str],
    table: TensorTable,
    memories: Sequence[Memory],
    algorithm: str,
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
    if path.suffix.lower() == ".json":
        document = {
            "format": "cadence-memplan plan",
            "version": 1,
            "algorithm": algorithm,
            "memories": [
                {
                    "mem_id": mem_id,
                    "name": memory.name,
                    "size": memory.size,
                    "alignment": memory.alignment,
                    "base_address": memory.base_address,
                }
                for mem_id, memory in enumerate(memories, start=1)
            ],
            "tensors": [dict(zip(PLAN_COLUMNS, row, strict=True)) for row in rows],
        }
        path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
    else:
        with path.open("w", newline="", encoding="utf-8") as file:
            writer = csv.writer(file)
            writer.writerow(PLAN_COLUMNS)
            writer.writerows(rows)


def read_plan(path: str | os.PathLike[str]) -> TensorTable:
    """Read a plan written by :func:`write_plan` (JSON or CSV) back into a table."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        records = json.loads(path.read_text(encoding="utf-8"))["tensors"]
        names = [str(record["name"]) for record in records]
        numbers = [[record[column] for column in _NUMBER_COLUMNS] for record in records]
    else:
        with path.open(newline="", encoding="utf-8") as file:
            reader = csv.reader(file)
            header = next(reader, None)
            if header is None or tuple(header) != PLAN_COLUMNS:
                raise ValueError(f"{path}: expected the header {','.join(PLAN_COLUMNS)}")
            rows = [row for row in reader if row]
        names = [row[0] for row in rows]
        numbers = [[int(value) for value in row[1:]] for row in rows]
    columns = np.array(numbers, dtype=np.int64).reshape(len(names), len(_NUMBER_COLUMNS)).T
    return TensorTable(names, *columns)
