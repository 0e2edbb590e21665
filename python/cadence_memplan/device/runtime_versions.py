"""The executorch runtime versions whose allocation order the replay (:mod:`.pools`)
follows. Another version gets a clear error naming these, never a guess."""

from __future__ import annotations

import re

__all__ = ["KNOWN_RUNTIMES", "runtime_for"]

# (major, minor) -> what it is called in reports; each read from that release's
# runtime/executor/method.cpp, tensor_parser_*.cpp and memory_allocator.h, and proved
# against its wheel's libexecutorch.so by tests/test_device_pools.py.
KNOWN_RUNTIMES: dict[tuple[int, int], str] = {(1, 5): "executorch 1.5.x"}


def runtime_for(version: str) -> str:
    """The runtime name for executorch ``version`` (``"1.5.1"``, ``"1.5.0+cpu"``), or
    ``ValueError`` naming the versions the replay knows."""
    match = re.match(r"(\d+)\.(\d+)", version)
    key = (int(match[1]), int(match[2])) if match else None
    if key not in KNOWN_RUNTIMES:
        known = ", ".join(KNOWN_RUNTIMES.values())
        raise ValueError(
            f"the runtime's allocations are known for {known}, not for executorch "
            f"{version!r}: its method pool may differ, so no figure is given"
        )
    return KNOWN_RUNTIMES[key]
