"""``cadence-memplan plan``: read or lower INPUT, plan it, print the report, check the plan
with the validator, and write the outputs asked for (plan file, MiniMalloc solutions,
trace, program, memory map)."""

from __future__ import annotations

import argparse
import copy
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._types import UPSTREAM_ALGORITHMS, PlanningError
from ..api import plan
from ..executorch import LOWERINGS
from ..io.memories import Memory
from ..io.minimalloc import write_minimalloc_solution
from ..io.plans import write_plan
from ..io.trace import write_trace
from ..stats import TensorTable
from .common import (
    EXIT_PLANNING_FAILED,
    EXIT_USAGE,
    TENSOR,
    CliError,
    Progress,
    add_planning_options,
    budget_from_arguments,
    check_matplotlib,
    check_plan,
    checked_outputs,
    edge_program,
    in_file_terms,
    load_arrays,
    memories_from_arguments,
    model_stack_installed,
    one_line,
    quiet_libraries,
    resolve_input,
    writing_outputs,
)
from .models import BUILTIN_INPUTS, DEFAULT_INPUT
from .plot import PLOT_SUFFIXES
from .printing import (
    TensorNames,
    print_best_summary,
    print_comparison,
    print_explanation,
    print_placer_comparison,
    print_report,
)


def add_parser(commands: Any) -> None:
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
    add_planning_options(planner)
    planner.add_argument(
        "--lowering",
        choices=LOWERINGS,
        default="cadence",
        help="how a model reaches to_executorch (models only): cadence = Cadence's compiler's"
        " passes and backend config, the program Cadence ships (export_to_executorch_gen_etrecord"
        "); exir = plain to_edge and exir's default config, no Cadence passes (the plan still"
        " puts Cadence's nops in) (default: %(default)s)",
    )
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


def _plan_arrays(
    labels: list[str],
    starts: np.ndarray[Any, Any],
    ends: np.ndarray[Any, Any],
    sizes: np.ndarray[Any, Any],
    memories: Sequence[Memory],
    algorithm: str,
    placer: Callable[..., Any] = plan,
    file_terms: bool = False,
    budget_ms: float | None = None,
) -> tuple[TensorTable, float, Any]:
    """(the plan, the placer's seconds, the placer's PlanResult)."""
    began = time.perf_counter()
    try:
        result = placer(
            starts,
            ends,
            sizes,
            [memory.size for memory in memories],
            [memory.alignment for memory in memories],
            algorithm=algorithm,
            **({} if budget_ms is None else {"budget_ms": budget_ms}),
        )
    except (PlanningError, ValueError) as error:
        text = in_file_terms(str(error), labels) if file_terms else str(error)
        code = EXIT_PLANNING_FAILED if isinstance(error, PlanningError) else EXIT_USAGE
        raise CliError(f"planning failed: {one_line(text)}", code) from error
    seconds = time.perf_counter() - began
    table = TensorTable(labels, result.mem_ids, result.offsets, sizes, starts, ends)
    return table, seconds, result


