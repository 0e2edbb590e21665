"""Print the table of exir's default memory planning against
``cadence_memplan.exir.memory_planning_pass(smallest=True)`` on real models: per model,
exir's ``greedy`` arena, ours, the peak-live bound, the saving, and what planning costs.

    python bench/exir_models.py --markdown exir-models.md    # about 10 minutes
    python bench/exir_models.py --models mlp,encoder-8 --repeats 1   # quickly

Models: the zoo (``cadence_memplan.models``) at its defaults, the encoder at 8 and 32
layers, and torchvision's resnet18, mobilenet_v2 and efficientnet_b0 with random weights
on one 224x224 image (the ``bench`` extra pins ``torchvision==0.28.0``; rows are skipped,
saying why, when it does not import). Each model is exported (``torch.export``, strict)
and taken to edge once; every ``to_executorch`` runs on its own deep copy, exir's
default and ours alternating for ``--repeats`` rounds (medians).

Columns: the arena (``non_const_buffer_sizes``, every planned memory) of exir's default
program and of ours; the peak-live bound (the most bytes alive at one node among the
specs that own storage: no plan of them is smaller); ours over the bound; the saving;
the time of ``best`` inside ``to_executorch`` (``greedy`` runs too: the suite runs
both); ``to_executorch`` with exir's default and with ours, and the share of the latter
that the suite's planning takes. Every program of ours is checked with
``cadence_memplan.exir.verify_storage_reuse`` (exir's storage-reuse check) and run on
the portable runtime beside exir's: "bitwise" means every output of every call is
byte for byte exir's (the decoder runs four decoding steps, the others one call).
"""

from __future__ import annotations

import argparse
import copy
import functools
import os
import platform
import re
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from executorch.exir import ExecutorchBackendConfig, to_edge
from executorch.exir.memory_planning import MemoryPlanningAlgorithmSuite, Verifier
from executorch.exir.passes import MemoryPlanningPass
from executorch.extension.pybindings.portable_lib import _load_for_executorch_from_buffer
from exir_table import TimedAlgorithm
from table import format_seconds

import cadence_memplan.exir
from cadence_memplan import api
from cadence_memplan.io.outputs import write_whole
from cadence_memplan.models import MODELS, build_model, example_calls
from cadence_memplan.stats import peak_live_bytes_per_memory

__all__ = ["main"]

Built = tuple[torch.nn.Module, tuple[torch.Tensor, ...]]
TORCHVISION_MODELS = ("resnet18", "mobilenet_v2", "efficientnet_b0")
# The two torchvision ops whose fake kernels torchvision registers whether or not its
# own extension loaded; their schema, as torchvision's extension defines it.
_TORCHVISION_NMS_SCHEMA = "(Tensor dets, Tensor scores, float iou_threshold) -> Tensor"


def import_torchvision() -> tuple[Any, str | None]:
    """torchvision's module, or None and why not.

    PyPI's torchvision 0.28.0 for x86_64 is a CUDA build: beside the CPU torch 2.13.0
    its extension (``torchvision/_C.so``) does not load (it needs ``libtorch_cuda.so``),
    and ``import torchvision`` then fails in ``_meta_registrations.py``, registering fake
    kernels for ``torchvision::nms`` and ``torchvision::qnms``, ops only that extension
    defines. Defining the two schemas (no kernel) first lets the rest import; the
    classification models use neither op."""
    try:
        import torchvision
    except ImportError as error:
        return None, f"torchvision is not installed ({error}): pip install '.[bench]'"
    except RuntimeError as error:
        if not re.search(r"operator torchvision::q?nms does not exist", str(error)):
            return None, f"import torchvision failed: {error}"
        for name in [name for name in sys.modules if name.split(".")[0] == "torchvision"]:
            del sys.modules[name]
        global _TORCHVISION_SCHEMAS
        _TORCHVISION_SCHEMAS = torch.library.Library("torchvision", "DEF")
        for op in ("nms", "qnms"):
            _TORCHVISION_SCHEMAS.define(op + _TORCHVISION_NMS_SCHEMA)
        try:
            import torchvision
        except RuntimeError as retry_error:
            return None, f"import torchvision failed: {retry_error}"
    return torchvision, None


