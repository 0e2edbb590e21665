"""Programs with control flow, and running them on ExecuTorch's portable runtime against
eager (needs torch and executorch).

- :data:`FAMILY`: the five programs of issue 40 (consecutive conds, a cond nested in a
  branch, a cond then a map, a cond over a mutable buffer, a chain of five), each with
  its outputs alive when the next higher-order op runs; :class:`CondThenScan`, the same
  with a scan; and :class:`Issue21490`, executorch #21490's reproduction.
- :func:`generate`: a random program of 1 to 5 conds and maps, nested up to 2 levels
  below the top graph, each output kept alive to the end or consumed at once; the same
  seed gives the same program.

Every program takes ``(x, flag)``, ``x`` a (3, 4) float32 tensor and ``flag`` a
one-element tensor whose sign picks the branches: :func:`outcomes` runs a lowered program
for both, on a freshly loaded method per outcome, twice each (mutable buffers carry over
between the calls, as in eager), and compares every output with a fresh eager copy of
the module, bit for bit. Its ops are exact in float32 (adds and multiplies by small
constants, negation, ``abs``, ``maximum``), so the portable kernels and eager agree to the
bit wherever the memory plan is right.
"""

from __future__ import annotations

import copy
import dataclasses
import random
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from executorch.exir import ExecutorchBackendConfig, ExecutorchProgramManager
from executorch.exir._warnings import ExperimentalWarning
from executorch.exir.passes.init_mutable_pass import InitializedMutableBufferPass
from functorch.experimental.control_flow import map as torch_map
from torch._higher_order_ops.scan import scan

with warnings.catch_warnings():
    warnings.simplefilter("ignore", ExperimentalWarning)  # on import: "This API is experimental"
    from executorch.runtime import Runtime

X = torch.arange(12, dtype=torch.float32).reshape(3, 4) - 5.0
FLAGS = (torch.tensor([1.0]), torch.tensor([-1.0]))
CALLS = 2  # calls per outcome: mutable buffers carry state from one to the next


class ConsecutiveConds(torch.nn.Module):
    """Three conds in a row, every output returned (alive when the later ones run)."""

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        a = torch.cond(p, lambda v: v * 2.0 + 1.0, lambda v: v - 3.0, [x])
        b = torch.cond(p, lambda v: v + 10.0, lambda v: v * 5.0, [x])
        c = torch.cond(p, lambda v: v * v, lambda v: v + 100.0, [x])
        return a, b, c


class NestedCond(torch.nn.Module):
    """A cond whose branch holds another cond, run while the first cond's output lives."""

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        a = torch.cond(p, lambda v: v + 1.0, lambda v: v * 3.0, [x])
        b = torch.cond(
            p,
            lambda v: torch.cond(v.sum() > 0, lambda w: w * 2.0, lambda w: w - 7.0, [v]),
            lambda v: v - 1.0,
            [a],
        )
        return a, b


