"""What the commands share: exit codes, errors, warnings, progress, outputs (the planning
options and the preamble of plan, sweep and size are ``planning_request.py``'s)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..io.outputs import OutputError, OutputFiles
from ..request import Memory
from ..request.inputs import DoesNotFit, InputError, InvalidPlan, LoweringError
from ..stats import format_bytes

PROG = "cadence-memplan"
DEFAULT_ALGORITHM = "position"  # as cadence_memplan.plan and upstream's mem_algo=0
DEFAULT_LOWERING = "cadence"  # the program Cadence's compiler ships, for plan and sweep alike
EXIT_PLANNING_FAILED = 1
EXIT_PLANS_DIFFER = 1  # diff, like diff(1)
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a shell reports for a tool cut off by `head`
PLOT_EXTRA_HINT = (
    "pip install matplotlib"  # by itself: the [plot] extra of a source tree rebuilds the core
)
EXECUTORCH_HINT = 'pip install torch==2.13.0 && pip install "cadence-memplan[executorch]"'


class CliError(Exception):
    """A failure reported as one line on stderr with ``exit_code`` (2 usage, 1 planning)."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def whole_number(noun: str) -> Callable[[str], int]:
    """An argparse type: a count >= 0, with ``,`` or ``_`` between digits allowed
    (``450,000``); the error names what is counted."""

    def parse(text: str) -> int:
        try:
            value = int(text.replace(",", "").replace("_", ""))
        except ValueError:
            value = -1
        if value < 0:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {noun} >= 0")
        return value

    return parse


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


@contextlib.contextmanager
def library_errors(memories: Sequence[Memory] = (), algorithm: str = "") -> Iterator[None]:
    """The planning library's failures as the command line's: an input that cannot be
    read is a usage error (2); a model that cannot be lowered, a tensor that fits nowhere
    or a plan the validator refuses is a planning failure (1). A tensor that fits nowhere
    in an instance whose peak-live bound is known comes with what to try (``room_hint``)."""
    try:
        yield
    except InputError as error:
        raise CliError(one_line(str(error))) from error
    except LoweringError as error:
        raise CliError(one_line(str(error)).split("; ")[0], EXIT_PLANNING_FAILED) from error
    except DoesNotFit as error:
        hint = room_hint(memories, error.peak_live_bytes, algorithm)
        raise CliError(
            f"planning failed: {one_line(error.reason)}{hint}", EXIT_PLANNING_FAILED
        ) from error
    except InvalidPlan as error:
        raise CliError(one_line(str(error)), EXIT_PLANNING_FAILED) from error


def room_hint(memories: Sequence[Memory], peak_live_bytes: int | None, algorithm: str = "") -> str:
    """What to do when a tensor fits nowhere. When the input's peak-live bound (the least
    any hierarchy must hold) fits in the memories and a greedy placer failed, ``--algo
    best``, which searches for the packings they miss; else the same memories with the
    last (slowest) grown to a power of two with a quarter more room than the bound (the
    rest is for fragmentation), as an option to paste. Empty without memories or a bound."""
    if not memories or not peak_live_bytes:
        return ""
    held = sum(memory.size for memory in memories)
    if algorithm != "best" and peak_live_bytes <= held:
        return (
            f"; the peak-live bound, {format_bytes(peak_live_bytes)}, fits in these"
            f" memories ({format_bytes(held)} in all): try --algo best, which searches for"
            " the packings the greedy placers miss"
        )
    last = memories[-1]
    wanted = max(last.size, -(-peak_live_bytes * 5 // 4))
    grown = 1 << (wanted - 1).bit_length()
    spec = ",".join(
        f"{memory.name}={_exact_size(grown if memory is last else memory.size)}:{memory.alignment}"
        for memory in memories
    )
    return (
        f"; to plan it, try --memory {spec} (its last memory holds the peak-live bound,"
        f" {format_bytes(peak_live_bytes)}, and a quarter more)"
    )


def _exact_size(count: int) -> str:
    """``4194304`` -> ``4MiB``: exact, so that it can be pasted into --memory."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale and count % scale == 0:
            return f"{count // scale}{unit}"
    return str(count)


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
