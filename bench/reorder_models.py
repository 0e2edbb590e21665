"""Print the table of ``reorder=True`` on real models: per model, the arena of exir's
default program, of ``memory_planning_pass(smallest=True)``, and of ``reorder=True`` with
exir's greedy and with ``smallest=True``, the ratios, peak-live before and after, the
lower bound over every legal order, what moved, the reorder's time, and whether the
outputs are bitwise exir's.

    python bench/reorder_models.py --markdown reorder-models.md      # about 15 minutes
    python bench/reorder_models.py --models decoder,inception           # quickly

Models: the KV-cache decoders (executorch's llama, ``examples.models.llama``, at 4 and 8
layers, dim 64; the zoo's decoder at 2 and 4 layers), the branchy CNN (``inception``, 3
blocks), and every other model of bench/exir_models.py (the zoo, the encoder at 8 layers,
torchvision's resnet18, mobilenet_v2, efficientnet_b0) with the chain CNN and torchvision's
mobilenet_v3_small, googlenet, squeezenet1_0 and shufflenet_v2_x0_5: 18 in all. Each is exported (strict) and
taken to edge once; each ``to_executorch`` runs on a deep copy.

``--unread-outputs`` also plans, on top of ``reorder=True, smallest=True``, without the
specs only the output node holds (exir plans one per mutated buffer, for its new value,
that no node reads or writes), gives each the placement of the buffer it stands for (so
exir's checks of the graph's outputs still hold), and runs the program: the column says
how many bytes they were, the arena without them, and whether the outputs stay bitwise.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from exir_models import (
    BUILDERS as EXIR_BUILDERS,
)
from exir_models import (
    ModelUnavailable,
    _torchvision_model,
    arena,
    run_program,
    storage_reuse_pairs,
)
from table import format_seconds

import cadence_memplan.exir
from cadence_memplan.io.outputs import write_whole
from cadence_memplan.models import build_model, example_calls
from cadence_memplan.scheduling.rules import node_specs, storage_root

__all__ = ["main"]

Built = tuple[torch.nn.Module, tuple[Any, ...]]


def _zoo(name: str, **options: Any) -> Callable[[], tuple[str, Built]]:
    return lambda: (name, build_model(name, **options))


def _exir(name: str) -> Callable[[], tuple[str, Built]]:
    build = EXIR_BUILDERS[name]
    return lambda: (name, build())


BUILDERS: dict[str, Callable[[], tuple[str, Built]]] = {
    "llama-4": _zoo("llama", layers=4),
    "llama-8": _zoo("llama", layers=8),
    "decoder": _zoo("decoder"),
    "decoder-4": _zoo("decoder", layers=4),
    "inception": _zoo("inception"),
    "chain-cnn": _zoo("chain-cnn"),
    **{name: _exir(name) for name in EXIR_BUILDERS if name not in ("decoder", "encoder-32")},
    **{
        name: (lambda name=name: (name, _torchvision_model(name)()))
        for name in ("mobilenet_v3_small", "googlenet", "squeezenet1_0", "shufflenet_v2_x0_5")
    },
}
TARGETS = {"llama-4": 0.78, "llama-8": 0.78, "decoder": 0.78, "decoder-4": 0.78, "inception": 0.88}


class DropUnreadOutputs:
    """The planning algorithm without the specs only the output node holds; each then
    gets the placement of the tensor the output node reads in its place."""

    def __init__(self, algorithm: Any) -> None:
        self.algorithm = algorithm
        self.dropped = 0

    def __call__(
        self, alignment: int, specs: Any, graph_module: Any, signature: Any, padding: int = 0
    ) -> list[int]:
        output = graph_module.graph.output_node()
        inner = {
            id(spec)
            for node in graph_module.graph.nodes
            if node.op != "output"
            for spec in node_specs(node)
        }
        sources = list(output.args[0]) if isinstance(output.args[0], (list, tuple)) else []
        own = output.meta.get("spec")
        own = list(own) if isinstance(own, (list, tuple)) else []
        unread = [
            (source, spec)
            for source, spec in zip(sources, own, strict=False)
            if spec is not None and id(spec) not in inner and hasattr(source, "meta")
        ]
        dropped = {id(spec) for _, spec in unread}
        kept = [spec for spec in specs if id(spec) not in dropped]
        bufsizes: list[int] = self.algorithm(alignment, kept, graph_module, signature, padding)
        self.dropped = 0
        for source, spec in unread:
            base = storage_root(node_specs(source)[0])
            spec.mem_id, spec.mem_offset = base.mem_id, base.mem_offset
            self.dropped += spec.allocated_memory
        return bufsizes


@dataclass
class Row:
    name: str
    units: int = 0
    exir: int = 0
    smallest: int = 0
    reorder: int = 0
    reorder_smallest: int = 0
    given_peak: int = 0
    peak: int = 0
    bound: int = 0
    proved: bool = False
    kept: str = ""
    moved: str = ""
    seconds: float = 0.0
    work: int = 0
    outputs: str = ""
    unread: str = ""
    note: str = ""


def _program(edge: Any, planning: Any) -> Any:
    return copy.deepcopy(edge).to_executorch(ExecutorchBackendConfig(memory_planning_pass=planning))


def measure(name: str, unread_outputs: bool) -> Row:
    try:
        zoo_name, (model, inputs) = BUILDERS[name]()
    except ModelUnavailable as why_not:
        return Row(name, note=str(why_not))
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    calls = example_calls(zoo_name, inputs)
    default = copy.deepcopy(edge).to_executorch()
    expected = run_program(default.buffer, calls)
    smallest = _program(edge, cadence_memplan.exir.memory_planning_pass(smallest=True))
    greedy_pass = cadence_memplan.exir.memory_planning_pass(reorder=True)
    greedy = _program(edge, greedy_pass)
    both_pass = cadence_memplan.exir.memory_planning_pass(reorder=True, smallest=True)
    both = _program(edge, both_pass)
    result = both_pass.last_reorder
    assert result is not None
    same = all(
        run_program(program.buffer, calls) == expected for program in (smallest, greedy, both)
    )
    storage_reuse_pairs(both)
    row = Row(
        name,
        units=result.units,
        exir=arena(default),
        smallest=arena(smallest),
        reorder=arena(greedy),
        reorder_smallest=arena(both),
        given_peak=result.given_peak_live,
        peak=result.peak_live,
        bound=result.lower_bound,
        proved=result.proved_optimal,
        kept=f"{result.kept} (search: {result.strategy})",
        moved=result.moves.describe(),
        seconds=max(result.seconds, greedy_pass.last_reorder.seconds),
        work=result.work,
        outputs="bitwise" if same else "DIFFER",
    )
    if unread_outputs:
        planning = cadence_memplan.exir.memory_planning_pass(reorder=True, smallest=True)
        dropping = DropUnreadOutputs(planning.memory_planning_algo)
        planning.memory_planning_algo = dropping
        program = _program(edge, planning)
        runs = "bitwise" if run_program(program.buffer, calls) == expected else "DIFFER"
        row.unread = (
            f"{dropping.dropped:,} B; arena {arena(program):,} B ({runs})"
            if dropping.dropped
            else "none"
        )
    return row


HEADER = (
    "| model | units | exir default | smallest=True | reorder | reorder + smallest | vs exir"
    " | vs smallest | peak live, given → kept | bound | proved | order kept | moved"
    " | reorder time | outputs |"
)
RULE = (
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |"
    " ---: | --- |"
)


def format_row(row: Row, unread: bool) -> str:
    if row.note:
        return f"| {row.name} | skipped: {row.note} |" + " |" * (13 + unread)
    ratio = row.reorder_smallest / row.exir
    target = TARGETS.get(row.name)
    mark = "" if target is None else (" ✓" if ratio <= target else f" ✗ (target {target})")
    cells = [
        row.name,
        f"{row.units:,}",
        f"{row.exir:,} B",
        f"{row.smallest:,} B",
        f"{row.reorder:,} B",
        f"{row.reorder_smallest:,} B",
        f"{ratio:.3f}×{mark}",  # noqa: RUF001
        f"{row.reorder_smallest / row.smallest:.3f}×",  # noqa: RUF001
        f"{row.given_peak:,} → {row.peak:,} B",
        f"{row.bound:,} B",
        "yes" if row.proved else "no",
        row.kept,
        row.moved,
        format_seconds(row.seconds),
        row.outputs,
    ]
    if unread:
        cells.append(row.unread)
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    warnings.filterwarnings("ignore", "Mutation on a buffer in the model is detected")
    warnings.filterwarnings("ignore", r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(BUILDERS), help="comma-separated")
    parser.add_argument(
        "--unread-outputs", action="store_true", help="also plan without the unread output specs"
    )
    parser.add_argument("--markdown", help="also write the table, with the command, here")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = [name for name in names if name not in BUILDERS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(BUILDERS)}")
    header, rule = HEADER, RULE
    if args.unread_outputs:
        header += " unread output specs: bytes; arena without them |"
        rule += " --- |"
    lines = [header, rule]
    print(*lines, sep="\n", flush=True)
    rows = []
    for name in names:
        rows.append(measure(name, args.unread_outputs))
        lines.append(format_row(rows[-1], args.unread_outputs))
        print(lines[-1], flush=True)
    measured = [row for row in rows if not row.note]
    slowest = max(measured, key=lambda row: row.seconds, default=None)
    summary = []
    if slowest is not None:
        summary.append(
            f"Slowest reorder: {slowest.name}, {format_seconds(slowest.seconds)} (every plan it"
            f" made included; the scheduler's work {slowest.work:,})."
        )
    larger = [row.name for row in measured if row.reorder_smallest > row.smallest]
    summary.append(
        "Never larger than smallest=True alone: "
        + ("yes, on every model." if not larger else f"NO on {', '.join(larger)}.")
    )
    print(*summary, sep="\n")
    if any(row.outputs == "DIFFER" for row in rows):
        raise SystemExit("a reordered program computes other outputs than exir's")
    if args.markdown:
        command = " ".join(
            ["python", "bench/reorder_models.py", *(argv if argv is not None else sys.argv[1:])]
        )
        note = (
            f"Measured with `{command}` on {platform.machine()} Linux, Python"
            f" {platform.python_version()}, torch {torch.__version__}, executorch 1.5.1,"
            f" {os.cpu_count()} cores shared with other work (times are noisy)."
        )
        with write_whole(args.markdown) as temporary:
            temporary.write_text(
                "\n".join([*lines, "", *summary, "", note]) + "\n", encoding="utf-8"
            )


if __name__ == "__main__":
    main()
