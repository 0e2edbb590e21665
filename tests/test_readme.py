"""The README as a user reads it: its Python snippets (and docs/exir.md's) run as written,
its test command is the one .ci/run runs, and every pip command with an extra quotes its
brackets."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
DOCS = (README, README.parent / "docs" / "exir.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.skipif(not README.is_file(), reason="README.md is not beside tests/")


def blocks(language: str, documents: tuple[Path, ...] = (README,)) -> list[str]:
    return [
        body
        for document in documents
        if document.is_file()
        for lang, body in FENCE.findall(document.read_text("utf-8"))
        if lang == language
    ]


def needs_executorch(code: str) -> bool:
    return "executorch" in code or "CadenceMemoryPlanning" in code or "GreedyWith" in code


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            code,
            marks=[pytest.mark.executorch] if needs_executorch(code) else [],
        )
        for code in blocks("python", DOCS)
    ],
    ids=lambda code: code.strip().splitlines()[-1][:40],
)
def test_python_snippet_runs_as_written(code: str, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_readme_has_the_snippets_this_file_runs() -> None:
    snippets = blocks("python")
    assert any("cm.plan(" in code for code in snippets)
    assert any("CadenceMemoryPlanning(" in code for code in snippets)
    assert any("cadence_memplan.exir.memory_planning_pass()" in code for code in snippets)
    exir_snippets = blocks("python", DOCS[1:])
    assert any("memory_planning_pass(smallest=True)" in code for code in exir_snippets)


def test_first_block_is_the_two_commands() -> None:
    first = FENCE.search(README.read_text("utf-8"))
    assert first is not None
    lines = first.group(2).strip().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("cadence-memplan plan")
    assert lines[1].endswith("python -m pytest")


def test_pip_extras_are_quoted() -> None:
    """Unquoted brackets are a glob in zsh: `pip install .[plot]` fails there."""
    text = README.read_text("utf-8")
    unquoted = re.findall(r"pip install [^\n`\"']*\[[a-z,]+\]", text)
    assert unquoted == []
    assert 'pip install ".[plot]"' in text
