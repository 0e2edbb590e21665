"""From an input to its plan: the one path that ``cadence-memplan plan`` and ``sweep`` (and
any Python caller) take, so that both describe the same program.

An input is a built-in model (:data:`~cadence_memplan.models.MODELS`, :data:`~cadence_memplan.models.SCHEDULING_MODELS`), a ``torch.export``
archive (``.pt2``), a MiniMalloc CSV instance or a built-in synthetic graph.
:func:`load_input` reads it, and exports and lowers a model once, the way ``lowering``
says ("cadence": Cadence's compiler's passes and backend config, the program Cadence
ships; "exir": plain ``to_edge`` and exir's default config). :func:`plan_input` plans it
for a hierarchy of memories with a placer and returns an :class:`InputPlan`;
:func:`sweep_input` plans it at many sizes of one memory (a model is lowered once, and
each size replays only its planning step, in the same backend config), each row equal to
:func:`plan_input` at that size. A model's own path (a whole ``to_executorch``, the
replay of its planning) is :mod:`~cadence_memplan.model_planning`'s; the same input planned
by upstream's placers, for what ``best`` changed and ``--compare``, is
:mod:`~cadence_memplan.comparisons`'.

This module imports torch and executorch only when a model is planned; arrays need numpy.
Failures are typed: :class:`InputError` (an input that cannot be read or found),
:class:`LoweringError` (a model that cannot be lowered), :class:`DoesNotFit` (a tensor fits
in no memory, with the instance's peak-live bound) and :class:`InvalidPlan` (the validator
refused a plan).
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ._types import (
    DEFAULT_BUDGET,
    NOTHING_SPENT,
    Budget,
    Objective,
    PlanningError,
    SearchSpent,
)
from ._validation import closest
from .analysis.sweep import Planned, SweepRow, arrays_planner, sweep
from .api import plan, validate
from .io.memories import Memory
from .io.minimalloc import read_minimalloc_csv
from .models import BUILTIN_INPUTS, SYNTHETIC_SIZES, build_model
from .stats import TensorTable, format_bytes, peak_live_bytes, plural
from .synthetic import synthetic_graph

__all__ = [
    "DoesNotFit",
    "Input",
    "InputError",
    "InputPlan",
    "InvalidPlan",
    "LoadedInput",
    "LoweringError",
    "check_plan",
    "load_input",
    "plan_arrays",
    "plan_input",
    "quiet",
    "resolve_input",
    "sweep_input",
]

Progress = Callable[[str], None]
OURS = "placer (C++ core)"


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
    or "arrays" (a built-in synthetic graph); ``path`` is the file, if any."""

    label: str
    kind: str
    path: Path | None = None

    @property
    def is_model(self) -> bool:
        return self.kind in ("model", "archive")


def resolve_input(source: str | os.PathLike[str]) -> Input:
    """The :class:`Input` a name or path stands for; raises :class:`InputError`."""
    text = os.fspath(source)
    path = Path(text)
    if path.exists():
        if path.is_dir():
            raise InputError(f"input {text} is a directory, expected a .pt2 or .csv file")
        suffix = path.suffix.lower()
        if suffix == ".pt2":
            return Input(path.name, "archive", path)
        if suffix == ".csv":
            return Input(path.name, "csv", path)
        raise InputError(
            f"input {text}: unknown file type {suffix or '(none)'}, expected .pt2 or .csv"
        )
    if text in BUILTIN_INPUTS:
        return Input(text, "arrays" if text in SYNTHETIC_SIZES else "model")
    if path.suffix or os.sep in text or "/" in text:
        raise InputError(f"input {text}: no such file")
    guess = closest(text, list(BUILTIN_INPUTS))
    raise InputError(
        f"input {text!r} is neither a file nor a built-in model ("
        + (f"did you mean {guess!r}? " if guess else "")
        + f"choose from {', '.join(BUILTIN_INPUTS)}; see --list-models)"
    )


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


def quiet(_: str) -> None:
    """A progress that says nothing."""


def load_input(
    source: str | os.PathLike[str] | Input, *, lowering: str, progress: Progress | None = None
) -> LoadedInput:
    """Read an input, or export (or load) a model and lower it with ``lowering``
    ("cadence" or "exir"; arrays ignore it). Raises :class:`InputError` or
    :class:`LoweringError`."""
    from .cadence import LOWERINGS

    if lowering not in LOWERINGS:
        raise ValueError(f"lowering must be one of {LOWERINGS}, got {lowering!r}")
    progress = progress or quiet
    what = source if isinstance(source, Input) else resolve_input(source)
    if what.kind == "csv":
        progress(f"reading {what.path}")
        assert what.path is not None
        try:
            instance = read_minimalloc_csv(what.path)
        except (OSError, ValueError, UnicodeDecodeError) as error:
            raise InputError(f"cannot read MiniMalloc CSV: {error}") from error
        return LoadedInput(
            what, lowering, instance.ids.tolist(), instance.starts, instance.ends, instance.sizes
        )
    if what.kind == "arrays":
        graph = synthetic_graph(SYNTHETIC_SIZES[what.label])
        labels = [f"t{index}" for index in range(len(graph.sizes))]
        return LoadedInput(what, lowering, labels, graph.starts, graph.ends, graph.sizes)
    return LoadedInput(what, lowering, edge=_lower(what, lowering, progress))


