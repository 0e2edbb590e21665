"""The house's limits on size, read off the checkout (the tests' own folder's parent):
every source file at most 600 lines, no Python class over 300, no C++ function of the core
(csrc/core/) over 80 lines of code (comments and blank lines aside), no docs page over 450,
the README under 200, and no folder of csrc/ with more than 16 source files directly in it.
A file over its limit asks to be split by job (docs/architecture.md says where each job
lives). Each check is tried on material made to break it, so none passes by reading
nothing."""

from __future__ import annotations

import ast
import re
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
MAX_CPP_FUNCTION_LINES = 80

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


# --------------------------------------------------------------------------- C++ functions

_CPP_COMMENT_OR_LITERAL = re.compile(
    r"//[^\n]*|/\*.*?\*/|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'", re.DOTALL
)
# A brace that opens a scope whose functions are counted one by one.
_CPP_SCOPE = re.compile(
    r"^(?:template\s*<.*>\s*)?(?:namespace|class|struct|union|enum)\b|^extern\b"
)
_CPP_CONTROL = re.compile(r"^(?:if|for|while|switch|catch|else|do|try)\b")


def cpp_code(source: str) -> str:
    """``source`` with its comments, literals and preprocessor lines blanked (newlines kept,
    so that braces in them count for nothing and lines stay where they were)."""

    def blank(match: re.Match[str]) -> str:
        text = match.group(0)
        if text.startswith(("//", "/*")):
            return re.sub(r"[^\n]", " ", text)
        return text[0] + re.sub(r"[^\n]", " ", text[1:-1]) + text[-1]

    code = _CPP_COMMENT_OR_LITERAL.sub(blank, source)
    return re.sub(r"^[ \t]*#[^\n]*", lambda m: " " * len(m.group(0)), code, flags=re.MULTILINE)


def matching_brace(code: str, opening: int) -> int:
    depth = 0
    for position in range(opening, len(code)):
        if code[position] == "{":
            depth += 1
        elif code[position] == "}":
            depth -= 1
            if depth == 0:
                return position
    raise ValueError("unbalanced braces")


def long_cpp_functions(source: str, limit: int) -> dict[str, int]:
    """Each function of a C++ ``source`` (free, member, defined in a class; a lambda counts
    in its function) over ``limit`` lines of code, from its signature to its closing brace,
    comments and blank lines aside, by name."""
    code = cpp_code(source)
    found: dict[str, int] = {}
    position = 0  # Where the text before the next brace (its header) begins.
    while (opening := code.find("{", position)) >= 0:
        closing_before = code.rfind("}", position, opening)
        header_start = max(position, closing_before + 1, code.rfind(";", position, opening) + 1)
        header = code[header_start:opening].strip()
        if _CPP_SCOPE.match(header):
            position = opening + 1  # Its functions are counted inside it.
            continue
        closing = matching_brace(code, opening)
        position = closing + 1
        if "(" not in header or _CPP_CONTROL.match(header) or "=" in header.split("(")[0]:
            continue  # A brace initializer, or code outside a function.
        first_line = code.rfind("\n", 0, header_start + code[header_start:].find(header)) + 1
        lines = sum(1 for line in code[first_line : closing + 1].splitlines() if line.strip())
        if lines > limit:
            names = re.findall(r"([\w:~]+)\s*\(", header)
            found[names[0] if names else header] = lines
    return found


def test_no_core_function_is_over_80_lines_of_code() -> None:
    # The core only: the tests and the bindings are held by the file limit. The package's
    # Python functions get the same limit in their own test.
    core = sorted(
        path for path in (ROOT / "csrc" / "core").rglob("*") if path.suffix in (".cc", ".h")
    )
    assert len(core) > 40, "the core's sources were not found"
    offenders = {
        f"{path.relative_to(ROOT).as_posix()}:{name}": count
        for path in core
        for name, count in long_cpp_functions(
            path.read_text(encoding="utf-8"), MAX_CPP_FUNCTION_LINES
        ).items()
    }
    assert offenders == {}


def test_the_cpp_function_count_catches_what_breaks_it() -> None:
    body = '  x += 1;  // a comment\n\n  /* { */ y = "}";\n'
    long_body = "  x += 1;\n" * 79
    source = (
        "namespace a {\nnamespace {\n"
        f"int Long(int x) {{\n{long_body}  return x;\n}}\n"  # 82 lines of code
        f"int Short(int x) {{\n{body * 30}  return x;\n}}\n"  # 62, whatever its comments
        "struct S {\n  const int table[2] = {1, 2};\n"
        f"  void Member() const {{\n    if (true) {{\n{long_body}    }}\n  }}\n"
        "};\n"
        f"void S2::Out() {{\n  auto f = [] {{\n{long_body}  }};\n}}\n"
        "}  // namespace\n}  // namespace a\n"
    )
    assert long_cpp_functions(source, MAX_CPP_FUNCTION_LINES) == {
        "Long": 82,
        "Member": 83,
        "S2::Out": 83,
    }
    assert long_cpp_functions(source, 90) == {}


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
