"""Cadence's memory planning, ours: the drop-in placers (``algorithms.py``),
``CadenceMemoryPlanning`` and the older API's standalone planning functions
(``memory_planning.py``, named for upstream's module), the pass around the placer
(``planning_pass.py``, ``graph_code.py``), ``patch_cadence`` (``patching.py``) and its
runner (``python -m cadence_memplan.cadence.patch``), upstream's reports vectorised
(``reports.py``), lowering a model with timing (``lowering.py``), a model's planning step
run again per memory config (``sweep.py``) and the import shim for Cadence's compiler
(``compiler.py``). Specs are read and written through ``_boundary``, as ``exir/`` does;
nothing here imports ``exir/``.

Importing this package needs numpy only (the runner checks ``CADENCE_MEMPLAN_ALGO`` before
torch loads); its modules import executorch.
"""

import os

# How a model reaches to_executorch (lowering.lower_exported): "cadence", through Cadence's
# compiler's passes and its backend config, as export_to_executorch_gen_etrecord lowers;
# "exir", plain to_edge and exir's default config, no Cadence passes. Defined with the
# options that choose one.
from ..request.options import LOWERINGS as LOWERINGS

ALGORITHM_ENV = "CADENCE_MEMPLAN_ALGO"
REORDER_ENV = "CADENCE_MEMPLAN_REORDER"
SHARE_ENV = "CADENCE_MEMPLAN_SHARE_MUTABLE_BUFFERS"
STRICT_SHARING_ENV = "CADENCE_MEMPLAN_STRICT_SHARING"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")
# "mem_algo": every planner keeps its caller's mem_algo; "best": every planner uses best.
PATCH_ALGORITHMS = ("mem_algo", "best")


def resolve_patch_algorithm(algorithm: str | None) -> str:
    """``patch_cadence``'s algorithm: ``algorithm``, or (None) ``CADENCE_MEMPLAN_ALGO``,
    unset or empty meaning ``"mem_algo"``; anything else raises ``ValueError``. Here, with
    numpy-only imports, so that the runner refuses a bad value before importing torch."""
    if algorithm is None:
        value = os.environ.get(ALGORITHM_ENV, "").strip()
        source = f"{ALGORITHM_ENV}={value!r}"
        algorithm = value.lower() or "mem_algo"
    else:
        source = f"algorithm={algorithm!r}"
    if algorithm not in PATCH_ALGORITHMS:
        raise ValueError(
            f"{source}: expected 'best' (every Cadence planner places with best, the smallest"
            " of many plans) or 'mem_algo' (the default: each keeps its mem_algo, 0 position,"
            " 1 heuristic, both upstream's placements, 2 best)"
        )
    return algorithm


def resolve_patch_reorder(reorder: bool | None) -> bool:
    """``patch_cadence``'s reorder: ``reorder``, or (None) ``CADENCE_MEMPLAN_REORDER``:
    1/true/yes/on, or 0/false/no/off (unset or empty: off); anything else raises
    ``ValueError``. Here, with numpy-only imports, for the runner, as
    :func:`resolve_patch_algorithm`."""
    return _resolve_switch(
        reorder,
        REORDER_ENV,
        "every Cadence planner also plans better node orders, keeping the best plan",
        "the graph's order",
    )


def resolve_patch_share(share_mutable_buffers: bool | None) -> bool:
    """``patch_cadence``'s share_mutable_buffers: the argument, or (None)
    ``CADENCE_MEMPLAN_SHARE_MUTABLE_BUFFERS``, read as :func:`resolve_patch_reorder`."""
    return _resolve_switch(
        share_mutable_buffers,
        SHARE_ENV,
        "every Cadence planner plans a program's methods together, their mutable state placed once",
        "each method planned on its own",
    )


def resolve_patch_strict_sharing(strict_sharing: bool | None) -> bool:
    """``patch_cadence``'s strict_sharing: the argument, or (None)
    ``CADENCE_MEMPLAN_STRICT_SHARING``, read as :func:`resolve_patch_reorder`."""
    return _resolve_switch(
        strict_sharing,
        STRICT_SHARING_ENV,
        "state that methods do not share is an error",
        "a warning",
    )


def _resolve_switch(value: bool | None, env: str, on: str, off: str) -> bool:
    if value is not None:
        return bool(value)
    text = os.environ.get(env, "").strip()
    if text.lower() in _TRUE:
        return True
    if text.lower() in _FALSE:
        return False
    raise ValueError(f"{env}={text!r}: expected 1 ({on}) or 0 (the default: {off})")


# What each lowering is, for progress lines and reports.
LOWERING_DESCRIPTIONS = {
    "cadence": "Cadence's compiler's passes and backend config",
    "exir": "exir's to_edge and the default backend config, no Cadence passes or nops",
}
