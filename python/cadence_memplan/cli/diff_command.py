"""``cadence-memplan diff``: compare two plan files (JSON or CSV); exit as diff(1) does."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..io.plans import read_plan_file
from .common import EXIT_PLANS_DIFFER, CliError, one_line
from .printing import print_diff


def add_parser(commands: Any) -> None:
    differ = commands.add_parser(
        "diff",
        help="compare two plan files (plan --out): peaks per memory, what moved",
        description="Compare two plan files written by `plan --out` (JSON or CSV), their"
        " tensors matched by name: each memory's peak usage and peak-live bound in both,"
        " then the tensors that moved (memory or offset), summed per pair of memories"
        " (--all: each one). A plan CSV lists no memories: they are named by their ids."
        " Exit status as diff(1): 0 identical, 1 different, 2 error.",
    )
    differ.add_argument("before", metavar="A", help="the first plan, .json or .csv (---)")
    differ.add_argument("after", metavar="B", help="the second plan, .json or .csv (+++)")
    differ.add_argument(
        "--all", action="store_true", help="list every moved or resized tensor, not the sums"
    )
    differ.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="print only whether the plans differ, as diff -q does (the exit status says it too)",
    )
    differ.add_argument("--debug", action="store_true", help="show tracebacks")


def run(arguments: argparse.Namespace) -> int:
    from ..analysis.diff import diff_plans

    plans = []
    for path in (arguments.before, arguments.after):
        if Path(path).suffix.lower() not in (".json", ".csv"):
            raise CliError(
                f"{path}: diff compares plan files, .json or .csv (written by plan --out)"
            )
        try:
            plan_file = read_plan_file(path)
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise CliError(f"cannot read {path}: {reason}") from error
        except ValueError as error:
            raise CliError(one_line(str(error))) from error
        plans.append((plan_file.table, plan_file.memories))
    difference = diff_plans(*plans[0], *plans[1])
    if arguments.quiet:
        if not difference.identical:
            print(f"plans {arguments.before} and {arguments.after} differ")
    else:
        print_diff(difference, arguments.before, arguments.after, every_tensor=arguments.all)
    return 0 if difference.identical else EXIT_PLANS_DIFFER
