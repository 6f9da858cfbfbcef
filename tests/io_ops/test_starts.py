"""When a process started: the token that tells a holder from a later process with its pid."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from adws.io_ops.starts import process_started, started_token


def test_a_live_process_has_this_boots_id_and_its_start_ticks() -> None:
    boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    stat = Path(f"/proc/{os.getpid()}/stat").read_text(encoding="utf-8")
    ticks = stat.rsplit(")", 1)[1].split()[19]  # field 22: the third after the name is 1
    assert process_started(os.getpid()) == f"{boot}:{ticks}"


def test_a_later_process_never_shares_the_token_of_an_earlier_one() -> None:
    first = subprocess.Popen(["sleep", "5"])
    try:
        before = process_started(first.pid)
    finally:
        first.kill()
        first.wait()
    assert before is not None
    assert process_started(first.pid) is None  # gone: no token
    assert process_started(os.getpid()) != before


def test_without_a_proc_to_ask_there_is_no_token(tmp_path: Path) -> None:
    assert process_started(os.getpid(), proc=tmp_path) is None


def test_a_stat_line_without_a_start_time_makes_no_token() -> None:
    assert started_token("b7", "42 (sh) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 x 0") is None