def _plan_model(
    arguments: argparse.Namespace,
    label: str,
    path: Path | None,
    memories: Sequence[Memory],
    progress: Progress,
    budget_ms: float | None,
) -> tuple[
    Any,
    TensorTable,
    list[str],
    dict[str, float],
    Callable[[], bool] | None,
    str | None,
    list[tuple[str, TensorTable | None]],
]:
    """Export (or load), lower and plan a model; with --compare, also with upstream's pass
    (the comparison is printed later, after the report, by the returned callable). With
    --algo best, also the plans of upstream's placers (the core's), to show what best
    changed, and best's strategy."""
    with quiet_libraries(arguments.debug):
        edge = edge_program(label, path, progress, arguments.lowering)
        from executorch.backends.cadence.aot.utils import MemoryPlanningAlgoFailure

        from ..executorch.cadence import CadenceMemoryPlanning
        from ..executorch.lowering import lower_and_plan

        # to_executorch changes the edge program's graph, so each rival gets its own copy.
        best = arguments.algo == "best"
        against_placers = arguments.compare and best
        upstream_edge = copy.deepcopy(edge) if arguments.compare and not against_placers else None
        rival_edges = [copy.deepcopy(edge) for _ in UPSTREAM_ALGORITHMS] if against_placers else []
        replan_edge = copy.deepcopy(edge) if best and not against_placers else None
        progress("planning memory in to_executorch with our CadenceMemoryPlanning")
        planning_options = (
            memories,
            arguments.algo,
            arguments.alloc_inputs,
            arguments.alloc_outputs,
        )
        lowering = {"lowering": arguments.lowering}
        try:
            ours = lower_and_plan(
                edge,
                CadenceMemoryPlanning,
                *planning_options,
                "C++ core",
                budget_ms,
                **lowering,
            )
        except MemoryPlanningAlgoFailure as error:
            # Ours chains the PlanningError, whose message is the clearest.
            cause = error.__cause__
            message = str(cause) if isinstance(cause, PlanningError) else str(error)
            spec = getattr(error, "spec", None)
            if spec is not None:  # "tensor 4" counts within one plan() call: name it instead
                shape = "x".join(str(size) for size in spec.shape)
                message = TENSOR.sub(f"a {spec.dtype} tensor [{shape}]", message, count=1)
            raise CliError(f"planning failed: {one_line(message)}", EXIT_PLANNING_FAILED) from error
        compare = None
        upstream_plans: list[tuple[str, TensorTable | None]] = []  # None: it does not fit
        if replan_edge is not None:
            from ..executorch.sweep import PLANNING_FAILURES, Replanner

            progress("planning again with upstream's two placers, to show what best changed")
            try:
                replanner = Replanner(replan_edge, memories, "position", *planning_options[2:])
            except ValueError as error:  # a graph with control flow: planned more than once
                progress(f"not compared with upstream's placers: {one_line(str(error))}")
            else:
                for algorithm in UPSTREAM_ALGORITHMS:
                    try:
                        upstream_plans.append((algorithm, replanner.plan(memories, algorithm)))
                    except PLANNING_FAILURES:
                        upstream_plans.append((algorithm, None))
        if rival_edges:
            rivals = []
            for algorithm, rival_edge in zip(UPSTREAM_ALGORITHMS, rival_edges, strict=True):
                progress(f"planning again with upstream's {algorithm} placer (--compare)")
                rival = lower_and_plan(
                    rival_edge,
                    CadenceMemoryPlanning,
                    memories,
                    algorithm,
                    *planning_options[2:],
                    **lowering,
                )
                rivals.append((algorithm, rival.table, rival.timings["placer (C++ core)"]))
                upstream_plans.append((algorithm, rival.table))

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
                upstream_edge,
                UpstreamCadenceMemoryPlanning,
                *planning_options,
                "upstream Python",
                **lowering,
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

    return (
        ours.program,
        ours.table,
        ours.node_names,
        ours.timings,
        compare,
        ours.strategy,
        upstream_plans,
    )


