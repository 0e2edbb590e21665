"""How plan, sweep and size are told what to plan: their shared options (``--memory``,
``--algo``, ``--work``, ``--budget``, ``--lowering``, ``--alloc-*``, and ``--objective`` and
``--reorder`` where the command has them) and their one preamble (:class:`CommandRequest`:
the input resolved, the hierarchy read, the options turned once into a
:class:`~cadence_memplan.request.PlanningOptions`, the input loaded). The options' own
checks are the options object's; here they are only worded as the command line's."""

from __future__ import annotations

import argparse
import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._types import ALGORITHMS
from ..api import DEFAULT_WORK_BUDGET
from ..io.memories import (
    DEFAULT_MEMORY_SPEC,
    Hierarchy,
    memory_warnings,
    parse_memory_spec,
    read_memory_config,
)
from ..models import DEFAULT_INPUT
from ..request import LOWERINGS, BestOnlyOption, PlanningOptions
from ..request.inputs import Input, LoadedInput
from ..workflow.plan import load_input, resolve_input
from .common import (
    DEFAULT_ALGORITHM,
    DEFAULT_LOWERING,
    CliError,
    check_matplotlib,
    library_errors,
    model_stack_installed,
    quiet_libraries,
    warn,
    whole_number,
)
from .progress import Progress

__all__ = ["CommandRequest", "add_planning_options"]


def add_planning_options(parser: argparse.ArgumentParser, *, placer: bool = True) -> None:
    """--memory/--memory-config, --algo, --work, --budget, --lowering,
    --alloc-inputs/outputs: how to plan, the same for plan, sweep and size (without
    ``placer``, no --algo: the command plans with best)."""
    memory = parser.add_mutually_exclusive_group()
    memory.add_argument(
        "--memory",
        action=_Once,
        metavar="[NAME=]SIZE:ALIGN,...",
        help="memories, fastest first; units B, KiB, MiB, GiB, TiB; a memory without a name"
        f" is named by its id (default: {DEFAULT_MEMORY_SPEC})",
    )
    memory.add_argument(
        "--memory-config",
        action=_Once,
        metavar="FILE",
        help="a .json or .toml file listing memories with names and base addresses",
    )
    if placer:
        parser.add_argument(
            "--algo",
            choices=ALGORITHMS,
            default=DEFAULT_ALGORITHM,
            help="placer: position = first fit (upstream's mem_algo=0), heuristic = best fit"
            " (mem_algo=1), best = the smallest of many plans, fewest bytes outside memory 1"
            " first (ours, mem_algo=2) (default: %(default)s)",
        )
        work = "with --algo best: the units of work its search may spend"
        cap = "with --algo best: also stop its search after MS milliseconds of wall time"
        result = "plan"
    else:
        parser.set_defaults(algo="best")
        work = "the units of work best may spend in all, split across its plans"
        cap = "also stop best after MS milliseconds of wall time in all"
        result = "answer"
    parser.add_argument(
        "--work",
        metavar="N",
        type=whole_number("units"),
        help=f"{work}; counted, not timed, so the {result} is the same on every run and"
        f" machine (a unit is about 15 µs on one core) (default: {DEFAULT_WORK_BUDGET:,})",
    )
    parser.add_argument(
        "--budget",
        metavar="MS",
        type=_budget,
        help=f"{cap}; the {result} then depends on the machine's speed and load (default: no cap)",
    )
    parser.add_argument(
        "--lowering",
        choices=LOWERINGS,
        help="how a model reaches to_executorch (models only): cadence = Cadence's compiler's"
        " passes and backend config, the program Cadence ships (export_to_executorch_gen_etrecord"
        "); exir = plain to_edge and exir's default config, no Cadence passes or nops, a program"
        f" the portable runtime runs (default: {DEFAULT_LOWERING})",
    )
    for what in ("inputs", "outputs"):
        parser.add_argument(
            f"--alloc-{what}",
            action=argparse.BooleanOptionalAction,
            help=f"plan the graph's {what} (models only) (default: yes)",
        )
    sharing = parser.add_mutually_exclusive_group()
    sharing.add_argument(
        "--share-mutable-buffers",
        action="store_true",
        help="a .pt2 of several methods only: place the methods' mutable state (every buffer"
        " a method mutates) once, at one place in every method, in the fastest memory where"
        " it fits beside every method's tensors (docs/stateful.md) (default: each method"
        " its own copy, with a warning naming the buffers two methods use)",
    )
    sharing.add_argument(
        "--strict-sharing",
        action="store_true",
        help="a .pt2 of several methods only: without --share-mutable-buffers, state that two"
        " methods use is an error, not a warning",
    )


