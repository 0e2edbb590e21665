"""The words the flows from an input to its plan share (``planning``, ``model_planning``,
``sizing``, ``comparisons``, the command line): an input (:class:`Input`) and an input read
or lowered (:class:`LoadedInput`), an input planned (:class:`InputPlan`), the typed
failures (:class:`InputError`, :class:`LoweringError`, :class:`InvalidPlan`,
:class:`DoesNotFit`) and progress. Below them all, so that none imports another for these.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .._types import NOTHING_SPENT, Objective, SearchSpent
from ..stats import TensorTable, memory_stats
from .hierarchy import Hierarchy

__all__ = [
    "OURS",
    "DoesNotFit",
    "Input",
    "InputError",
    "InputPlan",
    "InvalidPlan",
    "LoadedInput",
    "LoweringError",
    "ProgramPlan",
    "Progress",
    "StateBuffer",
    "quiet",
]

Progress = Callable[[str], None]
OURS = "placer (C++ core)"


def quiet(_: str) -> None:
    """A progress that says nothing."""


class InputError(ValueError):
    """The input cannot be found or read (or a model needs torch and executorch)."""


class LoweringError(RuntimeError):
    """The model could not be exported or lowered."""


class InvalidPlan(RuntimeError):
    """The validator refused a plan (a bug, never a property of the input)."""


class DoesNotFit(RuntimeError):
    """A tensor fits in no memory.

    ``tensor`` names it as the input does (a CSV's buffer id, a model's dtype and shape),
    ``tensor_size`` is its size, ``reason`` the placer's one-line account (each memory and
    why), and ``peak_live_bytes`` the most bytes of the input alive at once (for a model,
    ``None``): no hierarchy that holds fewer bytes in all can place them.
    """

    def __init__(
        self, tensor: str, tensor_size: int, reason: str, peak_live_bytes: int | None
    ) -> None:
        super().__init__(reason)
        self.tensor = tensor
        self.tensor_size = tensor_size
        self.reason = reason
        self.peak_live_bytes = peak_live_bytes


@dataclass(frozen=True)
class Input:
    """What an input names: ``kind`` is "model" (built-in), "archive" (``.pt2``), "csv"
    or "arrays" (a built-in synthetic graph); ``path`` is the file, if any; ``methods``
    the programs an archive of several holds (torch's ``package_pt2``), in its order,
    empty for one program."""

    label: str
    kind: str
    path: Path | None = None
    methods: tuple[str, ...] = ()

    @property
    def is_model(self) -> bool:
        return self.kind in ("model", "archive")


@dataclass
class LoadedInput:
    """An input read (arrays) or exported and lowered (a model's edge program, which each
    plan copies, since ``to_executorch`` changes it)."""

    input: Input
    lowering: str
    labels: list[str] = field(default_factory=list)
    starts: np.ndarray[Any, Any] | None = None
    ends: np.ndarray[Any, Any] | None = None
    sizes: np.ndarray[Any, Any] | None = None
    edge: Any = None

    def edge_copy(self) -> Any:
        return copy.deepcopy(self.edge)

    def arrays(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        assert self.starts is not None
        assert self.ends is not None
        assert self.sizes is not None
        return self.starts, self.ends, self.sizes


@dataclass
class InputPlan:
    """An input planned: the plan (``table``), what it was planned for, and what the
    planning reported. ``lowering`` is None for arrays; ``program`` (the
    ``ExecutorchProgramManager``) and ``node_names`` are a model's; ``proved_optimal`` and
    ``lower_bound`` are ``best``'s on arrays, and so is ``kept_bound`` (two or more
    memories: the most bytes any plan keeps in memory 1)."""

    input: Input
    memories: Hierarchy
    algorithm: str
    lowering: str | None
    table: TensorTable
    timings: dict[str, float]
    node_names: list[str] | None = None
    program: Any = None
    strategy: str | None = None
    proved_optimal: bool | None = None
    lower_bound: int | None = None
    kept_bound: int | None = None
    # What memory 1 keeps, in kept_bound's terms (bytes, or the objective's traffic), and
    # which terms those are; with kept_bound (a model's only with one placer call).
    kept: int | None = None
    objective: Objective = "bytes"
    # objective="traffic" on a model: each row's weight in table (a tensor's size times 1 +
    # its readers), for what another plan of the same rows keeps in those terms.
    weights: np.ndarray[Any, Any] | None = None
    # A model planned with reorder=True: what the reorder did (cadence_memplan.scheduling's
    # Reorder: peak-live and arena before and after, the bound, what moved).
    reorder: Any = None
    # What best spent (PlanResult's work, budget_exhausted, cut_short; in all, for a model).
    spent: SearchSpent = NOTHING_SPENT
    # A model planned with stage=True: the pass's staging.report.StagingReport.
    staging: Any = None

    @property
    def placer_seconds(self) -> float:
        return self.timings[OURS]


@dataclass(frozen=True)
class StateBuffer:
    """One mutable buffer of a program of several methods (state some method mutates):
    its name, its bytes, and where each method that uses it has it, ``(mem_id, offset)``."""

    name: str
    size: int
    places: dict[str, tuple[int, int]]

    @property
    def shared(self) -> bool:
        """At one place in every method that uses it."""
        return len(set(self.places.values())) == 1


@dataclass
class ProgramPlan:
    """A program of several methods planned together (one ``to_executorch``): each
    method's plan (``methods``, by name, in the program's order; each an
    :class:`InputPlan` of its own graph), the program, whether its mutable state was
    shared (``share_mutable_buffers``), the state's buffers, the unshared-state warnings
    the planner gave (never silent: a caller shows them), and the whole run's timings."""

    input: Input
    memories: Hierarchy
    algorithm: str
    lowering: str
    methods: dict[str, InputPlan]
    program: Any
    share_mutable_buffers: bool
    state: list[StateBuffer]
    warnings: list[str]
    timings: dict[str, float]

    def arenas(self) -> list[int]:
        """Per memory, the program's arena: the largest method's peak usage there (a
        runtime gives every method the same buffer per memory id)."""
        count = len(self.memories)
        per_method = [memory_stats(plan.table, count) for plan in self.methods.values()]
        return [max(stats[m].peak_usage for stats in per_method) for m in range(count)]
