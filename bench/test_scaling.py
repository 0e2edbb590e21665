"""Plan time on synthetic graphs from 10^2 to 10^6 tensors, about 32 alive at a time:

    python -m pytest bench/test_scaling.py --benchmark-group-by=group

The Python implementations are timed only up to a few thousand tensors here
(``PYTHON_MAX_TENSORS``); bench/table.py times them further under a budget.
"""

from __future__ import annotations

import pytest
from workloads import IMPLEMENTATIONS, benchmark_cell, synthetic_workloads

WORKLOADS = list(synthetic_workloads())


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda workload: f"n={workload.name[12:]}")
@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_synthetic_graph(benchmark, implementation, algorithm, workload):
    benchmark_cell(benchmark, implementation, algorithm, workload)
