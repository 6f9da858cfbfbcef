"""The one module that runs subprocesses, sleeps and reads the clock.

Everything that touches the outside world goes through here, so the rest of
the package stays pure and tests can swap these functions for fakes.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import threading
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping, Sequence

__all__ = [
    "CANCEL",
    "DRAIN_SECONDS",
    "GRACE_SECONDS",
    "GROUPS",
    "HANDLED_SIGNALS",
    "ProcessOutcome",
    "group_alive",
    "handling_signals",
    "kill_all_groups",
    "kill_group",
    "kill_groups_of",
    "monotonic",
    "process_alive",
    "run_process",
    "sleep",
    "stop_group",
    "tail",
    "utc_now",
]

sleep: Final[Callable[[float], None]] = time.sleep
monotonic: Final[Callable[[], float]] = time.monotonic

GRACE_SECONDS: Final = 2.0
"""How long a stopped process gets between SIGTERM and SIGKILL."""

_TAIL_CHARS: Final = 2000


def utc_now() -> str:
    """Return the current UTC time as ISO 8601 with seconds."""
    return datetime.now(tz=UTC).isoformat(timespec="seconds")


def tail(text: str, limit: int = _TAIL_CHARS) -> str:
    """Return the last `limit` characters of `text`, marking a cut.

    >>> tail("abcdef", 3)
    '…def'
    """
    if len(text) <= limit:
        return text
    return "…" + text[-limit:]


@final
@attrs.frozen
class ProcessOutcome:
    """What a finished (or stopped) process left behind.

    `error` is set when the process could not start (a missing executable,
    say); `timed_out` when it was killed for running past its timeout;
    `overflowed` names the stream (`stdout` or `stderr`) that printed more
    than `max_output_bytes`, after which the group was killed.
    """

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    error: str | None = None
    overflowed: str | None = None


_CHUNK: Final = 64 << 10
_POLL_SECONDS: Final = 0.1
DRAIN_SECONDS: Final = 1.0
"""After a kill, how long output is still read before the pipes are abandoned.

