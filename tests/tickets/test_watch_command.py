"""`adws watch command -- CMD`: tickets as JSON from any command, one run per key."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from adws.journal import Journal
from tests.conftest import start_adws
from tests.tickets.flows import project

if TYPE_CHECKING:
    from pathlib import Path

TICKETS = [
    {"key": "jira:OPS-1", "title": "Slow", "body": "$(rm -rf ~)", "url": "u1", "author": "ana"},
    {"key": "jira:OPS-2", "title": "Down", "body": "--help", "url": "u2", "author": "bo"},
]


def watch(folder: Path, *argv: str) -> tuple[int, str]:
    process = start_adws(folder, "watch", "command", "--workflow", "ticketed", "--once", *argv)
    _, err = process.communicate(timeout=120)
    return process.returncode, err


def test_each_ticket_a_command_prints_becomes_one_run_with_its_words_as_data(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    (folder / "tickets.json").write_text(json.dumps(TICKETS))
    for _ in range(2):
        code, err = watch(folder, "--", "cat", "tickets.json")
        assert code == 0, err
    runs = Journal(folder / "runs.db").runs()
    assert len(runs) == 2
    inputs = sorted(
        dict(Journal(folder / "runs.db").find(run.run_id).inputs().inputs)["ticket_body"]  # type: ignore[union-attr] # found
        for run in runs
    )
    assert inputs == ["$(rm -rf ~)", "--help"]
    assert "adws watch: 2 tickets: 0 started, 0 refused" in err


def test_one_object_a_line_is_read_and_a_bad_ticket_skipped_with_its_field_named(
    tmp_path: Path,
) -> None:
    folder = project(tmp_path)
    lines = [json.dumps(TICKETS[0]), json.dumps({"key": "x"})]
    (folder / "tickets.jsonl").write_text("\n".join(lines) + "\n")
    code, err = watch(folder, "--source", "jira", "--", "cat", "tickets.jsonl")
    assert code == 0, err
    assert "skipped: ticket 1: field 'title' is missing" in err
    assert len(Journal(folder / "runs.db").runs()) == 1


def test_a_failing_or_silent_command_is_tried_again_at_the_next_poll(tmp_path: Path) -> None:
    folder = project(tmp_path)
    code, err = watch(folder, "--", sys.executable, "-c", "raise SystemExit(3)")
    assert code == 0
    assert " exited 3; trying again at the next poll" in err
    code, err = watch(folder, "--", "echo", "{not json")
    assert code == 0
    assert "echo printed no JSON (" in err
    (folder / "one.json").write_text(json.dumps(TICKETS[0]))
    code, err = watch(folder, "--work", "1", "--", "cat", "one.json")
    assert code == 0, err
    (run,) = Journal(folder / "runs.db").runs()
    assert run.status == "succeeded"


def test_a_workflow_that_cannot_take_tickets_exits_2(tmp_path: Path) -> None:
    folder = project(tmp_path)
    (folder / "one.json").write_text(json.dumps(TICKETS[0]))
    process = start_adws(
        folder, "watch", "command", "--workflow", "untaking", "--once", "--", "cat", "one.json"
    )
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2, err
