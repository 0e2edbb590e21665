"""Files in and out: MiniMalloc CSV instances and solutions, plan files, size reports,
a program's pools (JSON and a C header), Chrome traces, memory hierarchies.

Plain Python and numpy; errors are ValueError naming the file, line or option.
"""

from .memories import DEFAULT_MEMORY_SPEC, Memory, parse_memory_spec, parse_size, read_memory_config
from .minimalloc import (
    MinimallocInstance,
    capacity_from_filename,
    read_minimalloc_csv,
    write_minimalloc_solution,
)
from .plans import PlanFile, plan_schema, read_plan, read_plan_file, write_plan
from .program_memory import (
    pool_header,
    program_memory_document,
    program_memory_schema,
    write_pool_header,
    write_program_memory,
)
from .sizes import size_document, size_schema, write_size
from .trace import trace_events, write_trace

__all__ = [
    "DEFAULT_MEMORY_SPEC",
    "Memory",
    "MinimallocInstance",
    "PlanFile",
    "capacity_from_filename",
    "parse_memory_spec",
    "parse_size",
    "plan_schema",
    "pool_header",
    "program_memory_document",
    "program_memory_schema",
    "read_memory_config",
    "read_minimalloc_csv",
    "read_plan",
    "read_plan_file",
    "size_document",
    "size_schema",
    "trace_events",
    "write_minimalloc_solution",
    "write_plan",
    "write_pool_header",
    "write_program_memory",
    "write_size",
    "write_trace",
]
