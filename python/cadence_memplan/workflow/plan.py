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
replay of its planning) is :mod:`~cadence_memplan.workflow.model`'s; the same input planned
by upstream's placers, for what ``best`` changed and ``--compare``, is
:mod:`~cadence_memplan.workflow.compare`'.

This module imports torch and executorch only when a model is planned; arrays need numpy.
Failures are typed: :class:`InputError` (an input that cannot be read or found),
:class:`LoweringError` (a model that cannot be lowered), :class:`DoesNotFit` (a tensor fits
in no memory, with the instance's peak-live bound) and :class:`InvalidPlan` (the validator
refused a plan).
"""

from __future__ import annotations

import os
import time
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from .._types import PlanningError, SearchSpent
from .._validation import closest
from ..analysis.sweep import Planned, SweepRow, arrays_planner, sweep
from ..api import plan, validate
from ..io.minimalloc import read_minimalloc_csv
from ..models import BUILTIN_INPUTS, SYNTHETIC_SIZES, build_model
from ..request import LOWERINGS, Hierarchy, Memory, PlanningOptions
from ..request.inputs import (
    OURS,
    DoesNotFit,
    Input,
    InputError,
    InputPlan,
    InvalidPlan,
    LoadedInput,
    LoweringError,
    ProgramPlan,
    Progress,
    quiet,
)
from ..stats import TensorTable, format_bytes, peak_live_bytes, plural
from ..synthetic import synthetic_graph

__all__ = [
    "DoesNotFit",
    "Input",
    "InputError",
    "InputPlan",
    "InvalidPlan",
    "LoadedInput",
    "LoweringError",
    "PlanningOptions",
    "archive_methods",
    "check_control_flow",
    "check_plan",
    "load_input",
    "plan_arrays",
    "plan_input",
    "plan_program",
    "quiet",
    "refuse_methods",
    "resolve_input",
    "sweep_input",
]


def resolve_input(source: str | os.PathLike[str]) -> Input:
    """The :class:`Input` a name or path stands for; raises :class:`InputError`."""
    text = os.fspath(source)
    path = Path(text)
    if path.exists():
        if path.is_dir():
            raise InputError(f"input {text} is a directory, expected a .pt2 or .csv file")
        suffix = path.suffix.lower()
        if suffix == ".pt2":
            return Input(path.name, "archive", path, archive_methods(path))
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


def archive_methods(path: Path) -> tuple[str, ...]:
    """The programs a ``.pt2`` archive holds when it holds several (torch's
    ``package_pt2``: one ``models/NAME.json`` each), in its order; empty for one program or
    a file that is not a zip archive (then loading it says what is wrong). Read from the
    zip's directory, without torch, so that a command refuses what a program of several
    cannot do before any work."""
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.namelist()
    except (OSError, zipfile.BadZipFile):
        return ()
    names = [
        PurePosixPath(entry).stem
        for entry in entries
        if PurePosixPath(entry).parent.name == "models" and entry.endswith(".json")
    ]
    return tuple(dict.fromkeys(names)) if len(set(names)) > 1 else ()


def load_input(
    source: str | os.PathLike[str] | Input, *, lowering: str, progress: Progress | None = None
) -> LoadedInput:
    """Read an input, or export (or load) a model and lower it with ``lowering``
    ("cadence" or "exir"; arrays ignore it). Raises :class:`InputError` or
    :class:`LoweringError`."""
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

        from ..cadence.lowering import LOWERING_DESCRIPTIONS, export_model, lower_exported
    except ImportError as error:
        raise InputError(
            f"planning models needs torch and executorch ({error}); install them with"
            ' `pip install torch==2.13.0 && pip install "cadence-memplan[executorch]"`, or'
            " plan a CSV instance or `synthetic`"
        ) from error
    if what.methods:
        assert what.path is not None
        return _lower_methods(what, lowering, progress)
    if what.path is not None:
        progress(f"loading {what.path}")
        try:
            exported = torch.export.load(what.path)
        except Exception as error:
            raise InputError(f"cannot read torch.export archive {what.path}: {error}") from error
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


def _lower_methods(what: Input, lowering: str, progress: Progress) -> Any:
    """A program of several methods, each loaded from the archive and lowered, one edge
    program holding them all (``cadence.lowering.lower_methods``)."""
    from .._boundary.upstream import load_pt2_programs
    from ..cadence.lowering import LOWERING_DESCRIPTIONS, lower_methods

    progress(f"loading {what.path} ({len(what.methods)} methods: {', '.join(what.methods)})")
    try:
        exported = load_pt2_programs(what.path)
    except Exception as error:
        raise InputError(f"cannot read torch.export archive {what.path}: {error}") from error
    progress(f"lowering every method with {LOWERING_DESCRIPTIONS[lowering]}")
    try:
        return lower_methods({name: exported[name] for name in what.methods}, lowering)
    except Exception as error:
        raise LoweringError(
            f"cannot lower {what.label} (--lowering {lowering}): {error}"
        ) from error


def refuse_methods(what: Input, task: str) -> None:
    """``task`` ("sweep", "plan_input") takes one program: an archive of several is an
    :class:`InputError` naming its methods and what takes them."""
    if what.methods:
        raise InputError(
            f"{what.label} holds {len(what.methods)} methods ({', '.join(what.methods)}):"
            f" {task} takes one program; plan or size a program of several methods"
            " (docs/stateful.md)"
        )


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
    options: PlanningOptions,
    *,
    progress: Progress | None = None,
) -> InputPlan:
    """Plan an input (a name, a path, or one :func:`load_input` returned) for
    ``memories`` as ``options`` say (:class:`~cadence_memplan.request.PlanningOptions`:
    the placer, ``best``'s budget and objective, and for models what is allocated, the
    reorder and the lowering). A model goes through a whole ``to_executorch`` with our
    ``CadenceMemoryPlanning`` in the backend config of its lowering. Raises
    :class:`DoesNotFit` when a tensor fits nowhere."""
    progress = progress or quiet
    loaded = _loaded(source, options.lowering, progress)
    refuse_methods(loaded.input, "plan_input (plan_program plans each method)")
    hierarchy = Hierarchy(memories)
    if options.reorder and not loaded.input.is_model:
        raise ValueError("reorder needs a model: a CSV or synthetic input has no node order")
    if options.stage and not loaded.input.is_model:
        raise ValueError("stage needs a model: a CSV or synthetic input has no graph")
    if not loaded.input.is_model:
        progress(f"planning {plural(len(loaded.labels), 'tensor')}")
        table, seconds, result = plan_arrays(loaded, hierarchy, options)
        best = options.algorithm == "best"
        return InputPlan(
            loaded.input, hierarchy, options.algorithm, None, table, {OURS: seconds},
            strategy=result.strategy,
            proved_optimal=result.proved_optimal if best else None,
            lower_bound=result.lower_bound if best else None,
            kept_bound=result.kept_bound if best else None,
            kept=int(table.sizes[table.mem_ids == 1].sum()) if best else None,
            spent=SearchSpent.of(result),
        )  # fmt: skip
    from .model import plan_model  # torch and executorch, for models only

    return plan_model(loaded, hierarchy, options, progress)


def plan_program(
    source: str | os.PathLike[str] | Input | LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    *,
    progress: Progress | None = None,
) -> ProgramPlan:
    """Plan a program of several methods (a ``.pt2`` of several programs, torch's
    ``package_pt2``) for ``memories`` as ``options`` say: every method in one
    ``to_executorch`` with our ``CadenceMemoryPlanning``, their mutable state shared with
    ``options.share_mutable_buffers`` (docs/stateful.md). A
    :class:`~cadence_memplan.request.inputs.ProgramPlan`: each method's plan, the
    program, the state's buffers and the unshared-state warnings (returned, for the
    caller to show). Raises :class:`DoesNotFit`, or :class:`LoweringError` for state two
    methods use unshared with ``options.strict_sharing``."""
    progress = progress or quiet
    loaded = _loaded(source, options.lowering, progress)
    from .model import plan_model_methods  # torch and executorch

    return plan_model_methods(loaded, Hierarchy(memories), options, progress)


def plan_arrays(
    loaded: LoadedInput,
    memories: Sequence[Memory],
    options: PlanningOptions,
    placer: Callable[..., Any] = plan,
) -> tuple[TensorTable, float, Any]:
    """(the plan, the placer's seconds, the placer's PlanResult), planned by ``placer``
    (the array API's ``plan``, or the reference's) as ``options`` say."""
    starts, ends, sizes = loaded.arrays()
    hierarchy = Hierarchy(memories)
    began = time.perf_counter()
    try:
        result = placer(
            starts, ends, sizes, hierarchy.sizes, hierarchy.alignments,
            algorithm=options.algorithm, **options.budget_arguments(),
        )  # fmt: skip
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


def check_control_flow(program: Any, method: str = "forward") -> str | None:
    """For a planned program (an ``ExecutorchProgramManager``; its ``method``) with control flow, the
    control-flow check's verdict (``cadence_memplan.validate_control_flow``: no
    submodule overwrites what its parent still needs), ``None`` when valid or when the
    program has none; the tensors :func:`check_plan` leaves to it."""
    from .._boundary.control_flow import has_control_flow
    from .._boundary.control_flow_check import validate_control_flow

    graph_module = program.exported_program(method).graph_module
    if not has_control_flow(graph_module):
        return None
    return validate_control_flow(graph_module)


def check_plan(table: TensorTable, memories: Sequence[Memory]) -> str | None:
    """The validator's verdict on a plan, ``None`` when valid. Tensors that lie inside
    another's storage on purpose are left out; no other pair may collide."""
    own = ~table.shares_storage
    hierarchy = Hierarchy(memories)
    return validate(
        table.starts[own], table.ends[own], table.sizes[own], table.mem_ids[own],
        table.offsets[own], hierarchy.sizes, hierarchy.alignments,
    )  # fmt: skip


