"""The JSON that ``cadence-memplan size --json FILE`` writes: how much of memory 1 an input
needs (:class:`cadence_memplan.workflow.size.Sizing`), described by the JSON Schema
``size.schema.json`` shipped next to this module (:func:`size_schema`).

Every figure is a function of the input and the options (no timings), so the same command
writes the same file on every run, unless a wall-clock cap (``--budget``) was given:
``depends_on_machine`` then says so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .outputs import write_whole
from .program_memory import program_memory_document, program_memory_schema

if TYPE_CHECKING:
    from ..device import ProgramMemory
    from ..request.sizing_results import MemorySizing, Sizing

__all__ = ["SIZE_FORMAT", "SIZE_VERSION", "size_document", "size_schema", "write_size"]

SIZE_FORMAT = "cadence-memplan size"
SIZE_VERSION = 1
_SCHEMA_PATH = Path(__file__).with_name("size.schema.json")


def size_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the document :func:`write_size` writes."""
    schema: dict[str, Any] = json.loads(_SCHEMA_PATH.read_text(encoding="utf-8"))
    # "program" is program_memory.schema.json's document, kept in that one file.
    schema["$defs"]["program_memory"] = program_memory_schema()
    return schema


def size_document(sizing: Sizing, program: ProgramMemory | None = None) -> dict[str, Any]:
    """``sizing`` as the JSON document (a dict of plain values), with a model's
    ``program`` memory (every pool it needs on the device) when given."""
    document = {
        "format": SIZE_FORMAT,
        "version": SIZE_VERSION,
        "input": sizing.input.label,
        "lowering": sizing.lowering,
        "objective": sizing.objective,
        "work": sizing.work,
        "work_budget": sizing.budget.work,
        "budget_ms": sizing.budget.ms,
        "depends_on_machine": sizing.budget.ms is not None,
        "other_memories": [
            {"name": memory.name, "size": memory.size, "alignment": memory.alignment}
            for memory in sizing.memories[len(sizing.sized) :]
        ],
        "memories": [_sized_memory(sized) for sized in sizing.sized],
    }
    if program is not None:
        document["program"] = program_memory_document(program, sizing.input.label)
    return document


def _sized_memory(sized: MemorySizing) -> dict[str, Any]:
    memory = sized.memory
    return {
        "name": memory.name,
        "alignment": memory.alignment,
        "all_fit_from": sized.all_fit_from,
        "proved": sized.proved,
        "lower_bound": sized.lower_bound,
        "total": sized.total,
        "curve": [
            {"capacity": point.capacity, "kept": point.kept, "kept_bound": point.kept_bound}
            for point in sized.curve
        ],
        "curve_ends": sized.curve_ends,
        "lowest_tried": sized.lowest_tried,
    }


def write_size(
    path: str | os.PathLike[str], sizing: Sizing, program: ProgramMemory | None = None
) -> None:
    """Write :func:`size_document` as JSON, whole or not at all."""
    text = json.dumps(size_document(sizing, program), indent=1) + "\n"
    with write_whole(path) as partial:
        partial.write_text(text, encoding="utf-8")
