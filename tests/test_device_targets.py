"""The struct-size table (cadence_memplan.device.targets) against the compilers: the
sizeof probe (tests/runtime_probe/sizeof_probe.cpp), compiled with the installed
executorch wheel's headers for the host (g++) and for 32-bit ARM (Debian's
``g++-arm-linux-gnueabihf``, which CI installs), records each type's size and alignment
as the size of a global array, read back from the object file's symbol table, so the
cross-compiled probe needs no emulator. Skips, saying why, where a compiler, readelf or
the wheel's headers are missing; installs nothing. (No Xtensa C++ toolchain is checked:
the table's xtensa figures are arm32's, by the ABI.)
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from device_runner import DEFINES, PROBE_DIR, STANDARD, include_flags, wheel_dir

from cadence_memplan.device.targets import TARGETS, TYPES, Layout

COMPILERS = {"host": "g++", "arm32": "arm-linux-gnueabihf-g++"}


def probe_figures(compiler: str, directory: Path) -> dict[str, Layout]:
    """Each type's layout as ``compiler`` lays it out."""
    if shutil.which(compiler) is None:
        pytest.skip(
            f"{compiler} is not installed (Debian: apt-get install g++-arm-linux-gnueabihf)"
        )
    if shutil.which("readelf") is None:
        pytest.skip("readelf (binutils) is not installed")
    wheel = wheel_dir()
    if wheel is None or not (wheel / "include/executorch/runtime/core/evalue.h").exists():
        pytest.skip("the executorch wheel's headers are not installed")
    obj = directory / f"probe-{compiler}.o"
    command = [compiler, STANDARD, "-c", *DEFINES, *include_flags(wheel)]
    command += [str(PROBE_DIR / "sizeof_probe.cpp"), "-o", str(obj)]
    subprocess.run(command, check=True, capture_output=True)
    symbols = subprocess.run(
        ["readelf", "-sW", str(obj)], check=True, capture_output=True, text=True
    ).stdout
    sizes: dict[str, int] = {}
    for line in symbols.splitlines():
        fields = line.split()
        if len(fields) >= 8 and fields[7].startswith("probe_"):
            sizes[fields[7]] = int(fields[2], 0)
    return {
        name: Layout(sizes[f"probe_size_{name}"], sizes[f"probe_align_{name}"]) for name in TYPES
    }


@pytest.mark.parametrize("target", list(COMPILERS))
def test_the_table_is_what_the_compiler_lays_out(target: str, tmp_path: Path) -> None:
    figures = probe_figures(COMPILERS[target], tmp_path)
    assert figures == TARGETS[target].layouts


def test_arm32_has_the_32_bit_figures_the_issue_measured() -> None:
    arm32 = TARGETS["arm32"]
    assert arm32["pointer"].size == 4
    assert (arm32["tensor_impl"].size, arm32["tensor_meta"].size) == (32, 12)
    assert (arm32["chain"].size, arm32["backend_delegate"].size) == (16, 40)
    assert arm32["evalue"].size == TARGETS["host"]["evalue"].size == 16
    assert TARGETS["xtensa"].layouts == arm32.layouts
