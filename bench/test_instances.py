"""Plan time on the public MiniMalloc instances (real compilers' buffers and MiniMalloc's
challenging set), every implementation side by side:

    python -m pytest bench/test_instances.py --benchmark-group-by=group

Instances are read from ``../shared/data/planning-instances`` (relative to the repository)
and skipped when absent; the memory hierarchies are described in bench/workloads.py.
"""

from __future__ import annotations

import pytest
from workloads import IMPLEMENTATIONS, INSTANCES, benchmark_cell, instance_workloads

WORKLOADS = list(instance_workloads())

pytestmark = pytest.mark.skipif(not WORKLOADS, reason=f"{INSTANCES} is not present")


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda workload: workload.name)
@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_instance(benchmark, implementation, algorithm, workload):
    benchmark_cell(benchmark, implementation, algorithm, workload)
