"""Approve, reject and cancel from a page: each an `adws` command, which goes through `Runs`.

A decision made on a page is `adws approve RUN --by NAME` (or `reject`,
`cancel`) run by the server in a process of its own, in the server's
folder with its journal (named in the environment, never on a command
line, where a server's password would show): the same compare-and-set
claim as at a terminal, so of two people deciding at once exactly one
acts. An approved run goes on in that process, which outlives the
request (and the server); the page says what the command said when it
ended within `ANSWER_SECONDS`, else that the run goes on.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import threading
from typing import TYPE_CHECKING, Final, Literal, final

import attrs

from adws.journal.store.backend import JournalUrl
from adws.journal.store.journal import ENV_VAR

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["ANSWER_SECONDS", "Action", "Decided", "decide"]

Action = Literal["approve", "reject", "cancel"]
ANSWER_SECONDS: Final = 5.0
"""How long a page waits for the command's answer before saying the run goes on."""
REFUSED: Final = 2
"""The exit code of a command that did nothing (the run changed meanwhile, asked wrongly)."""


@final
@attrs.frozen
class Decided:
    """What a decision's command did: its exit code (None: still going on) and what it said."""

    code: int | None
    said: str

    @property
    def refused(self) -> bool:
        """Tell whether the command did nothing."""
        return self.code == REFUSED


def _argv(action: Action, run_id: str, by: str, text: str, max_cost: float | None) -> list[str]:
    """Build the command line; `=` joins each value to its flag, so none is read as a flag."""
    argv = [sys.executable, "-m", "adws", action, run_id, f"--by={by}", "-q"]
    if action == "approve":
        argv.append(f"--note={text}")
        if max_cost is not None:
            argv.append(f"--max-cost={max_cost}")
    else:
        argv.append(f"--reason={text}")
    return argv


def _reap(process: subprocess.Popen[bytes], said: tempfile._TemporaryFileWrapper[bytes]) -> None:
    """Wait for a command that went on past the answer, then close what it wrote to."""
    process.wait()
    said.close()


def decide(  # noqa: PLR0913 - the journal, the decision, who, and what they said
    journal: Path | JournalUrl,
    action: Action,
    run_id: str,
    by: str,
    *,
    text: str,
    max_cost: float | None = None,
) -> Decided:
    """Run `adws ACTION RUN` as `by`; return its answer, or that it goes on."""
    env = {**os.environ, ENV_VAR: journal.url if isinstance(journal, JournalUrl) else str(journal)}
    said = tempfile.NamedTemporaryFile(prefix="adws-serve-")  # noqa: SIM115 - closed by the reaper
    process = subprocess.Popen(  # noqa: S603 - our own command, its arguments joined to flags
        _argv(action, run_id, by, text, max_cost),
        stdin=subprocess.DEVNULL,
        stdout=said,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # the run it continues is not the server's to stop
    )
    try:
        code = process.wait(timeout=ANSWER_SECONDS)
    except subprocess.TimeoutExpired:
        threading.Thread(target=_reap, args=(process, said), daemon=True).start()
        return Decided(None, f"the run goes on in process {process.pid}; its page shows how")
    said.seek(0)
    text_said = said.read().decode("utf-8", "replace").strip()
    said.close()
    return Decided(code, text_said)
