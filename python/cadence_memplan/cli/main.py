"""``cadence-memplan`` / ``python -m cadence_memplan``: plan a model or an instance, report it.

    cadence-memplan plan [INPUT] [--memory fast=256KiB:16,near=4MiB:64,far=1GiB:64]
                         [--algo position] [--budget MS] [--plot map.png] [--out plan.json]
                         [--out-minimalloc plan.csv] [--trace trace.json] [--explain]
                         [--pte model.pte] [--compare] [--quiet]
    cadence-memplan sweep [INPUT] --vary M --sizes LO:HI:STEPS [--memory ...] [--algo ...]
                          [--out sweep.csv] [--plot sweep.png]
    cadence-memplan size [INPUT] [--memory ...] [--points N] [--json size.json] [--plot size.png]
    cadence-memplan diff A.json B.json

INPUT is a ``torch.export`` archive (``.pt2``), a MiniMalloc CSV instance (``.csv``) or a
built-in name (``--list-models``). Models go ``torch.export`` -> ``to_edge`` ->
``to_executorch`` with :class:`cadence_memplan.CadenceMemoryPlanning` as the memory
planning pass, so the reported plan is exactly the program's; CSV instances and the
synthetic graphs are planned with the array API (numpy only, no torch needed).

The report goes to stdout; progress lines with the elapsed time go to stderr (``--quiet``
silences them). Output paths are checked before any planning starts, and the outputs are
written all or none (:mod:`cadence_memplan.io.outputs`). docs/cli.md is the user's page.

``sweep`` plans INPUT again at STEPS sizes of memory M (a model is lowered once; each
size re-runs only its memory planning) and prints a row per size: each memory's tensor
bytes and count, the bytes outside memory 1, whether it fits, and the sizes where a
bigger M holds fewer bytes. Its exit codes are ``plan``'s (a size that does not fit is a
row, not a failure).

``size`` finds the smallest size of the first memory that keeps every tensor there, and
below it the most that memory keeps at each size where that changes, with a proved bound
(:mod:`cadence_memplan.workflow.size`); it plans with best, within a work budget split across its
plans. Its exit codes are ``plan``'s.

``diff`` compares two plan JSON files (``plan --out``) and exits as diff(1) does: 0 the
plans are identical, 1 they differ, 2 error.

Exit codes of ``plan``: 0 planned, 1 planning failed (a tensor fits nowhere, lowering
failed, an output could not be written), 2 usage error (bad option, missing or unreadable
input), 130 interrupted (0 after "done": every output is written), 141 stdout closed
early (``| head``), silently. Errors are one line on stderr, ``cadence-memplan: error:
...``; ``--debug`` adds the traceback.

A reader that goes away (``| head``, on stdout or stderr) stops only the printing, for
every command: the work goes on and the outputs are written as without it
(:class:`_ReaderMayLeave`), then the command exits 141 unless it failed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn, TextIO

from .. import __version__
from .._validation import closest
from ..models import BUILTIN_INPUTS
from . import diff_command, plan_command, size_command, sweep_command
from .common import (
    DEFAULT_ALGORITHM,
    EXIT_BROKEN_PIPE,
    EXIT_INTERRUPTED,
    EXIT_PLANNING_FAILED,
    EXIT_USAGE,
    PROG,
    CliError,
    one_line,
)
from .progress import Progress

__all__ = ["DEFAULT_ALGORITHM", "CliError", "main"]


# "262144 bytes" as the core and upstream write a count (not one inside another number).
_UNGROUPED_BYTES = re.compile(r"(?<![\d.,])(\d{4,})(?= bytes\b)")


def grouped_bytes(message: str) -> str:
    """``memory 1 (262144 bytes, ...`` -> ``memory 1 (262,144 bytes, ...``: an error's
    byte counts grouped as the command's own words group them, wherever they come from."""
    return _UNGROUPED_BYTES.sub(lambda match: f"{int(match.group(1)):,}", message)


class _Parser(argparse.ArgumentParser):
    """argparse's usage errors as the command's own: one line, one prefix, exit 2 (the
    subcommands' parsers are of this class too: argparse makes them of their parent's)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{PROG}: error: {one_line(message)} (see {self.prog} --help)\n")


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The parser, and each command's own parser by name."""
    parser = _Parser(
        prog=PROG,
        description="Plan ExecuTorch Cadence tensor memory with cadence_memplan's C++ placers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    plan_command.add_parser(commands)
    sweep_command.add_parser(commands)
    size_command.add_parser(commands)
    diff_command.add_parser(commands)
    return parser, dict(commands.choices)


def _join_dash_values(parser: argparse.ArgumentParser, arguments: list[str]) -> list[str]:
    """``--memory -5KiB:16`` -> ``--memory=-5KiB:16``. argparse takes a value that starts
    with ``-`` (and is not a negative number) for an option and says only "expected one
    argument"; joined to its option, the value reaches the option's own check, which says
    what is wrong with it. A following word that is one of the command's options is left
    alone (``--out --quiet`` still fails as a missing value)."""
    options = parser._option_string_actions
    joined: list[str] = []
    index = 0
    while index < len(arguments):
        word = arguments[index]
        action = options.get(word)
        following = arguments[index + 1] if index + 1 < len(arguments) else None
        if (
            action is not None
            and action.nargs is None  # exactly one value
            and following is not None
            and following.startswith("-")
            and following != "--"
            and following.split("=")[0] not in options
        ):
            joined.append(f"{word}={following}")
            index += 2
            continue
        joined.append(word)
        index += 1
    return joined


COMMANDS = ("plan", "sweep", "size", "diff")


def _misspelled_command(first: list[str]) -> str | None:
    """``plann x.csv``: a first word that is no command, option, file or built-in input
    but close to a command is named, with the command it is probably (else ``plan``
    would take it for its input and say something about the next word)."""
    if not first or first[0] in COMMANDS or first[0].startswith("-"):
        return None
    word = first[0]
    if os.path.exists(word) or word in BUILTIN_INPUTS:
        return None
    close = closest(word, COMMANDS)
    if close is None:
        return None
    return (
        f"unknown command {word!r} (did you mean {close!r}? the commands are"
        f" {', '.join(COMMANDS)}; see {PROG} --help)"
    )


class _ReaderMayLeave:
    """sys.stdout or sys.stderr while a command runs. When its reader goes away (``| head``)
    the rest of what is printed is dropped, instead of a BrokenPipeError ending the
    command before it has written its outputs (the report is printed first): the printing
    stops, the work does not. ``gone`` says whether it happened."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self.stream.write(text)
            except BrokenPipeError:
                self._reader_went_away()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._reader_went_away()

    def _reader_went_away(self) -> None:
        self.gone = True
        # What the stream still buffers, the interpreter's flush at exit and C++ code that
        # writes to the descriptor itself (HiGHS) then go to devnull instead of failing.
        with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor
            descriptor = self.stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, descriptor)
            os.close(devnull)
        with contextlib.suppress(OSError, ValueError):
            self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, isatty, ...
        return getattr(self.stream, name)


@contextlib.contextmanager
def _readers_may_leave() -> Iterator[list[_ReaderMayLeave]]:
    """sys.stdout and sys.stderr as :class:`_ReaderMayLeave` for the block, flushed at its
    end (where a reader that left shows when the stream is buffered), then put back."""
    saved = sys.stdout, sys.stderr
    streams: list[_ReaderMayLeave] = []
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None:  # None under pythonw
            streams.append(_ReaderMayLeave(stream))
            setattr(sys, name, streams[-1])
    try:
        yield streams
        for stream in streams:
            stream.flush()
    finally:
        sys.stdout, sys.stderr = saved


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 planning failed, 2 usage,
    141 a reader left: see the module's docstring)."""
    result: tuple[int, bool] | None = None
    try:
        with _readers_may_leave() as streams:
            result = _run(argv)
    except KeyboardInterrupt:
        if result is None:
            raise
        # Ctrl-C while the last lines were flushed: the command had ended, outputs written.
    status, failed = result
    if any(stream.gone for stream in streams) and not failed:
        return EXIT_BROKEN_PIPE  # as a command cut off by SIGPIPE, quietly
    return status


def _run(argv: Sequence[str] | None) -> tuple[int, bool]:
    """Parse and run the command: (the exit status, whether it failed with an error)."""
    arguments_list = list(sys.argv[1:] if argv is None else argv)
    commands = (*([name] for name in COMMANDS), ["-h"], ["--help"], ["--version"])
    misspelled = _misspelled_command(arguments_list[:1])
    if misspelled is not None:
        print(f"{PROG}: error: {misspelled}", file=sys.stderr)
        return EXIT_USAGE, True
    if arguments_list[:1] not in commands:
        # `cadence-memplan` alone, or with an input or plan options: plan is the default.
        arguments_list.insert(0, "plan")
    parser, command_parsers = _build_parser()
    command_parser = command_parsers.get(arguments_list[0])
    if command_parser is not None:
        arguments_list = [
            arguments_list[0],
            *_join_dash_values(command_parser, arguments_list[1:]),
        ]
    try:
        arguments = parser.parse_args(arguments_list)
    except SystemExit as exit_request:  # --help, --version, usage errors
        code = exit_request.code
        status = code if isinstance(code, int) else EXIT_USAGE
        return status, status != 0
    debug = arguments.debug
    progress = arguments.progress = Progress(getattr(arguments, "quiet", True))
    try:
        command = {"sweep": sweep_command, "size": size_command, "diff": diff_command}.get(
            arguments.command, plan_command
        )
        try:
            return command.run(arguments), False
        finally:
            progress.close()  # before any error line: no "still ..." after it
    except CliError as error:
        if debug:
            raise
        print(f"{PROG}: error: {grouped_bytes(one_line(str(error)))}", file=sys.stderr)
        return error.exit_code, True
    except KeyboardInterrupt:
        if progress.finished:  # after "done": every output is written
            return 0, False
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED, True
    except Exception as error:
        if debug:
            raise
        print(
            f"{PROG}: error: {type(error).__name__}:"
            f" {grouped_bytes(one_line(str(error)).split('; ')[0])}"
            " (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        # diff's 1 means "the plans differ", so its errors are 2, as diff(1)'s.
        return (EXIT_USAGE if arguments.command == "diff" else EXIT_PLANNING_FAILED), True
