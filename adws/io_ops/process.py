"""`run_process`: one child in its own process group, read as capped streams, always stopped."""

from __future__ import annotations

import contextlib
import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws.io_ops.clock import monotonic
from adws.io_ops.environment import child_environment
from adws.io_ops.groups import CANCEL, GRACE_SECONDS, GROUPS, kill_group
from adws.io_ops.marks import MARK, forget, kill_marked, new_mark
from adws.io_ops.streams import DRAIN_SECONDS, Streams

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Mapping, Sequence

__all__ = ["ProcessOutcome", "run_process", "start_process"]

_POLL_SECONDS: Final = 0.1


@final
@attrs.frozen
class ProcessOutcome:
    """What a finished (or stopped) process left behind.

    `error` is set when the process could not start (a missing executable,
    say, or `working folder DIR does not exist` when `cwd` is missing);
    `timed_out` when it was killed for running past its timeout;
    `hung` when it was killed for printing nothing for `idle_timeout`;
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
    hung: bool = False

    @property
    def finished(self) -> bool:
        """Tell whether the process ran to its own end (not stopped, not unstarted)."""
        return not (self.timed_out or self.hung or self.overflowed or self.error is not None)


def _stop_group(process: subprocess.Popen[bytes], grace: float) -> None:
    """Stop the process group politely, then firmly, and reap the leader."""
    kill_group(process.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=grace)
    # Whatever is left of the group (the leader, or children it left behind) goes now.
    kill_group(process.pid, signal.SIGKILL)
    process.wait()


def _drain(streams: Streams, seconds: float) -> None:
    """Read what is left for at most `seconds`, then stop whatever holds the pipes."""
    deadline = monotonic() + seconds
    while streams.reading and streams.overflowed is None:
        left = deadline - monotonic()
        if left <= 0:
            return
        streams.pump(left)


class _Clock:
    """The two limits of one call: the deadline, and the longest silence."""

    def __init__(self, timeout: float | None, idle_timeout: float | None) -> None:
        self.started = self.heard = monotonic()
        self.deadline = None if timeout is None else self.started + timeout
        self.idle = idle_timeout

    def wait(self, now: float) -> float:
        """Return how long the next read may block."""
        waits = [_POLL_SECONDS]
        if self.deadline is not None:
            waits.append(self.deadline - now)
        if self.idle is not None:
            waits.append(self.heard + self.idle - now)
        return max(min(waits), 0.0)

    def silent(self, now: float) -> bool:
        return self.idle is not None and now - self.heard >= self.idle


def _watch(process: subprocess.Popen[bytes], streams: Streams, clock: _Clock) -> tuple[bool, bool]:
    """Read output until the process ends or a limit passes; say which limit (timeout, idle)."""
    while streams.reading and streams.overflowed is None:
        now = monotonic()
        if clock.deadline is not None and now >= clock.deadline:
            return True, False
        if clock.silent(now):
            return False, True
        if process.poll() is not None:
            break  # the leader is gone; what is left is read by _drain, briefly
        if streams.pump(clock.wait(now)):
            clock.heard = monotonic()
    return False, False


def run_process(  # noqa: PLR0913 - keyword-only options of one call
    argv: Sequence[str],
    *,
    stdin_text: str | None = None,
    timeout: float | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    env_pass: Collection[str] = (),
    grace: float = GRACE_SECONDS,
    max_output_bytes: int = 16 << 20,
    drain: float = DRAIN_SECONDS,
    idle_timeout: float | None = None,
    on_line: Callable[[str], None] | None = None,
    stdout_errors: str = "replace",
) -> ProcessOutcome:
    """Run `argv` in its own process group, reading its output as a capped stream.

    stdout and stderr are each kept up to `max_output_bytes`: past that the
    group is stopped and `overflowed` names the stream, so no output can
    exhaust memory. A timeout (or Ctrl-C, or any exception while waiting)
    stops the whole group: SIGTERM, then SIGKILL after `grace` seconds; so
    does `idle_timeout` seconds without a byte on stdout or stderr (`hung`).
    After the process ends, output is read for at most `drain` more seconds:
    a detached grandchild holding a pipe cannot keep the step waiting, so
    `timeout` bounds the whole call (plus `grace` and `drain`). Exceptions are
    re-raised after the group is gone, so no child outlives the step: when
    the process ends, whatever it started that left its group (`setsid`) is
    found by the mark in its environment and killed too (see
    `adws.io_ops.marks`). `env` is added to this process's environment
    rather than replacing it, less adws's own credentials (the journal's
    URL, `PG*`, the GitHub tokens) but for the names in `env_pass` (see
    `adws.io_ops.environment`). The
    prompt (`stdin_text`) is written, then stdin is closed. `on_line` hears
    each complete stdout line as it arrives. `stdout_errors` decodes stdout
    (`"surrogateescape"` keeps bytes that are not UTF-8, for a patch).
    """
    argv = tuple(argv)
    clock = _Clock(timeout, idle_timeout)
    cancel = CANCEL.get()
    if cancel is not None and cancel.is_set():
        return ProcessOutcome(argv, None, "", "", 0.0, error="cancelled before it started")
    try:  # before the process starts: a failure here must leave nothing running
        payload = None if stdin_text is None else stdin_text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError as exc:
        error = f"{argv[0]}: its input cannot be written as bytes ({exc.reason} at {exc.start})"
        return ProcessOutcome(argv, None, "", "", 0.0, error=error)
    mark = new_mark()
    full_env = {**child_environment(env, env_pass), MARK: mark}
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
        forget(mark)
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        error = f"{argv[0]}: {reason}"
        if cwd is not None and not Path(cwd).is_dir():  # the folder, not the program, is missing
            state = "is not a folder" if Path(cwd).exists() else "does not exist"
            error = f"working folder {cwd} {state}"
        return ProcessOutcome(argv, None, "", "", monotonic() - clock.started, error=error)
    GROUPS.add(process.pid, cancel)
    if cancel is not None and cancel.is_set():
        # Cancelled while it started: the branch's groups may have been killed before this
        # one was known, so it is killed here, or it would run (and be waited for) to its end.
        kill_group(process.pid)
    streams = Streams(process, payload, max_output_bytes, on_line)
    try:
        timed_out, hung = _watch(process, streams, clock)
        if timed_out or hung or streams.overflowed is not None:
            _stop_group(process, grace)
        else:
            left = None if clock.deadline is None else max(clock.deadline - monotonic(), 0.0)
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
        # The leader is gone; nothing it started may outlive the step, in its group or not.
        kill_group(process.pid)
        kill_marked(mark)
    return ProcessOutcome(
        argv,
        process.returncode,
        streams.text("stdout", stdout_errors),
        streams.text("stderr"),
        monotonic() - clock.started,
        timed_out=timed_out,
        overflowed=streams.overflowed,
        hung=hung,
    )


def start_process(
    argv: Sequence[str], env: Mapping[str, str], pass_fds: Sequence[int] = ()
) -> subprocess.Popen[bytes]:
    """Start a child that outlives this call, in a session of its own, its output inherited.

    No terminal's Ctrl-C reaches it: its parent forwards the one signal it
    should get (an `adws worker` to the runs it holds). The file
    descriptors in `pass_fds` are its too (a worker hands the journal's
    location through one); no other is.
    """
    return subprocess.Popen(  # noqa: S603 - argv is adws's own command line
        list(argv),
        env=dict(env),
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )
