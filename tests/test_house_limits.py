"""The house's limits on size, read off the checkout (the tests' own folder's parent):
every source file at most 600 lines, no Python class over 300, no docs page over 450, the
README under 200, and no folder of csrc/ with more than 16 source files directly in it.
A file over its limit asks to be split by job (docs/architecture.md says where each job
lives). Each check is tried on material made to break it, so none passes by reading
nothing."""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCE_FOLDERS = ("python", "csrc", "tests", "bench")
SOURCE_SUFFIXES = (".py", ".pyi", ".cc", ".h")
MAX_SOURCE_LINES = 600
MAX_CLASS_LINES = 300
MAX_DOCS_LINES = 450
MAX_README_LINES = 200
MAX_SOURCES_PER_CSRC_FOLDER = 16

pytestmark = pytest.mark.skipif(
    not (ROOT / "csrc").is_dir(), reason="the tests run outside a checkout: no sources to read"
)


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def sources() -> list[Path]:
    return sorted(
        path
        for folder in SOURCE_FOLDERS
        for path in (ROOT / folder).rglob("*")
        if path.suffix in SOURCE_SUFFIXES and "corpus" not in path.parts
    )


def too_long(paths: Iterable[Path], limit: int, root: Path = ROOT) -> dict[str, int]:
    """Each file of ``paths`` over ``limit`` lines, with its line count, named from ``root``."""
    return {
        path.relative_to(root).as_posix(): count
        for path in paths
        if (count := line_count(path)) > limit
    }


def long_classes(source: str, limit: int) -> dict[str, int]:
    """Each class of ``source`` over ``limit`` lines (decorators and docstring included)."""
    return {
        node.name: count
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ClassDef)
        and (count := (node.end_lineno or node.lineno) - node.lineno + 1) > limit
    }


def crowded_folders(root: Path, limit: int) -> dict[str, int]:
    """Each folder under ``root`` (itself included, named from its parent) with more than
    ``limit`` C++ sources directly in it."""
    counts = {
        folder.relative_to(root.parent).as_posix(): sum(
            1 for child in folder.iterdir() if child.suffix in (".cc", ".h")
        )
        for folder in [root, *(path for path in root.rglob("*") if path.is_dir())]
    }
    return {folder: count for folder, count in counts.items() if count > limit}


def test_every_source_file_is_at_most_600_lines() -> None:
    found = sources()
    assert len(found) > 100, "the sources were not found"
    assert too_long(found, MAX_SOURCE_LINES) == {}


def test_no_python_class_is_over_300_lines() -> None:
    offenders = {}
    for path in sources():
        if path.suffix == ".py":
            for name, count in long_classes(
                path.read_text(encoding="utf-8"), MAX_CLASS_LINES
            ).items():
                offenders[f"{path.relative_to(ROOT).as_posix()}:{name}"] = count
    assert offenders == {}


def test_docs_pages_and_the_readme_are_short_enough_to_read() -> None:
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) > 5, "the docs were not found"
    assert too_long(pages, MAX_DOCS_LINES) == {}
    assert line_count(ROOT / "README.md") <= MAX_README_LINES


def test_no_csrc_folder_holds_more_than_16_sources() -> None:
    assert crowded_folders(ROOT / "csrc", MAX_SOURCES_PER_CSRC_FOLDER) == {}


def test_the_checks_catch_what_breaks_them(tmp_path: Path) -> None:
    long_file = tmp_path / "long.py"
    long_file.write_text("x = 1\n" * 601, encoding="utf-8")
    short_file = tmp_path / "short.py"
    short_file.write_text("x = 1\n" * 600, encoding="utf-8")
    assert too_long([long_file, short_file], MAX_SOURCE_LINES, tmp_path) == {"long.py": 601}
    folder = tmp_path / "csrc" / "crowded"
    folder.mkdir(parents=True)
    for k in range(17):
        (folder / f"part{k}.cc").write_text("", encoding="utf-8")
    (folder / "notes.md").write_text("", encoding="utf-8")
    assert crowded_folders(tmp_path / "csrc", MAX_SOURCES_PER_CSRC_FOLDER) == {"csrc/crowded": 17}
    big_class = "class Big:\n" + "    x = 1\n" * 300
    assert long_classes(big_class, MAX_CLASS_LINES) == {"Big": 301}
    assert long_classes("class Small:\n" + "    x = 1\n" * 299, MAX_CLASS_LINES) == {}
