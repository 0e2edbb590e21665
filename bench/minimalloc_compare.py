"""MiniMalloc beside ``best``, and ``best``'s peak memory, one instance per subprocess.

    bench/build_minimalloc.sh                   # once: build/minimalloc/minimalloc
    build/rel/exact_search_driver --rectangles --write-csv build/rectangles
    python bench/minimalloc_compare.py --rectangles build/rectangles --markdown out.md

``best`` (``cadence_memplan.plan(..., algorithm="best")``, one memory as large as all
buffers, alignment 1, ``--work`` units of work) runs once per instance and ``--threads`` value, each
in a fresh interpreter that reports its peak resident memory (VmHWM) before and
after the call: the first is the baseline of the interpreter with numpy, the package and
the instance loaded, the difference is what the call added.

MiniMalloc (google/minimalloc's command-line solver, built by bench/build_minimalloc.sh,
never a dependency of the package) is asked whether each MiniMalloc-format instance
(challenging A-K, the cut rectangles) fits in the capacity its file name carries (1 MiB),
with ``--minimalloc-timeout``; when ``best``'s plan is below that capacity, or above it
and MiniMalloc found nothing there, it is also asked at ``best``'s bufsize and one byte
below (does it match, can it beat ``best``?); on ``--minimize`` instances it also runs its
own capacity minimisation from the file's capacity. Without the binary its columns say
"not built" (a note is printed) and the memory table is still measured.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from quality import markdown
from workloads import INSTANCES, REPO_ROOT

from cadence_memplan.api import DEFAULT_WORK_BUDGET
from cadence_memplan.io.minimalloc import capacity_from_filename, read_minimalloc_csv
from cadence_memplan.io.outputs import write_whole
from cadence_memplan.stats import peak_live_bytes

__all__ = ["main"]

MINIMALLOC = REPO_ROOT / "build" / "minimalloc" / "minimalloc"
HAVE_TIME = os.access("/usr/bin/time", os.X_OK)
REAL_DEFAULT = ("pangu_2.6B", "S_1", "Y_1", "G_1", "resnet50")


def peak_rss_kb() -> int:
    """This process's peak resident memory. VmHWM, not ru_maxrss: Linux carries the
    forking parent's peak into ru_maxrss across exec, which would hide a smaller child's."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def child(path: str, work: int, threads: int) -> None:
    """In the subprocess: one ``best`` call; print its figures as JSON."""
    import cadence_memplan

    instance = read_minimalloc_csv(path)
    arrays = tuple(instance[1:])
    memory = ([int(instance.sizes.sum())], [1])
    baseline_kb = peak_rss_kb()
    began = time.perf_counter()
    result = cadence_memplan.plan(
        *arrays, *memory, algorithm="best", work_budget=work, threads=threads
    )
    seconds = time.perf_counter() - began
    peak_kb = peak_rss_kb()
    assert cadence_memplan.validate(*arrays, result.mem_ids, result.offsets, *memory) is None
    figures = {
        "bufsize": int(result.bufsizes[1]),
        "proved": bool(result.proved_optimal),
        "seconds": seconds,
        "baseline_kb": baseline_kb,
        "peak_kb": peak_kb,
    }
    print(json.dumps(figures))


@dataclass
class Best:
    bufsize: int
    proved: bool
    seconds: float
    baseline_kb: int
    peak_kb: int


def run_best(path: Path, work: int, threads: int) -> Best:
    command = [sys.executable, __file__, "--child", str(path), "--work", str(work)]
    out = subprocess.run(
        [*command, "--threads", str(threads)], check=True, capture_output=True, text=True
    )
    return Best(**json.loads(out.stdout.strip().splitlines()[-1]))


@dataclass
class Probe:
    capacity: int
    answer: str  # "fits", "none" (proved not to fit), "timeout", or an error
    height: int | None
    seconds: float
    peak_kb: int | None

    def cell(self) -> str:
        what = f"{self.height:,} B" if self.answer == "fits" else self.answer
        return f"{self.capacity:,}: {what}, {self.seconds:,.1f} s"


