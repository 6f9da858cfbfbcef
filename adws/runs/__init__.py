"""One path for a run: start, resume, decide and cancel a run, for every front end.

The command line, the author's kit, `adws worker` and `adws batch` are
doors over this folder: `interrupts` turns signals into a stopped step,
`summary` folds a run's events into what is reported of it.
"""
