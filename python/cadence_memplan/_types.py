"""The array API's vocabulary, shared by the core's wrapper (api.py) and the pure-Python
reference (reference.py): neither the C++ extension nor executorch is needed to import it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import numpy.typing as npt

# In the order of CadenceMemoryPlanning's mem_algo: upstream's two placers, whose
# placements ours reproduce exactly, then "best", which searches for smaller plans.
Algorithm = Literal["position", "heuristic", "best"]
ALGORITHMS: tuple[Algorithm, ...] = ("position", "heuristic", "best")
UPSTREAM_ALGORITHMS: tuple[Algorithm, ...] = ("position", "heuristic")
# How each memory finds the tensors alive with the one being placed (see plan()).
Occupancy = Literal["auto", "interval", "tree", "scan"]
OCCUPANCIES: tuple[Occupancy, ...] = ("auto", "interval", "tree", "scan")
# What "best" keeps in the fast memories in the Cadence drop-in and the command line: the
# most bytes, or the most traffic (a tensor's size times 1 + its readers in the graph).
Objective = Literal["bytes", "traffic"]
OBJECTIVES: tuple[Objective, ...] = ("bytes", "traffic")


class PlanningError(RuntimeError):
    """A tensor fits in no memory; ``tensor_index`` is its position in the input.

    The message names the tensor, every memory tried and why it did not fit, and the
    peak-live lower bound: how many bytes must be alive at once, against what the memories
    hold in all.
    """

    def __init__(self, message: str, tensor_index: int) -> None:
        super().__init__(message)
        self.tensor_index = tensor_index

    def __reduce__(self) -> tuple[type[PlanningError], tuple[str, int]]:
        return type(self), (str(self), self.tensor_index)


class Budget(NamedTuple):
    """What ``algorithm="best"`` may spend: ``work`` units of work (None: the default,
    ``cadence_memplan.api.DEFAULT_WORK_BUDGET``), the plan then a function of the input
    alone, and an optional wall-clock cap of ``ms`` milliseconds (None: none), the one
    setting under which the plan may vary from run to run (see :func:`cadence_memplan.plan`).
    How the library's flows (``workflow/plan.py``, the command line) pass ``plan``'s
    ``work_budget`` and ``budget_ms`` along."""

    work: int | None = None
    ms: float | None = None


#: The default budget: ``best``'s default work, no wall-clock cap.
DEFAULT_BUDGET = Budget()


class SearchSpent(NamedTuple):
    """What ``best``'s search spent, as :class:`PlanResult` says it (``work``,
    ``budget_exhausted``, ``cut_short``); for a model, over every placer call."""

    work: int = 0
    budget_exhausted: bool = False
    cut_short: bool = False

    def __add__(self, other: object) -> SearchSpent:
        if not isinstance(other, SearchSpent):
            return NotImplemented
        return SearchSpent(
            self.work + other.work,
            self.budget_exhausted or other.budget_exhausted,
            self.cut_short or other.cut_short,
        )

    @classmethod
    def of(cls, result: PlanResult) -> SearchSpent:
        return cls(result.work, result.budget_exhausted, result.cut_short)


#: No search: what the upstream placers spend.
NOTHING_SPENT = SearchSpent()


class Preplaced(NamedTuple):
    """Tensors already in a memory before the call (upstream's ``state.allocated_buffers``).

    The order of one memory's tensors here is that memory's list order, which the
    heuristic reads (see :func:`cadence_memplan.plan`).
    """

    starts: npt.ArrayLike
    ends: npt.ArrayLike
    sizes: npt.ArrayLike
    mem_ids: npt.ArrayLike
    offsets: npt.ArrayLike


@dataclass(frozen=True)
class PlanResult:
    """Where :func:`cadence_memplan.plan` put each tensor.

    ``bufsizes``, ``call_bufsizes`` and ``memory_order`` are indexed by memory id ``0..N``
    like upstream's ``MemoryPlanningState`` (id 0 is reserved and stays empty).
    ``memory_order[m]`` is memory m's list order after the call, in *slots*: entries below
    ``len(preplaced)`` name preplaced tensors, ``len(preplaced) + i`` names tensor i.
    ``bufsizes[m]`` is the aligned end of the highest tensor in memory m, preplaced
    tensors included; ``call_bufsizes[m]`` the same over this call's tensors alone (what
    upstream's ``place_spec`` raises ``state.bufsizes`` to). ``occupancy`` is the structure that answered the placers (what
    ``occupancy="auto"`` chose), or None for a plan that did not come from the C++ core.
    ``strategy`` says how ``algorithm="best"`` found its plan (placer and visit order, or
    the exact search and its preorder), and is None for the other algorithms.
    ``lower_bound`` (``algorithm="best"`` only, else None) is set when the plan leaves no
    byte outside memory 1 (always with one memory): every valid plan that does the same
    has a total bufsize of at least ``lower_bound`` bytes, and every other valid plan is
    worse; with one memory it bounds the bufsize. ``kept_bound`` (``"best"`` with two or
    more memories, else None) is proved: no valid plan keeps more bytes of this call's
    tensors in memory 1 (docs/best.md, "Tight memory"). ``proved_optimal`` is True when the plan's total
    bufsize equals ``lower_bound``, so no valid plan is better, or, when bytes spill out
    of memory 1, when memory 1 keeps ``kept_bound`` bytes: no valid plan keeps more there,
    the objective's first term (always False for ``"position"`` and ``"heuristic"``). ``progress`` (``"best"`` only) lists
    ``(milliseconds, total bufsize)`` each time the search's best plan improved, the first
    entry its first plan. ``work`` (``"best"`` only, else 0) is the work the search spent,
    in the units of ``work_budget``; ``budget_exhausted`` is True when the budget ran out
    before the search ended (more work might find a better plan); ``cut_short`` is True when
    the wall-clock cap ``budget_ms`` ended the search, the one case where the plan may change
    from run to run.
    """

    mem_ids: npt.NDArray[np.int64]
    offsets: npt.NDArray[np.int64]
    bufsizes: npt.NDArray[np.int64]
    call_bufsizes: npt.NDArray[np.int64]
    memory_order: tuple[npt.NDArray[np.int64], ...]
    occupancy: Occupancy | None = None
    strategy: str | None = None
    proved_optimal: bool = False
    lower_bound: int | None = None
    progress: tuple[tuple[float, int], ...] | None = None
    kept_bound: int | None = None
    work: int = 0
    budget_exhausted: bool = False
    cut_short: bool = False


@dataclass(frozen=True)
class ScheduleResult:
    """The order :func:`cadence_memplan.schedule` chose for a program's units.

    ``order`` is a legal permutation of the units (``order[step]`` is the unit that runs
    at that step), topological for the edges and for every buffer's producer before its
    users. ``peak_live`` is the most bytes alive at one step under ``order``;
    ``given_peak_live`` the same under the given order; ``lower_bound`` a bound no legal
    order goes below. ``proved_optimal`` is True when no legal order peaks below
    ``peak_live``. ``strategy`` says what found ``order``: ``"given"`` (nothing better
    found, so ``order`` is the given one), ``"exact"`` (a pass of the search that kept
    every state: optimal) or ``"beam"``. ``work`` is the work the search spent (the unit
    of ``work_budget``), and ``cut_short`` is True when ``budget_ms`` ended it, the one
    case where the result may change from run to run.
    """

    order: npt.NDArray[np.int64]
    peak_live: int
    given_peak_live: int
    lower_bound: int
    proved_optimal: bool
    strategy: Literal["given", "exact", "beam"]
    work: int
    cut_short: bool