def _lower(what: Input, lowering: str, progress: Progress) -> Any:
    progress("importing torch and executorch")
    try:
        import executorch.backends.cadence.aot.ops_registrations  # noqa: F401  (cadence ops)
        import torch

        from .cadence.lowering import LOWERING_DESCRIPTIONS, export_model, lower_exported
    except ImportError as error:
        raise InputError(
            f"planning models needs torch and executorch ({error}); install them with"
            ' `pip install torch==2.13.0 && pip install "cadence-memplan[executorch]"`, or'
            " plan a CSV instance or `synthetic`"
        ) from error
    if what.path is not None:
        progress(f"loading {what.path}")
        try:
            exported = torch.export.load(what.path)
        except Exception as error:
            raise InputError(_archive_error(what.path, error)) from error
    else:
        progress(f"exporting the built-in model {what.label!r} with torch.export")
        model, example_inputs = build_model(what.label)
        exported = export_model(model, example_inputs, lowering)
    progress(f"lowering with {LOWERING_DESCRIPTIONS[lowering]}")
    try:
        return lower_exported(exported, lowering)
    except Exception as error:
        raise LoweringError(
            f"cannot lower {what.label} (--lowering {lowering}): {error}"
        ) from error


def _archive_error(path: Any, error: Exception) -> str:
    """Why a ``.pt2`` archive cannot be planned: several programs in it (a multi-method
    program), said by name, or what torch said."""
    from ._boundary.upstream import pt2_program_names

    names = pt2_program_names(path)
    if names is not None and len(names) > 1:
        return (
            f"{path} holds {len(names)} programs ({', '.join(names)}): the command line"
            " plans one program; plan a multi-method program in Python, its methods"
            " together, with CadenceMemoryPlanning(..., share_mutable_buffers=True)"
            " (docs/stateful.md)"
        )
    return f"cannot read torch.export archive {path}: {error}"


@dataclass
class InputPlan:
    """An input planned: the plan (``table``), what it was planned for, and what the
    planning reported. ``lowering`` is None for arrays; ``program`` (the
    ``ExecutorchProgramManager``) and ``node_names`` are a model's; ``proved_optimal`` and
    ``lower_bound`` are ``best``'s on arrays, and so is ``kept_bound`` (two or more
    memories: the most bytes any plan keeps in memory 1)."""

    input: Input
    memories: tuple[Memory, ...]
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

    @property
    def placer_seconds(self) -> float:
        return self.timings[OURS]


def _loaded(
    source: str | os.PathLike[str] | Input | LoadedInput, lowering: str, progress: Progress
) -> LoadedInput:
    if isinstance(source, LoadedInput):
        if source.input.is_model and source.lowering != lowering:
            raise ValueError(f"the input was lowered with {source.lowering!r}, not {lowering!r}")
        return source
    return load_input(source, lowering=lowering, progress=progress)


def plan_input(
    source: str | os.PathLike[str] | Input | LoadedInput,
    memories: Sequence[Memory],
    algorithm: str,
    *,
    lowering: str,
    alloc_inputs: bool = True,
    alloc_outputs: bool = True,
    budget: Budget = DEFAULT_BUDGET,
    objective: Objective = "bytes",
    reorder: bool = False,
    progress: Progress | None = None,
) -> InputPlan:
    """Plan an input (a name, a path, or one :func:`load_input` returned) for
    ``memories`` with ``algorithm``. A model goes through a whole ``to_executorch`` with
    our ``CadenceMemoryPlanning`` in the backend config of ``lowering``;
    ``alloc_inputs``/``alloc_outputs`` apply to models only; ``budget`` is ``best``'s
    (its work, and an optional wall-clock cap); ``objective`` is ``best``'s on a model (the drop-in's ``objective``);
    ``reorder`` (models only) lets the pass plan better node orders too. Raises :class:`DoesNotFit` when a tensor fits nowhere."""
    progress = progress or quiet
    loaded = _loaded(source, lowering, progress)
    memories = tuple(memories)
    if reorder and not loaded.input.is_model:
        raise ValueError("reorder needs a model: a CSV or synthetic input has no node order")
    if not loaded.input.is_model:
        progress(f"planning {plural(len(loaded.labels), 'tensor')}")
        table, seconds, result = plan_arrays(loaded, memories, algorithm, budget)
        best = algorithm == "best"
        return InputPlan(
            loaded.input, memories, algorithm, None, table, {OURS: seconds},
            strategy=result.strategy,
            proved_optimal=result.proved_optimal if best else None,
            lower_bound=result.lower_bound if best else None,
            kept_bound=result.kept_bound if best else None,
            kept=int(table.sizes[table.mem_ids == 1].sum()) if best else None,
            spent=SearchSpent.of(result),
        )  # fmt: skip
    from .model_planning import plan_model  # torch and executorch, for models only

    return plan_model(
        loaded, memories, algorithm, alloc_inputs=alloc_inputs, alloc_outputs=alloc_outputs,
        budget=budget, objective=objective, reorder=reorder, progress=progress,
    )  # fmt: skip


