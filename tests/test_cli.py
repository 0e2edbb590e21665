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
from cases import PLANNING_INSTANCES
from cli_support import CLI, MODEL_TIMEOUT, SMALL_CSV, TWO_MEMORIES, error_line, run

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
    matplotlib_image = pytest.importorskip(
        "matplotlib.image", reason='needs matplotlib: pip install ".[plot]"'
    )

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
        assert "peak live of its tensors" in result.stdout
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
    rows = [
        line.split() for line in result.stdout.splitlines() if line.startswith(("mem1 ", "mem2 "))
    ]
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


@pytest.mark.skipif(not PLANNING_INSTANCES.is_dir(), reason="no shared planning instances")
def test_real_instance(tmp_path: Path) -> None:
    instance = PLANNING_INSTANCES / "challenging" / "A.1048576.csv"
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
        (["not-a-model"], "neither a file nor a built-in model (choose from"),
        (["encodr"], "neither a file nor a built-in model (did you mean 'encoder'? choose"),
        (["{csv}", "--memory", "256KiB:16,4MiB"], "is not [NAME=]SIZE:ALIGNMENT"),
        (["{csv}", "--memory", ""], "--memory: empty"),
        (["{csv}", "--memory", "99999999999GiB:1"], "is outside 1 B .. 4 EiB (2^62 bytes)"),
        (["{csv}", "--memory", "a=1KiB:16,a=2KiB:16"], "the name 'a' is given to two memories"),
        (["{csv}", "--plot", "no/such/folder/map.png"], "the folder no/such/folder does not exist"),
        (["{csv}", "--memory", "256KB:16"], "'256KB' is not a size (did you mean 256KiB?"),
        (["{csv}", "--memory", "256zz:16"], "'256zz' is not a size (an integer with"),
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
    assert memory_names(unnamed) == ["mem1", "mem2", "mem3"]
    assert memory_names(from_file) == ["mem1", "mem2"]


