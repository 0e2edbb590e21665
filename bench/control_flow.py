"""Print what correct control flow costs in bytes: five programs of conds and maps, a cond
then a scan, and executorch #21490's reproduction, planned by exir's default pass and by ours, and through Cadence's
compiler by upstream's ``CadenceMemoryPlanning`` and by ours.

    python bench/control_flow.py --markdown control-flow.md    # about 2 minutes

Columns: each plan's arena (``non_const_buffer_sizes[1:]``, every planned memory, in
bytes), whether its program computes eager's outputs bit for bit for both branch
outcomes on the portable runtime ("right", else the largest difference), and ours over
exir's (upstream's). The programs are tests/control_flow_programs.py's, which the tests
run the same way (tests/test_control_flow.py).
"""

from __future__ import annotations

import argparse
import copy
import importlib.metadata
import platform
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import torch
from control_flow_programs import (
    FAMILY,
    CondThenScan,
    Issue21490,
    backend_config,
    export,
    outcomes,
)
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.backends.cadence.aot.utils import get_default_memory_config
from executorch.exir import to_edge

import cadence_memplan.exir
from cadence_memplan import CadenceMemoryPlanning
from cadence_memplan.cadence.compiler import cadence_backend_config
from cadence_memplan.cadence.lowering import lower_exported
from cadence_memplan.io.outputs import write_whole

PROGRAMS = {**FAMILY, "cond-then-scan": CondThenScan, "issue-21490": Issue21490}


def arena(program: Any) -> int:
    return sum(program.exported_program().graph_module.meta["non_const_buffer_sizes"][1:])


def verdict(module: torch.nn.Module, program: Any) -> str:
    found = outcomes(module, program)
    if all(outcome.equal for outcome in found):
        return "right"
    return "wrong by " + "/".join(f"{outcome.largest_difference:g}" for outcome in found)


def exir_row(name: str) -> list[str]:
    module = PROGRAMS[name]()
    edge = to_edge(export(module))
    plans = {
        "exir": None,
        "ours": cadence_memplan.exir.memory_planning_pass(),
        "smallest": cadence_memplan.exir.memory_planning_pass(smallest=True),
    }
    programs = {
        label: copy.deepcopy(edge).to_executorch(backend_config(module, planning))
        for label, planning in plans.items()
    }
    exirs = arena(programs["exir"])
    cells = [name, f"{exirs:,} B", verdict(module, programs["exir"])]
    for label in ("ours", "smallest"):
        size = arena(programs[label])
        cells += [f"{size:,} B", f"{size / exirs:.2f}x", verdict(module, programs[label])]
    return cells


def cadence_row(name: str) -> list[str]:
    module = PROGRAMS[name]()
    edge = lower_exported(export(module), "cadence")
    config = get_default_memory_config()
    cells = [name]
    upstreams = 0
    for planner, mem_algo in (
        (UpstreamCadenceMemoryPlanning, 0),
        (CadenceMemoryPlanning, 0),
        (CadenceMemoryPlanning, 1),
        (CadenceMemoryPlanning, 2),
    ):
        planning = planner(config, CompileMode.DEFAULT, mem_algo)
        program = copy.deepcopy(edge).to_executorch(
            backend_config(module, base=cadence_backend_config(planning))
        )
        size = arena(program)
        upstreams = upstreams or size
        ratio = "" if planner is UpstreamCadenceMemoryPlanning else f" ({size / upstreams:.2f}x)"
        cells += [f"{size:,} B{ratio}", verdict(module, program)]
    return cells


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(["---"] * len(header)) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", type=Path, help="also write the tables to this file")
    args = parser.parse_args()
    exir = table(
        ["program", "exir", "exir's outputs", "ours", "ours / exir", "ours' outputs",
         "smallest=True", "smallest / exir", "its outputs"],
        [exir_row(name) for name in PROGRAMS],
    )  # fmt: skip
    # The reproduction's select becomes Cadence's _select_copy_nop, which the portable
    # runtime has no kernel for: it does not run once Cadence's compiler lowers it.
    cadence = table(
        ["program", "upstream, mem_algo 0", "its outputs", "ours, 0", "outputs", "ours, 1",
         "outputs", "ours, 2", "outputs"],
        [cadence_row(name) for name in PROGRAMS if name != "issue-21490"],
    )  # fmt: skip
    note = (
        f"Measured with `python bench/control_flow.py` on {platform.machine()} Linux, Python"
        f" {platform.python_version()}, torch {torch.__version__}, executorch"
        f" {importlib.metadata.version('executorch')}."
    )
    text = f"{exir}\n\n{cadence}\n\n{note}\n"
    print(text)
    if args.markdown:
        with write_whole(args.markdown) as temporary:
            temporary.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
