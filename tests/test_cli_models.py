"""The command line on models (marker ``executorch``): the default model with its plot, plan
and ``.pte``, ``--compare`` against upstream's pass, a ``torch.export`` archive (readable or
not), and a model that cannot fit. Each run imports torch and executorch and lowers a
model (seconds), so there are few of them; CSV inputs cover the options.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_support import MODEL_TIMEOUT, error_line, image_size, run

from cadence_memplan.io import read_plan


@pytest.mark.executorch
def test_default_model_with_plot_plan_and_program(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    png, out, pte = tmp_path / "map.png", tmp_path / "plan.json", tmp_path / "model.pte"
    result = run("--plot", png, "--out", out, "--pte", pte, timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "encoder: " in result.stdout
    for name in ("fast", "near", "far"):
        assert any(line.startswith(name + " ") for line in result.stdout.splitlines())
    assert "placer (C++ core)" in result.stdout
    assert "whole to_executorch" in result.stdout
    assert "plan check: valid" in result.stdout
    # Two panels (far holds nothing, so it is a one-line note): 10 x (2 x 2.4 + 0.25) in.
    assert image_size(png) == (1000, 505)
    plan = read_plan(out)
    assert len(plan) > 50
    assert set(plan.mem_ids.tolist()) <= {1, 2, 3}
    assert pte.stat().st_size > 0
    assert pte.read_bytes()[4:8] == b"ET12"  # the ExecuTorch flatbuffer's file identifier
    # As the CLI and README say: Cadence's ops are in it, so the portable runtime refuses it.
    assert "runtime built with Cadence's kernels" in result.stdout
    runtime = pytest.importorskip("executorch.runtime")
    program = runtime.Runtime.get().load_program(pte)
    with pytest.raises(RuntimeError, match="Failed to load method forward"):
        program.load_method("forward")


@pytest.mark.executorch
def test_model_compare_reports_identical_placements() -> None:
    result = run("mlp", "--algo", "position", "--compare", timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    assert "upstream's CadenceMemoryPlanning placer" in result.stdout
    assert "placements identical" in result.stdout
    assert "serialized programs identical" in result.stdout


@pytest.mark.executorch
def test_exported_archive_input(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8))
    archive = tmp_path / "model.pt2"
    torch.export.save(torch.export.export(model.eval(), (torch.randn(2, 16),)), archive)
    out = tmp_path / "plan.csv"
    with_inputs = run(archive, "--out", out, timeout=MODEL_TIMEOUT)
    assert with_inputs.returncode == 0, with_inputs.stderr
    assert "model.pt2: " in with_inputs.stdout
    without_inputs = run(
        archive, "--no-alloc-inputs", "--no-alloc-outputs", "--out", tmp_path / "io.csv",
        timeout=MODEL_TIMEOUT,
    )  # fmt: skip
    assert without_inputs.returncode == 0, without_inputs.stderr
    assert len(read_plan(tmp_path / "io.csv")) < len(read_plan(out))


@pytest.mark.executorch
def test_unreadable_archive(tmp_path: Path) -> None:
    archive = tmp_path / "broken.pt2"
    archive.write_bytes(b"not a zip archive")
    result = run(archive, timeout=MODEL_TIMEOUT)
    assert result.returncode == 2
    assert error_line(result).startswith(
        f"cadence-memplan: error: cannot read torch.export archive {archive}"
    )


@pytest.mark.executorch
def test_model_that_cannot_fit() -> None:
    result = run("mlp", "--memory", "64:16", timeout=MODEL_TIMEOUT)
    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: planning failed: cannot place a torch.")
    assert "peak-live lower bound: 2.0 KiB (2,048 bytes) must be alive at once" in line
