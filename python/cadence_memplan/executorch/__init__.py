"""Everything that needs torch and executorch: the drop-in placers (algorithms.py),
``CadenceMemoryPlanning`` and the older API's standalone planning functions (cadence.py), the pass around the
placer (planning_pass.py, graph_code.py), ``patch_cadence`` (patching.py), upstream's
reports vectorised (reports.py), lowering a model with timing for the command line
(lowering.py) and the import shim for Cadence's compiler (compiler.py).

Importing this package imports nothing heavy; its modules import executorch.
"""

# How a model reaches to_executorch (lowering.lower_exported): "cadence", through Cadence's
# compiler's passes and its backend config, as export_to_executorch_gen_etrecord lowers;
# "exir", plain to_edge and exir's default config, no Cadence passes.
LOWERINGS = ("cadence", "exir")

# What each lowering is, for progress lines and reports.
LOWERING_DESCRIPTIONS = {
    "cadence": "Cadence's compiler's passes and backend config",
    "exir": "exir's to_edge and the default backend config, no Cadence passes",
}
