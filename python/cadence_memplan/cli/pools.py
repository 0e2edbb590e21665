"""``size``'s report of every pool a program needs on the device (the method pool, the
temp pool, the arenas, the constants: :mod:`cadence_memplan.device`): its options
(``--target``, ``--header``), the text table, and ``size`` on a ``.pte``, which has
only this report (its memory is already planned)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..device.targets import TARGETS
from ..stats import format_bytes
from .common import CliError, checked_outputs, library_errors, writing_outputs
from .printing import print_table
from .progress import Progress

__all__ = ["add_pool_options", "is_pte", "print_program_memory", "run_pte", "write_pools"]


def add_pool_options(parser: Any) -> None:
    parser.add_argument(
        "--target",
        choices=list(TARGETS),
        default="host",
        help="the struct sizes of the device the pools are for: host (x86-64, aarch64),"
        " arm32, xtensa (default: %(default)s)",
    )
    parser.add_argument(
        "--header",
        metavar="FILE",
        help="write a C header (.h) with each pool's size and base alignment, per method",
    )


def is_pte(text: str | None) -> bool:
    return text is not None and Path(text).suffix.lower() == ".pte"


def program_memory_of(pte: bytes | str, target: str) -> Any:
    """The pools of a ``.pte`` (its bytes or its path); one that cannot be read, or a
    runtime the replay does not know, is a usage error."""
    from ..device import program_memory

    try:
        return program_memory(pte, target=target)
    except (ValueError, OSError) as error:
        raise CliError(str(error)) from error


def print_program_memory(memory: Any) -> None:
    """The pools, one row per method, then what the figures assume and what is unknown."""
    print(
        f"every pool the program needs on the device: target {memory.target}"
        f" ({TARGETS[memory.target].description}), {memory.runtime}"
    )
    rows = []
    for method in memory.methods:
        arenas = " + ".join(f"{size:,}" for size in method.arenas) or "-"
        # A figure with an unknown part (named below) is never shown as if complete.
        init = any(u.what.startswith("method pool") for u in method.unknowns)
        run = any(u.what.startswith("temp") for u in method.unknowns)
        rows.append(
            [method.name, f"{method.method_pool:,}" + " + ?" * init,
             f"{method.temp_pool:,}" + " + ?" * run, arenas,
             f"{method.total:,}" + " + ?" * (init or run)]
        )  # fmt: skip
    print_table(["method", "method pool (B)", "temp pool (B)", "arenas (B)", "total (B)"], rows)
    print(
        f"constants in the program: {memory.constants:,} B, delegate data"
        f" {memory.delegate_data:,} B; in all {memory.total:,} B ({format_bytes(memory.total)})"
        + " + ?"
        * bool(memory.unknowns)
    )
    for method in memory.methods:
        _print_advice(method)
    print(
        f"each pool's base aligned to {memory.base_alignment} B (a base off by k bytes costs"
        f" up to {memory.base_alignment} - k more); a memory of size 0 still needs a buffer"
    )
    for unknown in memory.unknowns:
        print(f"+ ? unknown here: {unknown.what}: {unknown.node}")


def _print_advice(method: Any) -> None:
    grows = method.method_pool_without_temp - method.method_pool
    if grows > 0:
        print(
            f"{method.name}: give temp at least {method.temp_at_load:,} B and the method pool"
            f" needs {method.method_pool:,} B instead of {method.method_pool_without_temp:,} B"
        )
    parts = ", ".join(f"{name.replace('_', ' ')} {size:,}" for name, size in
                      method.breakdown.items() if size)  # fmt: skip
    print(f"{method.name}: method pool: {parts}")


def write_pools(
    partial: Any, arguments: argparse.Namespace, memory: Any, label: str, json_too: bool
) -> list[str]:
    """The header (and, for a .pte, the JSON) written; the lines to print once all are."""
    from ..io.program_memory import write_pool_header, write_program_memory

    written = []
    if json_too and arguments.json:
        write_program_memory(partial(arguments.json), memory, label)
        written.append(f"wrote program memory: {arguments.json}")
    if arguments.header:
        write_pool_header(partial(arguments.header), memory, label)
        written.append(f"wrote pool header: {arguments.header}")
    return written


def run_pte(arguments: argparse.Namespace) -> int:
    """``size`` on a ``.pte``: its pools only."""
    progress: Progress = arguments.progress  # main's: it closes it
    path = Path(arguments.input)
    if arguments.plot or arguments.objective:
        option = "--plot" if arguments.plot else "--objective"
        raise CliError(f"{option}: a .pte is already planned: there is no curve to draw")
    outputs = checked_outputs(
        [(arguments.json, "--json", (".json",)), (arguments.header, "--header", (".h",))],
        inputs=[str(path)],
    )
    if not path.is_file():
        raise CliError(f"input {path}: no such file")
    with library_errors():
        progress(f"reading {path} with exir's deserializer")
        memory = program_memory_of(str(path), arguments.target)
    print_program_memory(memory)
    with writing_outputs(outputs) as partial:
        written = write_pools(partial, arguments, memory, path.name, json_too=True)
    for line in written:
        print(line)
    progress.done()
    return 0