def run_minimalloc(
    binary: Path, path: Path, capacity: int, timeout_s: float, minimize: bool = False
) -> Probe:
    """One MiniMalloc run, its own --timeout and a kill 10 s after; peak RSS from GNU time
    (a wait4 here would report at least this interpreter's, inherited across exec)."""
    with tempfile.TemporaryDirectory() as scratch:
        output = Path(scratch) / "solution.csv"
        log = Path(scratch) / "log.txt"
        rss = Path(scratch) / "rss.txt"
        command = [
            *(["/usr/bin/time", "-f", "%M", "-o", str(rss)] if HAVE_TIME else []),
            str(binary),
            f"--input={path}",
            f"--capacity={capacity}",
            f"--output={output}",
            f"--timeout={timeout_s:g}s",
            "--validate",
        ]
        if minimize:
            command.append("--minimize_capacity")
        began = time.perf_counter()
        with open(log, "wb") as stderr:
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True
            )
            killer = threading.Timer(timeout_s + 10, os.killpg, (process.pid, signal.SIGKILL))
            killer.start()
            process.wait()
            killer.cancel()
        seconds = time.perf_counter() - began
        text = log.read_text(errors="replace")
        peak = rss.read_text().split() if HAVE_TIME and rss.is_file() else []
        peak_kb = int(peak[-1]) if peak and peak[-1].isdigit() else None
        if process.returncode == 0:
            solution = read_offsets(output)
            return Probe(capacity, "fits", solution, seconds, peak_kb)
        killed = process.returncode < 0 or "signal" in " ".join(peak)
        if killed or "DEADLINE_EXCEEDED" in text or "ABORTED" in text:
            answer = "timeout"
        elif minimize:
            answer = "nothing found"  # its bisection counts a timed-out probe as a no
        elif "NOT_FOUND" in text:
            answer = "none"
        else:
            answer = "error: " + " ".join(text.split()[-8:])
        return Probe(capacity, answer, None, seconds, peak_kb)


def read_offsets(path: Path) -> int:
    """The top of a MiniMalloc solution: the highest offset + size."""
    lines = path.read_text().split()
    header = lines[0].split(",")
    size_at, offset_at = header.index("size"), header.index("offset")
    return max(
        int(cells[offset_at]) + int(cells[size_at]) for cells in (x.split(",") for x in lines[1:])
    )


def instance_name(path: Path) -> str:
    """A.1048576.csv -> A, pangu_2.6B.csv -> pangu_2.6B."""
    name = path.name.removesuffix(".csv")
    return name.rsplit(".", 1)[0] if capacity_from_filename(path) is not None else name


def natural(path: Path) -> tuple[str, int]:
    number = re.search(r"(\d+)\.\d+\.csv$", path.name)
    return (path.name.split("-")[0], int(number.group(1)) if number else 0)


