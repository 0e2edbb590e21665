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
import textwrap
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


MAX_FUNCTION_LINES = 80
PACKAGE_SOURCE = ROOT / "python" / "cadence_memplan"


def code_lines(source: str, function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """The lines of ``function`` (decorators aside) that hold code: docstrings (its own
    and those of what it defines), blank lines and lines holding only a comment are not
    counted."""
    lines = source.splitlines()[function.lineno - 1 : function.end_lineno]
    skipped: set[int] = set()
    for node in ast.walk(function):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = node.body[0]
            if ast.get_docstring(node, clean=False) is not None:
                skipped.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return sum(
        1
        for number, line in enumerate(lines, start=function.lineno)
        if number not in skipped and line.strip() and not line.strip().startswith("#")
    )


def long_functions(source: str, limit: int) -> dict[str, int]:
    """Each function or method of ``source`` with more than ``limit`` lines of code
    (:func:`code_lines`), by its qualified name (``Class.method``, ``outer.inner``)."""
    found: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if (
                    not isinstance(child, ast.ClassDef)
                    and (count := code_lines(source, child)) > limit
                ):
                    found[name] = count
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def test_no_python_function_in_the_package_is_over_80_lines() -> None:
    offenders = {}
    modules = sorted(PACKAGE_SOURCE.rglob("*.py"))
    assert len(modules) > 50, "the package's source was not found"
    for path in modules:
        for name, count in long_functions(
            path.read_text(encoding="utf-8"), MAX_FUNCTION_LINES
        ).items():
            offenders[f"{path.relative_to(ROOT).as_posix()}:{name}"] = count
    assert offenders == {}


def test_the_function_check_catches_a_long_function() -> None:
    body = "".join(f"    x{k} = {k}\n" for k in range(81))
    docstring = '    """One line,\n\n    and more."""\n'
    comments = "    # a comment\n\n" * 30
    long_one = f"def long() -> None:\n{docstring}{comments}{body}"
    assert long_functions(long_one, MAX_FUNCTION_LINES) == {"long": 82}
    in_class = "class A:\n" + textwrap.indent(long_one, "    ")
    assert long_functions(in_class, MAX_FUNCTION_LINES) == {"A.long": 82}
    nested = "def outer() -> None:\n" + textwrap.indent(long_one, "    ")
    assert long_functions(nested, MAX_FUNCTION_LINES) == {"outer": 83, "outer.long": 82}
    exactly = "".join(f"    x{k} = {k}\n" for k in range(79))  # with its def, 80 lines
    short = "def short() -> None:\n" + docstring + comments + exactly
    assert long_functions(short, MAX_FUNCTION_LINES) == {}


ROOT_MODULE = "__init__"  # the package's own module, in the graphs


def module_names(package: Path) -> dict[str, Path]:
    """Every module of ``package`` by its dotted name inside it (``cadence.lowering``;
    a package by its own name, ``cadence``; the root's ``__init__`` as ``""``, which
    :func:`import_graph` names :data:`ROOT_MODULE`); a compiled module by its stub
    (``_core.pyi``)."""
    names = {}
    for path in sorted([*package.rglob("*.py"), *package.rglob("*.pyi")]):
        parts = list(path.relative_to(package).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names.setdefault(".".join(parts), path)
    return names


def _imported(node: ast.Import | ast.ImportFrom, here: list[str], package: str) -> list[str]:
    """The dotted names (inside the package) a statement in the module ``here`` (its
    package's parts) imports from, each name of ``from x import a, b`` as ``x.a``, ``x.b``
    (the caller keeps those that are modules, else ``x``)."""
    if isinstance(node, ast.Import):
        return [
            ".".join(alias.name.split(".")[1:])
            for alias in node.names
            if alias.name.split(".")[0] == package
        ]
    if node.level == 0:
        parts = (node.module or "").split(".")
        if parts[0] != package:
            return []
        base = parts[1:]
    else:
        base = here[: len(here) - (node.level - 1)] + (
            node.module.split(".") if node.module else []
        )
    return [".".join([*base, alias.name]) for alias in node.names] + [".".join(base)]


def import_graph(package: Path) -> dict[str, set[str]]:
    """Module to the modules it imports, at module level or inside a function alike
    (``from x import a``: ``x.a`` when that is a module, else ``x``)."""
    modules = module_names(package)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        parts = name.split(".") if name else []
        here = parts if path.name == "__init__.py" else parts[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            targets = _imported(node, here, package.name)
            if isinstance(node, ast.ImportFrom):
                named = [target for target in targets[:-1] if target in modules]
                if len(named) < len(targets) - 1:  # some names are the module's own
                    named.append(targets[-1])
                targets = named
            graph[name].update(target for target in targets if target in modules)
        graph[name].discard(name)
    return {
        name or ROOT_MODULE: {target or ROOT_MODULE for target in targets}
        for name, targets in graph.items()
    }


def component_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The same edges between components: a subpackage, or a module at the root."""

    def component(module: str) -> str:
        return module.split(".")[0]

    components: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = components.setdefault(component(module), set())
        edges.update(component(target) for target in targets)
    for name, edges in components.items():
        edges.discard(name)
    return components


def loops(graph: dict[str, set[str]]) -> list[str]:
    """Each strongly connected part of ``graph`` with more than one node, named by its
    members and one cycle through them (Tarjan's components, then a walk inside one)."""
    return [f"{', '.join(part)}: {' -> '.join(cycle)}" for part, cycle in cycles(graph)]


def cycles(graph: dict[str, set[str]]) -> list[tuple[list[str], list[str]]]:
    """Each strongly connected part of ``graph`` with more than one node (sorted), and
    one cycle through its first, as a path ``[a, b, ..., a]``."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    parts: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                parts.append(sorted(part))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    found = []
    for part in parts:
        members = set(part)
        path, seen = [part[0]], {part[0]}
        while True:
            step = sorted(graph[path[-1]] & members)
            back = part[0] if part[0] in step else None
            if back is not None and len(path) > 1:
                found.append((part, [*path, back]))
                break
            fresh = [target for target in step if target not in seen]
            if not fresh:  # a cycle through part[0] that this greedy walk missed
                found.append((part, [*part, part[0]]))
                break
            path.append(fresh[0])
            seen.add(fresh[0])
    return found


def test_no_import_loop_between_modules_or_components() -> None:
    graph = import_graph(PACKAGE_SOURCE)
    assert len(graph) > 50, "the package's modules were not found"
    assert sum(map(len, graph.values())) > 100, "no imports were found"
    assert loops(graph) == []
    assert loops(component_graph(graph)) == []


def test_the_loop_check_catches_a_loop(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "sub" / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    (package / "sub" / "low.py").write_text("from . import VALUE\n", encoding="utf-8")
    (package / "top.py").write_text("from .sub.low import VALUE\n", encoding="utf-8")
    (package / "sub" / "high.py").write_text(
        "def late() -> None:\n    from ..top import VALUE\n", encoding="utf-8"
    )
    graph = import_graph(package)
    assert graph["sub.low"] == {"sub"}
    assert graph["top"] == {"sub.low"}
    assert cycles(graph) == []  # modules: no loop; components sub and top: one
    assert loops(component_graph(graph)) == ["sub, top: sub -> top -> sub"]
    (package / "sub" / "low.py").write_text("import pkg.sub.high\n", encoding="utf-8")
    assert loops(import_graph(package)) == [
        "sub.high, sub.low, top: sub.high -> top -> sub.low -> sub.high"
    ]
