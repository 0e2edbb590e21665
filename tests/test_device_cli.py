"""``cadence-memplan size`` on a ``.pte`` and on a model: every pool per method, the JSON
against its schema and the library's figures, the C header a firmware build includes
(compiled, its figures checked by the compiler), bad input refused in one line."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_support import MODEL_TIMEOUT, error_line, run

pytestmark = pytest.mark.executorch

programs = pytest.importorskip("device_programs", reason="needs torch and executorch")

from cadence_memplan.device import program_memory
from cadence_memplan.io import size_schema
from cadence_memplan.io.program_memory import program_memory_schema


@pytest.fixture(scope="module")
def two_methods(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pte") / "two.pte"
    path.write_bytes(programs.two_methods().pte)
    return path


def compiled_header_check(header: Path, figures: dict[str, int], directory: Path) -> None:
    """The header compiles, and each macro is the figure (static assertions)."""
    compiler = shutil.which("gcc") or shutil.which("cc")
    if compiler is None:
        pytest.skip("no C compiler to include the header with")
    checks = "".join(
        f'_Static_assert({name} == {value}u, "{name}");\n' for name, value in figures.items()
    )
    source = directory / "check.c"
    source.write_text(f'#include "{header}"\n#include "{header}"\n{checks}')
    done = subprocess.run([compiler, "-std=c11", "-c", str(source), "-o", str(directory / "c.o")],
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_size_on_a_pte_reports_each_method(two_methods: Path, tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out, header = tmp_path / "pools.json", tmp_path / "pools.h"
    result = run("size", two_methods, "--target", "arm32", "--json", out, "--header", header,
                 timeout=MODEL_TIMEOUT)  # fmt: skip
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    jsonschema.validate(document, program_memory_schema())
    expected = program_memory(two_methods, target="arm32")
    assert document["target"] == "arm32"
    assert document["runtime"] == expected.runtime
    by_name = {m["name"]: m for m in document["methods"]}
    assert set(by_name) == {"forward", "scale"}
    for method in expected.methods:
        entry = by_name[method.name]
        assert (entry["method_pool"], entry["temp_pool"]) == (method.method_pool, method.temp_pool)
        assert entry["arenas"] == list(method.arenas)
        row = next(line for line in result.stdout.splitlines() if line.startswith(method.name))
        assert f"{method.method_pool:,}" in row
        assert f"{method.temp_pool:,}" in row
    figures = {
        f"ET_{m.name.upper()}_{pool}_SIZE": size
        for m in expected.methods
        for pool, size in (("METHOD_POOL", m.method_pool), ("TEMP_POOL", m.temp_pool))
    }
    compiled_header_check(header, figures, tmp_path)


def test_a_bad_pte_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"not a \.pte program exir can read"):
        program_memory(b"not a program")


@pytest.mark.slow
def test_size_on_a_bad_pte_is_one_line_and_writes_nothing(tmp_path: Path) -> None:
    bad, out = tmp_path / "bad.pte", tmp_path / "out.json"
    bad.write_bytes(b"not a program")
    result = run("size", bad, "--json", out, timeout=MODEL_TIMEOUT)
    assert result.returncode == 2
    assert "not a .pte program exir can read" in error_line(result)
    assert not out.exists()


def test_a_header_needs_a_program(small_csv: Path, tmp_path: Path) -> None:
    result = run("size", small_csv, "--header", tmp_path / "x.h")
    assert result.returncode == 2
    assert "--header: for a model or a .pte only" in error_line(result)


@pytest.mark.slow
def test_size_on_a_model_adds_its_programs_pools(tmp_path: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    out, header = tmp_path / "size.json", tmp_path / "pools.h"
    result = run("size", "mlp", "--json", out, "--header", header, timeout=MODEL_TIMEOUT)
    assert result.returncode == 0, result.stderr
    document = json.loads(out.read_text())
    jsonschema.validate(document, size_schema())
    (method,) = document["program"]["methods"]
    assert method["method_pool"] > 0
    assert document["program"]["target"] == "host"
    figures = {"ET_FORWARD_METHOD_POOL_SIZE": method["method_pool"],
               "ET_FORWARD_TEMP_POOL_SIZE": method["temp_pool"]}  # fmt: skip
    compiled_header_check(header, figures, tmp_path)