def megabytes(kb: int | None) -> str:
    return "" if kb is None else f"{kb / 1024:,.1f} MB"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--work", type=int, default=DEFAULT_WORK_BUDGET)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rectangles", type=Path, help="a folder of cut rectangles (CSV)")
    parser.add_argument("--real", nargs="*", default=list(REAL_DEFAULT), help="real/ instances")
    parser.add_argument("--minimalloc", type=Path, default=MINIMALLOC, help="the binary")
    parser.add_argument("--minimalloc-timeout", type=float, default=60.0, help="seconds")
    parser.add_argument("--minimize", nargs="*", default=["D", "J"], help="instance names")
    parser.add_argument("--only", nargs="*", help="run only these instance names")
    parser.add_argument("--markdown", help="also write the tables, with the command, here")
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.work, args.threads[0])
        return

    have_minimalloc = args.minimalloc.is_file() and os.access(args.minimalloc, os.X_OK)
    if not have_minimalloc:
        print(
            f"note: no MiniMalloc binary at {args.minimalloc} (bench/build_minimalloc.sh);"
            " its columns say 'not built'",
            file=sys.stderr,
        )
    packing = sorted((INSTANCES / "challenging").glob("*.csv"))
    if args.rectangles:
        packing += sorted(args.rectangles.glob("*.csv"), key=natural)
    real = [INSTANCES / "real" / f"{name}.csv" for name in args.real]
    real = [path for path in real if path.is_file()]
    if args.only:
        keep = set(args.only)
        packing = [p for p in packing if instance_name(p) in keep]
        real = [p for p in real if instance_name(p) in keep]
    load_before = os.getloadavg()

    comparison, memory = [], []
    baselines = []
    for path in [*packing, *real]:
        name = instance_name(path)
        instance = read_minimalloc_csv(path)
        bound = peak_live_bytes(*instance[1:])
        bests = {threads: run_best(path, args.work, threads) for threads in args.threads}
        baselines += [best.baseline_kb for best in bests.values()]
        memory_cells = [name, f"{instance.buffer_count:,}", f"{bound:,}"]
        for best in bests.values():
            memory_cells += [
                f"{best.bufsize:,}",
                f"{best.seconds * 1e3:,.0f} ms",
                megabytes(best.peak_kb - best.baseline_kb),
            ]
        memory.append(memory_cells)
        print(" | ".join(memory_cells), file=sys.stderr, flush=True)
        capacity = capacity_from_filename(path)
        if path in real or capacity is None:
            continue
        best = bests[args.threads[0]]
        cells = [
            name,
            f"{instance.buffer_count:,}",
            f"{bound:,}",
            f"{best.bufsize:,}",
            "yes" if best.proved else "no",
            f"{best.seconds * 1e3:,.0f} ms",
        ]
        if not have_minimalloc:
            comparison.append([*cells, "not built", "", "", ""])
            continue
        timeout = args.minimalloc_timeout
        first = run_minimalloc(args.minimalloc, path, capacity, timeout)
        probes = []
        if best.bufsize < capacity:
            probes += [best.bufsize, best.bufsize - 1]
        elif best.bufsize > capacity and first.answer != "fits":
            probes.append(best.bufsize - 1)
        further = [run_minimalloc(args.minimalloc, path, c, timeout).cell() for c in probes]
        if name in args.minimize:
            least = run_minimalloc(args.minimalloc, path, capacity, timeout, minimize=True)
            further.append(f"minimising: {least.cell().split(': ', 1)[1]}")
        what = f"{first.height:,} B" if first.answer == "fits" else first.answer
        cells += [what, f"{first.seconds:,.1f} s", megabytes(first.peak_kb), "; ".join(further)]
        comparison.append(cells)
        print(" | ".join(cells), file=sys.stderr, flush=True)
    load_after = os.getloadavg()

    def label(threads: int) -> str:
        return f"{threads} thread{'s' if threads > 1 else ''}"

    threads_headers = []
    for threads in args.threads:
        threads_headers += [f"best, {label(threads)} (B)", "time", "peak RSS added"]
    tables = [
        *markdown(
            [
                "instance",
                "buffers",
                "peak-live bound (B)",
                f"best, {label(args.threads[0])} (B)",
                "proved optimal",
                "best's time",
                "MiniMalloc at 1 MiB",
                "its time",
                "its peak RSS",
                "MiniMalloc near best's bufsize",
            ],
            comparison,
        ),
        "",
        *markdown(["instance", "buffers", "peak-live bound (B)", *threads_headers], memory),
    ]
    print("\n".join(tables))
    baselines.sort()
    note = (
        f"Measured with `python bench/minimalloc_compare.py {' '.join(argv or sys.argv[1:])}`"
        f" on {platform.machine()} Linux, Python {platform.python_version()},"
        f" {os.cpu_count()} cores, load average {load_before[0]:.2f} before and"
        f" {load_after[0]:.2f} after; best's work budget {args.work:,}, MiniMalloc's"
        f" timeout {args.minimalloc_timeout:g} s. Baseline RSS of a child (interpreter, numpy,"
        f" cadence_memplan, the instance) {megabytes(baselines[len(baselines) // 2])} (median)."
    )
    print(note)
    if args.markdown:
        with write_whole(args.markdown) as temporary:
            temporary.write_text("\n".join([*tables, "", note, ""]), encoding="utf-8")


if __name__ == "__main__":
    main()
