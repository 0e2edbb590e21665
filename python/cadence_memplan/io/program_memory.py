"""What ``cadence-memplan size`` writes about every pool a program needs on the device
(:class:`cadence_memplan.device.ProgramMemory`): the JSON document, described by the
JSON Schema ``program_memory.schema.json`` shipped next to this module
(:func:`program_memory_schema`), and the C header a firmware build includes (one size
and alignment per pool). Both are written whole (:mod:`.outputs`).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .outputs import write_whole

if TYPE_CHECKING:
    from ..device import MethodMemory, ProgramMemory

__all__ = [
    "PROGRAM_MEMORY_FORMAT",
    "pool_header",
    "program_memory_document",
    "program_memory_schema",
    "write_pool_header",
    "write_program_memory",
]

PROGRAM_MEMORY_FORMAT = "cadence-memplan program memory"
PROGRAM_MEMORY_VERSION = 1
_SCHEMA_PATH = Path(__file__).with_name("program_memory.schema.json")


def program_memory_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of :func:`program_memory_document`'s document."""
    schema: dict[str, Any] = json.loads(_SCHEMA_PATH.read_text(encoding="utf-8"))
    return schema


def program_memory_document(memory: ProgramMemory, input_label: str) -> dict[str, Any]:
    """``memory`` as the JSON document (plain values; every size an integer)."""
    return {
        "format": PROGRAM_MEMORY_FORMAT,
        "version": PROGRAM_MEMORY_VERSION,
        "input": input_label,
        "target": memory.target,
        "runtime": memory.runtime,
        "base_alignment": memory.base_alignment,
        "methods": [_method(method) for method in memory.methods],
        "constants": memory.constants,
        "delegate_data": memory.delegate_data,
        "total": memory.total,
        "unknowns": [{"what": u.what, "node": u.node} for u in memory.unknowns],
    }


def _method(method: MethodMemory) -> dict[str, Any]:
    return {
        "name": method.name,
        "method_pool": method.method_pool,
        "temp_pool": method.temp_pool,
        "temp_at_load": method.temp_at_load,
        "temp_at_execute": method.temp_at_execute,
        "method_pool_without_temp": method.method_pool_without_temp,
        "arenas": list(method.arenas),
        "arena_alignments": list(method.arena_alignments),
        "breakdown": dict(method.breakdown),
        "total": method.total,
        "unknowns": [{"what": u.what, "node": u.node} for u in method.unknowns],
    }


def write_program_memory(
    path: str | os.PathLike[str], memory: ProgramMemory, input_label: str
) -> None:
    """Write :func:`program_memory_document` as JSON, whole or not at all."""
    text = json.dumps(program_memory_document(memory, input_label), indent=1) + "\n"
    with write_whole(path) as partial:
        partial.write_text(text, encoding="utf-8")


def _macro(name: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", name.upper()).strip("_") or "METHOD"


def pool_header(memory: ProgramMemory, input_label: str) -> str:
    """The C header: per method, each pool's size and the alignment of its base."""
    lines = [
        f"/* Every pool {input_label} needs on the device, per method: written by",
        f"   cadence-memplan size for target {memory.target}, {memory.runtime}.",
        "   Give each pool a buffer of _SIZE bytes whose base is aligned to _ALIGNMENT;",
        "   a memory of size 0 still needs a buffer (any non-null pointer). */",
        "#ifndef CADENCE_MEMPLAN_POOLS_H",
        "#define CADENCE_MEMPLAN_POOLS_H",
        "",
    ]
    for method in memory.methods:
        prefix = f"ET_{_macro(method.name)}"
        pools = [("METHOD_POOL", method.method_pool, memory.base_alignment)]
        pools.append(("TEMP_POOL", method.temp_pool, memory.base_alignment))
        pools += [
            (f"ARENA_{mem_id}", size, align)
            for mem_id, (size, align) in enumerate(
                zip(method.arenas, method.arena_alignments, strict=True), start=1
            )
        ]
        lines.append(f"/* method {method.name!r} */")
        for name, size, align in pools:
            lines.append(f"#define {prefix}_{name}_SIZE {size}u")
            lines.append(f"#define {prefix}_{name}_ALIGNMENT {align}u")
        lines.append(f"#define {prefix}_ARENA_COUNT {len(method.arenas)}u")
        for unknown in method.unknowns:
            lines.append(f"/* unknown here: {unknown.what}: {unknown.node} */")
        lines.append("")
    lines.append("#endif /* CADENCE_MEMPLAN_POOLS_H */")
    return "\n".join(lines) + "\n"


def write_pool_header(
    path: str | os.PathLike[str], memory: ProgramMemory, input_label: str
) -> None:
    """Write :func:`pool_header`, whole or not at all."""
    text = pool_header(memory, input_label)
    with write_whole(path) as partial:
        partial.write_text(text, encoding="utf-8")
