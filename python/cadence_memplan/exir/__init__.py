"""exir's default memory planning in C++: ``greedy``, ``BankedGreedy`` and the storage-reuse
check, with exir's results, and ``best``, whose plans are never larger than ``greedy``'s
(needs executorch). docs/exir.md shows how to switch ``to_executorch`` to them.

Modules: ``planners.py`` (``greedy``, ``BankedGreedy``: the boundary's columns to records,
exir's errors; ``read_exir``, ``pack_exir_specs`` and ``raise_storage_error``, shared with
``search.py``); ``search.py`` (``best``: per memory the smaller of greedy's packing and the
core's ``best`` search); ``verifier.py`` (``verify_storage_reuse``); ``passes.py``
(``memory_planning_pass``, the one-argument switch, ``smallest=True`` for ``[greedy,
best]``); ``records.py`` (the core's second entry point, numpy and ``_core`` only: record
dtypes, columns to ``ExirTensor``/``ReuseTensor`` records, ``pack_shared_objects``,
``check_storage_reuse``). Specs are read and written through ``_boundary/tensorspecs.py``,
upstream's private names come from ``_boundary/upstream.py``; nothing here imports
``cadence/``.
"""

from .passes import memory_planning_pass
from .planners import BankedGreedy, greedy
from .search import best
from .verifier import verify_storage_reuse

__all__ = [
    "BankedGreedy",
    "best",
    "greedy",
    "memory_planning_pass",
    "verify_storage_reuse",
]
