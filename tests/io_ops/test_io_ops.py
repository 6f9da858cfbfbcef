"""io_ops: processes are stopped as a group, politely then firmly."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from adws import io_ops
from adws.io_ops.process import _stop_group
from adws.io_ops.streams import LINE_LIMIT


@pytest.mark.slow
def test_a_process_that_ignores_sigterm_is_killed_after_the_grace_period() -> None:
    script = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); time.sleep(30)"
    started = time.monotonic()
    outcome = io_ops.run_process([sys.executable, "-c", script], timeout=0.5, grace=0.3)
    assert outcome.timed_out
    assert outcome.returncode == -signal.SIGKILL
    assert time.monotonic() - started < 10


@pytest.mark.slow
def test_ctrl_c_while_waiting_stops_the_group_and_is_re_raised(tmp_path: Path) -> None:
    marker = tmp_path / "survived"
    main_thread = threading.get_ident()
    timer = threading.Timer(0.3, lambda: signal.pthread_kill(main_thread, signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        io_ops.run_process(["sh", "-c", f"(sleep 1; touch {marker}) & sleep 30"])
    time.sleep(1.5)
    assert not marker.exists()


def test_tail_keeps_short_text() -> None:
    assert io_ops.tail("short") == "short"


def test_utc_now_is_iso_with_seconds() -> None:
    assert len(io_ops.utc_now()) == len("2026-01-01T00:00:00+00:00")


def test_a_finished_group_is_not_an_error_to_stop() -> None:
    process = subprocess.Popen(["true"], start_new_session=True)
    process.wait()
    _stop_group(process, 0.1)
    assert process.returncode == 0


@pytest.mark.slow
def test_every_live_group_is_known_and_a_second_ctrl_c_can_kill_them_all() -> None:
    seen: list[tuple[int, ...]] = []
    io_ops.GROUPS.on_change = seen.append
    outcome: list[io_ops.ProcessOutcome] = []
    try:
        worker = threading.Thread(
            target=lambda: outcome.append(io_ops.run_process(["sleep", "30"], grace=0.2))
        )
        worker.start()
        deadline = time.monotonic() + 5
        while not io_ops.GROUPS.current() and time.monotonic() < deadline:
            time.sleep(0.01)
        (pgid,) = io_ops.GROUPS.current()
        assert io_ops.group_alive(pgid)
        assert io_ops.kill_all_groups() == (pgid,)
        worker.join(10)
    finally:
        io_ops.GROUPS.on_change = None
    assert outcome[0].returncode == -signal.SIGKILL
    assert seen == [(pgid,), ()]
    assert not io_ops.group_alive(pgid)
    assert io_ops.GROUPS.current() == ()


def test_the_group_of_init_counts_as_alive() -> None:
    assert io_ops.group_alive(1)


def test_a_line_listener_hears_each_line_and_skips_one_too_long() -> None:
    """A listener hears stdout line by line; a line past LINE_LIMIT is skipped whole."""
    lines: list[str] = []
    script = (
        "import sys; w = sys.stdout.write; w('first\\nsec'); sys.stdout.flush(); "
        f"w('ond\\n' + 'x' * {2 * LINE_LIMIT} + '\\nlast\\n')"
    )
    outcome = io_ops.run_process([sys.executable, "-c", script], on_line=lines.append)
    assert outcome.returncode == 0
    assert lines == ["first", "second", "last"]


def test_silence_past_the_idle_timeout_stops_the_group() -> None:
    outcome = io_ops.run_process(["sh", "-c", "echo hi; sleep 30"], idle_timeout=0.3, grace=0.2)
    assert (outcome.hung, outcome.stdout, outcome.finished) == (True, "hi\n", False)


def test_an_input_that_cannot_be_written_as_bytes_starts_no_process(tmp_path: Path) -> None:
    """A lone high surrogate has no byte form: the call says so, and nothing was started."""
    marker = tmp_path / "started"
    outcome = io_ops.run_process(
        ["sh", "-c", f"touch {marker}; cat"], stdin_text="a\ud800b", timeout=10
    )
    assert (outcome.returncode, outcome.finished) == (None, False)
    assert outcome.error == (
        "sh: its input cannot be written as bytes (surrogates not allowed at 1)"
    )
    assert not marker.exists()


def test_bytes_that_are_not_utf8_come_back_as_they_were_when_asked() -> None:
    outcome = io_ops.run_process(
        ["printf", "caf\\351"], timeout=10, stdout_errors="surrogateescape"
    )
    assert outcome.stdout == "caf\udce9"
    assert outcome.stdout.encode("utf-8", "surrogateescape") == b"caf\xe9"
