"""adws as a child subreaper: an orphan whose environment was cleared still ends with its run."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adws import io_ops
from adws.io_ops.clock import monotonic
from adws.io_ops.reaper import _reap, kill_adopted
from tests.conftest import REPO, dead_pid, start_adws

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="subreapers and /proc are Linux's")


def sleepers(seconds: str) -> list[int]:
    """Return the processes running exactly `sleep SECONDS`."""
    wanted = f"sleep\0{seconds}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                found.append(int(entry.name))
        except OSError:  # it ended as we looked
            continue
    return [pid for pid in found if io_ops.process_alive(pid)]


def flows(seconds: str) -> str:
    daemon = (
        f"env -i PATH=/usr/bin:/bin setsid sh -c 'echo $$ > daemon.pid; exec sleep {seconds}'"
        " >/dev/null 2>&1 </dev/null &"
    )
    return (
        "from adws import Workflow, shell_step\n\n"
        f"escapes = Workflow('escapes', (shell_step('escape', {daemon!r}"
        " + ' while [ ! -s daemon.pid ]; do sleep 0.05; done'),))\n"
    )


@pytest.mark.slow
@linux_only
def test_a_daemon_that_cleared_its_environment_and_left_its_session_ends_with_the_run(
    tmp_path: Path,
) -> None:
    """`env -i setsid sleep &` escapes the group kill and the mark sweep: adws adopts it."""
    seconds = f"299.{random.randrange(10**6):06d}"  # noqa: S311 - a name for this test's sleep
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "flows.py").write_text(flows(seconds), encoding="utf-8")
    try:
        process = start_adws(tmp_path, "run", "escapes", "-q")
        _, stderr = process.communicate(timeout=60)
        started = int((tmp_path / "daemon.pid").read_text())
        assert (process.returncode, stderr, started > 0, sleepers(seconds)) == (0, "", True, [])
    finally:
        for pid in sleepers(seconds):
            os.kill(pid, signal.SIGKILL)


@linux_only
def test_adws_becomes_a_child_subreaper_on_linux_only() -> None:
    """In a process of its own: the test session must not become one."""
    code = (
        "from adws.io_ops.reaper import become_subreaper;"
        "print(become_subreaper(), become_subreaper('darwin'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout == "True False\n"


def stat(pid: int, ppid: int, sid: int) -> str:
    return f"{pid} (a (tricky) name) S {ppid} {pid} {sid} 0 -1 4194560\n"


def test_only_children_in_another_session_outside_the_watched_groups_are_killed(
    tmp_path: Path,
) -> None:
    """An adopted pid that cannot be killed is tried again, a bounded number of times."""
    me, session, gone = os.getpid(), os.getsid(0), dead_pid()
    watched = dead_pid()
    rows = {
        gone: stat(gone, me, session + 1),  # adopted: ours, in another session
        watched: stat(watched, me, session + 1),  # a group adws still watches
        7: stat(7, me + 1, session + 1),  # someone else's child
        8: stat(8, me, session),  # adws's own child, in its session
    }
    for pid, text in rows.items():
        (tmp_path / str(pid)).mkdir()
        (tmp_path / str(pid) / "stat").write_text(text, encoding="utf-8")
    (tmp_path / "9").mkdir()  # ended as it was read: no stat
    (tmp_path / "self").mkdir()
    assert kill_adopted(frozenset({watched}), proc=tmp_path) == (gone,) * 10


def test_without_proc_nothing_is_adopted(tmp_path: Path) -> None:
    assert kill_adopted(proc=tmp_path / "no-proc") == ()


def test_reaping_waits_for_a_child_to_end_and_no_longer_than_its_deadline() -> None:
    ending = subprocess.Popen(["sleep", "0.2"])
    lasting = subprocess.Popen(["sleep", "30"])
    try:
        _reap(lasting.pid, monotonic() - 1.0)
        _reap(ending.pid, monotonic() + 10.0)
        _reap(os.getppid(), monotonic() + 10.0)  # not our child: nothing to wait for
        assert (lasting.poll(), ending.poll()) == (None, 0)  # reaped already: Popen says 0
    finally:
        lasting.kill()
        lasting.wait()
