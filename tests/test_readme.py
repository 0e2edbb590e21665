"""The README and docs/ as a user reads them: their Python snippets run as written, the
examples of docs/formats.md read as the formats they show, the README's test command is
the one .ci/run runs, every pip command with an extra quotes its brackets, and every
relative link leads to a file."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import cadence_memplan
from cadence_memplan.io import read_memory_config, read_minimalloc_csv, size_schema

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.skipif(not README.is_file(), reason="README.md is not beside tests/")


def blocks(language: str, pages: list[Path] = PAGES) -> list[tuple[str, str]]:
    """(page name, code) of every fenced block in ``language``."""
    return [
        (page.name, body)
        for page in pages
        if page.is_file()
        for lang, body in FENCE.findall(page.read_text("utf-8"))
        if lang == language
    ]


def needs_executorch(code: str) -> bool:
    """A snippet that imports executorch, a subpackage of ours that imports it, or uses a
    name the package loads from it."""
    return (
        "executorch" in code
        or re.search(r"\bcadence_memplan\.(exir|cadence|scheduling)\b", code) is not None
        or any(name in code for name in cadence_memplan._EXECUTORCH_NAMES)
    )


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(
            code,
            marks=[pytest.mark.executorch] if needs_executorch(code) else [],
            id=f"{page}: {code.strip().splitlines()[-1][:40]}",
        )
        for page, code in blocks("python")
    ],
)
def test_python_snippet_runs_as_written(code: str, tmp_path: Path) -> None:
    """Each snippet runs as a script; one whose first line names a file (``# toolchain.py``)
    is that file, run the way its page says: under ``python -m cadence_memplan.cadence.patch``."""
    command = [sys.executable, "-c", code]
    first_line = code.splitlines()[0]
    if re.fullmatch(r"# \w+\.py", first_line):
        script = tmp_path / first_line[2:]
        script.write_text(code)
        command = [sys.executable, "-m", "cadence_memplan.cadence.patch", script.name, "out.pte"]
    result = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    if command[1] == "-m":
        assert (tmp_path / "out.pte").stat().st_size > 0


def test_readme_has_the_snippets_this_file_runs() -> None:
    snippets = [code for _, code in blocks("python", [README])]
    assert any("cm.plan(" in code for code in snippets)
    assert any("CadenceMemoryPlanning(" in code for code in snippets)
    assert any("patch_cadence()" in code for code in snippets)
    assert any("patch_exir()" in code for code in snippets)
    exir_snippets = [code for _, code in blocks("python", [ROOT / "docs" / "exir.md"])]
    assert any("memory_planning_pass(smallest=True)" in code for code in exir_snippets)


def test_the_formats_page_examples_read_as_their_formats(tmp_path: Path) -> None:
    """What docs/formats.md tells a user to paste is read by the package's readers."""
    formats = ROOT / "docs" / "formats.md"
    csvs, jsons, tomls = (blocks(language, [formats]) for language in ("csv", "json", "toml"))
    assert len(csvs) == len(tomls) == 1
    assert len(jsons) == 3  # a memory config, `size --json`'s, the pools' (below)
    (tmp_path / "example.csv").write_text(csvs[0][1])
    assert len(read_minimalloc_csv(tmp_path / "example.csv").ids) == 8
    (tmp_path / "memories.json").write_text(jsons[0][1])
    assert [m.name for m in read_memory_config(tmp_path / "memories.json")] == [
        "dtcm",
        "sram",
        "dram",
    ]
    (tmp_path / "memories.toml").write_text(tomls[0][1])
    assert len(read_memory_config(tmp_path / "memories.toml")) == 2


def test_the_formats_page_size_example_is_what_size_writes() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    _, example = blocks("json", [ROOT / "docs" / "formats.md"])[1]
    document = json.loads(example)
    jsonschema.validate(document, size_schema())
    (memory,) = document["memories"]
    capacities = [point["capacity"] for point in memory["curve"]]
    assert capacities == sorted(capacities, reverse=True)
    assert capacities[0] < memory["all_fit_from"]
    assert all(p["kept"] <= p["kept_bound"] <= memory["total"] for p in memory["curve"])


def test_the_formats_page_pools_example_follows_its_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    from cadence_memplan.io.program_memory import program_memory_schema

    _, example = blocks("json", [ROOT / "docs" / "formats.md"])[2]
    document = json.loads(example)
    jsonschema.validate(document, program_memory_schema())
    (method,) = document["methods"]
    assert method["total"] == method["method_pool"] + method["temp_pool"] + sum(method["arenas"])
    assert sum(method["breakdown"].values()) == method["method_pool"]


def test_first_block_is_the_two_commands() -> None:
    first = FENCE.search(README.read_text("utf-8"))
    assert first is not None
    lines = first.group(2).strip().splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("cadence-memplan plan")
    assert lines[1].endswith("python -m pytest -n auto")
    for line in lines:  # each works from a fresh clone, in a venv of its own
        assert line.startswith("python3 -m venv .venv && . .venv/bin/activate && ")
        assert "pip install torch==2.13.0 && " in line


def test_pip_extras_are_quoted() -> None:
    """Unquoted brackets are a glob in zsh: `pip install .[plot]` fails there."""
    for page in PAGES:
        unquoted = re.findall(r"pip install [^\n`\"']*\[[a-z,]+\]", page.read_text("utf-8"))
        assert unquoted == [], page.name
    assert 'pip install ".[plot]"' in README.read_text("utf-8")


def test_the_first_page_is_short_and_speaks_to_its_reader() -> None:
    text = README.read_text("utf-8")
    assert len(text.splitlines()) <= 200
    for page in PAGES:
        words = page.read_text("utf-8")
        for phrase in ("the issue", "this project's machine", "resnet50.csv"):
            assert phrase not in words, f"{page.name}: {phrase!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_relative_links_lead_to_files(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text("utf-8")):
        assert (page.parent / target).exists(), f"{page.name} links to {target}"
