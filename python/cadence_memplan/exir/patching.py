"""``patch_exir()``: every ``to_executorch`` in the process plans memory with
cadence_memplan's exir planners, no code change.

As :func:`cadence_memplan.patch_cadence` does for Cadence's compiler: exir builds its
memory planning from a few module-level names, and the patch points each of them at
ours in every loaded module of ``executorch`` that holds exir's object under that name:

- ``greedy`` (``executorch.exir.memory_planning``, where exir's suite finds its default
  algorithm): :func:`cadence_memplan.exir.greedy`;
- ``MemoryPlanningAlgorithmSuite`` (``memory_planning``, and
  ``passes.memory_planning_pass``, where ``MemoryPlanningPass()`` builds its default):
  :class:`cadence_memplan.exir.MemoryPlanningAlgorithmSuite`, which places the
  submodules of control flow where the parent's live tensors are safe, then plans with
  ``greedy`` (``[greedy, best]`` with ``smallest=True``);
- ``BankedGreedy`` (``banked_memory_planning``, which ``banked_memory_planning_pass``
  builds): :class:`cadence_memplan.exir.BankedGreedy`.

The default ``ExecutorchBackendConfig`` holds one ``MemoryPlanningPass``, built when
``executorch.exir`` was imported, with exir's suite: the patch gives that pass our suite,
so a plain ``to_executorch()`` plans with ours too. Modules imported later that take
those names from exir's modules get ours. Names a script took before the patch keep
exir's objects, so patch first (or run the script with ``python -m
cadence_memplan.exir.patch``).

The fallbacks are the planners' own: specs the arrays cannot carry, and every spec with
an executorch outside the tested range, go to exir's own ``greedy``, the function object
captured when ``cadence_memplan.exir`` was imported (never the patched name).
``unpatch_exir()`` puts exir's exact objects back wherever ours are. Both are idempotent;
the patch changes module attributes, so it is process-wide, not per thread.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from executorch.exir import ExecutorchBackendConfig
from executorch.exir import banked_memory_planning as exir_banked
from executorch.exir import memory_planning as exir_planning

from .._boundary.module_names import PatchHandle, point_names_at
from .planners import BankedGreedy, exir_greedy, greedy
from .search import best
from .suite import MemoryPlanningAlgorithmSuite

__all__ = ["ExirPatch", "patch_exir", "patched_smallest", "unpatch_exir"]

_PACKAGE = "executorch"


class _SmallestSuite(MemoryPlanningAlgorithmSuite):
    """Our suite with ``[greedy, best]`` as its default: ``patch_exir(smallest=True)``."""

    def __init__(self, algo_list: Sequence[Any] | None = None) -> None:
        super().__init__([greedy, best] if algo_list is None else algo_list)


# Read before anything is patched (module import time).
_UPSTREAM: dict[str, Any] = {
    "greedy": exir_greedy,
    "MemoryPlanningAlgorithmSuite": exir_planning.MemoryPlanningAlgorithmSuite,
    "BankedGreedy": exir_banked.BankedGreedy,
}
_OURS: dict[bool, dict[str, Any]] = {
    smallest: {
        "greedy": greedy,
        "MemoryPlanningAlgorithmSuite": _SmallestSuite
        if smallest
        else MemoryPlanningAlgorithmSuite,
        "BankedGreedy": BankedGreedy,
    }
    for smallest in (False, True)
}
_DEFAULT_PASS: Any = next(
    field.default
    for field in dataclasses.fields(ExecutorchBackendConfig)
    if field.name == "memory_planning_pass"
)
_DEFAULT_ALGORITHM = getattr(_DEFAULT_PASS, "memory_planning_algo", None)
_active: bool | None = None  # None: not patched; else smallest


def _all_ours() -> dict[str, set[int]]:
    return {name: {id(ours[name]) for ours in _OURS.values()} for name in _UPSTREAM}


def _set_default_algorithm(smallest: bool | None) -> None:
    """The default config's pass plans with our suite (``smallest`` True or False) or
    with exir's own (None), unless someone else gave it another algorithm."""
    current = getattr(_DEFAULT_PASS, "memory_planning_algo", None)
    ours = type(current) in (MemoryPlanningAlgorithmSuite, _SmallestSuite)
    if current is not _DEFAULT_ALGORITHM and not ours:
        return
    if smallest is None:
        _DEFAULT_PASS.memory_planning_algo = _DEFAULT_ALGORITHM
    else:
        _DEFAULT_PASS.memory_planning_algo = _OURS[smallest]["MemoryPlanningAlgorithmSuite"]()


class ExirPatch(PatchHandle):
    """What :func:`patch_exir` returns; as a context manager, leaving the block puts back
    the state from before the call (unpatched, or patched with the other ``smallest``)."""

    def __init__(self, smallest: bool, previous: bool | None) -> None:
        super().__init__(
            unpatch_exir if previous is None else functools.partial(patch_exir, smallest=previous)
        )
        self.smallest = smallest

    def __repr__(self) -> str:
        return f"ExirPatch(smallest={self.smallest!r})"


def patch_exir(*, smallest: bool = False) -> ExirPatch:
    """Make every exir memory planning in the process ours: ``to_executorch()`` with the
    default config, ``MemoryPlanningPass()`` and exir's suite built after the call, and
    ``banked_memory_planning_pass``. Programs without control flow get exir's ``.pte``
    byte for byte (planned in C++); programs with it get the submodule arenas placed so
    that no later submodule overwrites a live output (docs/exir.md).

    ``smallest=True`` makes the suite's default ``[greedy, best]``: never larger than
    exir's plan (:func:`cadence_memplan.exir.memory_planning_pass`'s ``smallest``).
    Calling it again switches; use the result as a context manager to undo it on leaving
    a block."""
    global _active
    smallest = bool(smallest)
    previous = _active
    current = {name: {id(upstream)} | _all_ours()[name] for name, upstream in _UPSTREAM.items()}
    point_names_at(_PACKAGE, _OURS[smallest], current)
    _set_default_algorithm(smallest)
    _active = smallest
    return ExirPatch(smallest, previous)


def unpatch_exir() -> None:
    """Put exir's objects back wherever ``patch_exir`` put ours (a no-op when not
    patched)."""
    global _active
    point_names_at(_PACKAGE, _UPSTREAM, _all_ours())
    _set_default_algorithm(None)
    _active = None


def patched_smallest() -> bool | None:
    """The ``smallest`` of the patch in force, or None when exir is not patched."""
    return _active
