"""Processes forked from a server that imported adws once: a run starts in milliseconds.

`ForkServer.start(target, *args)` runs `target(*args)` in a fresh fork of
a `multiprocessing` forkserver (started at the first call, with the
modules in `preload` imported), not in a new interpreter that imports
everything again. Each child is a fresh fork of the server, never a child
used before, and before `target` runs it becomes what `start_process`
makes of a command: a session (process group) of its own, so no
terminal's Ctrl-C reaches it; stdin from `/dev/null` (the server's),
stdout and stderr this process's; its environment exactly the `env` given (`os.environ`
replaced, not merged) and its working folder this process's when the
server object was made. Nothing a previous child set (environment,
folder, module globals, open files) reaches the next: the server itself
never runs a target. `target` and its arguments go to the child pickled,
through a pipe the server hands it (never its command line nor its
environment): a journal's URL may be one of them.

The server is started with `env` as its environment too, so what
`/proc/PID/environ` shows of a child (the server's, copied at the fork)
holds nothing the child was not given. A server that died (killed) is
started again at the next `start`, and `say` tells it once. A child whose
server died on its way is followed by its pid (and the time it started,
which a reused pid does not share) until it is gone; its exit status went
with the server, so its `returncode` is `LOST`.

`stop` ends the server (its children have ended by then: the caller
waits for them); it is started again if `start` is called after.
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing
import os
import select
import signal
import sys
from multiprocessing import forkserver
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, cast, final

from adws.io_ops.starts import process_started

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from multiprocessing.process import BaseProcess

__all__ = ["LOST", "ForkServer", "Forked", "until_one_ends"]

LOST: Final = 255
"""The return code of a child whose server died before it did (multiprocessing's own)."""


def _child(
    target: Callable[..., int], args: tuple[object, ...], env: dict[str, str], cwd: str
) -> None:
    """Become the run's own process, run `target(*args)` and exit with what it returns.

    The exit handlers registered in the run (an exporter's flush, say) run
    as they would at the end of an interpreter: the fork ends with
    `os._exit`.
    """
    os.setsid()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        sys.exit(target(*args))
    finally:
        atexit._run_exitfuncs()  # noqa: SLF001 - what an interpreter runs as it exits


@final
class Forked:
    """A child of the server, followed as a `subprocess.Popen` is: `poll`, `returncode`, `pid`."""

    def __init__(self, process: BaseProcess) -> None:
        """Follow `process` (started)."""
        self._process = process
        self.pid: int = cast("int", process.pid)  # started, so it has one
        self._started = process_started(self.pid)
        self._orphaned = False
        self.returncode: int | None = None
        """None while it runs; its exit status, or minus the signal that ended it."""

    def poll(self) -> int | None:
        """Return its `returncode` if it ended, else None (never waits)."""
        if self.returncode is not None:
            return self.returncode
        if not self._orphaned:
            code = self._process.exitcode
            if code != LOST or not self._alive():
                self.returncode = code
                return code
            self._orphaned = True  # its server died, not it: followed by its pid from here
        if not self._alive():
            self.returncode = LOST
        return self.returncode

    def _alive(self) -> bool:
        """Tell whether the child still runs: its pid, started when it was, not a zombie.

        Orphaned, it may be the zombie of an ancestor that reaps nothing.
        """
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        state = stat.rsplit(")", 1)[1].split()[0]
        return state not in {"Z", "X"} and process_started(self.pid) == self._started

    def ended_fd(self) -> int | None:
        """Return a descriptor readable once it ends (None: ended, or followed by its pid only)."""
        if self.returncode is not None or self._orphaned:
            return None
        return self._process.sentinel

    def send_signal(self, signum: int) -> None:
        """Send `signum` to the child, if it still runs."""
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signum)


def until_one_ends(fds: Sequence[int], timeout: float) -> None:
    """Wait up to `timeout` seconds, and no longer once one of `fds` (see `ended_fd`) is readable.

    A worker's loop waits here between its looks at its children, so the
    next run starts as soon as one ends, not at the end of the tick.
    """
    select.select(list(fds), [], [], timeout)


@final
class ForkServer:
    """Fork children from one server that imported `preload` (see the module's docstring)."""

    def __init__(
        self, preload: Sequence[str], env: Mapping[str, str], say: Callable[[str], None]
    ) -> None:
        """Keep what the children get; the server starts at the first `start`."""
        self._context = multiprocessing.get_context("forkserver")
        self._preload = list(preload)
        self.env = dict(env)
        self.cwd = str(Path.cwd())
        self._say = say
        self._pid: int | None = None

    def start(self, target: Callable[..., int], *args: object) -> Forked:
        """Run `target(*args)` in a fresh fork of the server.

        Raise OSError if it cannot, EOFError if the server ended as it forked.
        """
        self._running()
        process = self._context.Process(
            target=_child, args=(target, args, self.env, self.cwd), daemon=False
        )
        process.start()
        return Forked(process)

    def _running(self) -> None:
        """Start the server (again, saying so, if it died), its environment `env`."""
        self._context.set_forkserver_preload(self._preload)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)
        try:
            forkserver.ensure_running()
        finally:
            os.environ.clear()
            os.environ.update(saved)
        pid = _server_pid()
        if self._pid is not None and pid != self._pid:
            self._say(
                f"adws: the forkserver (process {self._pid}) that starts runs died; "
                f"process {pid} starts them from now on"
            )
        self._pid = pid

    def stop(self) -> None:
        """End the server and wait for it; nothing to do when it never started or is gone."""
        pid, self._pid = self._pid, None
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        # The next `ensure_running` finds it reaped (a ChildProcessError) unless it is told.
        server = _server()
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
        os.close(server._forkserver_alive_fd)  # noqa: SLF001 - as above
        address = server._forkserver_address  # noqa: SLF001 - as above
        server._forkserver_pid = server._forkserver_address = None  # noqa: SLF001 - as above
        server._forkserver_alive_fd = None  # noqa: SLF001 - as above
        with contextlib.suppress(OSError):
            Path(address).unlink()


def _server() -> Any:  # noqa: ANN401 - its state is not in multiprocessing's stubs
    """Return multiprocessing's forkserver of this process: no public stop before Python 3.12."""
    return forkserver._forkserver  # noqa: SLF001 - not public


def _server_pid() -> int | None:
    """Return the pid of this process's forkserver (None: none started)."""
    pid: int | None = _server()._forkserver_pid  # noqa: SLF001 - not public
    return pid
