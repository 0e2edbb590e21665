"""Capacity-first planning: ``algorithm="best"`` on a hierarchy, memory 1 filled to a
proved limit (``capacity_first.py``), the selection of what it keeps (``selection.py``,
``selection_program.py``) and how HiGHS solves it (``highs.py``). Private: the array API
(``cadence_memplan.plan``) is the way in."""
