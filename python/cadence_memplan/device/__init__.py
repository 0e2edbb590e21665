"""Every byte an ExecuTorch program needs on the device, beyond the planned arenas: the
method pool and the temp pool each method's load and run take, computed by replaying
the runtime's allocations from the ``.pte`` for a target's struct sizes.

Modules: ``layout.py`` (what a method holds, as plain records), ``pte.py`` (a ``.pte``
read with exir's deserializer into them; needs executorch), ``allocations.py`` (the
runtime's requests in its order), ``targets.py`` (the struct-size table per target, with
the source of each figure), ``runtime_versions.py`` (the executorch versions the replay
knows), ``pools.py`` (the replay and :func:`program_memory`), ``planned.py`` (the plan a
``.pte`` carries, per method, with lifetimes inferred from its instructions, for ``plan``).
"""

from .pools import BASE_ALIGNMENT, MethodMemory, ProgramMemory, Unknown, program_memory
from .runtime_versions import KNOWN_RUNTIMES
from .targets import TARGETS

__all__ = [
    "BASE_ALIGNMENT",
    "KNOWN_RUNTIMES",
    "TARGETS",
    "MethodMemory",
    "ProgramMemory",
    "Unknown",
    "program_memory",
]
