"""Files in and out: MiniMalloc CSV instances, plan files, memory hierarchies.

Plain Python and numpy; errors are ValueError naming the file, line or option.
"""

from .memories import DEFAULT_MEMORY_SPEC, Memory, parse_memory_spec, parse_size, read_memory_config
from .minimalloc import MinimallocInstance, capacity_from_filename, read_minimalloc_csv
from .plans import read_plan, write_plan

__all__ = [
    "DEFAULT_MEMORY_SPEC",
    "Memory",
    "MinimallocInstance",
    "capacity_from_filename",
    "parse_memory_spec",
    "parse_size",
    "read_memory_config",
    "read_minimalloc_csv",
    "read_plan",
    "write_plan",
]
