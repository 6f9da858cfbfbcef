"""The runs `adws mcp` started: each claimed here, then run by an `adws held-run` child.

A tool call must answer at once, and a run may take an hour: so the
server claims the run it just queued (`Runs.take`, compare-and-set: an
`adws worker` sharing the journal may take it first, and then runs it)
and starts `adws held-run RUN --kind queued`, the child an `adws worker`
starts, which takes the run over and runs it as `adws run` would, with
its signals, cancel watcher and journal. The server stays responsive
(it only reads the journal), a run that crashes takes only its own
process down, and every run is resumable: when the server stops, its
runs are stopped as a worker stops them (SIGTERM: they end
`interrupted`, and `adws resume` or a worker continues them).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING, final

from adws import io_ops
from adws.journal.store.backend import JournalUrl
from adws.journal.store.journal import ENV_VAR
from adws.runs import Refused

if TYPE_CHECKING:
    import subprocess

    from adws.runs import Runs

__all__ = ["Held"]


@final
class Held:
    """Start and follow the `adws held-run` children of one server."""

    def __init__(self, runs: Runs, workflows: str) -> None:
        """Keep the runs' journal and the workflows folder their children load from."""
        self.runs = runs
        self.workflows = workflows
        self.children: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, run_id: str) -> bool:
        """Claim the queued `run_id` and start its child; False if a worker took it first."""
        self.reap()
        if not self.runs.take(run_id):
            return False
        where = self.runs.where
        location = where.url if isinstance(where, JournalUrl) else str(where)
        # Its location goes through a pipe (never argv, which `ps` shows, nor the environment,
        # which every step of the run inherits), as an adws worker hands it over.
        reading, writing = os.pipe()
        with os.fdopen(writing, "wb") as pipe:
            pipe.write(location.encode("utf-8", "surrogateescape"))
        argv = [sys.executable, "-m", "adws", "held-run", "-q", "--workflows", self.workflows]
        argv += [run_id, "--kind", "queued", "--journal-fd", str(reading)]
        env = {key: value for key, value in os.environ.items() if key != ENV_VAR}
        try:
            self.children[run_id] = io_ops.start_process(argv, env, pass_fds=(reading,))
        finally:
            os.close(reading)
        return True

    def reap(self) -> None:
        """Forget the children that ended; a run one left held by this server ends interrupted.

        A child that could not start its run (its workflow no longer loads)
        leaves it claimed by this process, as a worker's would: it is marked
        `interrupted`, and `adws resume` continues it.
        """
        ended = [run_id for run_id, child in self.children.items() if child.poll() is not None]
        if not ended:
            return
        journal = self.runs.journal()
        assert not isinstance(journal, Refused)  # noqa: S101 - open: the runs were queued in it
        for run_id in ended:
            del self.children[run_id]
            found = journal.find(run_id)
            if not isinstance(found, str) and (found.status, found.pid) == ("running", os.getpid()):
                journal.mark(run_id, "interrupted")

    def stop(self) -> None:
        """Stop every run still going (SIGTERM, as a worker does), wait for each, then reap."""
        for child in self.children.values():
            child.send_signal(signal.SIGTERM)
        for child in self.children.values():
            child.wait()
        self.reap()
