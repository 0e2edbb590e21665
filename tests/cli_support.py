"""Running the command line in the tests, with numpy alone: ``python -m cadence_memplan`` in
a subprocess (:func:`run`), the one line it prints on failure (:func:`error_line`), its
progress lines (``PROGRESS_LINE``), the small MiniMalloc instance the CSV tests plan
(``SMALL_CSV``; the ``small_csv`` fixture in tests/conftest.py writes it), the plan a run
should print, made in process (:func:`expected_plan`), the report's memory table read back
(:func:`report_rows`), and a picture's size (:func:`image_size`, which skips without
matplotlib).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import cadence_memplan
from cadence_memplan.io import parse_memory_spec, read_minimalloc_csv

CLI = [sys.executable, "-m", "cadence_memplan"]
MODEL_TIMEOUT = 300  # seconds: a model run lowers a model (torch and executorch import first)

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
# A progress line on stderr: where one shows, the work has started.
PROGRESS_LINE = re.compile(r"^cadence-memplan: \[\s*\d+\.\d s\] ", re.MULTILINE)


def run(*arguments: str | Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``cadence-memplan ARGUMENTS`` in a subprocess; its exit status is not checked."""
    return subprocess.run(
        [*CLI, *map(str, arguments)], capture_output=True, text=True, timeout=timeout, check=False
    )


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line the CLI prints on failure (library chatter before it is ignored)."""
    lines = result.stderr.strip().splitlines()
    assert lines, "nothing on stderr"
    assert "Traceback" not in result.stderr
    return lines[-1]


def report_rows(stdout: str) -> dict[str, list[str]]:
    """The report's memory table: name -> its cells (columns as in cli/printing.HEADERS)."""
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("memory ")) + 2
    end = next(i for i, line in enumerate(lines) if line.startswith("overall peak"))
    return {line.split()[0]: line.split() for line in lines[start:end]}


def number(cell: str) -> int:
    """A report cell's integer, thousands separators removed."""
    return int(cell.replace(",", ""))


def expected_plan(path: Path, memory_spec: str, algorithm: str) -> cadence_memplan.PlanResult:
    """The plan of the MiniMalloc CSV ``path`` in ``memory_spec``'s memories, in process."""
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
    """(width, height) in pixels of the picture at ``path``; the test skips without
    matplotlib."""
    matplotlib_image = pytest.importorskip(
        "matplotlib.image", reason='needs matplotlib: pip install ".[plot]"'
    )

    height, width = matplotlib_image.imread(path).shape[:2]
    return width, height
