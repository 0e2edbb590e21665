"""``cadence-memplan diff``: compare two plan JSON files; exit as diff(1) does."""

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
        help="compare two plan JSON files (plan --out): moved tensors, peaks per memory",
        description="List the tensors that moved (memory or offset) between two plan JSON"
        " files written by `plan --out`, matched by name, and each memory's peak usage and"
        " peak-live bound in both. Exit status as diff(1): 0 identical, 1 different, 2 error.",
    )
    differ.add_argument("before", metavar="A.json", help="the first plan (---)")
    differ.add_argument("after", metavar="B.json", help="the second plan (+++)")
    differ.add_argument("--debug", action="store_true", help="show tracebacks")


def run(arguments: argparse.Namespace) -> int:
    from ..analysis.diff import diff_plans

    plans = []
    for path in (arguments.before, arguments.after):
        if Path(path).suffix.lower() != ".json":
            raise CliError(f"{path}: diff compares plan JSON files (written by plan --out x.json)")
        try:
            plan_file = read_plan_file(path)
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or error
            raise CliError(f"cannot read {path}: {reason}") from error
        except ValueError as error:
            raise CliError(one_line(str(error))) from error
        # JSON plan files always list their memories.
        plans.append((plan_file.table, plan_file.memories or []))
    difference = diff_plans(*plans[0], *plans[1])
    print_diff(difference, arguments.before, arguments.after)
    return 0 if difference.identical else EXIT_PLANS_DIFFER
