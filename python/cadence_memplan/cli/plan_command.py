"""``cadence-memplan plan``: read or lower INPUT, plan it, print the report, check the plan
with the validator, and write the outputs asked for (plan file, MiniMalloc solutions,
trace, program, memory map)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._types import OBJECTIVES, Budget
from ..cadence import LOWERING_DESCRIPTIONS
from ..io.minimalloc import write_minimalloc_solution
from ..io.plans import write_plan
from ..io.staging import write_staging
from ..io.trace import write_trace
from ..models import BUILTIN_INPUTS, DEFAULT_INPUT
from ..request import Memory
from ..staging.cost_model import cost_model_of
from ..staging.report import staging_json
from ..stats import TensorTable, plural
from ..workflow.compare import (
    Comparison,
    UpstreamPlan,
    compare_with_upstream,
    upstream_placer_plans,
)
from ..workflow.plan import InputPlan, check_control_flow, check_plan, plan_input
from .common import (
    EXIT_PLANNING_FAILED,
    CliError,
    checked_outputs,
    in_file_terms,
    writing_outputs,
)
from .explaining import TensorNames, print_explanation
from .planning_request import CommandRequest, add_planning_options
from .plot_axes import PLOT_SUFFIXES
from .printing import (
    Optimality,
    print_best_summary,
    print_comparison,
    print_kept_traffic,
    print_placer_comparison,
    print_reorder,
    print_report,
)
from .program_methods import METHOD_REFUSALS, run_methods
from .progress import Progress


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
        "--objective",
        choices=OBJECTIVES,
        help="with --algo best, on a model: what to keep in the fast memories, the most bytes"
        " or the most traffic (each tensor's size times 1 + the nodes that read it)"
        " (default: bytes)",
    )
    planner.add_argument(
        "--reorder",
        action="store_true",
        help="models only: also plan the graph in better node orders (mutable buffers'"
        " write-backs moved up, then a search for the order with the fewest bytes alive at"
        " once), keeping the order whose plan has no larger arena and no fewer bytes in the"
        " first memory; it changes the program's instruction order, never its results"
        " (default: the graph's order)",
    )
    _add_stage_options(planner)
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
        " its live bytes peak, and the gap between its peak usage and the peak live of its"
        " tensors",
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
        " by side: what each keeps in the first memory, how much more best keeps, each"
        " memory's peak usage",
    )
    planner.add_argument("--quiet", "-q", action="store_true", help="no progress lines on stderr")
    planner.add_argument(
        "--debug", action="store_true", help="show tracebacks and library warnings"
    )


def _add_stage_options(planner: argparse.ArgumentParser) -> None:
    """--stage, --cost-model and --stage-out: staging's report (docs/staging.md)."""
    planner.add_argument(
        "--stage",
        action="store_true",
        help="models only: stage the program through the first memory by DMA, then plan"
        " it; the plan, --out and --pte are the staged program's (docs/staging.md)",
    )
    planner.add_argument("--cost-model", metavar="FILE", help="--stage's cost model (.json, .toml)")
    planner.add_argument("--stage-out", metavar="FILE.json", help="write --stage's copies")


