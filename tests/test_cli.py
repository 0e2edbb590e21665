"""The ``cadence-memplan`` command line, run as ``python -m cadence_memplan`` in a subprocess.

Model runs import torch and executorch (several seconds each), so there are few of them
(marked ``executorch``); CSV instances (numpy only) cover the options and error paths.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import cadence_memplan
from cadence_memplan import reference
from cadence_memplan.cli import main
from cadence_memplan.cli.main import DEFAULT_ALGORITHM
from cadence_memplan.io import (
    DEFAULT_MEMORY_SPEC,
    parse_memory_spec,
    parse_size,
    read_memory_config,
    read_minimalloc_csv,
    read_plan,
)

CLI = [sys.executable, "-m", "cadence_memplan"]
MODEL_TIMEOUT = 300  # seconds; a model run takes about 15 s on the project's machine
REAL_INSTANCES = Path(__file__).resolve().parents[2] / "shared/data/planning-instances"

# 12 buffers on 8 steps, half-open [lower, upper) as MiniMalloc writes them.
SMALL_CSV = """id,lower,upper,size
a,0,3,1000
b,1,4,3000
c,2,6,500
d,3,5,2000
e,4,8,700
f,5,7,1200
g,0,2,64
h,6,8,4096
i,2,3,16
j,7,8,100
k,1,2,0
l,3,8,800
"""
TWO_MEMORIES = "4KiB:16,1MiB:64"


def run(*arguments: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *map(str, arguments)], capture_output=True, text=True, timeout=timeout, check=False
    )


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line the CLI prints on failure (library chatter before it is ignored)."""
    lines = result.stderr.strip().splitlines()
    assert lines, "nothing on stderr"
    assert "Traceback" not in result.stderr
    return lines[-1]


@pytest.fixture
def small_csv(tmp_path: Path) -> Path:
    path = tmp_path / "small.csv"
    path.write_text(SMALL_CSV)
    return path


def expected_plan(path: Path, memory_spec: str, algorithm: str) -> cadence_memplan.PlanResult:
    instance = read_minimalloc_csv(path)
    memories = parse_memory_spec(memory_spec)
    return cadence_memplan.plan(
        instance.starts,
        instance.ends,
        instance.sizes,
        [memory.size for memory in memories],
        [memory.alignment for memory in memories],
        algorithm=algorithm,
    )


def image_size(path: Path) -> tuple[int, int]:
    matplotlib_image = pytest.importorskip("matplotlib.image", reason="needs matplotlib")

    height, width = matplotlib_image.imread(path).shape[:2]
    return width, height


# --------------------------------------------------------------------------- CSV instances


@pytest.mark.parametrize("algorithm", ["position", "heuristic"])
def test_csv_table_and_round_trips(small_csv: Path, tmp_path: Path, algorithm: str) -> None:
    plans = {}
    for suffix in ("json", "csv"):
        out = tmp_path / f"plan.{suffix}"
        result = run(small_csv, "--memory", TWO_MEMORIES, "--algo", algorithm, "--out", out)
        assert result.returncode == 0, result.stderr
        assert "peak usage" in result.stdout
        assert "peak live, lower bound" in result.stdout
        assert f"12 tensors planned with {algorithm!r}" in result.stdout
        assert "overall peak:" in result.stdout
        assert "planning time: placer" in result.stdout
        assert "plan check: valid" in result.stdout
        plans[suffix] = read_plan(out)

    assert plans["json"].same_plan(plans["csv"])
    expected = expected_plan(small_csv, TWO_MEMORIES, algorithm)
    instance = read_minimalloc_csv(small_csv)
    loaded = plans["json"]
    assert list(loaded.labels) == instance.ids.tolist()
    np.testing.assert_array_equal(loaded.mem_ids, expected.mem_ids)
    np.testing.assert_array_equal(loaded.offsets, expected.offsets)
    np.testing.assert_array_equal(loaded.sizes, instance.sizes)
    np.testing.assert_array_equal(loaded.starts, instance.starts)
    np.testing.assert_array_equal(loaded.ends, instance.ends)
    document = json.loads((tmp_path / "plan.json").read_text())
    assert document["algorithm"] == algorithm
    assert [m["size"] for m in document["memories"]] == [4096, 1 << 20]