def test_plot_without_matplotlib_says_how_to_install_it(
    small_csv: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    status = main([str(small_csv), "--plot", str(tmp_path / "map.png")])
    assert status == 2
    assert "--plot needs matplotlib: pip install matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "map.png").exists()


# --------------------------------------------------------------------------- outputs are safe


def folder_listing(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


@pytest.mark.parametrize(
    ("outputs", "message"),
    [
        (["--out", "{csv}"], "--out {csv}: is the input {name}"),
        (["--out", "./{name}"], "is the input"),
        (["--out", "{link}"], "is the input"),
        (["--out-minimalloc", "{csv}", "--memory", "1MiB:1"], "is the input"),
        (["--memory-config", "{config}", "--out", "{config}"], "is the input"),
        (["--out", "same.json", "--trace", "same.json"], "--out same.json writes the same file"),
        (["--out", "same.json", "--trace", "./same.json"], "--out same.json writes the same file"),
        (["--out", "{folder}"], "is a directory"),
        (["--memory", "1MiB:1", "--out", "s.csv", "--out-minimalloc", "s.csv"], "writes the same"),
    ],
)
def test_an_output_that_would_clobber_an_input_or_another_output_is_refused(
    small_csv: Path, tmp_path: Path, outputs: list[str], message: str
) -> None:
    """Refused before any work, and nothing in the folder changes."""
    link = tmp_path / "hard-link.csv"
    link.hardlink_to(small_csv)
    config = tmp_path / "memories.json"
    config.write_text(json.dumps({"memories": [{"size": "1MiB"}]}))
    folder = tmp_path / "plan.json"
    folder.mkdir()
    names = {"csv": small_csv, "name": small_csv.name, "link": link, "config": config,
             "folder": folder}  # fmt: skip
    arguments = [argument.format(**names) for argument in outputs]
    before = folder_listing(tmp_path)
    result = subprocess.run(
        [*CLI, small_csv.name, *arguments], cwd=tmp_path, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stdout
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: ")
    assert message.format(**names) in line
    assert not PROGRESS_LINE.search(result.stderr), "work started before the paths were checked"
    assert folder_listing(tmp_path) == before


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_output_where_no_file_can_be_created_is_refused_before_any_work(
    small_csv: Path,
) -> None:
    result = run(small_csv, "--out", "/proc/plan.json")
    assert result.returncode == 2
    assert "--out /proc/plan.json: cannot create a file in /proc" in error_line(result)
    assert not PROGRESS_LINE.search(result.stderr)


def test_outputs_are_all_written_or_none_on_ctrl_c(
    small_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the trace is being written (after the plan file was): neither output
    appears, the old plan file is kept as it was, and no temporary file is left."""
    from cadence_memplan.cli import plan_command

    plan, trace = tmp_path / "plan.json", tmp_path / "trace.json"
    plan.write_text("the user's previous plan")
    write_trace = plan_command.write_trace

    def interrupted(path: Path, *arguments: object, **options: object) -> None:
        write_trace(path, *arguments, **options)  # type: ignore[arg-type]
        assert Path(path).stat().st_size > 0  # written, but not yet in place
        raise KeyboardInterrupt

    monkeypatch.setattr(plan_command, "write_trace", interrupted)
    before = folder_listing(tmp_path)
    status = main([str(small_csv), "--quiet", "--out", str(plan), "--trace", str(trace)])
    assert status == 130
    assert folder_listing(tmp_path) == before
    # Without the interruption, both are written and nothing else is left beside them.
    monkeypatch.setattr(plan_command, "write_trace", write_trace)
    assert main([str(small_csv), "--quiet", "--out", str(plan), "--trace", str(trace)]) == 0
    assert sorted(folder_listing(tmp_path)) == ["plan.json", "small.csv", "trace.json"]
    assert json.loads(trace.read_text())["traceEvents"]
    assert len(read_plan(plan)) == 12


def test_a_failed_write_leaves_no_output(
    small_csv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """An error in the last output (a full disk, say): exit 1 naming that output, and the
    outputs written before it are not put in place either."""
    from cadence_memplan.cli import plan_command

    def disk_full(path: Path, *arguments: object, **options: object) -> None:
        Path(path).write_text("{")
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(plan_command, "write_trace", disk_full)
    plan, trace = tmp_path / "plan.csv", tmp_path / "trace.json"
    status = main([str(small_csv), "--quiet", "--out", str(plan), "--trace", str(trace)])
    assert status == 1
    assert f"cannot write {trace}: No space left on device" in capsys.readouterr().err
    assert sorted(folder_listing(tmp_path)) == ["small.csv"]


def test_a_replaced_output_keeps_its_permissions(small_csv: Path, tmp_path: Path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("old")
    plan.chmod(0o640)
    assert run(small_csv, "--out", plan, "-q").returncode == 0
    assert plan.stat().st_mode & 0o777 == 0o640
    assert len(read_plan(plan)) == 12


def test_write_whole_leaves_the_file_alone_on_error(tmp_path: Path) -> None:
    """The library's writers go through the same helper."""
    from cadence_memplan.io.outputs import write_whole

    target = tmp_path / "kept.txt"
    target.write_text("before")

    def fail_halfway() -> None:
        with write_whole(target) as partial:
            partial.write_text("half")
            raise RuntimeError

    with pytest.raises(RuntimeError):
        fail_halfway()
    assert target.read_text() == "before"
    assert [path.name for path in tmp_path.iterdir()] == ["kept.txt"]
    with write_whole(target) as partial:
        partial.write_text("after")
    assert target.read_text() == "after"


# --------------------------------------------------------------------------- plausible memories


@pytest.mark.parametrize(
    ("memory", "warning"),
    [
        ("16:256KiB", ("memory mem1: size 16 B and alignment 256KiB look swapped (SIZE comes"
         " first: 256KiB:16?)")),
        ("64KiB:1GiB", "memory mem1: alignment 1GiB is above its size 64KiB"),
        ("fast=1MiB:48", "memory fast: alignment 48 is not a power of two"),
    ],
)  # fmt: skip
def test_implausible_memories_are_warned_about_and_still_planned(
    small_csv: Path, memory: str, warning: str
) -> None:
    result = run(small_csv, "--memory", f"{memory},1GiB:64", "--quiet")
    assert result.returncode == 0, result.stderr
    assert (
        result.stderr
        == f"cadence-memplan: warning: --memory: {warning}" + (result.stderr.split(warning, 1)[1])
    )
    assert len(result.stderr.splitlines()) == 1
    assert "plan check: valid" in result.stdout


def test_implausible_addresses_are_warned_about(small_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "memories.json"
    config.write_text(json.dumps({"memories": [
        {"name": "dtcm", "size": "64KiB", "alignment": 16, "base_address": "0x10000000"},
        {"name": "iram", "size": "64KiB", "alignment": 16, "base_address": "0x10000000"},
        {"name": "sram", "size": "1MiB", "alignment": 64, "base_address": "0x10008000"},
        {"name": "dram", "size": "1GiB", "alignment": 64, "base_address": "0xF0000000"},
    ]}))  # fmt: skip
    result = run(small_csv, "--memory-config", config, "--quiet")
    assert result.returncode == 0, result.stderr
    prefix = f"cadence-memplan: warning: --memory-config {config}: "
    assert result.stderr.splitlines() == [
        prefix + "memories dtcm and iram have the same base address 0x10000000",
        prefix + "memories dtcm [0x10000000, 0x10010000) and sram [0x10008000, 0x10108000) overlap",
        prefix + "memories iram [0x10000000, 0x10010000) and sram [0x10008000, 0x10108000) overlap",
        prefix + "memory dram: [0xf0000000, 0x130000000) reaches past 2^32 (0x100000000),"
        " beyond a 32-bit address space",
    ]


def test_the_default_memories_raise_no_warning(small_csv: Path) -> None:
    assert run(small_csv, "--quiet").stderr == ""


# --------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--algo", "fastest"], "argument --algo: invalid choice: 'fastest'"),
        (["--no-such-option"], "unrecognized arguments: --no-such-option"),
        (["--out"], "argument --out: expected one argument"),
        (["--memory", "-5KiB:16"], "--memory: memory 1 size: '-5KiB' is negative"),
        (["--memory", "fast=-5KiB:16"], "--memory: memory 1 size: '-5KiB' is negative"),
        (["--memory", "16:-1"], "--memory: memory 1 alignment: '-1' is negative"),
    ],
)
def test_usage_errors_are_one_line_with_one_prefix(
    small_csv: Path, arguments: list[str], message: str
) -> None:
    result = run(small_csv, *arguments)
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("cadence-memplan: error: ")
    assert message in result.stderr


def test_sweep_without_its_required_options_is_one_line(small_csv: Path) -> None:
    result = run("sweep", small_csv)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        (
            "cadence-memplan: error: the following arguments are required: --vary, --sizes"
            " (see cadence-memplan sweep --help)"
        )
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x7fELF\x02\x01\x01\x00\xff\xfe", "{path}:1: byte 0xff is not UTF-8 text"),
        (b"id,lower,upper,size\na,0,3,10\n\xff\n", "{path}:3: byte 0xff is not UTF-8 text"),
        (b"0,0,3,1000\n1,1,4,3000\n", ("{path}:1: no header: the first line must name the"
         " columns id,lower,upper,size")),
        (b"id,lower,upper\na,0,3\n", ("{path}:1: header ['id', 'lower', 'upper'] lacks the"
         " column(s) ['size']")),
        (b"# made by hand\nid,lower,upper,size\na,0,x,10\n", "{path}:3: upper is 'x'"),
    ],
)  # fmt: skip
def test_csv_errors_name_the_file_and_line(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "instance.csv"
    path.write_bytes(content)
    result = run(path)
    assert result.returncode == 2
    assert error_line(result).startswith("cadence-memplan: error: cannot read MiniMalloc CSV: ")
    assert message.format(path=path) in error_line(result)


def test_csv_with_a_byte_order_mark_and_comments(small_csv: Path, tmp_path: Path) -> None:
    """As Excel saves a CSV file (UTF-8 with a BOM), with a comment line too."""
    path = tmp_path / "excel.csv"
    path.write_bytes(
        b"\xef\xbb\xbf# from a spreadsheet\r\n" + SMALL_CSV.replace("\n", "\r\n").encode()
    )
    assert read_minimalloc_csv(path).ids.tolist() == read_minimalloc_csv(small_csv).ids.tolist()
    result = run(path, "--quiet")
    assert result.returncode == 0, result.stderr
    assert "12 tensors planned" in result.stdout


def test_an_empty_instance_is_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "empty.csv"
    path.write_text("id,lower,upper,size\n")
    result = run(path, "--quiet")
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"cadence-memplan: warning: {path} has a header and no buffers: there is nothing to plan\n"
    )


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["diff", "{plan}"], "the following arguments are required: B"),
        (["diff", "{plan}", "missing.json"], "cannot read missing.json: No such file"),
        (["diff", "{plan}", "{csv}"], "not a plan CSV: expected the header name,mem_id"),
        (["diff", "{plan}", "{memory_toml}"], "diff compares plan files, .json or .csv"),
        (["diff", "{plan}", "{not_a_plan}"], "not a plan file"),
        (["diff", "{plan}", "{broken}"], "not JSON"),
        (["{csv}", "--trace", "trace.txt"], "--trace trace.txt: expected a file ending in .json"),
        (["{csv}", "--trace", "no/such/folder/t.json"], "the folder no/such/folder does not"),
        (["{csv}", "--out-minimalloc", "x.json"], "expected a file ending in .csv"),
        (["{csv}", "--explain", "yes"], "unrecognized arguments: yes"),
    ],
)
def test_cli_bad_input(small_csv: Path, tmp_path: Path, arguments: list[str], message: str) -> None:
    plan = tmp_path / "plan.json"
    assert run(small_csv, "--out", plan).returncode == 0
    not_a_plan = tmp_path / "memories.json"
    not_a_plan.write_text('{"memories": []}')
    broken = tmp_path / "broken.json"
    broken.write_text('{"format": ')
    memory_toml = tmp_path / "memories.toml"
    names = {
        "plan": plan,
        "csv": small_csv,
        "not_a_plan": not_a_plan,
        "broken": broken,
        "memory_toml": memory_toml,
    }
    result = run(*(argument.format(**names) for argument in arguments))
    assert result.returncode == 2
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: ")
    assert message in line
    assert len(result.stderr.strip().splitlines()) == 1  # argparse's errors too


