"""exir's default memory planning in C++: ``greedy``, ``BankedGreedy`` and the storage-reuse
check, with exir's results, and ``best``, whose plans are never larger than ``greedy``'s
(needs executorch). docs/exir.md shows how to switch ``to_executorch`` to them.

Modules: ``planners.py`` (``greedy``, ``BankedGreedy``: the boundary's columns to records,
exir's errors; ``read_exir``, ``pack_exir_specs`` and ``raise_storage_error``, shared with
``search.py``); ``search.py`` (``best``: per memory the smaller of greedy's packing and the
core's ``best`` search); ``verifier.py`` (``verify_storage_reuse``); ``passes.py``
(``memory_planning_pass``, the one-argument switch, ``smallest=True`` for ``[greedy,
best]``); ``suite.py`` (``MemoryPlanningAlgorithmSuite``: exir's, with control flow's
submodule arenas placed first, by ``_boundary/control_flow.py``); ``patching.py``
(``patch_exir``, ``unpatch_exir``) and its runner ``patch.py`` (``python -m
cadence_memplan.exir.patch``); ``records.py`` (the core's second entry point, numpy and ``_core`` only: record
dtypes, columns to ``ExirTensor``/``ReuseTensor`` records, ``pack_shared_objects``,
``check_storage_reuse``). Specs are read and written through ``_boundary/tensorspecs/``,
upstream's private names come from ``_boundary/upstream.py``; nothing here imports
``cadence/``.
"""

from .passes import WithoutUnreadOutputs, memory_planning_pass
from .patching import patch_exir, unpatch_exir
from .planners import BankedGreedy, greedy
from .search import best
from .suite import MemoryPlanningAlgorithmSuite
from .verifier import verify_storage_reuse

__all__ = [
    "BankedGreedy",
    "MemoryPlanningAlgorithmSuite",
    "WithoutUnreadOutputs",
    "best",
    "greedy",
    "memory_planning_pass",
    "patch_exir",
    "unpatch_exir",
    "verify_storage_reuse",
]
