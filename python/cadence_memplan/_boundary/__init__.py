"""The boundary to executorch that ``cadence/`` and ``exir/`` both sit on.

``tensorspecs.py`` reads TensorSpecs into int64 columns under one written exactness
policy and writes placements back; ``upstream.py`` holds every private name of executorch
and torch the package uses, behind one version check. Private: nothing outside the
package imports it.
"""
