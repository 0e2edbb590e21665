"""Plan time on transformer encoders (depth 4, 16, 32) exported with torch.export and
executorch's ``to_edge``, planned from the graph's own TensorSpecs:

    python -m pytest bench/test_models.py --benchmark-group-by=group
"""

from __future__ import annotations

import pytest
from workloads import IMPLEMENTATIONS, benchmark_cell, model_workloads

WORKLOADS = list(model_workloads())


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda workload: workload.name)
@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_exported_model(benchmark, implementation, algorithm, workload):
    benchmark_cell(benchmark, implementation, algorithm, workload)
