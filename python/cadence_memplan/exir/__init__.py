"""exir's default memory planning in C++: ``greedy``, ``BankedGreedy`` and the storage-reuse
check, with exir's results, and ``best``, whose plans are never larger than ``greedy``'s
(needs executorch). docs/exir.md shows how to switch ``to_executorch`` to them;
docs/architecture.md maps the modules."""

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
