"""Everything that needs torch and executorch: the drop-in placers (algorithms.py),
``CadenceMemoryPlanning`` and the seed-era functions (cadence.py), upstream's reports
vectorised (reports.py), lowering a model with timing for the command line (lowering.py)
and the import shim for Cadence's compiler (compiler.py).

Importing this package imports nothing heavy; its modules import executorch.
"""