# --------------------------------------------------------------------------- best shows its work

TRADE_MEMORIES = "3304:16,1MiB:64"  # best keeps 500 B more in mem1 and raises its peak


def best_table(stdout: str) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    start = lines.index("best against upstream's position placer (mem_algo=0), per memory:") + 3
    rows = {}
    for line in lines[start:]:
        if not line.startswith("    "):
            break
        rows[line.split()[0]] = line.split()[1:]
    return rows


def test_best_names_its_strategy_and_shows_the_trade_against_position(small_csv: Path) -> None:
    result = run(small_csv, "--memory", TRADE_MEMORIES, "--algo", "best", "--quiet")
    assert result.returncode == 0, result.stderr
    best = expected_plan(small_csv, TRADE_MEMORIES, "best")
    position = expected_plan(small_csv, TRADE_MEMORIES, "position")
    assert best.strategy
    work = f"({best.work:,} of {cadence_memplan.DEFAULT_WORK_BUDGET:,} units of work)"
    assert re.search(
        rf"^best: kept the plan of the {re.escape(best.strategy)}, found in [0-9.]+ [µm]?s"
        rf" {re.escape(work)}$", result.stdout, re.MULTILINE,
    )  # fmt: skip
    assert "the same plan as" not in result.stdout
    sizes = read_minimalloc_csv(small_csv).sizes
    rows = best_table(result.stdout)
    assert list(rows) == ["mem1", "mem2"]
    raised = []
    for mem_id, name in enumerate(rows, start=1):
        usage = [int((plan.offsets + sizes)[plan.mem_ids == mem_id].max(initial=0))
                 for plan in (position, best)]  # fmt: skip
        sums = [int(sizes[plan.mem_ids == mem_id].sum()) for plan in (position, best)]
        change = [f"{new - old:+,}" if new != old else "0" for old, new in (usage, sums)]
        assert rows[name] == [f"{usage[0]:,}", f"{usage[1]:,}", change[0],
                              f"{sums[0]:,}", f"{sums[1]:,}", change[1]]  # fmt: skip
        if usage[1] > usage[0]:
            raised.append(f"{name} by {usage[1] - usage[0]} B")
    assert raised, "this hierarchy is chosen so that best raises a peak"
    kept = int(sizes[position.mem_ids == 2].sum() - sizes[best.mem_ids == 2].sum())
    assert kept > 0
    assert (
        f"best: {kept} B less outside mem1 than position (sum of sizes over the run); it raises"
        f" the peak usage of {', '.join(raised)}"
    ) in result.stdout