def run(arguments: argparse.Namespace) -> int:
    if arguments.list_models:
        for name, description in BUILTIN_INPUTS.items():
            print(f"{name:<16}{description}")
        return 0
    request = CommandRequest.read(arguments)
    request.refuse_methods(
        [
            (f"--{name.replace('_', '-')}", bool(getattr(arguments, name)))
            for name in ("out", "out_minimalloc", "trace", "plot", "compare", "stage")
        ],
        METHOD_REFUSALS,
    )
    minimalloc_paths = _minimalloc_paths(arguments.out_minimalloc, request.memories)
    outputs = checked_outputs(
        [
            (arguments.plot, "--plot", PLOT_SUFFIXES),
            (arguments.out, "--out", (".json", ".csv")),
            (arguments.trace, "--trace", (".json",)),
            *((solution, "--out-minimalloc", (".csv",)) for solution in minimalloc_paths.values()),
            (arguments.pte, "--pte", (".pte",)),
            (arguments.stage_out, "--stage-out", (".json",)),
        ],
        inputs=[*request.inputs, arguments.cost_model],
    )
    if (arguments.cost_model or arguments.stage_out) and not arguments.stage:
        raise CliError("--cost-model and --stage-out go with --stage")
    options = request.planned("planning")
    if arguments.pte and not request.what.is_model:
        raise CliError("--pte needs a model input (a .pt2 archive or a built-in model)")
    if arguments.stage and not request.what.is_model:
        raise CliError("--stage: for models only (a CSV or synthetic input has no graph)")
    if arguments.stage and arguments.compare and options.algorithm != "best":
        raise CliError("--compare checks placements against upstream's, which do not stage")
    try:  # before the lowering, which takes far longer than reading the file
        cost_model = cost_model_of(arguments.cost_model)
    except ValueError as error:
        raise CliError(f"--cost-model: {error}") from error
    if request.what.methods:
        return run_methods(request, arguments, outputs)
    ours, upstream, comparison, staging = _plan(request)
    same, problem, names = _print(arguments, ours, upstream, comparison, options.budget)
    for line in staging.lines() if staging else ():
        print(line)
    for line in staging.explain() if staging and arguments.explain else ():
        print(line)
    written: list[str] = []  # printed once every output is in place
    progress = request.progress
    with writing_outputs(outputs) as partial:
        written += _write_outputs(arguments, ours, names, minimalloc_paths, partial, progress)
        if staging and arguments.stage_out:
            document = staging_json(staging.problem, staging, cost_model)
            write_staging(partial(arguments.stage_out), document)
            written.append(f"wrote the staging copies to {arguments.stage_out}")
    for line in written:
        print(line)
    progress.done()
    if problem is not None:
        raise CliError(f"the plan is invalid: {problem}", EXIT_PLANNING_FAILED)
    if not same:
        raise CliError("placements differ from the comparison placer", EXIT_PLANNING_FAILED)
    return 0


def _plan(
    request: CommandRequest,
) -> tuple[InputPlan, list[UpstreamPlan], Comparison | None, Any]:
    """The plan (:func:`~cadence_memplan.workflow.plan.plan_input`), with ``--algo best`` the
    plans of upstream's placers, ``--compare``'s plan, and ``--stage``'s report (the
    pass's, which staged the program it planned)."""
    options, memories, progress = request.options, request.memories, request.progress
    assert options is not None
    compare = request.arguments.compare
    with request.loaded("plan") as loaded:
        ours = plan_input(loaded, memories, options, progress=progress)
        upstream: list[UpstreamPlan] = []
        if options.algorithm == "best":
            upstream = upstream_placer_plans(
                loaded, memories, options, timed=compare, progress=progress
            )
        comparison = None
        if compare and options.algorithm != "best":
            comparison = compare_with_upstream(ours, loaded, options, progress=progress)
    return ours, upstream, comparison, ours.staging


