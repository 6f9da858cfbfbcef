"""The journal's agent sessions: recorded at once, shown per attempt, continued by a resume."""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING

import attrs
import pytest

from adws import OutputContract, Workflow, agent_step, fan_out
from adws.agents import AgentRequest, ScriptedAgent
from adws.agents.sessions import feedback_prompt, interrupted_prompt
from adws.cli import main
from adws.engine.scope import AgentSession
from adws.journal import Journal
from adws.journal.records.sessions import SessionRecord, by_attempt, interrupted_sessions
from adws.journal.records.workspaces import WorktreeRecord
from adws.journal.store.sessions import sessions_of
from adws.render import status_text
from adws.runs.resume import prepare_resume
from adws.testing import resume, run

if TYPE_CHECKING:
    from pathlib import Path

    from adws.journal.records.runs import RunRecord

DONE = "STATUS: done\nSUMMARY: fixed"
REJECTED = "attempt 1/3 failed: ContractViolation: SUMMARY missing"
LOST = "ScriptedAgent exited with 1: No conversation found with session ID: scripted-1"


def workflow() -> Workflow:
    ask = agent_step(
        "ask",
        prompt="Sum up the notes.",
        agent=ScriptedAgent([]),
        contract=OutputContract(("SUMMARY",)),
    )
    return Workflow("w", (ask,))


def rows(path: Path) -> list[tuple[object, ...]]:
    db = sqlite3.connect(path)
    try:
        return db.execute(
            "SELECT step, attempt, asked_by, session_id, continued, continues, from_attempt,"
            " why, ended FROM agent_sessions ORDER BY id"
        ).fetchall()
    finally:
        db.close()


