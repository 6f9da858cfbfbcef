"""`--notify CMD`: tell someone a run waits for approval, without ever failing the run."""

from __future__ import annotations

import shlex
from typing import Final

from adws import io_ops

__all__ = ["NOTIFY_TIMEOUT", "notify"]

NOTIFY_TIMEOUT: Final = 60.0
"""How long a `--notify` command may take before it is stopped (and warned about)."""


def notify(command: str, run_id: str, message: str, timeout: float = NOTIFY_TIMEOUT) -> str | None:
    """Run `command` (split as a shell would, never run by one) with the run id and the message.

    Returns None when it exited 0, else a warning saying why not: a
    notification that fails never fails the run. It runs as any command
    adws starts does (its own process group, a timeout, no shell), so the
    message, which may hold an agent's words, is one argument and never code.
    It sees the GitHub tokens (`GITHUB_TOKEN`, `GH_TOKEN`: `gh` may post
    the notice) but not the journal's credentials (`ADWS_JOURNAL`, `PG*`).
    """
    try:
        parts = shlex.split(command)
    except ValueError as exc:
        return f"--notify {command!r} is not a command line: {exc}"
    if not parts:
        return "--notify was given an empty command"
    # The user's own command, not a step: it may post with the GitHub CLI (`gh`), but it
    # sees no journal credential (see `adws.io_ops.environment`).
    outcome = io_ops.run_process(
        [*parts, run_id, message],
        timeout=timeout,
        max_output_bytes=1 << 20,
        env_pass=("GITHUB_TOKEN", "GH_TOKEN"),
    )
    if outcome.finished and outcome.returncode == 0:
        return None
    if outcome.error is not None:
        why = outcome.error
    elif outcome.timed_out:
        why = f"ran past {timeout:g}s"
    else:
        why = f"exited with {outcome.returncode}"
    said = io_ops.tail(outcome.stderr.strip() or outcome.stdout.strip(), 300)
    return f"--notify {command!r} failed ({why})" + (f": {said}" if said else "")
