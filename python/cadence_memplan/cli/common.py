"""What the commands share: exit codes, errors, progress, options, inputs, outputs."""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._types import ALGORITHMS
from ..api import DEFAULT_BUDGET_MS, validate
from ..io.memories import (
    DEFAULT_MEMORY_SPEC,
    Memory,
    memory_warnings,
    parse_memory_spec,
    read_memory_config,
)
from ..io.minimalloc import read_minimalloc_csv
from ..io.outputs import OutputError, OutputFiles
from ..stats import TensorTable
from ..synthetic import synthetic_graph
from .models import BUILTIN_INPUTS, DEFAULT_INPUT, MODELS, SYNTHETIC_SIZES, build_model

PROG = "cadence-memplan"
DEFAULT_ALGORITHM = "position"  # as cadence_memplan.plan and upstream's mem_algo=0
EXIT_PLANNING_FAILED = 1
EXIT_PLANS_DIFFER = 1  # diff, like diff(1)
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool cut off by `head`
PLOT_EXTRA_HINT = 'pip install "cadence-memplan[plot]"'
EXECUTORCH_HINT = 'pip install torch==2.13.0 && pip install "cadence-memplan[executorch]"'


class CliError(Exception):
    """A failure reported as one line on stderr with ``exit_code`` (2 usage, 1 planning)."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Progress:
    """``cadence-memplan: [  8.1 s] lowering ...`` on stderr, unless quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.began = time.perf_counter()
        self.stream = sys.stderr  # kept: library chatter is discarded while models lower

    def __call__(self, message: str) -> None:
        if not self.quiet:
            elapsed = time.perf_counter() - self.began
            print(f"{PROG}: [{elapsed:5.1f} s] {message}", file=self.stream, flush=True)


def add_planning_options(parser: argparse.ArgumentParser) -> None:
    """--memory/--memory-config, --algo, --alloc-inputs/outputs: how to plan (plan, sweep)."""
    memory = parser.add_mutually_exclusive_group()
    memory.add_argument(
        "--memory",
        metavar="[NAME=]SIZE:ALIGN,...",
        help="memories, fastest first; units B, KiB, MiB, GiB, TiB; a memory without a name"
        f" is named by its id (default: {DEFAULT_MEMORY_SPEC})",
    )
    memory.add_argument(
        "--memory-config",
        metavar="FILE",
        help="a .json or .toml file listing memories with names and base addresses",
    )
    parser.add_argument(
        "--algo",
        choices=ALGORITHMS,
        default=DEFAULT_ALGORITHM,
        help="placer: position = first fit (upstream's mem_algo=0), heuristic = best fit"
        " (mem_algo=1), best = the smallest of many plans, fewest bytes outside memory 1 first"
        " (ours, mem_algo=2) (default: %(default)s)",
    )
    parser.add_argument(
        "--budget",
        metavar="MS",
        type=_budget,
        help="with --algo best: stop its search after MS milliseconds (checked between"
        f" candidate plans) (default: {DEFAULT_BUDGET_MS:g})",
    )
    for what in ("inputs", "outputs"):
        parser.add_argument(
            f"--alloc-{what}",
            action=argparse.BooleanOptionalAction,
            default=True,
            help=f"plan the graph's {what} (models only) (default: yes)",
        )


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0 or math.isinf(value):  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds >= 0")
    return value


def budget_from_arguments(arguments: argparse.Namespace) -> float:
    """``--budget`` (best's search cap, ms), refused with another placer, which does not
    search."""
    if arguments.budget is None:
        return DEFAULT_BUDGET_MS
    if arguments.algo != "best":
        raise CliError(
            f"--budget applies to --algo best only (--algo {arguments.algo} places every"
            " tensor once, without a search)"
        )
    return float(arguments.budget)


def resolve_input(text: str | None) -> tuple[str, str, Path | None]:
    """(label, kind, path) with kind "model", "archive", "csv" or "arrays"."""
    if text is None:
        return DEFAULT_INPUT, "model", None
    path = Path(text)
    if path.exists():
        if path.is_dir():
            raise CliError(f"input {text} is a directory, expected a .pt2 or .csv file")
        suffix = path.suffix.lower()
        if suffix == ".pt2":
            return path.name, "archive", path
        if suffix == ".csv":
            return path.name, "csv", path
        raise CliError(
            f"input {text}: unknown file type {suffix or '(none)'}, expected .pt2 or .csv"
        )
    if text in BUILTIN_INPUTS:
        return text, "model" if text in MODELS else "arrays", None
    if path.suffix or os.sep in text or "/" in text:
        raise CliError(f"input {text}: no such file")
    raise CliError(
        f"input {text!r} is neither a file nor a built-in model (choose from"
        f" {', '.join(BUILTIN_INPUTS)}; see --list-models)"
    )


def checked_outputs(
    outputs: Sequence[tuple[str | os.PathLike[str] | None, str, Sequence[str]]],
    inputs: Sequence[str | os.PathLike[str] | None],
) -> OutputFiles:
    """The command's outputs, each ``(path or None, option, suffixes)``, checked before any
    long work (:class:`~cadence_memplan.io.outputs.OutputFiles`): a usage error (exit 2)
    for a path that cannot be written, or that is an input or another output."""
    files = OutputFiles()
    try:
        for path, option, suffixes in outputs:
            files.add(path, option, suffixes)
        files.check(inputs)
    except OutputError as error:
        raise CliError(str(error)) from error
    return files