_TORCHVISION_SCHEMAS: Any = None  # kept alive: the schemas go with the Library object


def _torchvision_model(name: str) -> Callable[[], Built]:
    def build() -> Built:
        torchvision, why_not = import_torchvision()
        if torchvision is None:
            raise ModelUnavailable(why_not or "")
        torch.manual_seed(0)
        model = getattr(torchvision.models, name)(weights=None)
        return model.eval(), (torch.randn(1, 3, 224, 224),)

    return build


class ModelUnavailable(Exception):
    """The model cannot be built here; the message says why."""


def _zoo(name: str, **options: Any) -> Callable[[], Built]:
    return lambda: build_model(name, **options)


BUILDERS: dict[str, Callable[[], Built]] = {
    **{name: _zoo(name) for name in MODELS},
    "encoder-8": _zoo("encoder", layers=8),
    "encoder-32": _zoo("encoder", layers=32),
    **{name: _torchvision_model(name) for name in TORCHVISION_MODELS},
}


def run_program(buffer: bytes, calls: list[tuple[torch.Tensor, ...]]) -> list[bytes]:
    module = _load_for_executorch_from_buffer(buffer)
    return [output.numpy().tobytes() for call in calls for output in module.forward(call)]


def arena(program: Any) -> int:
    return int(sum(program.exported_program().graph_module.meta["non_const_buffer_sizes"][1:]))


def peak_live_bound(specs: list[Any]) -> int:
    """The most bytes alive at one node, per memory, among the specs that own storage
    (their lifetimes already cover the specs backed by them), summed over memories."""
    owners = [spec for spec in specs if spec.storage_base is None]
    if not owners:
        return 0
    mem_ids = np.array([spec.mem_id for spec in owners], dtype=np.int64)
    peaks = peak_live_bytes_per_memory(
        mem_ids,
        np.array([spec.allocated_memory for spec in owners], dtype=np.int64),
        np.array([spec.lifetime[0] for spec in owners], dtype=np.int64),
        np.array([spec.lifetime[1] for spec in owners], dtype=np.int64),
        int(mem_ids.max()),
    )
    return int(peaks.sum())


def storage_reuse_pairs(program: Any) -> int:
    """exir's storage-reuse check of the program's plan (raises exir's error for a bad
    one), as its MemoryPlanningPass runs it after exir's own greedy."""
    exported = program.exported_program()
    verifier = Verifier(exported.graph_module, True, True, True, exported.graph_signature)
    return cadence_memplan.exir.verify_storage_reuse(verifier)


@dataclass
class Row:
    name: str
    specs: int = 0
    exir_arena: int = 0
    our_arena: int = 0
    bound: int = 0
    best_seconds: float = 0.0
    planning_seconds: float = 0.0
    exir_seconds: float = 0.0
    our_seconds: float = 0.0
    outputs: str = ""
    note: str = ""


