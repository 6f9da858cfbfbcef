"""The one module that runs subprocesses, sleeps and reads the clock.

Everything that touches the outside world goes through here, so the rest of
the package stays pure and tests can swap these functions for fakes.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "GRACE_SECONDS",
    "ProcessOutcome",
    "monotonic",
    "process_alive",
    "run_process",
    "sleep",
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
    say); `timed_out` when it was killed for running past its timeout.
    """

    argv: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    timed_out: bool = False
    error: str | None = None


def _stop_group(process: subprocess.Popen[str], grace: float) -> tuple[str, str]:
    """Stop the process group politely, then firmly, and collect its output."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        return process.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        return process.communicate()


def run_process(  # noqa: PLR0913 - keyword-only options of one call
    argv: Sequence[str],
    *,
    stdin_text: str | None = None,
    timeout: float | None = None,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    grace: float = GRACE_SECONDS,
) -> ProcessOutcome:
    """Run `argv` in its own process group and wait for it.

    A timeout, or Ctrl-C while waiting, stops the whole group: SIGTERM, then
    SIGKILL after `grace` seconds. Ctrl-C is re-raised after the group is
    gone, so no child outlives the step. `env` is added to this process's
    environment rather than replacing it.
    """
    argv = tuple(argv)
    started = monotonic()
    full_env = None if env is None else {**os.environ, **env}
    try:
        process = subprocess.Popen(  # noqa: S603 - argv is never run through a shell here
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            cwd=cwd,
            env=full_env,
            start_new_session=True,
        )
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        where = f" in {cwd}" if cwd is not None and not Path(cwd).is_dir() else ""
        return ProcessOutcome(
            argv, None, "", "", monotonic() - started, error=f"{argv[0]}: {reason}{where}"
        )
    try:
        stdout, stderr = process.communicate(stdin_text, timeout=timeout)
    except subprocess.TimeoutExpired:
        stdout, stderr = _stop_group(process, grace)
        return ProcessOutcome(
            argv, process.returncode, stdout, stderr, monotonic() - started, timed_out=True
        )
    except KeyboardInterrupt:
        _stop_group(process, grace)
        raise
    return ProcessOutcome(argv, process.returncode, stdout, stderr, monotonic() - started)


def process_alive(pid: int) -> bool:
    """Tell whether a process with this id exists on this machine."""
    try:
        os.kill(pid, 0)
    except OSError as exc:
        # PermissionError means it exists but belongs to someone else.
        return not isinstance(exc, ProcessLookupError)
    return True