A detached grandchild (`setsid`) may hold a pipe open forever; past this
grace adws stops reading, so a timeout bounds the whole step.
"""


class _Groups:
    """The process groups adws started and has not yet seen end, by pgid.

    One lock protects the set: branches of a parallel step start processes
    from several threads, and a second Ctrl-C or SIGTERM stops them all.
    `on_change` hears the current groups whenever they change (the journal
    records them so `adws resume` can tell a run's child is still alive).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pgids: dict[int, threading.Event | None] = {}
        self.on_change: Callable[[tuple[int, ...]], None] | None = None

    def _changed(self, snapshot: tuple[int, ...]) -> None:
        listener = self.on_change
        if listener is not None:
            listener(snapshot)

    def add(self, pgid: int, owner: threading.Event | None = None) -> None:
        with self._lock:
            self._pgids[pgid] = owner
            snapshot = tuple(sorted(self._pgids))
        self._changed(snapshot)

    def discard(self, pgid: int) -> None:
        with self._lock:
            self._pgids.pop(pgid, None)
            snapshot = tuple(sorted(self._pgids))
        self._changed(snapshot)

    def current(self, owner: threading.Event | None = None) -> tuple[int, ...]:
        """Return the live groups, or only those started under `owner` (a branch's cancel event)."""
        with self._lock:
            return tuple(
                sorted(pgid for pgid, own in self._pgids.items() if owner is None or own is owner)
            )


GROUPS: Final = _Groups()
"""Every live process group adws started in this process."""


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    """Send `sig` to a process group that may already be gone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


CANCEL: Final[ContextVar[threading.Event | None]] = ContextVar("adws_cancel", default=None)
"""Set inside a branch of a parallel step: once the event is set, no new process starts.

The parallel step stops the groups its cancelled branches started
(`kill_groups_of`); a branch that then tries again finds nothing started.
"""


def kill_groups_of(owner: threading.Event) -> tuple[int, ...]:
    """SIGKILL the process groups started under `owner`; return them."""
    groups = GROUPS.current(owner)
    for pgid in groups:
        kill_group(pgid)
    return groups


def kill_all_groups() -> tuple[int, ...]:
    """SIGKILL every process group adws started and has not reaped; return them.

    The way out of a second Ctrl-C: nothing adws started may outlive it.
    """
    groups = GROUPS.current()
    for pgid in groups:
        kill_group(pgid)
    return groups


def stop_group(pgid: int, grace: float = GRACE_SECONDS) -> None:
    """Stop a process group adws did not start in this process: SIGTERM, then SIGKILL.

    `adws resume --force` uses it on a child a crashed run left behind.
    """
    kill_group(pgid, signal.SIGTERM)
    deadline = monotonic() + grace
    while group_alive(pgid) and monotonic() < deadline:
        sleep(0.05)
    kill_group(pgid)


def group_alive(pgid: int) -> bool:
    """Tell whether any process of group `pgid` still exists."""
    try:
        os.killpg(pgid, 0)
    except OSError as exc:
        # PermissionError means it exists but belongs to someone else.
        return not isinstance(exc, ProcessLookupError)
    return True


class _Streams:
    """Read a process's stdout and stderr as they come, each up to a cap."""

    def __init__(self, process: subprocess.Popen[bytes], stdin: bytes | None, cap: int) -> None:
        self.cap = cap
        self.data: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}
        self.overflowed: str | None = None
        self.selector = selectors.DefaultSelector()
        self.pending = memoryview(stdin or b"")
        assert process.stdout is not None  # noqa: S101 - Popen was given PIPE for all three
        assert process.stderr is not None  # noqa: S101 - as above
        assert process.stdin is not None  # noqa: S101 - as above
        self.selector.register(process.stdout, selectors.EVENT_READ, "stdout")
        self.selector.register(process.stderr, selectors.EVENT_READ, "stderr")
        self.stdin = process.stdin
        self.pipes = (process.stdin, process.stdout, process.stderr)
        if self.pending:
            os.set_blocking(self.stdin.fileno(), False)
            self.selector.register(self.stdin, selectors.EVENT_WRITE, "stdin")
        else:
            self.stdin.close()

    @property
    def reading(self) -> bool:
        return any(key.data != "stdin" for key in self.selector.get_map().values())

    def _write(self, key: selectors.SelectorKey) -> None:
        try:
            written = os.write(key.fd, self.pending[:_CHUNK])
        except OSError as exc:
            # Full for now: try again later. Closed: the process has read all it wants.
            written = 0 if isinstance(exc, BlockingIOError) else len(self.pending)
        self.pending = self.pending[written:]
        if not self.pending:
            self.selector.unregister(self.stdin)
            self.stdin.close()

    def pump(self, seconds: float | None) -> None:
        """Move data for up to `seconds` (None: until something happens)."""
        for key, _ in self.selector.select(seconds):
            if key.data == "stdin":
                self._write(key)
                continue
            chunk = os.read(key.fd, _CHUNK)
            if not chunk:
                self.selector.unregister(key.fileobj)
                continue
            buffer = self.data[key.data]
            room = self.cap - len(buffer)
            buffer += chunk[: max(room, 0)]
            if len(chunk) > room and self.overflowed is None:
                self.overflowed = key.data

    def close(self) -> None:
        self.selector.close()
        for pipe in self.pipes:
            with contextlib.suppress(OSError):
                pipe.close()

    def text(self, name: str) -> str:
        return self.data[name].decode("utf-8", errors="replace")


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """Stop the process group politely, then firmly, and reap the leader."""
    kill_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    # Whatever is left of the group (the leader, or children it left behind) goes now.
    kill_group(process.pid, signal.SIGKILL)
    process.wait()


def _drain(streams: _Streams, seconds: float) -> None:
    """Read what is left for at most `seconds`, then stop whatever holds the pipes."""
    deadline = monotonic() + seconds
    while streams.reading and streams.overflowed is None:
        left = deadline - monotonic()
        if left <= 0:
            return
        streams.pump(left)