def test_best_says_when_it_returns_an_upstream_plan(tmp_path: Path) -> None:
    chain = tmp_path / "chain.csv"  # no plan does better than first fit here
    chain.write_text("id,lower,upper,size\na,0,3,1000\nb,1,4,3000\nc,2,6,500\n")
    result = run(chain, "--algo", "best", "--quiet")
    assert result.returncode == 0, result.stderr
    best = expected_plan(chain, DEFAULT_MEMORY_SPEC, "best")
    for algorithm in ("position", "heuristic"):
        upstream = expected_plan(chain, DEFAULT_MEMORY_SPEC, algorithm)
        assert np.array_equal(best.mem_ids, upstream.mem_ids)
        assert np.array_equal(best.offsets, upstream.offsets)
    assert (
        "best: the same plan as upstream's position and heuristic placers: no smaller plan found"
    ) in result.stdout
    assert "best against upstream's position placer" not in result.stdout


def test_best_budget(small_csv: Path) -> None:
    """--work 0 stops the search after its first candidates and --budget 0 (the wall-clock
    cap) too, and the report says which, and that the second plan depends on the
    machine."""
    best = ("--memory", TRADE_MEMORIES, "--algo", "best", "-q")
    result = run(small_csv, *best, "--work", "0")
    assert result.returncode == 0, result.stderr
    assert re.search(
        r"^best: searched for [0-9.]+ [µm]?s, its whole budget \(0 units of work; more with"
        r" --work N might find a smaller plan\), and kept the plan of the ", result.stdout,
        re.MULTILINE,
    )  # fmt: skip
    assert "depends on the machine" not in result.stdout
    capped = run(small_csv, *best, "--budget", "0")
    assert capped.returncode == 0, capped.stderr
    assert re.search(
        r"^best: stopped by the --budget cap after [0-9.]+ [µm]?s, and kept the plan of the .*;"
        r" this plan depends on the machine's speed and load$", capped.stdout, re.MULTILINE,
    )  # fmt: skip
    swept = run("sweep", small_csv, "--memory", TRADE_MEMORIES, "--vary", "1", "--sizes",
                "3KiB:4KiB:3", "--algo", "best", "--work", "5000", "-q")  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    for arguments in (
        ["--budget", "10"], ["--work", "10"], ["--algo", "best", "--budget", "-1"],
        ["--algo", "best", "--work", "-1"], ["--algo", "best", "--work", "lots"],
    ):  # fmt: skip
        refused = run(small_csv, *arguments)
        assert refused.returncode == 2
        assert len(refused.stderr.splitlines()) == 1
    assert "--budget applies to --algo best only" in run(small_csv, "--budget", "10").stderr
    assert "--work applies to --algo best only" in run(small_csv, "--work", "10").stderr


