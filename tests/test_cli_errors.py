"""The command line's errors: one line with one prefix, exit status 2 for bad input (options,
files, CSV lines, misspelled commands, the analysis options' inputs) and 1 for a plan that
cannot fit, which says how much is needed and what to try (a larger memory, or
``--algo best``); ``--debug`` shows the traceback. Numpy only.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_support import error_line, run

from cadence_memplan.io import parse_memory_spec


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
    # The core's own words about each memory group their digits as the rest of the line.
    assert "memory 1 (1,024 bytes, alignment 16): no room" in line
    assert not re.search(r"(?<![\d.,])\d{4,} bytes", line), line


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


def test_debug_shows_the_traceback(small_csv: Path) -> None:
    result = run(small_csv, "--memory", "1KiB:16", "--debug")
    assert result.returncode == 1
    assert "Traceback" in result.stderr