def warn(message: str) -> None:
    """A warning: one line on stderr, also under --quiet (it is not progress)."""
    print(f"{PROG}: warning: {one_line(message)}", file=sys.stderr, flush=True)


def memories_from_arguments(arguments: argparse.Namespace) -> list[Memory]:
    """The hierarchy of --memory or --memory-config; what looks like a mistake in it is
    warned about (the plan still runs: the hierarchy is legal)."""
    try:
        if arguments.memory_config is not None:
            where = f"--memory-config {arguments.memory_config}"
            memories = read_memory_config(arguments.memory_config)
        else:
            where = "--memory"
            memories = parse_memory_spec(
                DEFAULT_MEMORY_SPEC if arguments.memory is None else arguments.memory
            )
    except ValueError as error:
        raise CliError(str(error)) from error
    for warning in memory_warnings(memories):
        warn(f"{where}: {warning}")
    return memories


def check_matplotlib(plot: str | None) -> None:
    if plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise CliError(f"--plot needs matplotlib: {PLOT_EXTRA_HINT}")


def model_stack_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("torch", "executorch"))


_TENSOR_WITH_LIFETIME = re.compile(
    r"tensor (\d+) \(size (\d+) bytes, lifetime \[(-?\d+), (-?\d+)\]\)"
)
TENSOR = re.compile(r"\btensor (\d+)\b")


def in_file_terms(message: str, ids: Sequence[str]) -> str:
    """Name CSV buffers by the file's id and half-open ``[lower, upper)``, as the file does."""

    def with_lifetime(match: re.Match[str]) -> str:
        index, size, start, end = (int(group) for group in match.groups())
        return f"buffer {ids[index]!r} ({size:,} bytes, [lower, upper) = [{start}, {end + 1}))"

    message = _TENSOR_WITH_LIFETIME.sub(with_lifetime, message)
    return TENSOR.sub(lambda match: f"buffer {ids[int(match.group(1))]!r}", message)


def one_line(message: str) -> str:
    """The core's messages list each memory on its own line: keep them all, on one."""
    return "; ".join(line.strip() for line in message.splitlines() if line.strip()).replace(
        ":; ", ": "
    )


def load_arrays(
    kind: str, label: str, path: Path | None, progress: Progress
) -> tuple[list[str], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(labels, starts, ends, sizes) of a CSV instance or a built-in synthetic graph."""
    if kind == "csv":
        progress(f"reading {path}")
        try:
            instance = read_minimalloc_csv(path)  # type: ignore[arg-type]
        except (OSError, ValueError, UnicodeDecodeError) as error:
            raise CliError(f"cannot read MiniMalloc CSV: {one_line(str(error))}") from error
        if not len(instance.ids):
            warn(f"{path} has a header and no buffers: there is nothing to plan")
        return instance.ids.tolist(), instance.starts, instance.ends, instance.sizes
    graph = synthetic_graph(SYNTHETIC_SIZES[label])
    starts, ends, sizes = graph
    return [f"t{index}" for index in range(len(graph.sizes))], starts, ends, sizes


@contextlib.contextmanager
def quiet_libraries(debug: bool) -> Iterator[None]:
    """Silence torch/torchao/executorch import and lowering chatter unless --debug."""
    if debug:
        yield
        return
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(_DISCARD):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)


class _Discard:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_DISCARD: Any = _Discard()


def edge_program(label: str, path: Path | None, progress: Progress) -> Any:
    """Export (or load) a model and lower it with ``to_edge`` (call it inside
    :func:`quiet_libraries`)."""
    progress("importing torch and executorch")
    try:
        import executorch.backends.cadence.aot.ops_registrations  # noqa: F401  (cadence ops)
        import torch
        from executorch.exir import to_edge
    except ImportError as error:
        raise CliError(
            f"planning models needs torch and executorch ({error}); install them with"
            f" `{EXECUTORCH_HINT}`, or plan a CSV instance or `synthetic`"
        ) from error
    if path is not None:
        progress(f"loading {path}")
        try:
            exported = torch.export.load(path)
        except Exception as error:
            raise CliError(
                f"cannot read torch.export archive {path}: {one_line(str(error))}"
            ) from error
    else:
        progress(f"exporting the built-in model {label!r} with torch.export")
        model, example_inputs = build_model(label)
        exported = torch.export.export(model, example_inputs, strict=False)
    progress("lowering with to_edge")
    try:
        return to_edge(exported)
    except Exception as error:
        raise CliError(
            f"cannot lower {label} with to_edge: {one_line(str(error)).split('; ')[0]}",
            EXIT_PLANNING_FAILED,
        ) from error


def check_plan(table: TensorTable, memories: Sequence[Memory]) -> str | None:
    """The validator's verdict on a plan, ``None`` when valid. Tensors that lie inside
    another's storage on purpose are left out; no other pair may collide."""
    own = ~table.shares_storage
    return validate(
        table.starts[own],
        table.ends[own],
        table.sizes[own],
        table.mem_ids[own],
        table.offsets[own],
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
    )


@contextlib.contextmanager
def writing_outputs(files: OutputFiles) -> Iterator[Callable[[str | os.PathLike[str]], Path]]:
    """``files.writing()``: all outputs or none. One that cannot be written fails the
    command (exit 1) in one line, and none of them is written."""
    try:
        with files.writing() as partial:
            yield partial
    except OSError as error:
        raise CliError(
            f"cannot write {error.filename}: {error.strerror or error}", EXIT_PLANNING_FAILED
        ) from error
