"""--notify: a command told that a run waits; a failure is a warning, never an error."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from adws.workspaces.notify import notify


def test_the_command_gets_the_run_id_and_the_message_as_two_arguments(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    script = "import sys; open(sys.argv[1], 'a').write(repr(sys.argv[2:]) + chr(10))"
    command = shlex.join([sys.executable, "-c", script, str(log)])
    assert notify(command, "r1", "merge $(rm -rf /)? `x`") is None
    assert log.read_text() == "['r1', 'merge $(rm -rf /)? `x`']\n"


def test_a_command_that_fails_is_a_warning_with_what_it_said() -> None:
    warning = notify("sh -c 'echo nope >&2; exit 4'", "r1", "go?")
    assert warning == "--notify \"sh -c 'echo nope >&2; exit 4'\" failed (exited with 4): nope"


def test_a_command_that_says_nothing_and_fails() -> None:
    assert notify("false", "r1", "go?") == "--notify 'false' failed (exited with 1)"


def test_a_missing_program_is_a_warning() -> None:
    warning = notify("no-such-notifier-xyz", "r1", "go?")
    assert warning is not None
    assert warning.startswith("--notify 'no-such-notifier-xyz' failed (no-such-notifier-xyz: ")


def test_a_command_that_hangs_is_stopped() -> None:
    command = "sh -c 'sleep 30' notifier"
    assert (
        notify(command, "r1", "go?", timeout=0.2) == f"--notify {command!r} failed (ran past 0.2s)"
    )


def test_a_command_line_that_does_not_split_or_is_empty() -> None:
    assert notify("say 'unclosed", "r1", "go?") == (
        '--notify "say \'unclosed" is not a command line: No closing quotation'
    )
    assert notify("  ", "r1", "go?") == "--notify was given an empty command"
