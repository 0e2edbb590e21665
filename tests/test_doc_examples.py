"""The docs' command-line examples on the shared MiniMalloc instances print what the docs
show: every ``$ cadence-memplan ...`` block of README.md and docs/*.md whose input is one of
``../shared/data/planning-instances/`` is run, and each line the block shows (``...``
skips lines) must come out, in order. Times differ from run to run, so they, and the
column padding they change, are left out of the comparison; every figure is compared.
Skipped without the instances (tests/cases.py's ``PLANNING_INSTANCES``).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import cases
import pytest
from cli_support import run

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHARED = "../shared/data/planning-instances/"
_BLOCK = re.compile(r"^```[a-z]*\n(\$ cadence-memplan [^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)
_TIME = re.compile(r"\d+(?:\.\d+)? ?(?:s|ms|µs|ns)\b")


def examples() -> list[tuple[str, str, list[str]]]:
    """(page, command, the lines shown) of each example on the shared instances."""
    found = []
    for page in PAGES:
        for match in _BLOCK.finditer(page.read_text(encoding="utf-8")):
            command, shown = match.group(1), match.group(2)
            if SHARED in command and "|" not in command:
                found.append((page.name, command, shown.splitlines()))
    return found


def comparable(line: str) -> str:
    return " ".join(_TIME.sub("TIME", line).split())


def test_the_docs_have_examples_on_the_shared_instances() -> None:
    assert len(examples()) >= 2


@pytest.mark.parametrize(
    ("page", "command", "shown"), examples(), ids=[f"{e[0]}:{e[1][:60]}" for e in examples()]
)
def test_a_doc_example_prints_what_the_doc_shows(page: str, command: str, shown: list[str]) -> None:
    if not cases.PLANNING_INSTANCES.is_dir():
        pytest.skip("no shared planning instances")
    arguments = [
        word.replace(SHARED, f"{cases.PLANNING_INSTANCES}/")
        for word in shlex.split(command)[2:]  # "$ cadence-memplan"
    ]
    result = run(*arguments, "--quiet", timeout=300)
    assert result.returncode == 0, result.stderr
    printed = [comparable(line) for line in result.stdout.splitlines()]
    position = 0
    for line in shown:
        if line.strip() == "...":
            continue
        wanted = comparable(line)
        assert wanted in printed[position:], f"{page}: {line!r} not printed (in order)"
        position = printed.index(wanted, position) + 1