def _print(
    arguments: argparse.Namespace,
    ours: InputPlan,
    upstream: Sequence[UpstreamPlan],
    comparison: Comparison | None,
    budget: Budget,
) -> tuple[bool, str | None, TensorNames]:
    """Print the report; return (the comparison agreed, the validator's problem, the
    tensors' names for the outputs)."""
    table, memories, algorithm = ours.table, ours.memories, ours.algorithm
    optimality = None
    if ours.proved_optimal is not None:
        optimality = Optimality(
            ours.proved_optimal, ours.lower_bound, ours.kept_bound, ours.kept, ours.objective
        )
    elif ours.kept is not None and ours.kept_bound is not None:  # A model's one placer call.
        full = ours.kept >= ours.kept_bound
        optimality = Optimality(full, None, ours.kept_bound, ours.kept, ours.objective)
    print_report(
        ours.input.label, table, memories, algorithm, ours.timings, ours.node_names, optimality
    )
    if ours.lowering is not None:
        print(f"lowering: {ours.lowering} ({LOWERING_DESCRIPTIONS[ours.lowering]})")
    if ours.reorder is not None:
        print_reorder(ours.reorder)
    # The objective's weights are per row: they hold for another plan of the same rows.
    weights = ours.weights
    if weights is not None and any(
        rival.table is not None and list(rival.table.labels) != list(table.labels)
        for rival in upstream
    ):
        weights = None
    if algorithm == "best":
        print_best_summary(
            table, memories, ours.strategy, ours.placer_seconds, ours.spent, budget,
            [(rival.algorithm, rival.table) for rival in upstream],
        )  # fmt: skip
        if weights is not None and not arguments.compare:  # else the table says it
            print_kept_traffic(
                table, [(rival.algorithm, rival.table) for rival in upstream], memories, weights
            )
    same = True
    if arguments.compare and algorithm == "best":
        rivals = [(p.algorithm, p.table, p.seconds or 0.0) for p in upstream if p.table is not None]
        # capacity-first's bound is in the objective's terms: printed only beside them.
        bound = ours.kept_bound if (weights is None) == (ours.objective == "bytes") else None
        print_placer_comparison(
            [("best", table, ours.placer_seconds), *rivals], memories, bound, weights
        )
    elif comparison is not None:
        same = print_comparison(
            table, comparison.table, ours.placer_seconds, comparison.seconds, comparison.who
        )
        if comparison.same_program is not None:
            identical = "identical" if comparison.same_program else "DIFFER"
            print(f"compare: serialized programs {identical}")
            same = same and comparison.same_program
        if comparison.by_design is not None:
            print(f"compare: different by design: {comparison.by_design}")
            same = True
    csv_input = ours.input.kind == "csv"
    problem = check_plan(table, memories)
    if problem is None and ours.program is not None:
        problem = check_control_flow(ours.program)
    if problem is not None and csv_input:
        problem = in_file_terms(problem, table.labels)  # type: ignore[arg-type]
    print(f"plan check: {problem or 'valid'}")
    writers = None
    if ours.program is not None and (arguments.explain or arguments.trace):
        from ..cadence.lowering import node_writers

        writers = node_writers(ours.program)
    names = TensorNames(table, ours.node_names, writers, half_open=csv_input)
    if arguments.explain:
        from ..analysis.explain import explain_peaks

        print_explanation(explain_peaks(table, len(memories)), memories, names)
        if ours.reorder is not None:
            print(f"explain reorder: {ours.reorder.moves.describe()}")
        print()
    return same, problem, names


def _write_outputs(
    arguments: argparse.Namespace,
    ours: InputPlan,
    names: TensorNames,
    minimalloc_paths: dict[int, Path],
    partial: Callable[[Path], Path],
    progress: Progress,
) -> list[str]:
    """Write each output asked for (to ``partial(path)``); say what was written."""
    table, memories, algorithm, label = ours.table, ours.memories, ours.algorithm, ours.input.label
    written = []
    if arguments.out:
        progress(f"writing {arguments.out}")
        write_plan(partial(arguments.out), table, memories, algorithm, label, ours.timings)
        written.append(f"wrote plan: {arguments.out}")
    if minimalloc_paths:
        progress(f"writing {', '.join(map(str, minimalloc_paths.values()))}")
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
        program = ours.program
        assert program is not None  # --pte was refused above for inputs that are not models
        progress(f"writing {arguments.pte}")
        partial(arguments.pte).write_bytes(program.buffer)
        runs_on = (
            "an ExecuTorch runtime built with Cadence's kernels, not the portable one"
            if ours.lowering == "cadence"
            else "the portable runtime"  # exir's program: exir's ops, no Cadence nops
        )
        written.append(
            f"wrote program: {arguments.pte} ({len(program.buffer):,} bytes; it runs on {runs_on})"
        )
    if arguments.plot:
        from .memory_map import plot_memory_map

        progress(f"drawing {arguments.plot}")
        node_count = len(ours.node_names) if ours.node_names else None
        plot_memory_map(
            partial(arguments.plot), table, memories, f"{label} ({algorithm})", node_count
        )
        written.append(f"wrote memory map: {arguments.plot}")
    return written


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
            f" {memory.size:,} B: {plural(len(rows), 'tensor')}"
            + (f"; left out: {', '.join(left_out)}" if left_out else "")
            + ")"
        )
    return written