class CondThenMap(torch.nn.Module):
    """A cond, then a map (with a cond in its body) while the cond's output lives."""

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        a = torch.cond(p, lambda v: v * 2.0, lambda v: v + 5.0, [x])

        def row(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
            return torch.cond(q, lambda s: s * 3.0, lambda s: s - 1.0, [r])

        return a, torch_map(row, x, p)


class CondOverBuffer(torch.nn.Module):
    """Two conds over a mutable buffer that the first one's output then updates."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.ones(3, 4))

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        first = torch.cond(p, lambda v: v + self.state, lambda v: self.state * 2.0, [x])
        second = torch.cond(p, lambda v: v * 3.0, lambda v: v - self.state, [first])
        self.state.copy_(first)
        return first, second


class ChainOfFive(torch.nn.Module):
    """Five conds, each on the last one's output, every output returned."""

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        outputs = []
        value = x
        for step in range(5):
            value = torch.cond(
                p,
                lambda v, step=step: v + float(step + 1),
                lambda v, step=step: v * float(step + 2),
                [value],
            )
            outputs.append(value)
        return tuple(outputs)


class CondThenScan(torch.nn.Module):
    """A cond, then a scan (a running sum over the rows) while the cond's output lives."""

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        a = torch.cond(p, lambda v: v * 2.0, lambda v: v + 5.0, [x])

        def step(carry: torch.Tensor, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            total = carry + row
            return total, total * 2.0

        final, rows = scan(step, torch.zeros(4), x)
        return a, final, rows


class Issue21490(torch.nn.Module):
    """executorch #21490's reproduction: a cond, then a cond with a cond nested in its
    true branch, over a float64 buffer that starts as NaN and takes the first output.
    ``data[0]``'s sign picks the branches (the flag is its sign here)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("state", torch.tensor([torch.nan], dtype=torch.float64))

    def forward(self, data: torch.Tensor) -> tuple[torch.Tensor, ...]:
        val = data[0].unsqueeze(0)
        pred = val >= 0.0
        result1 = torch.cond(pred, lambda v: v.clone(), lambda v: self.state.clone(), [val])
        result2 = torch.cond(
            pred,
            lambda r: torch.cond(
                torch.isnan(self.state), lambda r2: r2.clone(), lambda r2: r2 + 1.0, [r]
            ),
            lambda r: self.state.clone(),
            [result1],
        )
        self.state.copy_(result1)
        return result1, result2


FAMILY: dict[str, type[torch.nn.Module]] = {
    "consecutive-conds": ConsecutiveConds,
    "nested-cond": NestedCond,
    "cond-then-map": CondThenMap,
    "cond-over-buffer": CondOverBuffer,
    "chain-of-five": ChainOfFive,
}

# The reproduction's calls: (5, 6) keeps the true branches, (-1, 7) takes the false
# one, then the true again with a state that is no longer NaN.
ISSUE_21490_CALLS = (
    (torch.tensor([5.0, 1.0], dtype=torch.float64), torch.tensor([6.0, 1.0], dtype=torch.float64)),
    (torch.tensor([-1.0, 0.0], dtype=torch.float64), torch.tensor([7.0, 1.0], dtype=torch.float64)),
)


def example_inputs(module: torch.nn.Module) -> tuple[torch.Tensor, ...]:
    if isinstance(module, Issue21490):
        return (ISSUE_21490_CALLS[0][0],)
    return (X, FLAGS[0])


def calls(module: torch.nn.Module) -> list[list[tuple[torch.Tensor, ...]]]:
    """Per branch outcome, the inputs of the calls on one freshly loaded method."""
    if isinstance(module, Issue21490):
        return [[(data,) for data in outcome] for outcome in ISSUE_21490_CALLS]
    return [[(X * (1.0 + call), flag) for call in range(CALLS)] for flag in FLAGS]


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """One branch outcome's calls: whether every output equalled eager's bit for bit, and
    the largest difference where not."""

    equal: bool
    largest_difference: float


def outcomes(module: torch.nn.Module, program: ExecutorchProgramManager) -> list[Outcome]:
    """``program`` (``module`` lowered) run for each branch outcome against eager."""
    runtime = Runtime.get()
    found = []
    for outcome_calls in calls(module):
        method = runtime.load_program(program.buffer).load_method("forward")
        eager = copy.deepcopy(module)
        equal, largest = True, 0.0
        for inputs in outcome_calls:
            got = method.execute(list(inputs))
            want = eager(*inputs)
            for ours, theirs in zip(got, want, strict=True):
                if ours.dtype != theirs.dtype or ours.shape != theirs.shape:
                    equal, largest = False, float("inf")
                elif ours.numpy().tobytes() != theirs.numpy().tobytes():  # NaN too
                    equal = False
                    difference = (ours.double() - theirs.double()).abs().nan_to_num(float("inf"))
                    largest = max(largest, float(difference.max()))
        found.append(Outcome(equal, largest))
    return found


def export(module: torch.nn.Module) -> Any:
    return torch.export.export(module, example_inputs(module), strict=True)


def backend_config(
    module: torch.nn.Module, memory_planning_pass: Any = None, base: Any = None
) -> ExecutorchBackendConfig:
    """``base`` (exir's default config when None) with ``memory_planning_pass`` (None:
    the base's) and the module's buffers initialized when the program loads, as eager's
    are (``InitializedMutableBufferPass``; without it a mutable buffer starts as whatever
    its planned memory holds)."""
    config = ExecutorchBackendConfig() if base is None else base
    changes: dict[str, Any] = {}
    if memory_planning_pass is not None:
        changes["memory_planning_pass"] = memory_planning_pass
    buffers = [name for name, _ in module.named_buffers()]
    if buffers:
        changes["passes"] = [*config.passes, InitializedMutableBufferPass(buffers)]
    return dataclasses.replace(config, **changes)


# --------------------------------------------------------------------------- generator

# Exact float32 steps: (name, function). Constants are small powers of two or integers.
_STEPS: tuple[tuple[str, Callable[[torch.Tensor], torch.Tensor]], ...] = (
    ("*2", lambda t: t * 2.0),
    ("+3", lambda t: t + 3.0),
    ("-1", lambda t: t - 1.0),
    ("*0.5", lambda t: t * 0.5),
    ("neg", lambda t: -t),
    ("abs+1", lambda t: t.abs() + 1.0),
    ("max0", lambda t: torch.maximum(t, torch.zeros_like(t))),
)


@dataclass
class Body:
    """A submodule: a step on its operand, higher-order ops on the result, then a step."""

    first: int
    hops: list[Hop]
    last: int


@dataclass
class Hop:
    """A cond (two bodies) or a map (one body) on value ``operand`` of its graph;
    ``kept``: its output lives to the graph's end, else the next node consumes it."""

    kind: str
    operand: int
    kept: bool
    bodies: list[Body]
    inner_predicate: bool = False  # a cond's predicate: the flag's (False), or its negation


@dataclass
class Program:
    seed: int
    hops: list[Hop] = field(default_factory=list)

    def describe(self) -> str:
        return f"seed {self.seed}: " + "; ".join(_describe(hop) for hop in self.hops)

    def count(self) -> int:
        return sum(_count(hop) for hop in self.hops)

    def depth(self) -> int:
        return max((_depth(hop) for hop in self.hops), default=0)


def _describe(hop: Hop) -> str:
    inner = " | ".join(
        f"{_STEPS[body.first][0]} [{', '.join(map(_describe, body.hops))}] {_STEPS[body.last][0]}"
        for body in hop.bodies
    )
    return f"{hop.kind}{'*' if hop.kept else ''}(v{hop.operand}: {inner})"


def _count(hop: Hop) -> int:
    return 1 + sum(_count(inner) for body in hop.bodies for inner in body.hops)


def _depth(hop: Hop) -> int:
    return max((_depth(inner) + 1 for body in hop.bodies for inner in body.hops), default=0)


def generate(seed: int, max_hops: int = 5, max_depth: int = 2) -> Program:
    """A random program of 1 to ``max_hops`` conds and maps, nested up to ``max_depth``
    levels below the top graph (a map only where its operand has rows to map over)."""
    chooser = random.Random(seed)
    budget = chooser.randint(1, max_hops)
    program = Program(seed)

    def body(depth: int, rows: bool) -> Body:
        nonlocal budget
        hops = []
        while budget and depth <= max_depth and chooser.random() < 0.4:
            hops.append(hop(depth, rows, values=1 + len(hops)))
        return Body(chooser.randrange(len(_STEPS)), hops, chooser.randrange(len(_STEPS)))

    def hop(depth: int, rows: bool, values: int) -> Hop:
        nonlocal budget
        budget -= 1
        kind = "map" if rows and chooser.random() < 0.35 else "cond"
        operand = chooser.randrange(values)
        kept = chooser.random() < 0.6
        inner = depth + 1
        if kind == "map":
            return Hop(kind, operand, kept, [body(inner, rows=False)])
        return Hop(
            kind, operand, kept, [body(inner, rows), body(inner, rows)], chooser.random() < 0.3
        )

    while budget:
        program.hops.append(hop(0, rows=True, values=1 + len(program.hops)))
    return program


def _run_hops(
    hops: list[Hop], start: torch.Tensor, p: torch.Tensor
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """A graph's higher-order ops on ``start``: each takes an earlier value (``start`` or
    an earlier op's output); an output not kept is consumed at once by the running sum.
    Returns the running sum and the kept outputs."""
    values = [start]
    total = start * 1.0
    kept = []
    for hop in hops:
        out = _run_hop(hop, values[min(hop.operand, len(values) - 1)], p)
        values.append(out)
        if hop.kept:
            kept.append(out)
        else:
            total = total + out
    return total, kept


def _run_body(body: Body, v: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    t = _STEPS[body.first][1](v)
    total, kept = _run_hops(body.hops, t, p)
    for out in kept:  # alive until here
        total = total + out
    return _STEPS[body.last][1](total)


def _run_hop(hop: Hop, v: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    if hop.kind == "map":
        (body,) = hop.bodies
        return torch_map(lambda row, q: _run_body(body, row, q), v, p)
    true_body, false_body = hop.bodies
    predicate = torch.logical_not(p) if hop.inner_predicate else p
    return torch.cond(
        predicate,
        lambda t, q: _run_body(true_body, t, q),
        lambda t, q: _run_body(false_body, t, q),
        [v, p],
    )


class Generated(torch.nn.Module):
    """A generated program as a module: its top graph's ops on ``x``; returns the
    running sum and every kept output."""

    def __init__(self, program: Program) -> None:
        super().__init__()
        self.program = program

    def forward(self, x: torch.Tensor, flag: torch.Tensor) -> tuple[torch.Tensor, ...]:
        p = flag > 0
        total, kept = _run_hops(self.program.hops, x, p)
        return (total, *kept)
