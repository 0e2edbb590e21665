"""How to plan, in one frozen object: :class:`PlanningOptions`.

The command line builds it once from its options, a Python caller once from its
arguments; ``plan_input``, ``sweep_input`` and ``size_input`` take it whole and hand it
down to the placer, so that a new option is a field here and nowhere else. Its checks
are the only ones of these options in the flows: a choice that is not one, a budget out
of range, and what only ``best`` takes (:class:`BestOnlyOption`). The budget reaches a
placer through :meth:`PlanningOptions.configure`, the one place it is unpacked there.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from .._types import ALGORITHMS, OBJECTIVES, Algorithm, Budget, Objective
from .._validation import check_budget_ms, check_choice, check_work_budget

__all__ = ["LOWERINGS", "BestOnlyOption", "Lowering", "PlanningOptions"]

# How a model reaches to_executorch: Cadence's compiler's passes and backend config, or
# plain to_edge and exir's default config.
Lowering = Literal["cadence", "exir"]
LOWERINGS: tuple[Lowering, ...] = ("cadence", "exir")


class BestOnlyOption(ValueError):
    """An option only ``best`` takes, given with another placer; ``option`` names the
    field (``work``, ``budget_ms``, ``objective``), ``algorithm`` the placer."""

    def __init__(self, option: str, algorithm: str) -> None:
        super().__init__(
            f"{option} applies to algorithm='best' only, not {algorithm!r}, which places"
            " every tensor once, without a search"
        )
        self.option = option
        self.algorithm = algorithm


@dataclass(frozen=True)
class PlanningOptions:
    """How an input is planned, the same for ``plan``, ``sweep`` and ``size``.

    ``algorithm`` is the placer (``"position"``, ``"heuristic"``, ``"best"``); ``work``
    and ``budget_ms`` are ``best``'s work budget (None: its default) and optional
    wall-clock cap, and ``objective`` what it keeps in memory 1 (``"traffic"``: models
    only); ``alloc_inputs``, ``alloc_outputs`` and ``reorder`` apply to models only, and
    so does ``lowering`` ("cadence" or "exir"; arrays ignore it). ``stage`` (models, and
    ``plan`` only) stages the program through memory 1 by DMA before planning it, under
    the cost model in the file ``cost_model`` (None: the default; docs/staging.md).
    Checked when made: ValueError (:class:`BestOnlyOption` for what only ``best`` takes)
    or TypeError.
    """

    algorithm: Algorithm = "position"
    work: int | None = None
    budget_ms: float | None = None
    objective: Objective = "bytes"
    alloc_inputs: bool = True
    alloc_outputs: bool = True
    reorder: bool = False
    lowering: Lowering = "cadence"
    share_mutable_buffers: bool = False
    strict_sharing: bool = False
    stage: bool = False
    cost_model: str | None = None  # a file: JSON or TOML

    def __post_init__(self) -> None:
        check_choice("algorithm", self.algorithm, ALGORITHMS)
        check_choice("objective", self.objective, OBJECTIVES)
        check_choice("lowering", self.lowering, LOWERINGS)
        if self.work is not None:
            check_work_budget(self.work, 0)
        check_budget_ms(self.budget_ms)
        if self.algorithm != "best":
            for option, default in (("work", None), ("budget_ms", None), ("objective", "bytes")):
                if getattr(self, option) != default:
                    raise BestOnlyOption(option, self.algorithm)
        flags = ("alloc_inputs", "alloc_outputs", "reorder", "share_mutable_buffers")
        for flag in (*flags, "strict_sharing", "stage"):
            if not isinstance(getattr(self, flag), bool):
                raise TypeError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
        if self.share_mutable_buffers and self.strict_sharing:
            raise ValueError(
                "strict_sharing applies without share_mutable_buffers (it makes unshared"
                " state an error); with sharing every mutable buffer is shared"
            )
        if self.cost_model is not None and not self.stage:
            raise ValueError("cost_model goes with stage=True")
        if self.stage and self.share_mutable_buffers:
            raise ValueError(
                "stage stages each method as it is planned; share_mutable_buffers plans"
                " the methods later, together: use one or the other"
            )

    @property
    def sharing_arguments(self) -> dict[str, bool]:
        """``share_mutable_buffers`` and ``strict_sharing`` as ``CadenceMemoryPlanning``
        takes them, only those set (upstream's class takes neither)."""
        names = ("share_mutable_buffers", "strict_sharing")
        return {name: True for name in names if getattr(self, name)}

    @property
    def budget(self) -> Budget:
        """``best``'s budget: ``(work, budget_ms)``."""
        return Budget(self.work, self.budget_ms)

    def replace(self, **changes: Any) -> PlanningOptions:
        """The same options with ``changes`` (checked again)."""
        return dataclasses.replace(self, **changes)

    def for_placer(self, algorithm: Algorithm) -> PlanningOptions:
        """The same options for ``algorithm``: what only ``best`` takes dropped for another
        placer (upstream's placers, planned beside ``best`` for comparison)."""
        if algorithm == "best":
            return dataclasses.replace(self, algorithm=algorithm)
        return dataclasses.replace(
            self, algorithm=algorithm, work=None, budget_ms=None, objective="bytes"
        )

    def with_budget(self, budget: Budget) -> PlanningOptions:
        """The same options with ``best``'s budget set to ``budget``."""
        return dataclasses.replace(self, work=budget.work, budget_ms=budget.ms)

    def budget_arguments(self) -> dict[str, Any]:
        """``best``'s budget as the array API's ``plan`` takes it, nothing for another
        placer (nor for the reference's, which takes no budget)."""
        if self.algorithm != "best":
            return {}
        return {"work_budget": self.work, "budget_ms": self.budget_ms}

    def configure(self, placer: Any) -> None:
        """Set ``best``'s budget and objective on a drop-in placer (``cadence/algorithms.py``'s
        ``_CorePlannedAlgo``): the one place the options reach a placer built by upstream's
        code, which takes no options of its own."""
        placer.work_budget, placer.budget_ms = self.work, self.budget_ms
        placer.objective = self.objective