def test_each_call_records_its_session_and_what_it_continued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"

    def then_lose_it(_request: AgentRequest) -> str:
        agent.forget("scripted-1")  # the CLI's home is deleted before the next attempt
        return "STATUS: done"

    agent = ScriptedAgent(["STATUS: done", then_lose_it, DONE], sessions=True)
    report = run(workflow(), agent=agent, journal=path)
    assert report.status == "succeeded"
    assert rows(path) == [
        ("ask", 1, "ask", "scripted-1", None, None, None, None, 1),
        ("ask", 2, "ask", "scripted-1", 1, "scripted-1", 1, None, 1),
        ("ask", 3, "ask", "scripted-2", 0, "scripted-1", 2, LOST, 1),
    ]
    monkeypatch.setenv("ADWS_JOURNAL", str(path))
    assert main(["status", report.run_id]) == 0
    shown = capsys.readouterr().out
    assert "       attempt 1: ContractViolation: SUMMARY missing · session scripted-1\n" in shown
    assert (
        "       attempt 2: ContractViolation: SUMMARY missing · session scripted-1"
        " (continued from attempt 1)\n"
    ) in shown
    assert (
        f"       attempt 3: succeeded · session scripted-2 (not continued from attempt 2: {LOST})\n"
    ) in shown
    assert main(["status", report.run_id, "--json"]) == 0
    attempts = json.loads(capsys.readouterr().out)["attempts"]
    assert [row["agent_sessions"][0]["continued"] for row in attempts] == [None, True, False]
    assert main(["status", report.run_id, "--step", "ask", "--attempt", "2", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert row["agent_sessions"] == [
        {
            "session_id": "scripted-1",
            "asked_by": "ask",
            "continued": True,
            "continues": "scripted-1",
            "from_attempt": 1,
            "why": None,
            "ended": True,
        }
    ]


def cut_off(request: AgentRequest) -> str:
    raise KeyboardInterrupt  # the call is stopped halfway, once the CLI named its session


def test_a_resume_continues_the_call_a_ctrl_c_cut_off_saying_it_was_interrupted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    first = run(workflow(), agent=ScriptedAgent([cut_off], sessions=True), journal=path)
    assert first.status == "interrupted"
    assert rows(path) == [("ask", 1, "ask", "scripted-1", None, None, None, None, 0)]
    again = ScriptedAgent([DONE], sessions=True)
    report = resume(workflow(), first.run_id, journal=path, agent=again)
    assert report.status == "succeeded"
    [request] = again.requests
    assert (request.session, request.prompt) == ("scripted-1", interrupted_prompt("ask"))
    assert rows(path)[-1] == ("ask", 1, "ask", "scripted-1", 1, "scripted-1", 1, None, 1)


def test_a_resume_after_a_failure_or_an_ended_call_starts_afresh(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    agent = ScriptedAgent(["STATUS: done"] * 3, sessions=True)
    failed = run(workflow(), agent=agent, journal=path)
    assert failed.status == "failed"
    journal = Journal(path)
    record = journal.find(failed.run_id)
    assert not isinstance(record, str)
    found = sessions_of(journal, failed.run_id)
    assert interrupted_sessions(record, found, "ask") == {}
    assert interrupted_sessions(record, found, None) == {}
    assert interrupted_sessions(_interrupted(record), found, "ask") == {}  # every call ended
    journal.close()


def in_flight_worktree(tmp_path: Path, **changed: object) -> WorktreeRecord:
    fields: dict[str, object] = {
        "label": "w",
        "step": "ask",
        "repo": str(tmp_path),
        "path": str(tmp_path / "gone"),
        "branch": "adws/w",
        "base": "0" * 40,
        "tree": "1" * 40,
        "state": "present",
        "recorded": "2026-01-01T00:00:00+00:00",
        "attempts": 0,
        **changed,
    }
    return WorktreeRecord(**fields)  # type: ignore[arg-type] # test values of the right types


def test_a_changed_worktree_keeps_a_resume_from_continuing_a_session(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    first = run(workflow(), agent=ScriptedAgent([cut_off], sessions=True), journal=path)
    journal = Journal(path)
    record = journal.find(first.run_id)
    assert not isinstance(record, str)
    attempts = journal.attempts(first.run_id)
    found = sessions_of(journal, first.run_id)
    plain = prepare_resume(workflow(), record, attempts, sessions=found)
    assert not isinstance(plain, str)
    assert plain.sessions == {("ask", "ask"): AgentSession("scripted-1", 1, interrupted=True)}
    reset = prepare_resume(
        workflow(), record, attempts, sessions=found, worktrees=[in_flight_worktree(tmp_path)]
    )
    assert not isinstance(reset, str)
    assert (len(reset.resets), reset.sessions) == (1, {})
    drifted = prepare_resume(
        workflow(),
        record,
        attempts,
        sessions=found,
        accept_drift=True,
        worktrees=[in_flight_worktree(tmp_path, attempts=None)],
    )
    assert not isinstance(drifted, str)
    assert (drifted.resets, drifted.sessions) == ((), {})
    journal.close()


def test_a_journal_from_before_sessions_and_a_forged_row_are_read_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    agent = ScriptedAgent(["STATUS: done", DONE], sessions=True)
    report = run(workflow(), agent=agent, journal=path)
    db = sqlite3.connect(path)
    db.execute("UPDATE agent_sessions SET ended = 'yes' WHERE attempt = 2")
    db.execute(
        "INSERT INTO agent_sessions (run_id, step, attempt, asked_by, session_id, recorded)"
        " VALUES (?, 'nowhere', 9, 'ask', 'lost-row', 'now')",
        (report.run_id,),
    )
    db.commit()
    db.close()
    journal = Journal(path, readonly=True)
    found = sessions_of(journal, report.run_id)
    assert [(s.step, s.session_id) for s in found] == [
        ("ask", "scripted-1"),
        ("nowhere", "lost-row"),
    ]
    attempts = journal.attempts(report.run_id)
    assert by_attempt(found, attempts) == [[found[0]], []]
    record = journal.find(report.run_id)
    assert not isinstance(record, str)
    shown = status_text(record, attempts, sessions=found)
    assert "attempt 1: ContractViolation: SUMMARY missing · session scripted-1\n" in shown
    # Its session row is unreadable: the attempt names the session its row kept, no more.
    assert shown.endswith("attempt 2: succeeded · session scripted-1")
    journal.close()
    db = sqlite3.connect(path)
    db.execute("DROP TABLE agent_sessions")
    db.commit()
    db.close()
    old = Journal(path, readonly=True)
    assert sessions_of(old, report.run_id) == []
    old.close()
    monkeypatch.setenv("ADWS_JOURNAL", str(path))
    assert main(["status", report.run_id]) == 0
    assert "       attempt 2: succeeded · session scripted-1\n" in capsys.readouterr().out


def test_a_session_record_says_what_it_continued() -> None:
    kept = SessionRecord("ask", 2, "ask", "s-1", True, "s-1", 1, "", True)
    assert kept.describe() == "session s-1 (continued from attempt 1)"
    assert kept.to_dict()["why"] is None
    assert feedback_prompt([REJECTED]).endswith(f"- {REJECTED}\n")


def test_each_branch_of_a_fan_out_continues_its_own_session(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    ask = agent_step(
        "ask",
        prompt="Check {item}.",
        agent=ScriptedAgent([]),
        contract=OutputContract(("SUMMARY",)),
    )
    flow = Workflow("w", (fan_out("checks", ask, over="items"),), inputs=("items",))
    answers = {"checks[0]": ["STATUS: done", DONE], "checks[1]": [DONE]}
    agent = ScriptedAgent.by_step(answers, sessions=True)
    report = run(flow, {"items": ["a", "b"]}, agent=agent, journal=path)
    assert report.status == "succeeded"
    retry = next(request for request in agent.requests if request.session is not None)
    assert (retry.branch, retry.prompt) == ("checks[0]", feedback_prompt([REJECTED]))
    journal = Journal(path, readonly=True)
    record = journal.find(report.run_id)
    assert not isinstance(record, str)
    found = sessions_of(journal, report.run_id)
    shown = status_text(record, journal.attempts(report.run_id), sessions=found)
    journal.close()
    # The branches run at once: which one's call the agent numbers first is theirs to race.
    first = next(found_.session_id for found_ in found if found_.step == "checks[0]")
    assert f"attempt 2: succeeded · session {first} (continued from attempt 1)" in shown
    late = SessionRecord("later", 1, "ask", "s-9", None, None, None, "", False)
    assert interrupted_sessions(_interrupted(record), [*found, late], "checks") == {}
    assert interrupted_sessions(_interrupted(record), [late], "later") == {
        ("later", "ask"): AgentSession("s-9", 1, interrupted=True)
    }


def _interrupted(record: RunRecord) -> RunRecord:
    return attrs.evolve(record, status="interrupted")


HOSTILE = "--dangerously-bypass-approvals-and-sandbox"


def test_a_forged_session_id_is_a_named_row_that_no_resume_continues(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "runs.db"
    first = run(workflow(), agent=ScriptedAgent([cut_off], sessions=True), journal=path)
    db = sqlite3.connect(path)
    db.execute("UPDATE agent_sessions SET session_id = ?, continues = ?", (HOSTILE, "s\n-x"))
    db.commit()
    db.close()
    refused = (
        f"agent_sessions row of run {first.run_id}, step ask, attempt 1: session_id is refused:"
        f" session id {HOSTILE!r} is not a plain token ([A-Za-z0-9][A-Za-z0-9._:-]{{0,127}})"
    )
    again = ScriptedAgent([DONE], sessions=True)
    with pytest.raises(ValueError, match="session_id is refused") as raised:
        resume(workflow(), first.run_id, journal=path, agent=again)
    assert str(raised.value).startswith(
        f"run {first.run_id} cannot be resumed: {refused}; agent_sessions row of run"
    )
    assert again.requests == ()
    journal = Journal(path, readonly=True)
    [found] = sessions_of(journal, first.run_id)
    assert found.problems == (
        refused.split(": ", 1)[1],
        (
            "continues is refused: session id 's\\n-x' is not a plain token"
            " ([A-Za-z0-9][A-Za-z0-9._:-]{0,127})"
        ),
    )
    assert found.to_dict()["refused"] == list(found.problems)
    journal.close()
    monkeypatch.setenv("ADWS_JOURNAL", str(path))
    assert main(["status", first.run_id]) == 0
    assert f"session refused: session_id is refused: session id {HOSTILE!r}" in (
        capsys.readouterr().out
    )
