"""Staging tensors through fast memory with the DSP's DMA (issue 53): past the static bound.

A static plan keeps each tensor in one memory for its whole life. Staging also copies a
tensor that lives in slow memory into fast memory just before the ops that read it
(a *load*), and lets an op write its output into fast memory and copies it out when it
must outlive its stay there (a *store*). The modules, numpy and the standard library only:

- :mod:`.cost_model`: :class:`CostModel`, the default model of docs/staging.md as a frozen
  dataclass, read from a JSON or TOML file by :func:`load_cost_model`.
- :mod:`.problem`: :class:`StagingProblem`, a graph as the model sees it (ops, their FLOPs,
  tensors, who reads and writes them), and :class:`Copy`, one DMA transfer of a schedule.
- :mod:`.simulate`: :func:`simulate`, the modelled cycles, access bytes per memory and DMA
  traffic of a static plan and a staging schedule, or why the schedule is illegal
  (:class:`IllegalSchedule`); the rules are named in :data:`RULES`.
- :mod:`.choice`: :func:`choose_staging`, which copies to make and when, by counted work;
  never worse than the static plan under the model.
- :mod:`.report`: the figures of docs/staging.md (static, staged, all-in-fast, the
  free-DMA ceiling) and the ``--out`` JSON.

The torch side, which reads a lowered graph into a :class:`StagingProblem`, is
:mod:`.graph` (needs torch).
"""