def run(arguments: argparse.Namespace) -> int:
    if arguments.list_models:
        for name, description in BUILTIN_INPUTS.items():
            print(f"{name:<16}{description}")
        return 0
    progress = Progress(arguments.quiet)
    label, kind, path = resolve_input(arguments.input)
    memories = memories_from_arguments(arguments)
    minimalloc_paths = _minimalloc_paths(arguments.out_minimalloc, memories)
    outputs = checked_outputs(
        [
            (arguments.plot, "--plot", PLOT_SUFFIXES),
            (arguments.out, "--out", (".json", ".csv")),
            (arguments.trace, "--trace", (".json",)),
            *((solution, "--out-minimalloc", (".csv",)) for solution in minimalloc_paths.values()),
            (arguments.pte, "--pte", (".pte",)),
        ],
        inputs=[path, arguments.memory_config],
    )
    check_matplotlib(arguments.plot)
    if arguments.input is None and not model_stack_installed():
        # A numpy-only install still gets a demo from the bare command.
        progress("torch/executorch not installed: planning the synthetic graph instead")
        label, kind = "synthetic", "arrays"
    is_model = kind in ("model", "archive")
    if arguments.pte and not is_model:
        raise CliError("--pte needs a model input (a .pt2 archive or a built-in model)")
    algorithm = arguments.algo
    budget_ms = budget_from_arguments(arguments)
    best_budget = budget_ms if algorithm == "best" else None

    program = None
    optimality: tuple[bool, int | None] | None = None  # For --algo best on arrays.
    node_names: list[str] | None = None
    compare: Callable[[], bool] | None = None
    upstream_plans: list[tuple[str, TensorTable | None]] = []  # None: it does not fit
    if is_model:
        program, table, node_names, timings, compare, strategy, upstream_plans = _plan_model(
            arguments, label, path, memories, progress, best_budget
        )
    else:
        labels, starts, ends, sizes = load_arrays(kind, label, path, progress)
        progress(f"planning {len(labels):,} tensors")
        table, seconds, result = _plan_arrays(
            labels, starts, ends, sizes, memories, algorithm, file_terms=kind == "csv",
            budget_ms=best_budget,
        )  # fmt: skip
        strategy = result.strategy
        if algorithm == "best":
            optimality = (result.proved_optimal, result.lower_bound)
        timings = {"placer (C++ core)": seconds}
        rivals: list[tuple[str, TensorTable, float]] = []
        if algorithm == "best":
            progress("planning again with upstream's two placers, to show what best changed")
            for rival in UPSTREAM_ALGORITHMS:
                try:
                    rival_table, rival_seconds, _ = _plan_arrays(
                        labels, starts, ends, sizes, memories, rival
                    )
                except CliError as error:
                    if error.exit_code != EXIT_PLANNING_FAILED:
                        raise
                    upstream_plans.append((rival, None))
                    continue
                rivals.append((rival, rival_table, rival_seconds))
                upstream_plans.append((rival, rival_table))
        if arguments.compare and algorithm == "best":

            def compare() -> bool:
                print_placer_comparison([("best", table, seconds), *rivals], memories)
                return True

        elif arguments.compare:
            from .. import reference

            progress("planning again with cadence_memplan.reference (--compare)")
            theirs, their_seconds, _ = _plan_arrays(
                labels, starts, ends, sizes, memories, algorithm, placer=reference.plan
            )

            def compare() -> bool:
                return print_comparison(
                    table, theirs, seconds, their_seconds, "cadence_memplan.reference"
                )

    print_report(label, table, memories, algorithm, timings, node_names, optimality)
    if is_model:
        from ..executorch.lowering import LOWERING_DESCRIPTIONS

        print(f"lowering: {arguments.lowering} ({LOWERING_DESCRIPTIONS[arguments.lowering]})")
    if algorithm == "best":
        print_best_summary(
            table, memories, strategy, timings["placer (C++ core)"], budget_ms, upstream_plans
        )
    same = compare() if compare is not None else True
    problem = check_plan(table, memories)
    if problem is not None and kind == "csv":
        problem = in_file_terms(problem, table.labels)  # type: ignore[arg-type]
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

    written: list[str] = []  # printed once every output is in place
    with writing_outputs(outputs) as partial:
        if arguments.out:
            write_plan(partial(arguments.out), table, memories, algorithm, label, timings)
            written.append(f"wrote plan: {arguments.out}")
        written += _write_minimalloc(minimalloc_paths, table, memories, partial)
        if arguments.trace:
            progress(f"writing {arguments.trace}")
            write_trace(
                partial(arguments.trace), table, memories, label, algorithm, names.writer_rows()
            )
            written.append(
                f"wrote trace: {arguments.trace} (open it in https://ui.perfetto.dev or"
                " chrome://tracing; time = node index)"
            )
        if arguments.pte:
            assert program is not None  # --pte was refused above for inputs that are not models
            partial(arguments.pte).write_bytes(program.buffer)
            written.append(
                f"wrote program: {arguments.pte} ({len(program.buffer):,} bytes; it runs on an"
                " ExecuTorch runtime built with Cadence's kernels, not the portable one)"
            )
        if arguments.plot:
            from .plot import plot_memory_map

            progress(f"drawing {arguments.plot}")
            node_count = len(node_names) if node_names else None
            plot_memory_map(
                partial(arguments.plot), table, memories, f"{label} ({algorithm})", node_count
            )
            written.append(f"wrote memory map: {arguments.plot}")
    for line in written:
        print(line)
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
    paths: dict[int, Path],
    table: TensorTable,
    memories: Sequence[Memory],
    partial: Callable[[Path], Path],
) -> list[str]:
    """Write each memory's MiniMalloc solution (to ``partial(path)``); say what was written."""
    written = []
    for mem_id, path in paths.items():
        memory = memories[mem_id - 1]
        in_memory = table.mem_ids == mem_id
        # Tensors inside another's storage overlap it by design, and MiniMalloc's lifetimes
        # hold at least one step: neither has a place in a MiniMalloc solution.
        inside = in_memory & table.shares_storage
        never_alive = in_memory & ~table.shares_storage & (table.starts > table.ends)
        rows = np.flatnonzero(in_memory & ~inside & ~never_alive)
        write_minimalloc_solution(
            partial(path),
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
        written.append(
            f"wrote MiniMalloc solution: {path} (memory {memory.name}, capacity"
            f" {memory.size:,} B: {len(rows):,} tensor(s)"
            + (f"; left out: {', '.join(left_out)}" if left_out else "")
            + ")"
        )
    return written