class _Once(argparse.Action):
    """An option that may be given once: a second one is refused, not silently kept."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, self.dest) is not None:
            raise argparse.ArgumentError(
                self,
                f"given more than once ({getattr(namespace, self.dest)!r}, then {values!r});"
                " list every memory in one, fastest first: --memory fast=256KiB:16,near=4MiB:64",
            )
        setattr(namespace, self.dest, values)


MODEL_OPTIONS = ("lowering", "alloc_inputs", "alloc_outputs")


def model_options(arguments: argparse.Namespace, is_model: bool) -> None:
    """Options that apply to models only are refused for a CSV instance or a synthetic
    graph, and set to their defaults for a model (the parser leaves them None, so a given
    one can be told from a default)."""
    given = [name for name in MODEL_OPTIONS if getattr(arguments, name) is not None]
    if given and not is_model:
        options = ", ".join(_option_text(arguments, name) for name in given)
        raise CliError(f"{options}: for models only (a CSV or synthetic input has no graph)")
    if arguments.lowering is None:
        arguments.lowering = DEFAULT_LOWERING
    for name in ("alloc_inputs", "alloc_outputs"):
        if getattr(arguments, name) is None:
            setattr(arguments, name, True)


def _option_text(arguments: argparse.Namespace, name: str) -> str:
    if name == "lowering":
        return f"--lowering {arguments.lowering}"
    flag = name.replace("_", "-")
    return f"--{flag}" if getattr(arguments, name) else f"--no-{flag}"


def _budget(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value >= 0 or math.isinf(value):  # NaN too
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds >= 0")
    return value


def memories_from_arguments(arguments: argparse.Namespace) -> Hierarchy:
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


# How the options object names what only best takes, as the command line spells it.
_FLAGS = {"work": "--work", "budget_ms": "--budget", "objective": "--objective"}


def planning_options(arguments: argparse.Namespace, what: Input) -> PlanningOptions:
    """The command's options as one :class:`~cadence_memplan.request.PlanningOptions`,
    built once; what it refuses is worded as the command line's (exit 2)."""
    model_options(arguments, what.is_model)
    objective = getattr(arguments, "objective", None)
    reorder = getattr(arguments, "reorder", False)
    if getattr(arguments, "stage", False) and arguments.share_mutable_buffers:
        raise CliError("--stage stages one method at a time: not with --share-mutable-buffers")
    try:
        options = PlanningOptions(
            algorithm=arguments.algo,
            work=arguments.work,
            budget_ms=arguments.budget,
            objective=objective or "bytes",
            alloc_inputs=arguments.alloc_inputs,
            alloc_outputs=arguments.alloc_outputs,
            reorder=reorder,
            lowering=arguments.lowering,
            share_mutable_buffers=arguments.share_mutable_buffers,
            strict_sharing=arguments.strict_sharing,
            stage=getattr(arguments, "stage", False),
            cost_model=getattr(arguments, "cost_model", None),
        )
    except BestOnlyOption as error:
        flag = _FLAGS[error.option]
        if error.option == "objective":
            raise CliError(
                f"{flag} applies to --algo best only, not --algo {error.algorithm}"
            ) from error
        raise CliError(
            f"{flag} applies to --algo best only (--algo {error.algorithm} places every"
            " tensor once, without a search)"
        ) from error
    if reorder and not what.is_model:
        raise CliError("--reorder: for models only (a CSV or synthetic input has no node order)")
    if objective is not None and not what.is_model:
        raise CliError("--objective: for models only (a CSV or synthetic input has no graph)")
    for flag in ("share_mutable_buffers", "strict_sharing"):
        if getattr(options, flag) and not what.methods:
            raise CliError(
                f"--{flag.replace('_', '-')}: for a .pt2 archive of several methods only"
                f" ({what.label} is one program, whose buffers no other method uses)"
            )
    return options


@dataclass
class CommandRequest:
    """What plan, sweep and size each start from: ``progress``, the input named (``what``),
    the hierarchy (``memories``), and, once :meth:`planned` has run, the options."""

    arguments: argparse.Namespace
    progress: Progress
    what: Input
    memories: Hierarchy
    options: PlanningOptions | None = None

    @classmethod
    def read(cls, arguments: argparse.Namespace) -> CommandRequest:
        """The input resolved and the hierarchy read (usage errors: exit 2)."""
        progress: Progress = arguments.progress  # main's: it closes it
        with library_errors():
            what = resolve_input(DEFAULT_INPUT if arguments.input is None else arguments.input)
        return cls(arguments, progress, what, memories_from_arguments(arguments))

    def refuse_methods(self, options: list[tuple[str, bool]], instead: str) -> None:
        """Before any work: the ``options`` (flag, given) that a program of several
        methods cannot take are refused for one (usage error), saying what to do
        ``instead``."""
        methods = self.what.methods
        given = [flag for flag, present in options if present]
        if methods and given:
            raise CliError(
                f"{', '.join(given)}: not for a program of several methods ({self.what.label}"
                f" holds {', '.join(methods)}); {instead}"
            )

    @property
    def inputs(self) -> list[str | Path | None]:
        """The files the command reads, which no output may overwrite."""
        return [self.what.path, self.arguments.memory_config]

    def planned(self, verb: str) -> PlanningOptions:
        """After the outputs are checked: the plot's matplotlib checked; without torch
        and executorch, the bare command falls back to the synthetic graph (``verb``:
        "planning", "sweeping", "sizing for"); then the options, checked once."""
        check_matplotlib(getattr(self.arguments, "plot", None))
        if self.arguments.input is None and not model_stack_installed():
            # A numpy-only install still gets a demo from the bare command.
            self.progress(f"torch/executorch not installed: {verb} the synthetic graph instead")
            self.what = resolve_input("synthetic")
        self.options = planning_options(self.arguments, self.what)
        return self.options

    @contextlib.contextmanager
    def loaded(self, nothing_to: str) -> Iterator[LoadedInput]:
        """The input loaded (a model exported and lowered), inside the library's errors
        as the command line's and, for a model, its libraries' chatter silenced; a CSV
        without buffers is warned about (there is ``nothing_to`` "plan" or "size")."""
        assert self.options is not None, "planned() first"
        options = self.options
        # Only a model's libraries chatter; arrays keep stderr (warnings) as it is.
        with (
            quiet_libraries(self.arguments.debug or not self.what.is_model),
            library_errors(self.memories, options.algorithm),
        ):
            loaded = load_input(self.what, lowering=options.lowering, progress=self.progress)
            if self.what.kind == "csv" and not loaded.labels:
                warn(
                    f"{self.what.path} has a header and no buffers: there is nothing to {nothing_to}"
                )
            yield loaded