def sweep_input(
    source: str | os.PathLike[str] | Input | LoadedInput,
    memories: Sequence[Memory],
    varied: int,
    sizes: Sequence[int],
    options: PlanningOptions,
    *,
    progress: Progress | None = None,
    step_done: Callable[[int, int], None] | None = None,
) -> list[SweepRow]:
    """One :class:`~cadence_memplan.analysis.sweep.SweepRow` per size of memory
    ``varied`` (an index): each row is :func:`plan_input` at that size with ``options``
    (same lowering, same backend config), but a model is lowered once and each size
    replays only its planning step. Each plan is checked by the validator
    (:class:`InvalidPlan`). Not with ``options.stage``: each size would stage anew."""
    if options.stage:
        raise ValueError("stage applies to plan_input only, not to a sweep")
    progress = progress or quiet
    loaded = _loaded(source, options.lowering, progress)
    refuse_methods(loaded.input, "sweep")
    hierarchy = Hierarchy(memories)
    if loaded.input.is_model:
        from .model import sweep_planner  # torch and executorch, for models only

        plan_at = sweep_planner(loaded, hierarchy, varied, sizes, options, progress)
    else:
        starts, ends, tensor_sizes = loaded.arrays()
        what = "buffer" if loaded.input.kind == "csv" else "tensor"
        names = [f"{what} {name!r}" for name in loaded.labels]
        plan_at = arrays_planner(starts, ends, tensor_sizes, options, names)

    def checked(config: Sequence[Memory]) -> Planned | str:
        outcome = plan_at(config)
        if isinstance(outcome, str):
            return outcome
        problem = check_plan(outcome.table, config)
        if problem is not None:
            at = ", ".join(format_bytes(memory.size) for memory in config)
            raise InvalidPlan(f"the plan at {at} is invalid: {problem}")
        return outcome

    return sweep(checked, hierarchy, varied, sizes, step_done)
