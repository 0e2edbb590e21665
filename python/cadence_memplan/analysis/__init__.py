"""Understanding plans: where each memory's peak comes from, how plans differ, and how a
plan changes with a memory's size. numpy only; the command line prints what these return.
"""