@pytest.mark.executorch
def test_model_best_against_position(tmp_path: Path) -> None:
    """A model's best plan against a whole lowering with position: the figures of the
    report's per-memory table are those of the two plan files."""
    memories = "fast=100KiB:16,near=300KiB:64,far=1GiB:64"
    best_file, position_file = tmp_path / "best.json", tmp_path / "position.json"
    best = run("encoder", "--memory", memories, "--algo", "best", "--out", best_file, "-q",
               timeout=MODEL_TIMEOUT)  # fmt: skip
    assert best.returncode == 0, best.stderr
    position = run("encoder", "--memory", memories, "--out", position_file, "-q",
                   timeout=MODEL_TIMEOUT)  # fmt: skip
    assert position.returncode == 0, position.stderr
    plans = [json.loads(path.read_text()) for path in (position_file, best_file)]
    rows = best_table(best.stdout)
    for memory in plans[0]["memories"]:
        usage = [plan["memories"][memory["mem_id"] - 1]["peak_usage"] for plan in plans]
        sums = [
            sum(t["size"] for t in plan["tensors"]
                if t["mem_id"] == memory["mem_id"] and not t["shares_storage"])
            for plan in plans
        ]  # fmt: skip
        assert rows[memory["name"]][:2] == [f"{usage[0]:,}", f"{usage[1]:,}"]
        assert rows[memory["name"]][3:5] == [f"{sums[0]:,}", f"{sums[1]:,}"]
    assert "best: kept the plan of the " in best.stdout