def measure(name: str, repeats: int, work: int) -> Row:
    try:
        model, inputs = BUILDERS[name]()
    except ModelUnavailable as why_not:
        return Row(name, note=str(why_not))
    edge = to_edge(torch.export.export(model, inputs, strict=True))
    exir_seconds, our_seconds, best_seconds, planning_seconds = [], [], [], []
    for _ in range(repeats):
        program_edge = copy.deepcopy(edge)
        began = time.perf_counter()
        exir_program = program_edge.to_executorch(ExecutorchBackendConfig())
        exir_seconds.append(time.perf_counter() - began)

        # What memory_planning_pass(smallest=True) builds, with both algorithms timed.
        greedy = TimedAlgorithm(cadence_memplan.exir.greedy)
        best = TimedAlgorithm(
            functools.partial(cadence_memplan.exir.best, work_budget=work), name="best"
        )
        planning = MemoryPlanningPass(
            memory_planning_algo=MemoryPlanningAlgorithmSuite(algo_list=[greedy, best])
        )
        program_edge = copy.deepcopy(edge)
        began = time.perf_counter()
        our_program = program_edge.to_executorch(
            ExecutorchBackendConfig(memory_planning_pass=planning)
        )
        our_seconds.append(time.perf_counter() - began)
        best_seconds.append(best.seconds)
        planning_seconds.append(best.seconds + greedy.seconds)
    storage_reuse_pairs(our_program)
    calls = example_calls(name, inputs)
    same = run_program(our_program.buffer, calls) == run_program(exir_program.buffer, calls)
    return Row(
        name,
        specs=best.spec_count,
        exir_arena=arena(exir_program),
        our_arena=arena(our_program),
        bound=peak_live_bound(best.specs),
        best_seconds=statistics.median(best_seconds),
        planning_seconds=statistics.median(planning_seconds),
        exir_seconds=statistics.median(exir_seconds),
        our_seconds=statistics.median(our_seconds),
        outputs="bitwise" if same else "DIFFER",
    )


HEADER = (
    "| model | planned specs | exir greedy | ours | peak-live bound | ours / bound | saving"
    " | best | to_executorch, exir | to_executorch, ours | planning share | outputs |"
)
RULE = "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"


def format_row(row: Row) -> str:
    if row.note:
        return f"| {row.name} | skipped: {row.note} |" + " |" * 10
    saving = 1 - row.our_arena / row.exir_arena if row.exir_arena else 0.0
    cells = [
        row.name,
        f"{row.specs:,}",
        f"{row.exir_arena:,} B",
        f"{row.our_arena:,} B",
        f"{row.bound:,} B",
        f"{row.our_arena / row.bound:.3f}×" if row.bound else "",  # noqa: RUF001
        f"{100 * saving:.1f}%",
        format_seconds(row.best_seconds),
        format_seconds(row.exir_seconds),
        format_seconds(row.our_seconds),
        f"{100 * row.planning_seconds / row.our_seconds:.1f}%",
        row.outputs,
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> None:
    # Known and harmless here: the decoder never reads its KV cache's initial contents,
    # and torch 2.13's pytree warns about itself when a program is deep-copied.
    warnings.filterwarnings("ignore", "Mutation on a buffer in the model is detected")
    warnings.filterwarnings("ignore", r"`isinstance\(treespec, LeafSpec\)` is deprecated")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=",".join(BUILDERS), help="comma-separated")
    parser.add_argument("--repeats", type=int, default=3, help="to_executorch rounds each")
    parser.add_argument(
        "--work", type=int, default=api.DEFAULT_WORK_BUDGET, help="best's work budget"
    )
    parser.add_argument("--markdown", help="also write the table, with the command, here")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = [name for name in names if name not in BUILDERS]
    if unknown:
        parser.error(f"unknown models {unknown}; choose from {', '.join(BUILDERS)}")

    lines = [HEADER, RULE]
    print(*lines, sep="\n", flush=True)
    rows = []
    for name in names:
        rows.append(measure(name, args.repeats, args.work))
        lines.append(format_row(rows[-1]))
        print(lines[-1], flush=True)
    if any(row.outputs == "DIFFER" for row in rows):
        raise SystemExit("a program of ours computes other outputs than exir's")
    if args.markdown:
        command = " ".join(
            ["python", "bench/exir_models.py", *(argv if argv is not None else sys.argv[1:])]
        )
        note = (
            f"Measured with `{command}` on {platform.machine()} Linux, Python"
            f" {platform.python_version()}, torch {torch.__version__}, executorch 1.5.1,"
            f" {os.cpu_count()} cores shared with other work (timings are noisy): medians of"
            f" {args.repeats} rounds, best's work budget {args.work:,}."
        )
        with write_whole(args.markdown) as temporary:
            temporary.write_text("\n".join(lines) + "\n\n" + note + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
