"""Kept for imports written before 0.2: the reader lives in :mod:`cadence_memplan.io.minimalloc`."""

from .io.minimalloc import MinimallocInstance, capacity_from_filename, read_minimalloc_csv

__all__ = ["MinimallocInstance", "capacity_from_filename", "read_minimalloc_csv"]
