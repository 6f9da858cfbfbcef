"""`ForkServer` in this process: children's exit codes, a signal to one that ended, a stop."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from adws.io_ops.forked import LOST, Forked, ForkServer, until_one_ends


def _ended(child: Forked) -> int:
    deadline = time.monotonic() + 60
    while (code := child.poll()) is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert code is not None
    return code


def test_a_child_exits_with_what_its_target_returns_and_a_signal_after_its_end_goes_nowhere() -> (
    None
):
    said: list[str] = []
    server = ForkServer((), dict(os.environ), said.append)
    try:
        done = server.start(int, "3")
        assert _ended(done) == 3
        assert (done.poll(), done.returncode) == (3, 3)
        done.send_signal(signal.SIGKILL)  # ended: its pid may be another process's by now
        lost = server.start(int, str(LOST))  # its own 255, not a server gone: it has ended
        assert _ended(lost) == LOST
        assert not Path(f"/proc/{lost.pid}").exists()
    finally:
        server.stop()
    assert said == []


def test_a_server_never_started_stops_as_nothing() -> None:
    server = ForkServer((), {}, print)
    server.stop()
    server.stop()


def test_a_server_that_dies_as_it_forks_is_an_eof_error(tmp_path: Path) -> None:
    # Imported by the server alone (its preload): it takes the fork request, then dies.
    (tmp_path / "dies_soon.py").write_text(
        "import os, signal, time\ntime.sleep(1)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    found = os.pathsep.join([str(tmp_path), *filter(None, [os.environ.get("PYTHONPATH")])])
    server = ForkServer(("dies_soon",), {**os.environ, "PYTHONPATH": found}, print)
    try:
        with pytest.raises(EOFError, match=r"^unexpected EOF$"):
            server.start(int, "0")
    finally:
        server.stop()


def test_a_wait_on_a_running_child_ends_when_it_ends_and_an_ended_one_has_nothing_to_wait_on() -> (
    None
):
    server = ForkServer((), dict(os.environ), print)
    try:
        child = server.start(subprocess.call, ["sleep", "0.2"])
        fd = child.ended_fd()
        assert fd is not None
        until_one_ends([fd], 60)  # woken by its end, not after 60 s
        assert _ended(child) == 0
        assert child.ended_fd() is None
    finally:
        server.stop()