def plan_arrays(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    algorithm: str,
    budget: Budget = DEFAULT_BUDGET,
    placer: Callable[..., Any] = plan,
) -> tuple[TensorTable, float, Any]:
    """(the plan, the placer's seconds, the placer's PlanResult); ``budget`` is ``best``'s,
    and only ``best``'s: upstream's placers (and the reference's) take none."""
    starts, ends, sizes = loaded.arrays()
    began = time.perf_counter()
    try:
        result = placer(
            starts,
            ends,
            sizes,
            [memory.size for memory in memories],
            [memory.alignment for memory in memories],
            algorithm=algorithm,
            **({"work_budget": budget.work, "budget_ms": budget.ms} if algorithm == "best" else {}),
        )
    except PlanningError as error:
        raise _arrays_failure(loaded, error) from error
    seconds = time.perf_counter() - began
    table = TensorTable(loaded.labels, result.mem_ids, result.offsets, sizes, starts, ends)
    return table, seconds, result


def _arrays_failure(loaded: LoadedInput, error: PlanningError) -> DoesNotFit:
    """The core's failure in the input's terms, from its structured fields: the tensor by
    its label (a CSV's by id and half-open ``[lower, upper)``, as the file has it)."""
    starts, ends, sizes = loaded.arrays()
    index = error.tensor_index
    size = int(sizes[index])
    if loaded.input.kind == "csv":
        name = f"buffer {loaded.labels[index]!r}"
        where = f"[lower, upper) = [{int(starts[index])}, {int(ends[index]) + 1})"
    else:
        name = f"tensor {loaded.labels[index]!r}"
        where = f"lifetime [{int(starts[index])}, {int(ends[index])}]"
    # The core's first line names the tensor by its index; its other lines say why each
    # memory refused it and what the memories hold against the peak-live bound.
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    headline = f"cannot place {name} ({size:,} bytes, {where}) in any memory:"
    reason = "; ".join([headline, *lines[1:]]).replace(":; ", ": ")
    return DoesNotFit(name, size, reason, peak_live_bytes(starts, ends, sizes))


def check_plan(table: TensorTable, memories: Sequence[Memory]) -> str | None:
    """The validator's verdict on a plan, ``None`` when valid. Tensors that lie inside
    another's storage on purpose are left out; no other pair may collide."""
    own = ~table.shares_storage
    return validate(
        table.starts[own],
        table.ends[own],
        table.sizes[own],
        table.mem_ids[own],
        table.offsets[own],
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
    )


def sweep_input(
    source: str | os.PathLike[str] | Input | LoadedInput,
    memories: Sequence[Memory],
    varied: int,
    sizes: Sequence[int],
    algorithm: str,
    *,
    lowering: str,
    alloc_inputs: bool = True,
    alloc_outputs: bool = True,
    budget: Budget = DEFAULT_BUDGET,
    progress: Progress | None = None,
    step_done: Callable[[int, int], None] | None = None,
) -> list[SweepRow]:
    """One :class:`~cadence_memplan.analysis.sweep.SweepRow` per size of memory
    ``varied`` (an index): each row is :func:`plan_input` at that size (same lowering,
    same backend config), but a model is lowered once and each size replays only its
    planning step. Each plan is checked by the validator (:class:`InvalidPlan`)."""
    progress = progress or quiet
    loaded = _loaded(source, lowering, progress)
    if loaded.input.is_model:
        from .model_planning import sweep_planner  # torch and executorch, for models only

        plan_at = sweep_planner(
            loaded, memories, varied, sizes, algorithm, alloc_inputs, alloc_outputs, budget,
            progress,
        )  # fmt: skip
    else:
        starts, ends, tensor_sizes = loaded.arrays()
        what = "buffer" if loaded.input.kind == "csv" else "tensor"
        names = [f"{what} {name!r}" for name in loaded.labels]
        plan_at = arrays_planner(starts, ends, tensor_sizes, algorithm, names, budget)

    def checked(config: Sequence[Memory]) -> Planned | str:
        outcome = plan_at(config)
        if isinstance(outcome, str):
            return outcome
        problem = check_plan(outcome.table, config)
        if problem is not None:
            at = ", ".join(format_bytes(memory.size) for memory in config)
            raise InvalidPlan(f"the plan at {at} is invalid: {problem}")
        return outcome

    return sweep(checked, memories, varied, sizes, step_done)
