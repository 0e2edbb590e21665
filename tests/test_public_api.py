"""The public API is what docs/python-api.md and docs/formats.md document: the
``__all__`` of ``cadence_memplan``, ``cadence_memplan.exir`` and ``cadence_memplan.io``.
Every such name is documented; every ``cadence_memplan.X`` in the user pages' code
blocks (what a user copies) and in python-api.md's text resolves to a public name or the
patches' ``-m`` runners. Other pages may name internal modules to explain where something
happens. Source and docs are read; nothing needs executorch.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from package_source import PACKAGE

import cadence_memplan
import cadence_memplan.io

ROOT = Path(__file__).resolve().parents[1]
API_PAGES = ("docs/python-api.md", "docs/formats.md")
USER_PAGES = (
    "README.md",
    "docs/python-api.md",
    "docs/formats.md",
    "docs/cadence.md",
    "docs/exir.md",
)
RUNNERS = {"cadence_memplan.cadence.patch", "cadence_memplan.exir.patch"}


def declared_all(path: Path) -> list[str]:
    """A module's ``__all__``, read from its source (exir's package imports torch)."""
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            return list(ast.literal_eval(node.value))
    raise AssertionError(f"{path} has no __all__")


PUBLIC = {
    "cadence_memplan": cadence_memplan.__all__,
    "cadence_memplan.exir": declared_all(PACKAGE / "exir" / "__init__.py"),
    "cadence_memplan.io": cadence_memplan.io.__all__,
    "cadence_memplan.device": declared_all(PACKAGE / "device" / "__init__.py"),
}


def page_text(pages: tuple[str, ...]) -> str:
    return "\n".join((ROOT / page).read_text() for page in pages)


def undocumented(names: list[str], text: str) -> list[str]:
    return [name for name in names if not re.search(rf"`[^`\n]*\b{re.escape(name)}\b", text)]


def dotted_references(code_pages: tuple[str, ...], api_page: str) -> set[str]:
    """Every ``cadence_memplan.a.b`` in the code blocks of ``code_pages`` and in the code
    spans and blocks of ``api_page``."""
    blocks = re.findall(r"```.*?```", page_text(code_pages), flags=re.DOTALL)
    spans = re.findall(r"```.*?```|`[^`\n]+`", page_text((api_page,)), flags=re.DOTALL)
    return set(re.findall(r"\bcadence_memplan(?:\.\w+)+", " ".join(blocks + spans)))


def is_public(reference: str) -> bool:
    if reference in RUNNERS or reference in PUBLIC:
        return True
    module, _, name = reference.rpartition(".")
    return name in PUBLIC.get(module, ())


@pytest.mark.skipif(not (ROOT / "docs").is_dir(), reason="the docs ship with the source only")
@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_every_public_name_is_documented(module: str) -> None:
    assert undocumented(PUBLIC[module], page_text(API_PAGES)) == []


@pytest.mark.skipif(not (ROOT / "docs").is_dir(), reason="the docs ship with the source only")
def test_the_user_pages_show_only_public_names() -> None:
    references = dotted_references(USER_PAGES, "docs/python-api.md")
    assert "cadence_memplan.exir.greedy" in references
    assert "cadence_memplan.exir.memory_planning_pass" in references
    assert sorted(reference for reference in references if not is_public(reference)) == []


def test_the_checks_can_fail() -> None:
    assert undocumented(["plan", "hidden_helper"], "call `cm.plan(...)`") == ["hidden_helper"]
    assert not is_public("cadence_memplan.cadence.reports")
    assert not is_public("cadence_memplan.exir.planners")
    assert is_public("cadence_memplan.io.read_plan")
