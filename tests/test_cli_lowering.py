"""``cadence-memplan plan MODEL`` plans the program Cadence's compiler ships.

By default a model goes through Cadence's own passes and backend config
(``--lowering cadence``), so ``--pte`` writes the bytes Cadence's compiler writes for the
same model and memories; ``--lowering exir`` plans exir's program (plain ``to_edge``,
exir's default config, no Cadence nops). The report names the lowering. The command line runs in-process
here (``cadence_memplan.cli.main``), so torch is imported once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "executorch",
    reason='needs torch and executorch: pip install torch==2.13.0 && pip install ".[executorch]"',
)

import torch
from executorch.backends.cadence.aot.memory_planning import (
    CadenceMemoryPlanning as UpstreamCadenceMemoryPlanning,
)
from executorch.backends.cadence.aot.pass_utils import CompileMode
from executorch.exir import ExecutorchBackendConfig, to_edge

import cadence_memplan
from cadence_memplan import ALGORITHMS
from cadence_memplan.cadence.compiler import import_cadence_compiler
from cadence_memplan.cadence.lowering import memory_config
from cadence_memplan.cli import main
from cadence_memplan.io import DEFAULT_MEMORY_SPEC, parse_memory_spec
from cadence_memplan.models import build_model

pytestmark = pytest.mark.executorch

compiler = import_cadence_compiler()
MEMORY_SPEC = "fast=8KiB:16,near=64KiB:32,far=16MiB:64"  # small enough to spill


def plan_to_pte(
    capsys: pytest.CaptureFixture[str], pte: Path, *arguments: str | Path
) -> tuple[bytes, str]:
    status = main([*map(str, arguments), "--pte", str(pte), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0, out
    return pte.read_bytes(), out


def cadence_config(spec: str) -> Any:
    return memory_config(parse_memory_spec(spec))


@pytest.mark.parametrize("algorithm", ["position", "heuristic", "best"])
@pytest.mark.parametrize("name", ["cnn", "mlp"])
def test_pte_is_what_cadences_compiler_writes(
    name: str, algorithm: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    written, report = plan_to_pte(
        capsys, tmp_path / "cli.pte", name, "--memory", MEMORY_SPEC, "--algo", algorithm
    )
    assert "lowering: cadence (Cadence's compiler's passes and backend config)" in report
    # mem_algo=2 exists only in ours: Cadence's compiler reaches it through the patch.
    with cadence_memplan.patch_cadence():
        shipped = compiler.export_to_executorch_gen_etrecord(
            *build_model(name),
            memory_config=cadence_config(MEMORY_SPEC),
            mem_algo=ALGORITHMS.index(algorithm),
        )
    assert written == shipped.buffer


def test_exported_archive_is_what_cadences_compiler_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model, inputs = build_model("cnn")
    exported = torch.export.export(model, inputs, strict=True)
    archive = tmp_path / "cnn.pt2"
    torch.export.save(exported, archive)
    written, _ = plan_to_pte(capsys, tmp_path / "cli.pte", archive, "--algo", "heuristic")
    shipped = compiler._lower_ep_to_cadence_gen_etrecord(
        torch.export.load(archive),
        memory_config=cadence_config(DEFAULT_MEMORY_SPEC),
        mem_algo=1,
    )
    assert written == shipped.buffer


def test_exir_lowering_is_exirs_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    written, report = plan_to_pte(capsys, tmp_path / "exir.pte", "cnn", "--lowering", "exir")
    assert "lowering: exir (exir's to_edge and the default backend config, no Cadence" in report
    model, inputs = build_model("cnn")
    # MINIMAL: only the constraints every program needs, no cat or slice made a nop.
    planning = UpstreamCadenceMemoryPlanning(
        cadence_config(DEFAULT_MEMORY_SPEC), CompileMode.MINIMAL, 0
    )
    plain = to_edge(torch.export.export(model, inputs, strict=False)).to_executorch(
        ExecutorchBackendConfig(memory_planning_pass=planning)
    )
    assert written == plain.buffer
    # The lowering matters: Cadence's passes give this conv net another program.
    cadence, _ = plan_to_pte(capsys, tmp_path / "cadence.pte", "cnn")
    assert cadence != written