def test_csv_table_numbers(small_csv: Path) -> None:
    """Peak usage, tensors placed and utilisation per memory, from the plan itself."""
    result = run(small_csv, "--memory", TWO_MEMORIES)
    assert result.returncode == 0, result.stderr
    expected = expected_plan(small_csv, TWO_MEMORIES, DEFAULT_ALGORITHM)
    sizes = read_minimalloc_csv(small_csv).sizes
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith(("1 ", "2 "))]
    assert len(rows) == 2
    for mem_id, row in enumerate(rows, start=1):
        chosen = expected.mem_ids == mem_id
        peak = int((expected.offsets[chosen] + sizes[chosen]).max(initial=0))
        assert row[3] == f"{peak:,}"
        assert row[-1] == str(int(chosen.sum()))


def test_csv_compare_with_reference(small_csv: Path) -> None:
    result = run(small_csv, "--memory", TWO_MEMORIES, "--compare")
    assert result.returncode == 0, result.stderr
    assert "cadence_memplan.reference placer" in result.stdout
    assert re.search(
        r"ours [0-9.]+ [µm]?s: [0-9.,]+x (faster|slower)$", result.stdout, re.MULTILINE
    )
    assert "placements identical (12 tensors)" in result.stdout


def test_memory_config_toml_names_and_bases(small_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "memories.toml"
    config.write_text(
        '[[memories]]\nname = "dtcm"\nsize = "4KiB"\nalignment = 16\nbase_address = "0x1000"\n'
        '[[memories]]\nname = "dram"\nsize = 1048576\nalignment = 64\nbase_address = 65536\n'
    )
    result = run(small_csv, "--memory-config", config)
    if sys.version_info < (3, 11):  # No tomllib: a usage error that says so.
        assert result.returncode == 2
        assert "TOML needs Python 3.11 or newer; use JSON" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["dtcm", "0x1000"] for line in lines)
    assert any(line.split()[:2] == ["dram", "0x10000"] for line in lines)


def test_plot_png_and_svg(small_csv: Path, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    png, svg = tmp_path / "map.png", tmp_path / "map.svg"
    for path in (png, svg):
        result = run(small_csv, "--memory", TWO_MEMORIES, "--plot", path)
        assert result.returncode == 0, result.stderr
        assert f"wrote memory map: {path}" in result.stdout
    # 10 x 2.4 inches per memory at 100 dpi.
    assert image_size(png) == (1000, 480)
    assert svg.read_text().lstrip().startswith("<?xml")


def test_plot_of_many_tensors_is_quick(tmp_path: Path) -> None:
    """10^5 tensors: the rectangles are one collection per panel, so this takes seconds."""
    pytest.importorskip("matplotlib", reason='needs matplotlib: pip install ".[plot]"')
    png = tmp_path / "big.png"
    result = run("synthetic-100k", "--plot", png, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "100,000 tensors planned" in result.stdout
    # 10 x 7.2 inches at 100 dpi; some matplotlib versions round the height down.
    width, height = image_size(png)
    assert width == 1000
    assert height in (719, 720)


def test_list_models() -> None:
    result = run("--list-models")
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines()]
    assert {"encoder", "cnn", "mlp", "synthetic"} <= set(names)


@pytest.mark.skipif(not REAL_INSTANCES.is_dir(), reason="no shared planning instances")
def test_real_instance(tmp_path: Path) -> None:
    instance = REAL_INSTANCES / "challenging" / "A.1048576.csv"
    out = tmp_path / "plan.csv"
    result = run(instance, "--memory", "1MiB:1,1GiB:64", "--out", out)
    assert result.returncode == 0, result.stderr
    loaded = read_plan(out)
    assert len(loaded) == len(read_minimalloc_csv(instance).ids)


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["no/such/file.csv"], "input no/such/file.csv: no such file"),
        (["not-a-model"], "neither a file nor a built-in model"),
        (["{csv}", "--memory", "256KiB:16,4MiB"], "is not [NAME=]SIZE:ALIGNMENT"),
        (["{csv}", "--memory", ""], "--memory: empty"),
        (["{csv}", "--memory", "99999999999GiB:1"], "is outside 1 B .. 4 EiB (2^62 bytes)"),
        (["{csv}", "--memory", "a=1KiB:16,a=2KiB:16"], "the name 'a' is given to two memories"),
        (["{csv}", "--plot", "no/such/folder/map.png"], "the folder no/such/folder does not exist"),
        (["{csv}", "--memory", "256KB:16"], "is not a size"),
        (["{csv}", "--memory", "0:16"], "is outside 1 B"),
        (["{csv}", "--pte", "out.pte"], "--pte needs a model input"),
        (["{csv}", "--out", "plan.txt"], "--out plan.txt: expected a file ending in .json or .csv"),
        (["{csv}", "--memory-config", "missing.json"], "cannot read"),
        (["{bad_csv}"], "cannot read MiniMalloc CSV"),
        (
            ["{bad_json}", "--memory-config", "{bad_json}"],
            "unknown file type .json, expected .pt2 or .csv",
        ),
    ],
)
def test_usage_errors(small_csv: Path, tmp_path: Path, arguments: list[str], message: str) -> None:
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text("id,lower,upper,size\nx,3,2,10\n")
    bad_json = tmp_path / "memories.json"
    bad_json.write_text('{"memories": [{"size": "1KiB", "alignement": 16}]}')
    arguments = [a.format(csv=small_csv, bad_csv=bad_csv, bad_json=bad_json) for a in arguments]
    result = run(*arguments)
    assert result.returncode == 2
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: ")
    assert message in line