def test_sweep_outputs_are_checked_as_plan_outputs(small_csv: Path, tmp_path: Path) -> None:
    before = folder_listing(tmp_path)
    for outputs, message in (
        (["--out", str(small_csv)], f"--out {small_csv}: is the input {small_csv}"),
        (["--out", "s.csv", "--plot", str(tmp_path)], "expected a file ending in .png"),
    ):
        result = run("sweep", small_csv, "--vary", "fast", "--sizes", "1KiB:4KiB:4", *outputs)
        assert result.returncode == 2
        assert message in error_line(result)
    assert folder_listing(tmp_path) == before


def test_best_where_upstream_placers_do_not_fit(small_csv: Path) -> None:
    """6,800 B hold best's plan; upstream's placers need 7,312 B."""
    result = run(small_csv, "--memory", "6800:16", "--algo", "best", "--quiet")
    assert result.returncode == 0, result.stderr
    for name in ("position", "heuristic"):
        with pytest.raises(cadence_memplan.PlanningError):
            expected_plan(small_csv, "6800:16", name)
        assert (
            f"best: upstream's {name} placer finds no plan that fits these memories"
            in result.stdout
        )
    assert "best against upstream's position placer" not in result.stdout
    assert "plan check: valid" in result.stdout


def test_report_never_rounds_to_optimal_or_full(capsys: pytest.CaptureFixture[str]) -> None:
    """usage / peak live prints 1.000x only when usage equals the peak live (the README
    calls 1.000x no gap), and "used" 100.0% only for a memory full to its last byte."""
    from cadence_memplan.cli.printing import print_report
    from cadence_memplan.io import parse_memory_spec
    from cadence_memplan.stats import TensorTable

    def report_row(offsets: list[int], memory: str) -> list[str]:
        sizes = np.array([1_000_000, 1_000_000])
        table = TensorTable(
            ["a", "b"], np.array([1, 1]), np.array(offsets), sizes, np.array([0, 1]),
            np.array([0, 1]),
        )  # fmt: skip
        print_report("t", table, parse_memory_spec(memory), "position", {})
        return capsys.readouterr().out.splitlines()[3].split()

    above = report_row([0, 16], "1000020:16")  # 16 B above the bound of 1,000,000
    assert above[4] == "99.9%"
    assert above[6] == "1.00002x"
    exact = report_row([0, 0], "1000000:16")
    assert exact[4] == "100.0%"
    assert exact[6] == "1.000x"


