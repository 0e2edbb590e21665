"""From an input to a report: what the command line's ``plan``, ``sweep`` and ``size`` (and
any Python caller) do. ``plan.py``: an input read and planned (``plan_input``,
``sweep_input``); ``model.py``: a model's own path (one ``to_executorch``, replays);
``compare.py``: the same input planned by upstream's placers; ``size.py``: how much fast
memory an input needs (``size_input``)."""
