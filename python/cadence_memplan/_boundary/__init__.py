"""The boundary to executorch that ``cadence/`` and ``exir/`` both sit on.

``tensorspecs/`` reads TensorSpecs into int64 columns under one written exactness
policy and writes placements back; ``upstream.py`` holds every private name of executorch
and torch the package uses, behind one version check; ``control_flow.py`` models what
higher-order ops' submodules write and leave alive, and places their arenas, for both
flows, and ``control_flow_check.py`` checks finished plans against that model;
``module_names.py`` points executorch's module-level names at ours (both patches);
``storage_sharing.py`` says which tensors of a Cadence graph lie inside another's storage
(``cadence/`` and ``scheduling/`` both read it; it needs neither executorch nor numpy).
``mutable_state.py`` finds a program's mutable state across its methods (both passes).
Private: nothing outside the package imports it (``validate_control_flow``,
``UnsharedStateWarning`` and ``UnsharedStateError`` are public from ``cadence_memplan``).
"""
