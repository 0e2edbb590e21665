"""Memory planning inside ``to_executorch`` for transformer encoders, upstream vs ours.

    python bench/transformer_to_executorch.py [--layers 8 32 64] [--mem-algo 1]
        [--repeat 5] [--upstream-repeat 1] [--profile]

For each depth, exports the encoder and lowers it once with Cadence's passes (as Cadence's
compiler does), then runs ``to_executorch`` with Cadence's backend config on deep copies:
with upstream's ``CadenceMemoryPlanning``, and with ours as ``patch_cadence()`` installs it
(built through Cadence's compiler module, as a switched toolchain builds it), runs of the
two interleaved. For each it prints medians of: the placer's own time (every ``plan()``
call), the whole memory-planning pass (constraints, lifetimes, placement, exir's checks,
SimplifyIdmaOpsPass) in wall-clock and CPU time, the rest of ``to_executorch`` (all but
the pass, in wall-clock and CPU time: what the switch must not slow down) and the whole
``to_executorch``; the ratios; and whether the
programs are byte for byte the same. ``--profile`` adds cProfile's top entries for one
more run of our pass. The machine may be shared: medians of repeated runs, CPU time
beside wall-clock.
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import io
import logging
import pstats
import statistics
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import MemoryConfig

import cadence_memplan
from cadence_memplan.cadence.compiler import cadence_backend_config, import_cadence_compiler
from cadence_memplan.cadence.lowering import TimedPlanning, export_model, lower_exported
from cadence_memplan.models import build_model

__all__ = ["main"]

# A Cadence-like hierarchy: a small fast memory, then bigger, slower ones.
MEMORY_CONFIG = MemoryConfig([256 << 10, 4 << 20, 1 << 30], memory_alignments=[16, 64, 64])


class _CpuTimed:
    """Adds the pass's CPU time (this process) to a TimedPlanning's wall-clock time."""

    def __init__(self, timed: TimedPlanning) -> None:
        self.timed = timed
        self.cpu_seconds = 0.0

    def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
        began = time.process_time()
        try:
            return self.timed.run(graph_module, graph_signature)
        finally:
            self.cpu_seconds += time.process_time() - began


@dataclass
class Runs:
    placer: list[float] = field(default_factory=list)
    pass_wall: list[float] = field(default_factory=list)
    pass_cpu: list[float] = field(default_factory=list)
    rest: list[float] = field(default_factory=list)
    rest_cpu: list[float] = field(default_factory=list)
    whole: list[float] = field(default_factory=list)
    programs: set[bytes] = field(default_factory=set)

    def add(
        self, planning: _CpuTimed, whole_seconds: float, whole_cpu: float, program: bytes
    ) -> None:
        self.placer.append(planning.timed.placer_seconds)
        self.pass_wall.append(planning.timed.pass_seconds)
        self.pass_cpu.append(planning.cpu_seconds)
        self.rest.append(whole_seconds - planning.timed.pass_seconds)
        self.rest_cpu.append(whole_cpu - planning.cpu_seconds)
        self.whole.append(whole_seconds)
        self.programs.add(program)

    def medians(self) -> dict[str, float]:
        return {
            name: statistics.median(values)
            for name, values in vars(self).items()
            if name != "programs"
        }


def lower_once(edge: Any, planning: Any) -> tuple[_CpuTimed, float, float, bytes]:
    timed = _CpuTimed(TimedPlanning(planning))
    program_edge = copy.deepcopy(edge)
    began, began_cpu = time.perf_counter(), time.process_time()
    program = program_edge.to_executorch(cadence_backend_config(timed))
    whole, whole_cpu = time.perf_counter() - began, time.process_time() - began_cpu
    return timed, whole, whole_cpu, bytes(program.buffer)


def seconds(value: float) -> str:
    return f"{value * 1e3:8.1f} ms" if value < 1 else f"{value:8.2f} s "


def bench_depth(layers: int, arguments: argparse.Namespace, compiler: Any) -> None:
    model, inputs = build_model(
        "encoder", layers=layers, width=arguments.width, tokens=arguments.sequence
    )
    began = time.perf_counter()
    edge = lower_exported(export_model(model, inputs, "cadence"), "cadence")
    nodes = len(edge.exported_program().graph_module.graph.nodes)
    print(
        f"\n{layers} layers (width {arguments.width}, {arguments.sequence} tokens, {nodes} edge"
        f" nodes): export + Cadence lowering {time.perf_counter() - began:.1f} s (once, shared)"
    )

    upstream, ours = Runs(), Runs()
    for run in range(max(arguments.repeat, arguments.upstream_repeat)):
        if run < arguments.upstream_repeat:
            upstream.add(
                *lower_once(
                    edge,
                    UpstreamCadenceMemoryPlanning(
                        MEMORY_CONFIG, CompileMode.DEFAULT, arguments.mem_algo
                    ),
                )
            )
        if run < arguments.repeat:
            with cadence_memplan.patch_cadence():
                planning = compiler.CadenceMemoryPlanning(
                    MEMORY_CONFIG, CompileMode.DEFAULT, arguments.mem_algo
                )
            ours.add(*lower_once(edge, planning))

    print(
        f"  medians of {arguments.upstream_repeat} upstream and {arguments.repeat} of our runs"
        " (interleaved):"
    )
    print(
        f"  {'':>10} {'placer':>11} {'pass':>11} {'pass (CPU)':>11} {'rest':>11}"
        f" {'rest (CPU)':>11} {'to_executorch':>13}"
    )
    for label, runs in (("upstream", upstream), ("ours", ours)):
        median = runs.medians()
        print(
            f"  {label:>10} {seconds(median['placer'])} {seconds(median['pass_wall'])}"
            f" {seconds(median['pass_cpu'])} {seconds(median['rest'])}"
            f" {seconds(median['rest_cpu'])}  {seconds(median['whole'])}"
        )
    up, our = upstream.medians(), ours.medians()
    print(
        f"  upstream / ours: placer {up['placer'] / our['placer']:.0f}x, pass"
        f" {up['pass_wall'] / our['pass_wall']:.1f}x (CPU {up['pass_cpu'] / our['pass_cpu']:.1f}x),"
        f" to_executorch {up['whole'] / our['whole']:.2f}x; rest of to_executorch (all but the"
        f" pass): ours {our['rest'] / up['rest']:.2f}x upstream's (CPU"
        f" {our['rest_cpu'] / up['rest_cpu']:.2f}x); our pass runs:"
        f" {', '.join(f'{value * 1e3:.0f}' for value in ours.pass_wall)} ms"
    )
    identical = len(upstream.programs | ours.programs) == 1
    print(f"  programs identical: {identical}")
    if not identical:
        raise SystemExit("the programs differ")

    if arguments.profile:
        profile = cProfile.Profile()
        planning = CadenceMemoryPlanningProfiled(profile, arguments.mem_algo)
        copy.deepcopy(edge).to_executorch(cadence_backend_config(planning))
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(25)
        print("  cProfile of our pass (cumulative):")
        print("\n".join("    " + line for line in text.getvalue().splitlines() if line.strip()))


class CadenceMemoryPlanningProfiled:
    """Our pass with cProfile on around its run()."""

    def __init__(self, profile: cProfile.Profile, mem_algo: int) -> None:
        self.profile = profile
        self.inner = cadence_memplan.CadenceMemoryPlanning(
            MEMORY_CONFIG, CompileMode.DEFAULT, mem_algo
        )

    def run(self, graph_module: Any, graph_signature: Any = None) -> Any:
        self.profile.enable()
        try:
            return self.inner.run(graph_module, graph_signature)
        finally:
            self.profile.disable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--sequence", type=int, default=32)
    parser.add_argument("--mem-algo", type=int, default=1, choices=[0, 1])
    parser.add_argument("--repeat", type=int, default=5, help="runs of ours per depth")
    parser.add_argument(
        "--upstream-repeat", type=int, default=1, help="runs of upstream's per depth"
    )
    parser.add_argument("--profile", action="store_true", help="cProfile one more run of ours")
    arguments = parser.parse_args()
    if arguments.repeat < 1 or arguments.upstream_repeat < 1:
        parser.error("--repeat and --upstream-repeat take at least 1")
    warnings.simplefilter("ignore")
    logging.disable(logging.WARNING)

    compiler = import_cadence_compiler()
    for layers in arguments.layers:
        bench_depth(layers, arguments, compiler)


if __name__ == "__main__":
    main()
