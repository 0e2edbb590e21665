"""Print issue 53's table: staging tensors through fast memory (docs/staging.md).

Per model (Cadence's lowering, the zoo's default sizes), fast memory = peak-live / 4 (or
``--divisor``), under the default cost model (or ``--cost-model FILE``): the share of
access bytes served from fast memory by ``best``'s static plan, by the staged plan and by
the free-DMA ceiling; modelled cycles staged / static, and the floors under them: the
free-DMA ceiling's and the DMA-aware bound's (``dma_bound``: no schedule does better);
DMA transfers; the staging time.

    python bench/staging.py                       # the six models, about a minute
    python bench/staging.py --models decoder --divisor 2
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from cadence_memplan.cadence.lowering import export_model, lower_exported
from cadence_memplan.models import build_model
from cadence_memplan.staging.cost_model import DEFAULT_COST_MODEL, load_cost_model
from cadence_memplan.staging.graph import problem_of
from cadence_memplan.staging.report import dma_bound, peak_live, stage_problem

MODELS = ("decoder", "llama", "encoder", "inception", "chain-cnn", "cnn")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--divisor", type=int, default=4)
    parser.add_argument("--lowering", default="cadence", choices=("cadence", "exir"))
    parser.add_argument("--cost-model", default=None)
    arguments = parser.parse_args()
    model = load_cost_model(arguments.cost_model) if arguments.cost_model else DEFAULT_COST_MODEL
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    print(
        f"fast = peak-live / {arguments.divisor}, {arguments.lowering} lowering\n\n"
        "| model | ops | peak-live | fast | static | staged | ceiling | cycles staged/static"
        " | ceiling/static | bound/static | all-in-fast/static | transfers | staging s |\n"
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    )
    for name in arguments.models.split(","):
        network, inputs = build_model(name)
        exported = export_model(network, inputs, arguments.lowering)
        edge = lower_exported(exported, arguments.lowering)
        problem = problem_of(edge.exported_program(), model).problem
        capacity = peak_live(problem) // arguments.divisor
        began = time.perf_counter()
        report = stage_problem(problem, model, capacity)
        seconds = time.perf_counter() - began
        static, staged = report.static, report.staged
        bound = dma_bound(problem, model, capacity)
        print(
            f"| {name} | {problem.num_ops} | {peak_live(problem):,} | {capacity:,}"
            f" | {static.fast_fraction:.0%} | {staged.fast_fraction:.0%}"
            f" | {report.ceiling.fast_fraction:.0%} | {staged.cycles / static.cycles:.3f}"
            f" | {report.ceiling.cycles / static.cycles:.3f} | {bound / static.cycles:.3f}"
            f" | {report.all_in_fast.cycles / static.cycles:.2f} | {staged.transfers}"
            f" | {seconds:.1f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
