"""How the command line is given its memories: ``--memory`` sizes and their units,
``--memory-config`` in JSON and TOML, how a memory is named, and the warnings about
memories that look wrong (swapped size and alignment, overlapping or 32-bit-overflowing
addresses) while the plan still goes ahead. Numpy only.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_support import error_line, report_rows, run

from cadence_memplan.io import DEFAULT_MEMORY_SPEC, parse_size, read_memory_config


def test_parse_size_units() -> None:
    assert parse_size("256KiB", "x") == 256 << 10
    assert parse_size("4 mib", "x") == 4 << 20
    assert parse_size("1GiB", "x") == 1 << 30
    assert parse_size("2TiB", "x") == 2 << 40
    assert parse_size("64B", "x") == 64
    assert parse_size("100", "x") == 100
    assert parse_size(1 << 62, "x") == 1 << 62
    for bad in ("1.5KiB", "KiB", "-4", "1KB", "0", "4194305TiB", (1 << 62) + 1, True):
        with pytest.raises(ValueError, match=r"^x: "):
            parse_size(bad, "x")


def test_memory_config_json(tmp_path: Path) -> None:
    config = tmp_path / "memories.json"
    config.write_text(
        json.dumps({"memories": [{"name": "a", "size": "1KiB", "base_address": "0x10"}]})
    )
    (memory,) = read_memory_config(config)
    assert (memory.name, memory.size, memory.alignment, memory.base_address) == ("a", 1024, 1, 16)


def test_memory_config_toml_names_and_bases(small_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "memories.toml"
    config.write_text(
        '[[memories]]\nname = "dtcm"\nsize = "4KiB"\nalignment = 16\nbase_address = "0x1000"\n'
        '[[memories]]\nname = "dram"\nsize = 1048576\nalignment = 64\nbase_address = 65536\n'
    )
    result = run(small_csv, "--memory-config", config)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.split()[:2] == ["dtcm", "0x1000"] for line in lines)
    assert any(line.split()[:2] == ["dram", "0x10000"] for line in lines)


def test_memory_config_unknown_key(small_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "memories.json"
    config.write_text('{"memories": [{"size": "1KiB", "alignement": 16}]}')
    result = run(small_csv, "--memory-config", config)
    assert result.returncode == 2
    assert "unknown key(s) ['alignement']" in error_line(result)


def memory_names(result: subprocess.CompletedProcess[str]) -> list[str]:
    return list(report_rows(result.stdout))


def test_memory_names_follow_one_rule(small_csv: Path, tmp_path: Path) -> None:
    """A memory is named by its name if it has one, else by its id, however it was given."""
    default = run(small_csv)
    spelled_out = run(small_csv, "--memory", DEFAULT_MEMORY_SPEC)
    unnamed = run(small_csv, "--memory", "256KiB:16,4MiB:64,1GiB:64")
    config = tmp_path / "memories.json"
    config.write_text(json.dumps({"memories": [{"size": "256KiB"}, {"size": "4MiB"}]}))
    from_file = run(small_csv, "--memory-config", config)
    assert memory_names(default) == memory_names(spelled_out) == ["fast", "near", "far"]
    assert memory_names(unnamed) == ["mem1", "mem2", "mem3"]
    assert memory_names(from_file) == ["mem1", "mem2"]


@pytest.mark.parametrize(
    ("memory", "error"),
    [
        ("16:256KiB", ("memory mem1: size 16 and alignment 256KiB look swapped (SIZE comes"
         " first: 256KiB:16?)")),
        ("64KiB:1GiB", "memory mem1: alignment 1GiB is above its size 64KiB"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("given_as", ["--memory", "--memory-config"])
def test_a_memory_nothing_fits_in_is_an_error(
    small_csv: Path, tmp_path: Path, memory: str, error: str, given_as: str
) -> None:
    """Alignment above size: no tensor of nonzero size fits; an error, nothing written."""
    out = tmp_path / "plan.json"
    if given_as == "--memory":
        result = run(small_csv, "--memory", f"{memory},1GiB:64", "--out", out)
    else:
        size, alignment = memory.split(":")
        config = tmp_path / "memories.json"
        config.write_text(json.dumps({"memories": [{"size": size, "alignment": alignment}]}))
        result = run(small_csv, "--memory-config", config, "--out", out)
    assert result.returncode == 2, result.stderr
    where = "--memory" if given_as == "--memory" else f"--memory-config {config}"
    assert error_line(result).startswith(f"cadence-memplan: error: {where}: {error}")
    assert not out.exists()


@pytest.mark.parametrize(
    ("memory", "warning"),
    [("fast=1MiB:48", "memory fast: alignment 48 is not a power of two")],
)
def test_implausible_memories_are_warned_about_and_still_planned(
    small_csv: Path, memory: str, warning: str
) -> None:
    result = run(small_csv, "--memory", f"{memory},1GiB:64", "--quiet")
    assert result.returncode == 0, result.stderr
    assert (
        result.stderr
        == f"cadence-memplan: warning: --memory: {warning}" + (result.stderr.split(warning, 1)[1])
    )
    assert len(result.stderr.splitlines()) == 1
    assert "plan check: valid" in result.stdout


def test_implausible_addresses_are_warned_about(small_csv: Path, tmp_path: Path) -> None:
    config = tmp_path / "memories.json"
    config.write_text(json.dumps({"memories": [
        {"name": "dtcm", "size": "64KiB", "alignment": 16, "base_address": "0x10000000"},
        {"name": "iram", "size": "64KiB", "alignment": 16, "base_address": "0x10000000"},
        {"name": "sram", "size": "1MiB", "alignment": 64, "base_address": "0x10008000"},
        {"name": "dram", "size": "1GiB", "alignment": 64, "base_address": "0xF0000000"},
    ]}))  # fmt: skip
    result = run(small_csv, "--memory-config", config, "--quiet")
    assert result.returncode == 0, result.stderr
    prefix = f"cadence-memplan: warning: --memory-config {config}: "
    assert result.stderr.splitlines() == [
        prefix + "memories dtcm and iram have the same base address 0x10000000",
        prefix + "memories dtcm [0x10000000, 0x10010000) and sram [0x10008000, 0x10108000) overlap",
        prefix + "memories iram [0x10000000, 0x10010000) and sram [0x10008000, 0x10108000) overlap",
        prefix + "memory dram: [0xf0000000, 0x130000000) reaches past 2^32 (0x100000000),"
        " beyond a 32-bit address space",
    ]


def test_the_default_memories_raise_no_warning(small_csv: Path) -> None:
    assert run(small_csv, "--quiet").stderr == ""
