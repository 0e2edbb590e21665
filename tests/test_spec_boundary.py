"""One TensorSpec boundary (numpy-only: source read). No module but those of
``_boundary/tensorspecs/`` reads or writes a TensorSpec's placement fields (``mem_id``,
``mem_offset``, ``lifetime``, ``allocated_memory``, ``alignment``, ``mem_obj_id``):
neither as an attribute (``spec.mem_id``, ``spec.mem_id = 1``) nor by name
(``getattr``, ``setattr``, ``attrgetter``, the boundary's ``column`` and ``set_column``).
Every reader is then under the boundary's one exactness policy. And ``exir/records.py``,
the core's second entry point, imports numpy and the extension only.

Other objects have fields of the same names (a memory's ``alignment``, a bank's
``mem_id``): their receivers are listed in ``NOT_SPECS``. What may still touch a spec is
``ALLOWED``, each with its reason.
"""

from __future__ import annotations

import ast

from package_source import PACKAGE

BOUNDARY = "_boundary/tensorspecs"  # a package: its modules, one per job
FIELDS = frozenset(
    {"mem_id", "mem_offset", "lifetime", "allocated_memory", "alignment", "mem_obj_id"}
)
BY_NAME = frozenset(
    {"getattr", "setattr", "hasattr", "delattr", "attrgetter", "column", "set_column"}
)

# Receivers (the name before the dot) that are not TensorSpecs.
NOT_SPECS = {
    "memory": "io/memories.py's Memory, its diff (cli/diff_command.py), its peak (cli/explaining.py)",
    "m": "cli/diff_command.py: a memory's diff",
    "peak": "cli/explaining.py: a memory's peak (analysis/explain.py)",
    "names": "cli/explaining.py: TensorNames",
    "self": "cli/explaining.py: TensorNames' own lifetime()",
    "bank": "exir's Bank (exir/planners.py's bank records)",
    "planning": "exir's MemoryPlanningPass (its alignment)",
    "call": "cadence/sweep.py's recorded call (its alignment)",
}

# (module, where) -> why: "f-string" allows fields inside f-strings (messages) only; a
# function's name allows them anywhere in that function.
ALLOWED = {
    ("exir/planners.py", "f-string"): "exir's error messages, worded as exir's, print them",
    ("cadence/planning_pass.py", "update_lifetimes"): (
        "computes lifetimes (exir's update_all_tensors_lifetime) in the pass's one walk, "
        "reading each holder's lifetime when the walk first meets it (the walk aliases "
        "in-place ops' specs as it goes, so the holders are not known before it)"
    ),
}


def spec_field_uses(source: str, module: str = "") -> list[str]:
    """``line: code`` for each read or write of a spec field in ``source`` (the module's
    path under the package, for ``ALLOWED``)."""
    tree = ast.parse(source)
    in_fstring: set[int] = set()
    in_function: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            in_fstring.update(id(inner) for inner in ast.walk(node))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                in_function.setdefault(id(inner), node.name)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in FIELDS:
            receiver = node.value.id if isinstance(node.value, ast.Name) else None
            if receiver in NOT_SPECS:
                continue
        elif isinstance(node, ast.Call) and (
            (isinstance(node.func, ast.Name) and node.func.id in BY_NAME)
            or (isinstance(node.func, ast.Attribute) and node.func.attr in BY_NAME)
        ):
            if not any(
                isinstance(argument, ast.Constant) and argument.value in FIELDS
                for argument in node.args
            ):
                continue
        else:
            continue
        if id(node) in in_fstring and (module, "f-string") in ALLOWED:
            continue
        if (module, in_function.get(id(node))) in ALLOWED:
            continue
        found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_only_the_boundary_reads_or_writes_spec_fields() -> None:
    assert (PACKAGE / BOUNDARY).is_dir(), f"no package source at {PACKAGE}"
    offenders = {
        module: found
        for path in sorted(PACKAGE.rglob("*.py"))
        if not (module := path.relative_to(PACKAGE).as_posix()).startswith(f"{BOUNDARY}/")
        and (found := spec_field_uses(path.read_text(), module))
    }
    assert offenders == {}


def test_the_boundary_itself_reads_the_fields() -> None:
    uses = {
        path.name: len(spec_field_uses(path.read_text(), path.name))
        for path in (PACKAGE / BOUNDARY).glob("*.py")
    }
    assert sum(uses.values()) > 10
    # Every job's module touches the fields it is for; the package's __init__ only names them.
    assert all(count > 0 for name, count in uses.items() if name != "__init__.py"), uses


def test_the_check_sees_every_spelling() -> None:
    source = """
spec.mem_offset = 3
start, end = spec.lifetime
size = getattr(spec, "allocated_memory", 0)
setattr(spec, "mem_id", 2)
ids = column(specs, "mem_obj_id")
tensorspecs.set_column(specs, "alignment", values)
read = operator.attrgetter("mem_id")
message = f"{spec.mem_id}"
"""
    assert len(spec_field_uses(source, "cadence/algorithms.py")) == 8


def test_the_check_passes_what_is_not_a_spec_field() -> None:
    source = """
size = memory.alignment
records["mem_id"] = mem_ids
mem_ids = packing.mem_ids
value = getattr(spec, "shape")
column(specs, "storage_base")
"""
    assert spec_field_uses(source, "cadence/algorithms.py") == []


def test_allowed_messages_are_allowed_only_in_messages() -> None:
    source = 'raise ValueError(f"{spec.allocated_memory}")\nsize = spec.allocated_memory\n'
    assert spec_field_uses(source, "exir/planners.py") == ["2: spec.allocated_memory"]


def test_exir_records_imports_numpy_and_the_extension_only() -> None:
    tree = ast.parse((PACKAGE / "exir" / "records.py").read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = "." * node.level + (node.module or "")
            imported.update(f"{prefix}:{alias.name}" for alias in node.names)
    assert imported == {
        "__future__:annotations",
        "numpy",
        "numpy.typing",
        "..:_core",
    }
