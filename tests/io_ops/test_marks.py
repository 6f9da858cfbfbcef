"""Marks in a child's environment, read from a process table (a real one, or one built here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from adws.io_ops.marks import MARK, RUN_MARK, group_belongs_to, kill_marked, live_marks, new_mark
from tests.conftest import wait_for


def process_table(folder: Path, processes: dict[str, tuple[str | None, bytes | None]]) -> Path:
    """Build a stand-in for /proc: per pid, its `stat` line and its `environ` (None: unreadable)."""
    for pid, (stat, environ) in processes.items():
        (folder / pid).mkdir(parents=True)
        if stat is not None:
            (folder / pid / "stat").write_text(stat)
        if environ is not None:
            (folder / pid / "environ").write_bytes(environ)
    (folder / "self").mkdir()
    return folder


def test_a_group_is_the_runs_only_while_a_member_carries_its_id(tmp_path: Path) -> None:
    table = process_table(
        tmp_path / "proc",
        {
            "10": ("10 (sh (odd) name) S 1 10 10", b"PATH=/bin\0ADWS_RUN_ID=r1\0"),
            "11": ("11 (sleep) S 10 10 10", None),
            "20": ("20 (sleep) S 1 20 20", b"ADWS_RUN_ID=other\0"),
            "21": (None, b"ADWS_RUN_ID=r1\0"),  # vanished between the listing and the read
        },
    )
    assert (group_belongs_to(10, "r1", proc=table), group_belongs_to(20, "r1", proc=table)) == (
        True,
        False,
    )
    assert group_belongs_to(10, "r1", proc=tmp_path / "no-proc") is None
    (table / "12").mkdir()
    (table / "12" / "stat").write_text("12 (sh) S 1 30 30")
    (table / "12" / "environ").mkdir()  # opens, then fails to read: as a process ending mid-read
    assert group_belongs_to(30, "r1", proc=table) is False


def test_a_marked_process_is_killed_and_its_mark_forgotten() -> None:
    mark = new_mark()
    assert mark in live_marks()
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"],
        env={**os.environ, MARK: mark},
        start_new_session=True,
    )
    try:
        environ = Path(f"/proc/{child.pid}/environ")
        wait_for(lambda: f"{MARK}={mark}".encode() in environ.read_bytes().split(b"\0"))
        assert kill_marked(mark) == (child.pid,)
        assert child.wait(timeout=10) == -9
    finally:
        child.kill()
        child.wait()
    assert mark not in live_marks()


def test_without_a_process_table_nothing_is_found(tmp_path: Path) -> None:
    assert kill_marked(new_mark(), proc=tmp_path / "nowhere") == ()
    assert RUN_MARK == "ADWS_RUN_ID"
