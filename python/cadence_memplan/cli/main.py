"""``cadence-memplan`` / ``python -m cadence_memplan``: plan a model or an instance, report it.

    cadence-memplan plan [INPUT] [--memory fast=256KiB:16,near=4MiB:64,far=1GiB:64]
                         [--algo position] [--plot map.png] [--out plan.json]
                         [--out-minimalloc plan.csv] [--trace trace.json] [--explain]
                         [--pte model.pte] [--compare] [--quiet]
    cadence-memplan sweep [INPUT] --vary M --sizes LO:HI:STEPS [--memory ...] [--algo ...]
                          [--out sweep.csv] [--plot sweep.png]
    cadence-memplan diff A.json B.json

INPUT is a ``torch.export`` archive (``.pt2``), a MiniMalloc CSV instance (``.csv``) or a
built-in name (``--list-models``). Models go ``torch.export`` -> ``to_edge`` ->
``to_executorch`` with :class:`cadence_memplan.CadenceMemoryPlanning` as the memory
planning pass, so the reported plan is exactly the program's; CSV instances and the
synthetic graphs are planned with the array API (numpy only, no torch needed).

The report goes to stdout; progress lines with the elapsed time go to stderr (``--quiet``
silences them). Output paths are checked before any planning starts.

``sweep`` plans INPUT again at STEPS sizes of memory M (a model is lowered once; each
size re-runs only its memory planning) and prints a row per size: each memory's tensor
bytes and count, the bytes outside memory 1, whether it fits, and the sizes where a
bigger M holds fewer bytes. Its exit codes are ``plan``'s (a size that does not fit is a
row, not a failure).

``diff`` compares two plan JSON files (``plan --out``) and exits as diff(1) does: 0 the
plans are identical, 1 they differ, 2 error.

Exit codes of ``plan``: 0 planned, 1 planning failed (a tensor fits nowhere, lowering
failed, an output could not be written), 2 usage error (bad option, missing or unreadable
input), 130 interrupted, 141 stdout closed early (``| head``), silently. Errors are one
line on stderr, ``cadence-memplan: error: ...``; ``--debug`` adds the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import logging
import os
import re
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from .._types import ALGORITHMS, UPSTREAM_ALGORITHMS, PlanningError
from ..analysis.sweep import (
    SweepRow,
    arrays_planner,
    find_memory,
    moves_against_growth,
    parse_sweep_sizes,
    smallest_size_keeping_all,
    sweep,
    sweep_table,
    write_sweep_csv,
)
from ..api import plan, validate
from ..io.memories import DEFAULT_MEMORY_SPEC, Memory, parse_memory_spec, read_memory_config
from ..io.minimalloc import read_minimalloc_csv, write_minimalloc_solution
from ..io.plans import read_plan_file, write_plan
from ..io.trace import write_trace
from ..stats import TensorTable, format_bytes
from ..synthetic import synthetic_graph
from .models import BUILTIN_INPUTS, DEFAULT_INPUT, MODELS, SYNTHETIC_SIZES, build_model
from .plot import PLOT_SUFFIXES
from .report import (
    TensorNames,
    format_seconds,
    print_comparison,
    print_diff,
    print_explanation,
    print_placer_comparison,
    print_report,
    print_table,
)

__all__ = ["DEFAULT_ALGORITHM", "CliError", "main"]

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


# --------------------------------------------------------------------------- arguments


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Plan ExecuTorch Cadence tensor memory with cadence_memplan's C++ placers.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    planner = commands.add_parser(
        "plan",
        help="plan a model or a MiniMalloc CSV instance and report each memory (the default)",
        description="Plan INPUT and print a per-memory table, the overall peak and the time"
        " spent in the placer. Progress goes to stderr, the report to stdout.",
    )
    planner.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help="a .pt2 archive (torch.export.save), a MiniMalloc .csv, or a built-in name"
        f" (--list-models) (default: {DEFAULT_INPUT})",
    )
    planner.add_argument("--list-models", action="store_true", help="list built-in inputs")
    _add_planning_options(planner)
    planner.add_argument(
        "--plot", metavar="FILE", help="draw the memory map (.png, .svg, .pdf; needs matplotlib)"
    )
    planner.add_argument("--out", metavar="FILE", help="write the plan per tensor (.json, .csv)")
    planner.add_argument(
        "--out-minimalloc",
        metavar="FILE.csv",
        help="write the plan as MiniMalloc solutions (id,lower,upper,size,offset; half-open"
        " lifetimes): FILE.csv for a one-memory hierarchy, else one FILE-NAME.csv per memory"
        " NAME, each a one-memory solution (tensors inside another's storage and tensors"
        " never alive are left out)",
    )
    planner.add_argument(
        "--trace",
        metavar="FILE.json",
        help="write a Chrome trace (Perfetto UI, chrome://tracing): a process per memory, an"
        " event per tensor over its lifetime (time = node index), a live-bytes counter",
    )
    planner.add_argument(
        "--explain",
        action="store_true",
        help="explain each memory's peak: the live tensors and the holes at the node where"
        " its live bytes peak, and the gap between its peak usage and the peak-live bound",
    )
    planner.add_argument(
        "--pte",
        metavar="FILE",
        help="write the planned program (models only; it holds Cadence ops, so it runs on an"
        " ExecuTorch runtime built with Cadence's kernels)",
    )
    planner.add_argument(
        "--compare",
        action="store_true",
        help="also plan with upstream's Python placer (models) or cadence_memplan.reference"
        " (CSV, synthetic) and check the placements are identical; with --algo best, plan"
        " with upstream's two placers (as the core reproduces them) and print all three side"
        " by side",
    )
    planner.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    planner.add_argument(
        "--debug", action="store_true", help="show tracebacks and library warnings"
    )
    _add_sweep_parser(commands)
    differ = commands.add_parser(
        "diff",
        help="compare two plan JSON files (plan --out): moved tensors, peaks per memory",
        description="List the tensors that moved (memory or offset) between two plan JSON"
        " files written by `plan --out`, matched by name, and each memory's peak usage and"
        " peak-live bound in both. Exit status as diff(1): 0 identical, 1 different, 2 error.",
    )
    differ.add_argument("before", metavar="A.json", help="the first plan (---)")
    differ.add_argument("after", metavar="B.json", help="the second plan (+++)")
    differ.add_argument("--debug", action="store_true", help="show tracebacks")
    return parser


def _add_planning_options(parser: argparse.ArgumentParser) -> None:
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
    for what in ("inputs", "outputs"):
        parser.add_argument(
            f"--alloc-{what}",
            action=argparse.BooleanOptionalAction,
            default=True,
            help=f"plan the graph's {what} (models only) (default: yes)",
        )


def _add_sweep_parser(commands: Any) -> None:
    sweeper = commands.add_parser(
        "sweep",
        help="plan again at many sizes of one memory: what each memory holds, what spills",
        description="Plan INPUT with memory M's size stepped from LO to HI and print one row"
        " per size: each memory's tensor bytes and count, the bytes outside memory 1, whether"
        " the plan fits, and sizes where a bigger M holds fewer bytes (the greedy placers can"
        " do that). A model is lowered once; each size re-runs only the memory planning.",
    )
    sweeper.add_argument(
        "input",
        nargs="?",
        metavar="INPUT",
        help=f"as for plan (default: {DEFAULT_INPUT})",
    )
    _add_planning_options(sweeper)
    sweeper.add_argument(
        "--vary",
        metavar="M",
        required=True,
        help="the memory whose size is stepped: its name or id (1 = fastest)",
    )
    sweeper.add_argument(
        "--sizes",
        metavar="LO:HI:STEPS",
        required=True,
        help="STEPS sizes from LO to HI, evenly spaced (units as in --memory, e.g. 64KiB:1MiB:100)",
    )
    sweeper.add_argument("--out", metavar="FILE", help="write one line per size (.csv)")
    sweeper.add_argument(
        "--plot", metavar="FILE", help="draw bytes per memory against the size (.png, .svg, .pdf)"
    )
    sweeper.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    sweeper.add_argument(
        "--debug", action="store_true", help="show tracebacks and library warnings"
    )


def _resolve_input(text: str | None) -> tuple[str, str, Path | None]:
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


def _check_output(path: str | None, option: str, suffixes: Sequence[str]) -> None:
    """Refuse an output path that cannot be written, before any long work."""
    if path is None:
        return
    target = Path(path)
    if target.suffix.lower() not in suffixes:
        raise CliError(f"{option} {path}: expected a file ending in {' or '.join(suffixes)}")
    folder = target.parent
    if target.is_dir():
        raise CliError(f"{option} {path}: is a directory")
    if not folder.is_dir():
        raise CliError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise CliError(f"{option} {path}: not writable")


def _memories(arguments: argparse.Namespace) -> list[Memory]:
    try:
        if arguments.memory_config is not None:
            return read_memory_config(arguments.memory_config)
        return parse_memory_spec(
            DEFAULT_MEMORY_SPEC if arguments.memory is None else arguments.memory
        )
    except ValueError as error:
        raise CliError(str(error)) from error


def _check_matplotlib(plot: str | None) -> None:
    if plot:
        import importlib.util

        if importlib.util.find_spec("matplotlib") is None:
            raise CliError(f"--plot needs matplotlib: {PLOT_EXTRA_HINT}")


def _model_stack_installed() -> bool:
    import importlib.util

    return all(importlib.util.find_spec(name) for name in ("torch", "executorch"))


# --------------------------------------------------------------------------- arrays


_TENSOR_WITH_LIFETIME = re.compile(
    r"tensor (\d+) \(size (\d+) bytes, lifetime \[(-?\d+), (-?\d+)\]\)"
)
_TENSOR = re.compile(r"\btensor (\d+)\b")


def _in_file_terms(message: str, ids: Sequence[str]) -> str:
    """Name CSV buffers by the file's id and half-open ``[lower, upper)``, as the file does."""

    def with_lifetime(match: re.Match[str]) -> str:
        index, size, start, end = (int(group) for group in match.groups())
        return f"buffer {ids[index]!r} ({size:,} bytes, [lower, upper) = [{start}, {end + 1}))"

    message = _TENSOR_WITH_LIFETIME.sub(with_lifetime, message)
    return _TENSOR.sub(lambda match: f"buffer {ids[int(match.group(1))]!r}", message)


