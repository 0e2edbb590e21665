"""A graph module's Python code, regenerated when it is next used instead of after every pass.

``GraphModule.recompile()`` turns the graph back into Python source and compiles it into
``forward``. Upstream's memory-planning pass asks for it about ten times (torch's
PassManager after each constraint pass and before it, the cat and slice constraint
passes themselves, exir's ``insert_calls_to_free``, ``SimplifyIdmaOpsPass``), and it is most
of the pass's time, while nothing inside the pass reads the code: every pass walks the
graph. ``to_executorch`` then regenerates the code once more anyway (``_copy_module`` sets
the program's graph, which recompiles).

:func:`deferred_recompile` keeps the graph module's code for the duration of a block and,
if anything in the block asked for a recompile, marks the code stale in the way torch's
own ``_LazyGraphModule`` does: the first use of ``forward`` or of the code (``code``,
``str()``, ``print``, ``to_folder``, pickling, anything that reads ``_code``) regenerates
it first, and so does any real ``recompile()``; copies are built from the graph. Code is a function of the graph alone, so code
regenerated later from the same graph is the code upstream would have made; a graph
changed again after the block is regenerated as it is then, as upstream's would be after
its own next recompile.

Where the laziness cannot be installed (a ``_LazyGraphModule``, which is lazy already, or
a class that is not torch's per-instance ``GraphModuleImpl``), the block changes nothing
and every recompile runs as asked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

from .._boundary.upstream import GRAPH_MODULE_CODE, LazyGraphModule

__all__ = ["code_is_stale", "deferred_recompile"]


def _per_instance_class(graph_module: torch.fx.GraphModule) -> type | None:
    """The class torch made for this one instance (``GraphModule.__new__`` makes a
    ``GraphModuleImpl`` per instance and ``recompile`` stores ``forward`` on it), or None."""
    cls = type(graph_module)
    if isinstance(graph_module, LazyGraphModule) or cls.__qualname__.split(".")[-1] != (
        "GraphModuleImpl"
    ):
        return None
    return cls


def _regenerate(graph_module: torch.fx.GraphModule) -> None:
    # The class's recompile, not an instance attribute that a deferred block put there.
    type(graph_module).recompile(graph_module)
    if code_is_stale(graph_module):  # a recompile that never set _code: do not loop
        raise RuntimeError(f"{type(graph_module).__name__}.recompile() did not regenerate the code")


class _StaleForward:
    """Stands at ``cls.forward`` while the code is stale: regenerates it on first access
    (a call, or ``inspect.signature``), which puts the real ``forward`` back."""

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        _regenerate(instance)
        return instance.forward


class _StaleCode:
    """Stands at ``cls._code`` while the code is stale: a read regenerates it; the write
    that regeneration (or anyone's real ``recompile``) makes removes every stand-in."""

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        _regenerate(instance)
        return instance.__dict__[GRAPH_MODULE_CODE]

    def __set__(self, instance: Any, value: str) -> None:
        cls = type(instance)
        for name, stand_in in _STAND_INS.items():
            if vars(cls).get(name) is stand_in:
                delattr(cls, name)  # recompile sets the new forward right after the code
        instance.__dict__[GRAPH_MODULE_CODE] = value


def _reduce_regenerated(self: torch.fx.GraphModule) -> Any:
    """Stands at ``cls.__reduce__`` while the code is stale: pickling copies the instance's
    ``__dict__``, the code included, before it recompiles, so regenerate first."""
    _regenerate(self)
    return self.__reduce__()


_STAND_INS: dict[str, Any] = {
    "forward": _StaleForward(),
    GRAPH_MODULE_CODE: _StaleCode(),
    "__reduce__": _reduce_regenerated,
}


def code_is_stale(graph_module: torch.fx.GraphModule) -> bool:
    """Whether the code of ``graph_module`` will be regenerated on its next use."""
    return vars(type(graph_module)).get(GRAPH_MODULE_CODE) is _STAND_INS[GRAPH_MODULE_CODE]


def _mark_stale(cls: type) -> None:
    for name, stand_in in _STAND_INS.items():
        setattr(cls, name, stand_in)


@contextlib.contextmanager
def deferred_recompile(graph_module: torch.fx.GraphModule) -> Iterator[None]:
    """Within the block, ``graph_module.recompile()`` only marks the code stale; it is
    regenerated on its next use (see the module's docstring). Submodules recompile as
    asked."""
    cls = _per_instance_class(graph_module)
    if cls is None:
        yield
        return

    def mark_stale() -> None:
        _mark_stale(cls)

    graph_module.recompile = mark_stale  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        del graph_module.recompile  # the class's method again