def test_no_room_suggests_memories_that_hold_the_instance(small_csv: Path) -> None:
    """A CSV that fits nowhere gets a --memory to paste, its last memory grown past the
    instance's peak-live bound; pasted, it plans."""
    from cadence_memplan.io import read_minimalloc_csv
    from cadence_memplan.stats import peak_live_bytes

    instance = read_minimalloc_csv(small_csv)
    bound = peak_live_bytes(instance.starts, instance.ends, instance.sizes)
    result = run(small_csv, "--memory", "fast=64:16,slow=1KiB:16", "-q")
    assert result.returncode == 1
    line = error_line(result)
    assert line.startswith("cadence-memplan: error: planning failed: cannot place buffer")
    match = re.search(r"try --memory (\S+) \(", line)
    assert match is not None, line
    suggested = match.group(1)
    assert suggested.startswith("fast=64:16,slow=")
    slow = parse_memory_spec(suggested)[-1]
    assert slow.size >= bound
    planned = run(small_csv, "--memory", suggested, "-q")
    assert planned.returncode == 0, planned.stderr


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["plann", "x.csv"], "unknown command 'plann' (did you mean 'plan'?"),
        (["swep", "--vary", "1"], "unknown command 'swep' (did you mean 'sweep'?"),
        (["--memory", "1KiB:16", "--memory", "2KiB:16"], "argument --memory: given more than once"),
        (["--no-alloc-inputs"], "--no-alloc-inputs: for models only"),
        (["--lowering", "exir"], "--lowering exir: for models only"),
        (["sweep", "--vary", "1", "--sizes", "8KiB:32KiB:100000"], "more than 1,000"),
    ],
)
def test_usage_errors_say_what_to_do(small_csv: Path, arguments: list[str], message: str) -> None:
    """A misspelled command is named with the nearest one; a repeated --memory, a model's
    option on a CSV and a sweep of too many sizes are refused, each in one line."""
    if arguments[0] not in ("plann", "swep", "sweep"):
        arguments = [str(small_csv), *arguments]
    elif arguments[0] == "sweep":
        arguments = ["sweep", str(small_csv), *arguments[1:]]
    result = run(*arguments)
    assert result.returncode == 2
    assert message in error_line(result)
    assert len(result.stderr.strip().splitlines()) == 1


def test_one_of_a_thing_is_singular(tmp_path: Path) -> None:
    """ "1 tensor planned", "in 1 size", "1 plan" (not "1 tensors", "1 sizes")."""
    one = tmp_path / "one.csv"
    one.write_text("id,lower,upper,size\nonly,0,2,64\n")
    planned = run(one, "--memory", "1KiB:16", "-q")
    assert planned.returncode == 0, planned.stderr
    assert "one.csv: 1 tensor planned with 'position'" in planned.stdout
    swept = run("sweep", one, "--memory", "1KiB:16", "--vary", "1", "--sizes", "1KiB:1KiB:1", "-q")
    assert swept.returncode == 0, swept.stderr
    assert "from 1.0 KiB to 1.0 KiB in 1 size, planned" in swept.stdout
    assert "planning time: 1 plan in " in swept.stdout


def test_minimalloc_instance_counts_its_buffers(small_csv: Path) -> None:
    """``buffer_count`` is the number of buffers (``count`` is the tuple's method)."""
    instance = read_minimalloc_csv(small_csv)
    assert instance.buffer_count == len(instance.ids) == 12


def test_a_greedy_failure_where_the_bound_fits_suggests_best(tmp_path: Path) -> None:
    """First fit fails in one memory of exactly the peak-live bound, which best fills: the
    failure says to try --algo best (not a bigger memory); below the bound it says how big
    a memory would do."""
    csv = tmp_path / "tight.csv"
    csv.write_text("id,lower,upper,size\na,2,5,2\nb,1,3,2\nc,0,1,3\nd,0,3,2\ne,4,5,3\n")
    failed = run(csv, "--memory", "tight=6:1")
    assert failed.returncode == 1
    assert error_line(failed).endswith(
        "the peak-live bound, 6 B, fits in these memories (6 B in all): try --algo best,"
        " which searches for the packings the greedy placers miss"
    )
    assert run(csv, "--memory", "tight=6:1", "--algo", "best").returncode == 0
    smaller = run(csv, "--memory", "tight=5:1")
    assert "to plan it, try --memory tight=8:1" in error_line(smaller)
