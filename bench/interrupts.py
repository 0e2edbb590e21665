"""How soon Ctrl-C stops a long plan: the measure tests/test_interrupts.py leaves out.

    python bench/interrupts.py                  # 7 delays into a 3-million-tensor plan
    python bench/interrupts.py --instance D     # best on D, one memory (the search)

A child process plans with ``best``: a synthetic graph of ``--tensors`` tensors (about ten
seconds here: upstream's two placers, their checks and the validation, every phase of a
plan), or with ``--instance D`` MiniMalloc's instance D, which it does not prove optimal
(the exact search's phases, on two threads); the parent sends
SIGINT at each delay after the child says it starts planning and prints how long the
child took to raise KeyboardInterrupt (the child's own clock, from the signal's arrival
to the exception). Run it beside two busy processes (``sh -c 'while :; do :; done' &``
twice) to see it on a loaded machine. The issue's target: within 1 s, 7 of 7 times.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import textwrap
import time

from workloads import INSTANCES

CHILD = """
import signal, sys, time
import cadence_memplan
arrived = []
def on_sigint(signum, frame):
    arrived.append(time.perf_counter())
    raise KeyboardInterrupt
signal.signal(signal.SIGINT, on_sigint)
if {instance!r}:
    from cadence_memplan.io.minimalloc import read_minimalloc_csv
    instance = read_minimalloc_csv({instance!r})
    arrays = (instance.starts, instance.ends, instance.sizes)
    memory = ([int(instance.sizes.sum())], [1])
    work = 10**9
else:
    from cadence_memplan.synthetic import synthetic_graph
    arrays = synthetic_graph({tensors})
    memory = ([1 << 40], [16])
    work = None
options = {{"algorithm": "best", "work_budget": work}}
try:
    print("planning", flush=True)  # inside: the signal may come at once
    cadence_memplan.plan(*arrays, *memory, **options)
except KeyboardInterrupt:
    print(f"interrupted {{time.perf_counter() - arrived[0]:.3f}}", flush=True)
    sys.exit(0)
print("finished", flush=True)
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instance", help="a challenging instance's letter instead (e.g. D)")
    parser.add_argument("--tensors", type=int, default=3_000_000)
    parser.add_argument("--delays", default="0,0.05,0.2,0.5,1,2,4", help="seconds, commas")
    options = parser.parse_args(argv)
    instance = ""
    if options.instance:
        instance = str(INSTANCES / "challenging" / f"{options.instance}.1048576.csv")
    code = textwrap.dedent(CHILD.format(instance=instance, tensors=options.tensors))
    what = instance or f"{options.tensors:,} synthetic tensors"
    print(f"best on {what}, load average {os.getloadavg()[0]:.1f}")
    print("| delay (s) | reaction (s) |")
    print("| ---: | ---: |")
    within = 0
    delays = [float(delay) for delay in options.delays.split(",")]
    for delay in delays:
        child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        if child.stdout.readline().strip() != "planning":
            print(f"| {delay:g} | the child did not start |")
            continue
        time.sleep(delay)
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=600)
        words = output.split()
        if words[:1] == ["interrupted"]:
            reaction = float(words[1])
            within += reaction <= 1.0
            print(f"| {delay:g} | {reaction:.3f} |", flush=True)
        else:
            print(f"| {delay:g} | {output.strip() or 'no answer'} |", flush=True)
    print(f"\nwithin 1 s: {within} of {len(delays)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
