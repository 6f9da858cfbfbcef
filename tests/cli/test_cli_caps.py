"""`adws caps`: set, listed with their windows' spend, removed; bad input refused (exit 2)."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import pytest

from adws.cli import main
from adws.engine.caps import QuotaReport
from adws.journal import Journal
from adws.journal.store.quotas import record
from tests.cli.test_cli_cost import PRICED

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "priced.py").write_text(PRICED)
    return in_tmp


def listed(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    assert main(["caps", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert isinstance(found, list)
    return found


def test_caps_are_set_listed_with_their_spend_and_removed(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["caps", "set", "weekly", "--usd", "5", "--per", "7d", "--workflow", "priced"]) == 0
    assert capsys.readouterr().out == "cap weekly: $5.00 per 7d, workflow priced\n"
    assert main(["caps", "set", "other", "--tokens", "100", "--per", "5h", "--workflow", "x"]) == 0
    assert main(["caps", "set", "runs", "--runs", "3", "--per", "day", "--tz", "Asia/Tokyo"]) == 0
    capsys.readouterr()
    assert main(["run", "priced", "-q"]) == 0
    capsys.readouterr()
    found = {cap["name"]: cap for cap in listed(capsys)}
    assert (found["weekly"]["spent"], found["weekly"]["remaining"]) == (0.3, 4.7)
    assert (found["other"]["spent"], found["other"]["remaining"]) == (0.0, 100.0)
    assert (found["runs"]["spent"], found["runs"]["remaining"], found["runs"]["tz"]) == (
        1.0,
        2.0,
        "Asia/Tokyo",
    )
    assert main(["caps"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NAME", "CAP", "SPENT", "RESERVED", "REMAINING", "RESETS"]
    assert lines[3].startswith("weekly  $5.00 per 7d, workflow priced")
    assert "$0.30" in lines[3]
    assert main(["caps", "rm", "other"]) == 0
    assert capsys.readouterr().out == "removed cap other\n"
    assert [cap["name"] for cap in listed(capsys)] == ["runs", "weekly"]


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["a/b", "--usd", "1", "--per", "day"], "cap name 'a/b' is not a plain word"),
        (["c", "--usd", "-1", "--per", "day"], "cap c: the amount must be a finite number"),
        (["c", "--usd", "inf", "--per", "day"], "cap c: the amount must be a finite number"),
        (["c", "--usd", "1", "--per", "0s"], "cap c: window '0s' is not a duration"),
        (["c", "--runs", "2", "--per", "day", "--tz", "Nowhere/Land"], "unknown time zone"),
        (["c", "--tokens", "1.5", "--per", "day"], "cap c: --tokens must be a whole number"),
    ],
)
def test_bad_caps_are_refused_with_exit_2_and_the_reason(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], reason: str
) -> None:
    assert main(["caps", "set", *argv]) == 2
    assert reason in capsys.readouterr().err
    assert not (project / ".adws" / "runs.db").exists()  # nothing was written


def test_removing_a_cap_that_is_not_there_is_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["caps", "set", "c", "--usd", "1", "--per", "day"])
    capsys.readouterr()
    assert main(["caps", "rm", "nope"]) == 2
    assert capsys.readouterr().err == "adws: error: no cap called 'nope'\n"


def test_no_caps_says_so(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["caps"]) == 2  # no journal yet: as every inspecting command
    assert main(["run", "priced", "-q"]) == 0
    capsys.readouterr()
    assert main(["caps"]) == 0
    assert capsys.readouterr().err.startswith("no caps set in ")


def test_a_cap_row_altered_to_nonsense_is_listed_unreadable_with_nothing_left(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["caps", "set", "daily", "--usd", "20", "--per", "day"])
    capsys.readouterr()
    with sqlite3.connect(project / ".adws" / "runs.db") as db:
        db.execute(
            "UPDATE caps SET spec = ? WHERE name = 'daily'",
            ('{"name": "daily", "amount": "lots"}',),
        )
    assert listed(capsys) == [
        {
            "name": "daily",
            "error": (
                "cap daily: its journal row is unreadable (cap daily: the currency must be usd,"
                " tokens or runs, got None)"
            ),
        }
    ]
    assert main(["caps"]) == 0
    assert "unreadable: cap daily" in capsys.readouterr().out


def test_caps_live_in_either_journal_and_a_second_set_replaces_the_first(
    journal_at: str, capsys: pytest.CaptureFixture[str], in_tmp: Path
) -> None:
    where = ["--journal", journal_at]
    assert main(["caps", "set", "five", "--tokens", "2000000", "--per", "5h", *where]) == 0
    assert main(["caps", "set", "five", "--tokens", "1000", "--per", "5h", *where]) == 0
    capsys.readouterr()
    assert main(["caps", "--json", *where]) == 0
    (five,) = json.loads(capsys.readouterr().out)
    assert (five["amount"], five["spent"], five["remaining"]) == (1000.0, 0.0, 1000.0)
    assert main(["caps", "rm", "five", *where]) == 0
    assert main(["caps", "rm", "five", *where]) == 2


def test_a_full_runs_cap_refuses_adws_run_with_exit_2_naming_it_and_when_it_frees(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["caps", "set", "two", "--runs", "2", "--per", "7d", "--workflow", "priced"]) == 0
    assert main(["caps", "set", "codex", "--runs", "1", "--per", "day", "--agent", "codex"]) == 0
    assert main(["caps", "set", "elsewhere", "--runs", "1", "--per", "day", "--workflow", "x"]) == 0
    assert main(["caps", "set", "money", "--usd", "100", "--per", "day"]) == 0
    assert [main(["run", "priced", "-q"]) for _ in range(2)] == [0, 0]
    capsys.readouterr()
    assert main(["run", "priced", "-q"]) == 2
    said = capsys.readouterr().err
    assert said.startswith(
        "adws: error: not started: cap two: 2 of 2 runs started (2 runs per 7d, workflow priced);"
        " it frees at 20"
    )
    assert main(["caps", "rm", "two"]) == 0
    assert main(["run", "priced", "-q"]) == 0


def test_an_unreadable_cap_refuses_every_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["caps", "set", "daily", "--usd", "20", "--per", "day"])
    with sqlite3.connect(project / ".adws" / "runs.db") as db:
        db.execute("UPDATE caps SET spec = 'nonsense' WHERE name = 'daily'")
    capsys.readouterr()
    assert main(["run", "priced", "-q"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: not started: cap daily: its journal row is unreadable;"
        " fix it or remove it (adws caps rm daily)\n"
    )


def test_the_agent_accounts_quota_windows_are_listed_with_the_caps_and_alone(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = Journal(project / ".adws" / "runs.db")
    assert main(["caps", "--accounts"]) == 0
    assert capsys.readouterr().err == "no agent account has reported its quota\n"
    reports = (QuotaReport("five_hour", 0.96, 1_800_000_000.0), QuotaReport("other", None, None))
    record(journal, "claude /h/.claude", reports, 1_799_999_000.0)
    assert main(["caps"]) == 0
    shown = capsys.readouterr()
    assert shown.err.startswith("no caps set in ")
    assert shown.out.splitlines() == [
        "AGENT ACCOUNT      WINDOW     USED  RESETS                     REPORTED",
        "claude /h/.claude  five_hour  96%   2027-01-15T08:00:00+00:00  2027-01-15T07:43:20+00:00",
        "claude /h/.claude  other      -     -                          2027-01-15T07:43:20+00:00",
    ]
    assert main(["caps", "--accounts"]) == 0
    assert capsys.readouterr().out.splitlines()[1].startswith("claude /h/.claude  five_hour  96%")
    assert main(["caps", "--accounts", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0] == {
        "account": "claude /h/.claude",
        "window": "five_hour",
        "used": 0.96,
        "resets_at": 1_800_000_000.0,
        "updated": "2027-01-15T07:43:20+00:00",
    }
    assert listed(capsys) == []  # --json stays the list of caps


def test_park_at_past_the_whole_window_is_refused_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "priced", "--park-at", "1.5"]) == 2
    assert "expected a share (0.95 is 95%) from 0 to 1, got '1.5'" in capsys.readouterr().err


def test_a_batch_a_runs_cap_has_no_room_for_is_refused_whole_exit_2(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["caps", "set", "two", "--runs", "2", "--per", "day"]) == 0
    assert main(["run", "priced", "-q"]) == 0
    (project / "inputs.jsonl").write_text("{}\n{}\n")
    capsys.readouterr()
    assert main(["batch", "priced", "inputs.jsonl"]) == 2
    assert (
        "adws: error: batch not started: cap two: 1 of 2 runs started (2 runs per day (UTC));"
        " no room for 2 runs; it frees at "
    ) in capsys.readouterr().err
    journal = Journal(project / ".adws" / "runs.db")
    assert journal.query("SELECT COUNT(*) FROM runs") == [(1,)]
    assert journal.query("SELECT COUNT(*) FROM batches") == [(0,)]
    (project / "inputs.jsonl").write_text("{}\n")
    assert main(["batch", "priced", "inputs.jsonl", "-q"]) == 0
    assert journal.query("SELECT COUNT(*) FROM runs WHERE status = 'succeeded'") == [(2,)]


def test_a_queued_run_a_runs_cap_has_room_for_is_listed_without_a_hold(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["caps", "set", "roomy", "--runs", "5", "--per", "day"]) == 0
    capsys.readouterr()
    assert main(["submit", "priced"]) == 0
    run_id = capsys.readouterr().out.strip()
    assert main(["runs", "--json"]) == 0
    [listed_run] = json.loads(capsys.readouterr().out)
    assert (listed_run["run_id"], listed_run["status"], "held" in listed_run) == (
        run_id,
        "queued",
        False,
    )