def test_memory_config_unknown_key(small_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "memories.json"
    config.write_text('{"memories": [{"size": "1KiB", "alignement": 16}]}')
    result = run(small_csv, "--memory-config", config)
    assert result.returncode == 2
    assert "unknown key(s) ['alignement']" in error_line(result)


def test_csv_that_cannot_fit(small_csv: Path) -> None:
    """Named as the file names it (id, half-open [lower, upper)), with how much is needed."""
    result = run(small_csv, "--memory", "1KiB:16")
    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: planning failed: ")
    # The largest buffer is placed first: h, 4096 bytes, lower 6, upper 8 in the file.
    assert "buffer 'h' (4,096 bytes, [lower, upper) = [6, 8))" in line
    assert "tensor" not in line
    assert "peak-live lower bound: 6.6 KiB (6,796 bytes) must be alive at once" in line
    assert "more than the 1.0 KiB (1,024 bytes) the one memory holds" in line


def test_debug_shows_the_traceback(small_csv: Path) -> None:
    result = run(small_csv, "--memory", "1KiB:16", "--debug")
    assert result.returncode == 1
    assert "Traceback" in result.stderr


# --------------------------------------------------------------------------- models


@pytest.mark.executorch
def test_default_model_with_plot_plan_and_program(tmp_path: Path) -> None:
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


# --------------------------------------------------------------------------- helpers


def test_parse_size_units() -> None:
    assert parse_size("256KiB", "x") == 256 << 10
    assert parse_size("4 mib", "x") == 4 << 20
    assert parse_size("1GiB", "x") == 1 << 30
    assert parse_size("2TiB", "x") == 2 << 40
    assert parse_size("64B", "x") == 64
    assert parse_size("100", "x") == 100
    assert parse_size(1 << 62, "x") == 1 << 62
    for bad in ("1.5KiB", "KiB", "-4", "1KB", "0", "4194305TiB", (1 << 62) + 1, True):
        with pytest.raises(ValueError, match=r"^x: "):
            parse_size(bad, "x")


def test_memory_config_json(tmp_path: Path) -> None:
    config = tmp_path / "memories.json"
    config.write_text(
        json.dumps({"memories": [{"name": "a", "size": "1KiB", "base_address": "0x10"}]})
    )
    (memory,) = read_memory_config(config)
    assert (memory.name, memory.size, memory.alignment, memory.base_address) == ("a", 1024, 1, 16)


def test_reference_and_core_agree_on_the_small_csv(small_csv: Path) -> None:
    """What --compare checks, in process: the core and the reference place alike."""
    instance = read_minimalloc_csv(small_csv)
    arguments = (instance.starts, instance.ends, instance.sizes, [4096, 1 << 20], [16, 64])
    ours = cadence_memplan.plan(*arguments, algorithm="heuristic")
    theirs = reference.plan(*arguments, algorithm="heuristic")
    assert np.array_equal(ours.mem_ids, theirs.mem_ids)
    assert np.array_equal(ours.offsets, theirs.offsets)


# --------------------------------------------------------------------------- first use

PROGRESS_LINE = re.compile(r"^cadence-memplan: \[\s*\d+\.\d s\] ", re.MULTILINE)


def test_progress_on_stderr_with_elapsed_time_and_quiet(small_csv: Path) -> None:
    result = run(small_csv, "--memory", TWO_MEMORIES)
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^cadence-memplan: \[\s*\d+\.\d s\] planning 12 tensors$", result.stderr, re.MULTILINE
    )
    assert re.search(r"\] done$", result.stderr, re.MULTILINE)
    assert not PROGRESS_LINE.search(result.stdout)  # the report stays clean for pipes
    quiet = run(small_csv, "--memory", TWO_MEMORIES, "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""
    assert quiet.stdout.splitlines()[:4] == result.stdout.splitlines()[:4]


@pytest.mark.parametrize("option", ["--plot", "--out", "--pte"])
def test_output_paths_are_checked_before_any_work(tmp_path: Path, option: str) -> None:
    """The default model takes seconds to import and lower: a bad path must fail first."""
    suffix = {"--plot": "map.png", "--out": "plan.json", "--pte": "model.pte"}[option]
    missing = tmp_path / "missing" / suffix
    result = run(option, missing)
    assert result.returncode == 2
    assert f"the folder {missing.parent} does not exist" in error_line(result)
    assert not PROGRESS_LINE.search(result.stderr), "work started before the paths were checked"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and sh")
def test_stdout_closed_early_is_quiet(small_csv: Path) -> None:
    """`cadence-memplan plan X | head -1`: the reader goes away before the report."""
    child = subprocess.Popen(
        [*CLI, str(small_csv), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    child.stdout.close()  # before the child has printed anything
    _, stderr = child.communicate(timeout=60)
    assert stderr == ""
    assert child.returncode == 141


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes and sh")
def test_piped_into_head(small_csv: Path) -> None:
    command = f'"{sys.executable}" -m cadence_memplan "{small_csv}" | head -1'
    result = subprocess.run(
        ["sh", "-c", command], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.stdout == "small.csv: 12 tensors planned with 'position'\n"
    assert "Error" not in result.stderr
    assert "Traceback" not in result.stderr


def test_help_shows_every_default() -> None:
    result = run("plan", "--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())  # argparse wraps lines
    assert f"(default: {DEFAULT_ALGORITHM})" in text
    assert f"(default: {DEFAULT_MEMORY_SPEC})" in text
    assert "(default: encoder)" in text
    assert text.count("(default: yes)") == 2  # --alloc-inputs, --alloc-outputs


def test_command_line_and_array_api_default_to_the_same_placer() -> None:
    default = inspect.signature(cadence_memplan.plan).parameters["algorithm"].default
    assert default == DEFAULT_ALGORITHM == "position"


def memory_names(result: subprocess.CompletedProcess[str]) -> list[str]:
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("memory ")) + 2
    end = next(i for i, line in enumerate(lines) if line.startswith("overall peak"))
    return [line.split()[0] for line in lines[start:end]]


def test_memory_names_follow_one_rule(small_csv: Path, tmp_path: Path) -> None:
    """A memory is named by its name if it has one, else by its id, however it was given."""
    default = run(small_csv)
    spelled_out = run(small_csv, "--memory", DEFAULT_MEMORY_SPEC)
    unnamed = run(small_csv, "--memory", "256KiB:16,4MiB:64,1GiB:64")
    config = tmp_path / "memories.json"
    config.write_text(json.dumps({"memories": [{"size": "256KiB"}, {"size": "4MiB"}]}))
    from_file = run(small_csv, "--memory-config", config)
    assert memory_names(default) == memory_names(spelled_out) == ["fast", "near", "far"]
    assert memory_names(unnamed) == ["1", "2", "3"]
    assert memory_names(from_file) == ["1", "2"]


def test_plot_without_matplotlib_names_the_extra_quoted(
    small_csv: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    status = main([str(small_csv), "--plot", str(tmp_path / "map.png")])
    assert status == 2
    assert 'pip install "cadence-memplan[plot]"' in capsys.readouterr().err
    assert not (tmp_path / "map.png").exists()
