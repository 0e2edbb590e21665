"""Memory hierarchies from the command line (``--memory``) and from config files.

``--memory`` lists memories fastest first, each ``[NAME=]SIZE:ALIGNMENT``::

    fast=256KiB:16,near=4MiB:64,far=1GiB:64     (the default)
    256KiB:16,4MiB:64                           (named by id: "mem1", "mem2")

Config files (``--memory-config``), JSON or TOML, say the same with base addresses::

    {"memories": [
        {"name": "dtcm", "size": "256KiB", "alignment": 16, "base_address": "0x10000000"},
        {"name": "sram", "size": 4194304, "alignment": 64},
        {"name": "dram", "size": "1GiB", "alignment": 64, "base_address": 2147483648}
    ]}

    # TOML
    [[memories]]
    name = "dtcm"
    size = "256KiB"
    alignment = 16
    base_address = "0x10000000"

``size`` (required) and ``alignment`` (default 1, as upstream's ``MemoryConfig``) are
integers or strings with a unit (B, KiB, MiB, GiB, TiB); ``base_address`` is an integer or
a ``0x`` string and is only printed. Everywhere, a memory without a name is named
``mem`` and its id (``mem1`` = fastest). Errors are ValueError naming the option or file
and the memory.

A memory whose alignment is above its size holds nothing but empty tensors: the parsers
refuse it (most often its size and alignment are swapped, ``16:256KiB``, and the error
says so). A hierarchy can be legal and still not what was meant: :func:`memory_warnings`
lists, one line each, an alignment that is not a power of two,
memories whose address ranges overlap or share a base address, and a memory that reaches
past 2^32 (the 32-bit address space of Cadence's DSPs).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from pathlib import Path

from .._validation import MAX_BYTE_VALUE, check_memories, closest, is_integer
from ..request.hierarchy import Hierarchy, Memory
from .documents import parse_document

__all__ = [
    "DEFAULT_MEMORY_SPEC",
    "Hierarchy",
    "Memory",
    "default_memory_name",
    "memory_warnings",
    "parse_memory_spec",
    "parse_size",
    "read_memory_config",
]

DEFAULT_MEMORY_SPEC = "fast=256KiB:16,near=4MiB:64,far=1GiB:64"

_UNITS = {"": 1, "b": 1, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}
_UNIT_SPELLINGS = {"b": "B", "kib": "KiB", "mib": "MiB", "gib": "GiB", "tib": "TiB"}
_SIZE = re.compile(r"\s*([0-9]+)\s*([A-Za-z]*)\s*")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


def default_memory_name(mem_id: int) -> str:
    """The name of memory ``mem_id`` when none is given: ``mem1``, ``mem2``... (a bare
    number reads badly in a sentence: "memory 1 (memory 1)")."""
    return f"mem{mem_id}"


ADDRESS_SPACE = 1 << 32  # Cadence's Xtensa DSPs address 4 GiB
_PLAUSIBLE_ALIGNMENT = 1 << 12  # a "size" this small or smaller reads like an alignment


def _pretty(count: int) -> str:
    """``262144`` -> ``256KiB``, as the options write sizes (exact, so they can be pasted)."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale}{unit}"
    return str(count)


def memory_warnings(memories: Sequence[Memory]) -> list[str]:
    """What in a legal hierarchy is probably a mistake, one line each (see the module's
    docstring); empty when nothing looks wrong."""
    warnings = []
    for memory in memories:
        name = f"memory {memory.name}"
        alignment = memory.alignment
        if alignment & (alignment - 1):
            warnings.append(
                f"{name}: alignment {alignment:,} is not a power of two (allowed, but DMA"
                " engines and caches align to powers of two)"
            )
    placed = sorted(
        (memory.base_address, memory.base_address + memory.size, memory.name)
        for memory in memories
        if memory.base_address is not None
    )
    for index, (base, end, name) in enumerate(placed):
        if end > ADDRESS_SPACE:
            warnings.append(
                f"memory {name}: [{base:#x}, {end:#x}) reaches past 2^32 ({ADDRESS_SPACE:#x}),"
                " beyond a 32-bit address space"
            )
        for other_base, other_end, other_name in placed[index + 1 :]:
            if other_base == base:
                warnings.append(
                    f"memories {name} and {other_name} have the same base address {base:#x}"
                )
            elif other_base < end:
                warnings.append(
                    f"memories {name} [{base:#x}, {end:#x}) and {other_name}"
                    f" [{other_base:#x}, {other_end:#x}) overlap"
                )
    return warnings


def parse_size(text: str | int, what: str) -> int:
    """``256KiB`` -> 262144; units B, KiB, MiB, GiB, TiB (any case) or none; 1..2^62."""
    if isinstance(text, str) and text.strip().startswith("-"):
        raise ValueError(f"{what}: {text!r} is negative; a size is at least 1 B")
    if is_integer(text):
        value = int(text)
    elif (
        isinstance(text, str)
        and (match := _SIZE.fullmatch(text))
        and (match.group(2).lower() in _UNITS)
    ):
        value = int(match.group(1)) * _UNITS[match.group(2).lower()]
    else:
        guess = ""
        if isinstance(text, str) and (match := _SIZE.fullmatch(text)):
            unit = closest(match.group(2).lower(), [unit for unit in _UNITS if unit])
            if unit is not None:
                spelled = _UNIT_SPELLINGS[unit]
                guess = f"did you mean {match.group(1)}{spelled}? "
        raise ValueError(
            f"{what}: {text!r} is not a size ({guess}an integer with an optional unit"
            " B, KiB, MiB, GiB or TiB, e.g. 256KiB)"
        )
    if not 1 <= value <= MAX_BYTE_VALUE:
        raise ValueError(f"{what}: {text!r} is outside 1 B .. 4 EiB (2^62 bytes)")
    return value