def run_process(  # noqa: PLR0913 - keyword-only options of one call
    argv: Sequence[str],
    *,
    stdin_text: str | None = None,
    timeout: float | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    grace: float = GRACE_SECONDS,
    max_output_bytes: int = 16 << 20,
    drain: float = DRAIN_SECONDS,
) -> ProcessOutcome:
    """Run `argv` in its own process group, reading its output as a capped stream.

    stdout and stderr are each kept up to `max_output_bytes`: past that the
    group is stopped and `overflowed` names the stream, so no output can
    exhaust memory. A timeout (or Ctrl-C, or any exception while waiting)
    stops the whole group: SIGTERM, then SIGKILL after `grace` seconds.
    After the process ends, output is read for at most `drain` more seconds:
    a detached grandchild holding a pipe cannot keep the step waiting, so
    `timeout` bounds the whole call (plus `grace` and `drain`). Exceptions are
    re-raised after the group is gone, so no child outlives the step. `env`
    is added to this process's environment rather than replacing it.
    """
    argv = tuple(argv)
    started = monotonic()
    full_env = None if env is None else {**os.environ, **env}
    cancel = CANCEL.get()
    if cancel is not None and cancel.is_set():
        return ProcessOutcome(argv, None, "", "", 0.0, error="cancelled before it started")
    try:
        process = subprocess.Popen(  # noqa: S603 - argv is never run through a shell here
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=full_env,
            start_new_session=True,
        )
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        where = f" in {cwd}" if cwd is not None and not Path(cwd).is_dir() else ""
        return ProcessOutcome(
            argv, None, "", "", monotonic() - started, error=f"{argv[0]}: {reason}{where}"
        )
    GROUPS.add(process.pid, cancel)
    payload = None if stdin_text is None else stdin_text.encode("utf-8", "surrogateescape")
    streams = _Streams(process, payload, max_output_bytes)
    deadline = None if timeout is None else started + timeout
    timed_out = False
    try:
        while streams.reading and streams.overflowed is None:
            now = monotonic()
            if deadline is not None and now >= deadline:
                timed_out = True
                break
            if process.poll() is not None:
                break  # the leader is gone; what is left is read by _drain, briefly
            streams.pump(_POLL_SECONDS if deadline is None else min(_POLL_SECONDS, deadline - now))
        if timed_out or streams.overflowed is not None:
            _stop_group(process, grace)
        else:
            left = None if deadline is None else max(deadline - monotonic(), 0.0)
            try:
                process.wait(timeout=left)
            except subprocess.TimeoutExpired:
                timed_out = True
                _stop_group(process, grace)
        _drain(streams, drain)
    except BaseException:
        _stop_group(process, grace)
        raise
    finally:
        streams.close()
        GROUPS.discard(process.pid)
    # The leader is gone; a child it left in the group must not outlive the step.
    kill_group(process.pid)
    return ProcessOutcome(
        argv,
        process.returncode,
        streams.text("stdout"),
        streams.text("stderr"),
        monotonic() - started,
        timed_out=timed_out,
        overflowed=streams.overflowed,
    )


HANDLED_SIGNALS: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals a run stops on: Ctrl-C, SIGTERM (CI, `timeout`, `docker stop`), SIGHUP."""


@contextlib.contextmanager
def handling_signals(handler: Callable[[int, Any], object]) -> Iterator[None]:
    """Install `handler` for `HANDLED_SIGNALS` while the block runs, then restore the old ones."""
    previous = {signum: signal.signal(signum, handler) for signum in HANDLED_SIGNALS}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def process_alive(pid: int) -> bool:
    """Tell whether a process with this id exists on this machine."""
    try:
        os.kill(pid, 0)
    except OSError as exc:
        # PermissionError means it exists but belongs to someone else.
        return not isinstance(exc, ProcessLookupError)
    return True
