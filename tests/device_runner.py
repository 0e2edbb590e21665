"""The pool runner (tests/runtime_probe/pool_runner.cpp) compiled against the installed
executorch wheel's headers and libraries, and run on a ``.pte`` with exact pools.

The wheel ships ``include/`` (the runtime's headers, with c10's under
``runtime/core/portable_type/c10``), ``lib/libexecutorch.so`` (the runtime),
``lib/libexecutorch_kernels_optimized.so`` (the CPU kernels, registered by static
initializers, hence linked with ``--no-as-needed``) and
``lib/libexecutorch_backend_xnnpack.so``; ``share/cmake/executorch-config.cmake`` says
the definitions and standard a consumer compiles with. Without a compiler or without
these files :func:`runner_or_skip_reason` says why, and the tests skip.
"""

from __future__ import annotations

import importlib.util
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROBE_DIR = Path(__file__).with_name("runtime_probe")
# executorch-config.cmake's EXECUTORCH_COMPILE_DEFINITIONS and EXECUTORCH_CXX_STANDARD.
DEFINES = ("-DC10_USING_CUSTOM_GENERATED_MACROS", "-DET_EVENT_TRACER_ENABLED")
STANDARD = "-std=c++17"
LIBRARIES = ("executorch_kernels_optimized", "executorch_backend_xnnpack")


def wheel_dir() -> Path | None:
    spec = importlib.util.find_spec("executorch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def include_flags(wheel: Path) -> list[str]:
    include = wheel / "include"
    return [f"-I{include}", f"-I{include / 'executorch/runtime/core/portable_type/c10'}"]


def missing_wheel_files(wheel: Path | None) -> str | None:
    """Why the wheel cannot build the runner, or None."""
    if wheel is None:
        return "executorch is not installed"
    needed = [
        wheel / "include/executorch/runtime/executor/method.h",
        wheel / "lib/libexecutorch.so",
    ]
    needed += [wheel / f"lib/lib{name}.so" for name in LIBRARIES]
    absent = [str(path.relative_to(wheel)) for path in needed if not path.exists()]
    return f"the executorch wheel lacks {', '.join(absent)}" if absent else None


def build_runner(directory: Path) -> Path | str:
    """The runner built in ``directory``, or why it cannot be."""
    compiler = shutil.which("g++") or shutil.which("clang++")
    if compiler is None:
        return "no C++ compiler (g++ or clang++) on PATH"
    wheel = wheel_dir()
    reason = missing_wheel_files(wheel)
    if reason is not None:
        return reason
    assert wheel is not None
    binary = directory / "pool_runner"
    lib = wheel / "lib"
    command = [
        compiler, STANDARD, "-O1", *DEFINES, *include_flags(wheel),
        str(PROBE_DIR / "pool_runner.cpp"), "-o", str(binary), f"-L{lib}",
        "-Wl,--push-state,--no-as-needed", *(f"-l{name}" for name in LIBRARIES),
        "-Wl,--pop-state", "-lexecutorch", f"-Wl,-rpath,{lib}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"the runner did not compile against the wheel: {done.stderr[-2000:]}"
    return binary


@dataclass(frozen=True)
class Run:
    """One run: the exit code (negative: a signal), the figures printed, the outputs."""

    returncode: int
    figures: dict[str, int]
    outputs: list[np.ndarray]
    stderr: str

    @property
    def ran(self) -> bool:
        return self.returncode == 0 and self.figures.get("run") == 0


# executorch's ScalarType codes -> numpy dtypes, for the outputs.
_DTYPES = {0: np.uint8, 1: np.int8, 2: np.int16, 3: np.int32, 4: np.int64, 6: np.float32,
           7: np.float64, 11: np.bool_}  # fmt: skip


def write_inputs(path: Path, inputs: list[np.ndarray]) -> None:
    with path.open("wb") as out:
        for array in inputs:
            out.write(struct.pack("<i", array.ndim))
            out.write(np.asarray(array.shape, dtype="<i4").tobytes())
            out.write(np.ascontiguousarray(array).tobytes())


def read_outputs(path: Path) -> list[np.ndarray]:
    data = path.read_bytes()
    outputs, at = [], 0
    while at < len(data):
        (rank,) = struct.unpack_from("<i", data, at)
        at += 4
        if rank < 0:
            outputs.append(np.array(None))
            continue
        shape = struct.unpack_from(f"<{rank}i", data, at)
        at += 4 * rank
        dtype, nbytes = struct.unpack_from("<iq", data, at)
        at += 12
        array = np.frombuffer(data[at : at + nbytes], dtype=_DTYPES[dtype]).reshape(shape)
        outputs.append(array)
        at += nbytes
    return outputs


def run(
    runner: Path,
    pte: Path,
    method: str,
    method_pool: int,
    temp_pool: int,
    inputs: list[np.ndarray],
    skew: int = 0,
) -> Run:
    """The runner in its own process (the runtime may crash on a pool too small)."""
    stem = pte.with_name(f"{pte.stem}.{method}.{method_pool}.{temp_pool}.{skew}")
    inputs_path, outputs_path = stem.with_suffix(".in"), stem.with_suffix(".out")
    write_inputs(inputs_path, inputs)
    outputs_path.unlink(missing_ok=True)
    command = [str(runner), str(pte), method, str(method_pool), str(temp_pool)]
    command += [str(inputs_path), str(outputs_path), str(skew)]
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    figures = {}
    for line in done.stdout.splitlines():
        name, _, value = line.partition(" ")
        figures[name] = int(value)
    outputs = read_outputs(outputs_path) if done.returncode == 0 else []
    return Run(done.returncode, figures, outputs, done.stderr[-2000:])