def _unusable(memory: Memory) -> str | None:
    """Why no tensor of nonzero size fits in ``memory`` (its alignment is above its size:
    a tensor's storage ends on an aligned offset), or None. The user's parsers refuse it:
    such a memory is a mistake, most often a size and an alignment swapped."""
    size, alignment = memory.size, memory.alignment
    if alignment <= size:
        return None
    name = f"memory {memory.name}"
    if size <= _PLAUSIBLE_ALIGNMENT and size & (size - 1) == 0:
        return (
            f"{name}: size {_pretty(size)} and alignment {_pretty(alignment)} look swapped"
            f" (SIZE comes first: {_pretty(alignment)}:{_pretty(size)}?); as given, no tensor"
            " of nonzero size fits in it"
        )
    return (
        f"{name}: alignment {_pretty(alignment)} is above its size {_pretty(size)}, so no"
        " tensor of nonzero size fits in it (a tensor's storage ends on an aligned offset)"
    )


def _checked(memories: list[Memory], where: str) -> Hierarchy:
    hierarchy = Hierarchy(memories)
    check_memories(hierarchy.sizes.tolist(), hierarchy.alignments.tolist(), where)
    for memory in hierarchy:
        if (problem := _unusable(memory)) is not None:
            raise ValueError(f"{where}: {problem}")
    names = hierarchy.names
    for name in names:
        if names.count(name) > 1:
            raise ValueError(f"{where}: the name {name!r} is given to two memories")
    return hierarchy


def parse_memory_spec(spec: str) -> Hierarchy:
    """``"fast=256KiB:16,4MiB:64"`` -> memories ``fast`` and ``2``, fastest first."""
    if not spec.strip():
        raise ValueError(
            f"--memory: empty; expected [NAME=]SIZE:ALIGNMENT,... e.g. {DEFAULT_MEMORY_SPEC}"
        )
    memories = []
    for mem_id, item in enumerate(spec.split(","), start=1):
        name, equals, size_and_alignment = item.strip().rpartition("=")
        parts = size_and_alignment.split(":")
        if len(parts) != 2 or (equals and not _NAME.fullmatch(name)):
            raise ValueError(
                f"--memory: {item.strip()!r} is not [NAME=]SIZE:ALIGNMENT"
                f" (e.g. {DEFAULT_MEMORY_SPEC})"
            )
        size = parse_size(parts[0], f"--memory: memory {mem_id} size")
        alignment = parse_size(parts[1], f"--memory: memory {mem_id} alignment")
        memories.append(Memory(name or default_memory_name(mem_id), size, alignment))
    return _checked(memories, "--memory")


def _parse_address(value: object, what: str) -> int:
    address = -1
    if isinstance(value, int) and not isinstance(value, bool):
        address = value
    elif isinstance(value, str):
        with contextlib.suppress(ValueError):
            address = int(value, 0)  # 0x..., 0o..., decimal
    if address < 0:
        raise ValueError(f"{what}: {value!r} is not a non-negative integer or 0x... string")
    return address


def read_memory_config(path: str | os.PathLike[str]) -> Hierarchy:
    """Memories from a JSON or TOML file (schema in this module's docstring)."""
    path = Path(path)
    where = f"--memory-config {path}"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ValueError(f"{where}: cannot read: {error.strerror or error}") from error
    suffix = path.suffix.lower()
    if suffix not in (".json", ".toml"):
        raise ValueError(f"{where}: expected a .json or .toml file")
    try:
        document = parse_document(text, toml=suffix == ".toml")
    except ValueError as error:  # json.JSONDecodeError and tomllib.TOMLDecodeError
        if str(error).startswith(where):
            raise
        raise ValueError(f"{where}: not valid {suffix[1:].upper()}: {error}") from error
    entries = document.get("memories") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ValueError(f"{where}: expected a top-level 'memories' list")  # noqa: TRY004
    memories = []
    for mem_id, entry in enumerate(entries, start=1):
        what = f"{where}: memory {mem_id}"
        if not isinstance(entry, dict):
            raise ValueError(f"{what}: expected a table/object, got {entry!r}")  # noqa: TRY004
        # Unknown keys are rejected so a typo ("alignement") is not silently ignored.
        unknown = set(entry) - {"name", "size", "alignment", "base_address"}
        if unknown:
            raise ValueError(f"{what}: unknown key(s) {sorted(unknown)}")
        if "size" not in entry:
            raise ValueError(f"{what}: 'size' is required")
        base = entry.get("base_address")
        memories.append(
            Memory(
                name=str(entry.get("name", default_memory_name(mem_id))),
                size=parse_size(entry["size"], f"{what} size"),
                alignment=parse_size(entry.get("alignment", 1), f"{what} alignment"),
                base_address=None if base is None else _parse_address(base, f"{what} base"),
            )
        )
    return _checked(memories, where)