def _one_line(message: str) -> str:
    """The core's messages list each memory on its own line: keep them all, on one."""
    return "; ".join(line.strip() for line in message.splitlines() if line.strip()).replace(
        ":; ", ": "
    )


def _load_arrays(
    kind: str, label: str, path: Path | None, progress: Progress
) -> tuple[list[str], np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(labels, starts, ends, sizes) of a CSV instance or a built-in synthetic graph."""
    if kind == "csv":
        progress(f"reading {path}")
        try:
            instance = read_minimalloc_csv(path)  # type: ignore[arg-type]
        except (OSError, ValueError, UnicodeDecodeError) as error:
            raise CliError(f"cannot read MiniMalloc CSV: {_one_line(str(error))}") from error
        return instance.ids.tolist(), instance.starts, instance.ends, instance.sizes
    graph = synthetic_graph(SYNTHETIC_SIZES[label])
    starts, ends, sizes = graph
    return [f"t{index}" for index in range(len(graph.sizes))], starts, ends, sizes


def _plan_arrays(
    labels: list[str],
    starts: np.ndarray[Any, Any],
    ends: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    memories: Sequence[Memory],
    algorithm: str,
    placer: Callable[..., Any] = plan,
    in_file_terms: bool = False,
) -> tuple[TensorTable, float]:
    began = time.perf_counter()
    try:
        result = placer(
            starts,
            ends,
            sizes,
            [memory.size for memory in memories],
            [memory.alignment for memory in memories],
            algorithm=algorithm,
        )
    except (PlanningError, ValueError) as error:
        text = _in_file_terms(str(error), labels) if in_file_terms else str(error)
        code = EXIT_PLANNING_FAILED if isinstance(error, PlanningError) else EXIT_USAGE
        raise CliError(f"planning failed: {_one_line(text)}", code) from error
    seconds = time.perf_counter() - began
    return TensorTable(labels, result.mem_ids, result.offsets, sizes, starts, ends), seconds


# --------------------------------------------------------------------------- models


@contextlib.contextmanager
def _quiet_libraries(debug: bool) -> Iterator[None]:
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


def _edge_program(label: str, path: Path | None, progress: Progress) -> Any:
    """Export (or load) a model and lower it with ``to_edge`` (call it inside
    :func:`_quiet_libraries`)."""
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
                f"cannot read torch.export archive {path}: {_one_line(str(error))}"
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
            f"cannot lower {label} with to_edge: {_one_line(str(error)).split('; ')[0]}",
            EXIT_PLANNING_FAILED,
        ) from error


def _plan_model(
    arguments: argparse.Namespace,
    label: str,
    path: Path | None,
    memories: Sequence[Memory],
    progress: Progress,
) -> tuple[Any, TensorTable, list[str], dict[str, float], Callable[[], bool] | None]:
    """Export (or load), lower and plan a model; with --compare, also with upstream's pass
    (the comparison is printed later, after the report, by the returned callable)."""
    with _quiet_libraries(arguments.debug):
        edge = _edge_program(label, path, progress)
        from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure

        from ..executorch.cadence import CadenceMemoryPlanning
        from ..executorch.lowering import lower_and_plan

        # to_executorch changes the edge program's graph, so each rival gets its own copy.
        against_placers = arguments.compare and arguments.algo == "best"
        upstream_edge = copy.deepcopy(edge) if arguments.compare and not against_placers else None
        rival_edges = [copy.deepcopy(edge) for _ in UPSTREAM_ALGORITHMS] if against_placers else []
        progress("planning memory in to_executorch with our CadenceMemoryPlanning")
        planning_options = (
            memories,
            arguments.algo,
            arguments.alloc_inputs,
            arguments.alloc_outputs,
        )
        try:
            ours = lower_and_plan(edge, CadenceMemoryPlanning, *planning_options, "C++ core")
        except MemoryPlanningAlgoFailure as error:
            # Ours chains the PlanningError, whose message is the clearest.
            cause = error.__cause__
            message = str(cause) if isinstance(cause, PlanningError) else str(error)
            spec = getattr(error, "spec", None)
            if spec is not None:  # "tensor 4" counts within one plan() call: name it instead
                shape = "x".join(str(size) for size in spec.shape)
                message = _TENSOR.sub(f"a {spec.dtype} tensor [{shape}]", message, count=1)
            raise CliError(
                f"planning failed: {_one_line(message)}", EXIT_PLANNING_FAILED
            ) from error
        compare = None
        if rival_edges:
            rivals = []
            for algorithm, rival_edge in zip(UPSTREAM_ALGORITHMS, rival_edges, strict=True):
                progress(f"planning again with upstream's {algorithm} placer (--compare)")
                rival = lower_and_plan(
                    rival_edge, CadenceMemoryPlanning, memories, algorithm, *planning_options[2:]
                )
                rivals.append((algorithm, rival.table, rival.timings["placer (C++ core)"]))

            def compare() -> bool:
                best = ("best", ours.table, ours.timings["placer (C++ core)"])
                print_placer_comparison([best, *rivals], memories)
                return True

        if upstream_edge is not None:
            from executorch.backends.cadence.aot.memory_planning import (
                CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
            )

            progress("planning again with upstream's CadenceMemoryPlanning (--compare)")
            theirs = lower_and_plan(
                upstream_edge, UpstreamCadenceMemoryPlanning, *planning_options, "upstream Python"
            )

            def compare() -> bool:
                same = print_comparison(
                    ours.table,
                    theirs.table,
                    ours.timings["placer (C++ core)"],
                    theirs.timings["placer (upstream Python)"],
                    "upstream's CadenceMemoryPlanning",
                )
                same_bytes = theirs.program.buffer == ours.program.buffer
                print(f"compare: serialized programs {'identical' if same_bytes else 'DIFFER'}")
                return same and same_bytes

    return ours.program, ours.table, ours.node_names, ours.timings, compare


# --------------------------------------------------------------------------- the command


def _run_plan(arguments: argparse.Namespace) -> int:
    if arguments.list_models:
        for name, description in BUILTIN_INPUTS.items():
            print(f"{name:<16}{description}")
        return 0
    progress = Progress(arguments.quiet)
    label, kind, path = _resolve_input(arguments.input)
    memories = _memories(arguments)
    _check_output(arguments.plot, "--plot", PLOT_SUFFIXES)
    _check_output(arguments.out, "--out", (".json", ".csv"))
    _check_output(arguments.trace, "--trace", (".json",))
    _check_output(arguments.out_minimalloc, "--out-minimalloc", (".csv",))
    minimalloc_paths = _minimalloc_paths(arguments.out_minimalloc, memories)
    for solution_path in minimalloc_paths.values():
        _check_output(str(solution_path), "--out-minimalloc", (".csv",))
    _check_output(arguments.pte, "--pte", (".pte",))
    _check_matplotlib(arguments.plot)
    if arguments.input is None and not _model_stack_installed():
        # A numpy-only install still gets a demo from the bare command.
        progress("torch/executorch not installed: planning the synthetic graph instead")
        label, kind = "synthetic", "arrays"
    is_model = kind in ("model", "archive")
    if arguments.pte and not is_model:
        raise CliError("--pte needs a model input (a .pt2 archive or a built-in model)")
    algorithm = arguments.algo

    program = None
    node_names: list[str] | None = None
    compare: Callable[[], bool] | None = None
    if is_model:
        program, table, node_names, timings, compare = _plan_model(
            arguments, label, path, memories, progress
        )
    else:
        labels, starts, ends, sizes = _load_arrays(kind, label, path, progress)
        progress(f"planning {len(labels):,} tensors")
        table, seconds = _plan_arrays(
            labels, starts, ends, sizes, memories, algorithm, in_file_terms=kind == "csv"
        )
        timings = {"placer (C++ core)": seconds}
        if arguments.compare and algorithm == "best":
            progress("planning again with upstream's two placers (--compare)")
            rivals = [
                (rival, *_plan_arrays(labels, starts, ends, sizes, memories, rival))
                for rival in UPSTREAM_ALGORITHMS
            ]

            def compare() -> bool:
                print_placer_comparison([("best", table, seconds), *rivals], memories)
                return True

        elif arguments.compare:
            from .. import reference

            progress("planning again with cadence_memplan.reference (--compare)")
            theirs, their_seconds = _plan_arrays(
                labels, starts, ends, sizes, memories, algorithm, placer=reference.plan
            )

            def compare() -> bool:
                return print_comparison(
                    table, theirs, seconds, their_seconds, "cadence_memplan.reference"
                )

    print_report(label, table, memories, algorithm, timings, node_names)
    same = compare() if compare is not None else True
    # Tensors inside another's storage on purpose are left out; no other pair may collide.
    own = ~table.shares_storage
    problem = validate(
        table.starts[own],
        table.ends[own],
        table.sizes[own],
        table.mem_ids[own],
        table.offsets[own],
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
    )
    if problem is not None and kind == "csv":
        problem = _in_file_terms(problem, table.labels)  # type: ignore[arg-type]
    print(f"plan check: {problem or 'valid'}")
    writers = None
    if program is not None and (arguments.explain or arguments.trace):
        from ..executorch.lowering import node_writers

        writers = node_writers(program)
    names = TensorNames(table, node_names, writers, half_open=kind == "csv")
    if arguments.explain:
        from ..analysis.explain import explain_peaks

        print_explanation(explain_peaks(table, len(memories)), memories, names)
        print()

    try:
        if arguments.out:
            write_plan(arguments.out, table, memories, algorithm, label, timings)
            print(f"wrote plan: {arguments.out}")
        _write_minimalloc(minimalloc_paths, table, memories)
        if arguments.trace:
            progress(f"writing {arguments.trace}")
            write_trace(arguments.trace, table, memories, label, algorithm, names.writer_rows())
            print(
                f"wrote trace: {arguments.trace} (open it in https://ui.perfetto.dev or"
                " chrome://tracing; time = node index)"
            )
        if arguments.pte:
            assert program is not None  # --pte was refused above for inputs that are not models
            Path(arguments.pte).write_bytes(program.buffer)
            print(
                f"wrote program: {arguments.pte} ({len(program.buffer):,} bytes; it runs on an"
                " ExecuTorch runtime built with Cadence's kernels, not the portable one)"
            )
        if arguments.plot:
            from .plot import plot_memory_map

            progress(f"drawing {arguments.plot}")
            node_count = len(node_names) if node_names else None
            plot_memory_map(arguments.plot, table, memories, f"{label} ({algorithm})", node_count)
            print(f"wrote memory map: {arguments.plot}")
    except OSError as error:
        raise CliError(
            f"cannot write {error.filename}: {error.strerror or error}", EXIT_PLANNING_FAILED
        ) from error
    progress("done")
    if problem is not None:
        raise CliError(f"the plan is invalid: {problem}", EXIT_PLANNING_FAILED)
    if not same:
        raise CliError("placements differ from the comparison placer", EXIT_PLANNING_FAILED)
    return 0


def _minimalloc_paths(text: str | None, memories: Sequence[Memory]) -> dict[int, Path]:
    """Where --out-minimalloc writes each memory: MiniMalloc's format has one memory, so a
    hierarchy of several gets a file per memory, FILE-NAME.csv."""
    if text is None:
        return {}
    path = Path(text)
    if len(memories) == 1:
        return {1: path}
    return {
        mem_id: path.with_name(f"{path.stem}-{memory.name}{path.suffix}")
        for mem_id, memory in enumerate(memories, start=1)
    }


def _write_minimalloc(
    paths: dict[int, Path], table: TensorTable, memories: Sequence[Memory]
) -> None:
    for mem_id, path in paths.items():
        memory = memories[mem_id - 1]
        in_memory = table.mem_ids == mem_id
        # Tensors inside another's storage overlap it by design, and MiniMalloc's lifetimes
        # hold at least one step: neither has a place in a MiniMalloc solution.
        inside = in_memory & table.shares_storage
        never_alive = in_memory & ~table.shares_storage & (table.starts > table.ends)
        rows = np.flatnonzero(in_memory & ~inside & ~never_alive)
        write_minimalloc_solution(
            path,
            [table.labels[row] for row in rows.tolist()],
            table.starts[rows],
            table.ends[rows],
            table.sizes[rows],
            table.offsets[rows],
        )
        left_out = [
            f"{int(count):,} {what}"
            for count, what in (
                (inside.sum(), "inside another's storage"),
                (never_alive.sum(), "never alive"),
            )
            if count
        ]
        print(
            f"wrote MiniMalloc solution: {path} (memory {memory.name}, capacity"
            f" {memory.size:,} B: {len(rows):,} tensor(s)"
            + (f"; left out: {', '.join(left_out)}" if left_out else "")
            + ")"
        )


# --------------------------------------------------------------------------- diff


def _run_diff(arguments: argparse.Namespace) -> int:
    from ..analysis.diff import diff_plans

    plans = []
    for path in (arguments.before, arguments.after):
        if Path(path).suffix.lower() != ".json":
            raise CliError(f"{path}: diff compares plan JSON files (written by plan --out x.json)")
        try:
            plan_file = read_plan_file(path)
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise CliError(f"cannot read {path}: {reason}") from error
        except ValueError as error:
            raise CliError(_one_line(str(error))) from error
        # JSON plan files always list their memories.
        plans.append((plan_file.table, plan_file.memories or []))
    difference = diff_plans(*plans[0], *plans[1])
    print_diff(difference, arguments.before, arguments.after)
    return 0 if difference.identical else EXIT_PLANS_DIFFER


# --------------------------------------------------------------------------- sweep


def _run_sweep(arguments: argparse.Namespace) -> int:
    progress = Progress(arguments.quiet)
    label, kind, path = _resolve_input(arguments.input)
    memories = _memories(arguments)
    try:
        varied = find_memory(memories, arguments.vary)
        sizes = parse_sweep_sizes(arguments.sizes)
    except ValueError as error:
        raise CliError(str(error)) from error
    _check_output(arguments.out, "--out", (".csv",))
    _check_output(arguments.plot, "--plot", PLOT_SUFFIXES)
    _check_matplotlib(arguments.plot)
    if arguments.input is None and not _model_stack_installed():
        progress("torch/executorch not installed: sweeping the synthetic graph instead")
        label, kind = "synthetic", "arrays"
    name = memories[varied].name
    with contextlib.ExitStack() as stack:
        if kind in ("model", "archive"):
            stack.enter_context(_quiet_libraries(arguments.debug))
            plan_at = _model_planner(arguments, label, path, memories, varied, sizes, progress)
        else:
            labels, starts, ends, tensor_sizes = _load_arrays(kind, label, path, progress)
            what = "buffer" if kind == "csv" else "tensor"
            names = [f"{what} {name!r}" for name in labels]
            plan_at = arrays_planner(starts, ends, tensor_sizes, arguments.algo, names)
        progress(
            f"planning at {len(sizes)} sizes of {name}, {format_bytes(sizes[0])} to"
            f" {format_bytes(sizes[-1])}"
        )
        began = time.perf_counter()
        every = max(1, len(sizes) // 10)

        def step_done(step: int, size: int) -> None:
            if step and step % every == 0:
                progress(f"planning at {format_bytes(size)} ({step + 1} of {len(sizes)})")

        rows = sweep(_validated(plan_at), memories, varied, sizes, step_done)
        seconds = time.perf_counter() - began

    print(f"{label}: {name} from {format_bytes(sizes[0])} to {format_bytes(sizes[-1])} in"
          f" {len(sizes)} sizes, planned with {arguments.algo!r}")  # fmt: skip
    print_table(*sweep_table(rows, memories, varied))
    _print_sweep_summary(rows, memories, varied)
    print(f"planning time: {len(rows)} plans in {format_seconds(seconds)}")
    try:
        if arguments.out:
            write_sweep_csv(arguments.out, rows, memories, varied)
            print(f"wrote sweep: {arguments.out}")
        if arguments.plot:
            from .plot import plot_sweep

            progress(f"drawing {arguments.plot}")
            plot_sweep(arguments.plot, rows, memories, varied, f"{label} ({arguments.algo})")
            print(f"wrote sweep plot: {arguments.plot}")
    except OSError as error:
        raise CliError(
            f"cannot write {error.filename}: {error.strerror or error}", EXIT_PLANNING_FAILED
        ) from error
    progress("done")
    return 0


def _model_planner(
    arguments: argparse.Namespace,
    label: str,
    path: Path | None,
    memories: Sequence[Memory],
    varied: int,
    sizes: Sequence[int],
    progress: Progress,
) -> Callable[[Sequence[Memory]], TensorTable | str]:
    """Lower the model once; return ``plan_at`` re-running only its memory planning."""
    edge = _edge_program(label, path, progress)
    from ..executorch.sweep import PLANNING_FAILURES, Replanner

    progress("lowering once with to_executorch (the largest size)")
    largest = list(memories)
    largest[varied] = dataclasses.replace(memories[varied], size=sizes[-1])
    try:
        replanner = Replanner(
            edge, largest, arguments.algo, arguments.alloc_inputs, arguments.alloc_outputs
        )
    except ValueError as error:
        raise CliError(f"cannot sweep {label}: {error}", EXIT_PLANNING_FAILED) from error

    def plan_at(config: Sequence[Memory]) -> TensorTable | str:
        try:
            return replanner.plan(config)
        except PLANNING_FAILURES as error:
            spec = getattr(error, "spec", None)
            if spec is None:
                return _one_line(str(error)).split("; ")[0]
            shape = "x".join(str(size) for size in spec.shape)
            return (
                f"a {spec.dtype} tensor [{shape}] ({format_bytes(spec.allocated_memory)})"
                " fits nowhere"
            )

    return plan_at


def _validated(
    plan_at: Callable[[Sequence[Memory]], TensorTable | str],
) -> Callable[[Sequence[Memory]], TensorTable | str]:
    """``plan_at`` with each plan checked by the validator, as ``plan`` checks its plan."""

    def checked(config: Sequence[Memory]) -> TensorTable | str:
        outcome = plan_at(config)
        if isinstance(outcome, str):
            return outcome
        own = ~outcome.shares_storage
        problem = validate(
            outcome.starts[own],
            outcome.ends[own],
            outcome.sizes[own],
            outcome.mem_ids[own],
            outcome.offsets[own],
            [memory.size for memory in config],
            [memory.alignment for memory in config],
        )
        if problem is not None:
            sizes = ", ".join(format_bytes(memory.size) for memory in config)
            raise CliError(f"the plan at {sizes} is invalid: {problem}", EXIT_PLANNING_FAILED)
        return outcome

    return checked


def _print_sweep_summary(rows: Sequence[SweepRow], memories: Sequence[Memory], varied: int) -> None:
    name = memories[varied].name
    fast = "+".join(memory.name for memory in memories[: varied + 1])
    kept = smallest_size_keeping_all(rows, varied)
    what = "it fits" if varied == len(memories) - 1 else f"every tensor in {fast}"
    if kept is not None:
        print(
            f"{what}: from {name} = {format_bytes(kept.size)} ({kept.size:,} bytes) among the"
            " sizes swept"
        )
    else:
        fitting = [row for row in rows if row.fits]
        spill = ""
        if fitting:
            largest = fitting[-1]
            outside = sum(largest.tensor_bytes) - largest.bytes_up_to(varied)
            spill = f" (at {format_bytes(largest.size)}, {format_bytes(outside)} outside it)"
        print(f"{what}: at none of the sizes swept{spill}")
    notes = moves_against_growth(rows, memories, varied)
    against = [row.size for row, note in zip(rows, notes, strict=True) if note]
    if against:
        listed = ", ".join(format_bytes(size) for size in against[:8])
        more = f" and {len(against) - 8} more" if len(against) > 8 else ""
        print(
            f"moved against growth at {len(against)} size(s) ({listed}{more}; marked <<):"
            f" a bigger {name} held fewer bytes in {fast} than the size before"
        )
    else:
        print(f"moved against growth: never (a bigger {name} never held fewer bytes in {fast})")
    failed = sum(not row.fits for row in rows)
    if failed:
        print(f"does not fit at {failed} of {len(rows)} sizes")


def _stdout_closed() -> int:
    """The reader went away (``| head``): stop quietly, as a command killed by SIGPIPE would.

    stdout is pointed at devnull so that Python's own flush at exit cannot fail again.
    """
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    return EXIT_BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 planning failed, 2 usage)."""
    arguments_list = list(sys.argv[1:] if argv is None else argv)
    commands = (["plan"], ["sweep"], ["diff"], ["-h"], ["--help"], ["--version"])
    if arguments_list[:1] not in commands:
        # `cadence-memplan` alone, or with an input or plan options: plan is the default.
        arguments_list.insert(0, "plan")
    parser = _build_parser()
    try:
        arguments = parser.parse_args(arguments_list)
    except BrokenPipeError:  # --help | head
        return _stdout_closed()
    debug = arguments.debug
    try:
        run = {"sweep": _run_sweep, "diff": _run_diff}.get(arguments.command, _run_plan)
        status = run(arguments)
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's exit
        return status
    except BrokenPipeError:
        return _stdout_closed()
    except CliError as error:
        if debug:
            raise
        print(f"{PROG}: error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as error:
        if debug:
            raise
        print(
            f"{PROG}: error: {type(error).__name__}: {_one_line(str(error)).split('; ')[0]}"
            " (rerun with --debug for the traceback)",
            file=sys.stderr,
        )
        # diff's 1 means "the plans differ", so its errors are 2, as diff(1)'s.
        return EXIT_USAGE if arguments.command == "diff" else EXIT_PLANNING_FAILED
