"""What the command line writes: the memory map (PNG and SVG, 10^5 tensors, the words
without matplotlib), and outputs that are safe: paths checked before any work, an output
that would overwrite an input or another output refused, every output written whole or
none at all (Ctrl-C, a full disk), a replaced file's permissions kept. Numpy only; the
plots skip without matplotlib.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import CLI, PROGRESS_LINE, TWO_MEMORIES, error_line, image_size, run

from cadence_memplan.cli import main
from cadence_memplan.io import read_plan


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


@pytest.mark.parametrize("option", ["--plot", "--out", "--pte"])
def test_output_paths_are_checked_before_any_work(tmp_path: Path, option: str) -> None:
    """The default model takes seconds to import and lower: a bad path must fail first."""
    suffix = {"--plot": "map.png", "--out": "plan.json", "--pte": "model.pte"}[option]
    missing = tmp_path / "missing" / suffix
    result = run(option, missing)
    assert result.returncode == 2
    assert f"the folder {missing.parent} does not exist" in error_line(result)
    assert not PROGRESS_LINE.search(result.stderr), "work started before the paths were checked"


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
