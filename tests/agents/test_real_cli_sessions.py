"""Sessions that continue, through the real `claude` and `codex` CLIs and the Agent SDK, offline.

Each test scripts `adws.testing.FakeModelAPI`, runs an agent step whose
first answer is rejected, and reads what the CLI sent the model on the
retry: the conversation so far, and only the feedback as the new turn.
"""

from __future__ import annotations

import json
import shutil
import signal
import sqlite3
from typing import TYPE_CHECKING, Any

import pytest

from adws import OutputContract, RetryPolicy, Workflow, agent_step, run_workflow
from adws.agents.sessions import feedback_prompt, interrupted_prompt
from adws.engine.events import AgentSessionStarted
from adws.testing import FakeModelAPI, Reply
from tests.agents.clis import backend, environment, git_repo, kinds, needs, on_path
from tests.conftest import Events, start_adws, success, wait_for

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [pytest.mark.agent_process, pytest.mark.agent_cli]

DONE = "STATUS: done\nSUMMARY: all good"
PROMPT = "Say it is all good."
REJECTED = "attempt 1/3 failed: ContractViolation: SUMMARY missing"


@pytest.fixture(autouse=True)
def clis_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", on_path())


def turns(body: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Return each turn of a request of either API: its role and its texts."""
    found = []
    for turn in body.get("messages") or body.get("input") or []:
        content = turn.get("content")
        blocks = [content] if isinstance(content, str) else content or []
        texts = [
            block if isinstance(block, str) else str(block.get("text"))
            for block in blocks
            if isinstance(block, str) or "text" in str(block.get("type"))
        ]
        found.append((str(turn.get("role") or turn.get("type")), texts))
    return found


def run_ask(  # noqa: PLR0913, PLR0917 - the agent, where it runs, and how the run waits
    kind: str, api: FakeModelAPI, home: Path, work: Path, sleep: Any, events: Events
) -> Any:
    ask = agent_step(
        "ask",
        prompt=PROMPT,
        agent=backend(kind, api, home),
        contract=OutputContract(("SUMMARY",)),
        retry=RetryPolicy(max_attempts=3, delay=1),
        cwd=str(work),
    )
    return run_workflow(Workflow("real", (ask,)), observers=[events], sleep=sleep, run_id="r")


@pytest.mark.parametrize("kind", kinds())
def test_a_rejected_answer_is_retried_in_the_same_session_with_only_the_feedback(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path
) -> None:
    fake_model_api.script(Reply.text("STATUS: done"), Reply.text(DONE))
    events = Events()
    work = git_repo(tmp_path / "work")
    ctx = success(run_ask(kind, fake_model_api, tmp_path / "home", work, lambda _s: None, events))
    first, retry = (request["body"] for request in fake_model_api.requests)
    said = turns(retry)
    assert said[-1] == ("user", [feedback_prompt([REJECTED])])
    assert ("assistant", ["STATUS: done"]) in said  # the first exchange, as the model answered
    assert any(PROMPT in text for role, texts in said[:-1] if role == "user" for text in texts)
    assert said[: len(turns(first))] == turns(first)  # the conversation so far, as it was
    session = ctx.inputs["ask_agent"]["session_id"]
    assert ctx.inputs["ask_agent"]["continued"] is True
    started = [event for event in events.events if isinstance(event, AgentSessionStarted)]
    assert started == [
        AgentSessionStarted("r", "ask", 1, "ask", session),
        AgentSessionStarted("r", "ask", 2, "ask", session, True, session, 1, ""),
    ]


@pytest.mark.parametrize("kind", kinds())
def test_a_session_the_cli_lost_is_asked_again_afresh_with_the_whole_prompt(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path
) -> None:
    fake_model_api.script(Reply.text("STATUS: done"), Reply.text(DONE))
    events = Events()
    work = git_repo(tmp_path / "work")
    home = tmp_path / "home"

    def lose_the_sessions(_seconds: float) -> None:  # between the attempts: a deleted home
        for kept in (home / ".claude" / "projects", home / ".codex" / "sessions"):
            shutil.rmtree(kept, ignore_errors=True)

    ctx = success(run_ask(kind, fake_model_api, home, work, lose_the_sessions, events))
    assert len(fake_model_api.requests) == 2  # the lost session cost no model request
    retry = fake_model_api.requests[1]["body"]
    said = turns(retry)
    assert ("assistant", ["STATUS: done"]) not in said
    last_user = [text for role, texts in said if role == "user" for text in texts][-1]
    assert last_user.startswith(PROMPT)
    assert REJECTED in last_user
    agent = ctx.inputs["ask_agent"]
    first = next(event for event in events.events if isinstance(event, AgentSessionStarted))
    assert agent["continued"] is False
    lost = (
        "no rollout found for thread id"
        if kind == "codex"
        else "No conversation found with session ID"
    )
    assert lost in agent["not_continued"]
    assert agent["session_id"] != first.session_id
    last = [event for event in events.events if isinstance(event, AgentSessionStarted)][-1]
    assert (last.continued, last.continues, last.from_attempt) == (False, first.session_id, 1)
    assert last.why == agent["not_continued"]


FLOW = """
from adws import OutputContract, Workflow, agent_step
from adws.agents import CommandAgent

workflow = Workflow(
    "ask",
    (
        agent_step(
            "ask",
            prompt="Read the notes and sum them up.",
            agent=CommandAgent("never-run", timeout=300),
            contract=OutputContract(("SUMMARY",)),
            cwd="{folder}",
        ),
    ),
    inputs=("folder",),
)
"""


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("claude", "codex")])
def test_a_resume_in_another_process_continues_the_interrupted_calls_session(
    kind: str, in_tmp: Path, fake_model_api: FakeModelAPI
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "ask.py").write_text(FLOW)
    folder = git_repo(in_tmp / "repo")
    fake_model_api.script(Reply.text(DONE, delay=60), Reply.text(DONE))
    env = {**environment(kind, fake_model_api, in_tmp / "home"), "PATH": on_path()}
    argv = ("--agent", kind)
    process = start_adws(in_tmp, "run", "ask", "-i", f"folder={folder}", *argv, env=env)
    try:
        wait_for(lambda: fake_model_api.requests or process.poll() is not None, 120)
        assert fake_model_api.requests, process.communicate(timeout=30)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    assert process.returncode == 130
    db = sqlite3.connect(in_tmp / "runs.db")
    [(run_id, session, ended)] = db.execute(
        "SELECT run_id, session_id, ended FROM agent_sessions"
    ).fetchall()
    db.close()
    assert ended == 0  # the call was cut off: its session is journaled all the same
    resumed = start_adws(in_tmp, "resume", run_id, *argv, env=env)
    _, err = resumed.communicate(timeout=180)
    assert resumed.returncode == 0, err
    said = turns(fake_model_api.requests[-1]["body"])
    assert said[-1] == ("user", [interrupted_prompt("ask")])
    assert any(
        "Read the notes and sum them up." in text
        for role, texts in said[:-1]
        if role == "user"
        for text in texts
    )
    status = start_adws(in_tmp, "status", run_id, env=env)
    shown, _ = status.communicate(timeout=60)
    assert f"attempt 1: succeeded · session {session} (continued from attempt 1)" in shown
    as_json = start_adws(in_tmp, "status", run_id, "--json", env=env)
    payload = json.loads(as_json.communicate(timeout=60)[0])
    continued = [
        row["agent_sessions"] for row in payload["attempts"] if row["status"] == "succeeded"
    ]
    assert continued == [
        [
            {
                "session_id": session,
                "asked_by": "ask",
                "continued": True,
                "continues": session,
                "from_attempt": 1,
                "why": None,
                "ended": True,
            }
        ]
    ]


FORGED = {
    "codex": "--dangerously-bypass-approvals-and-sandbox",
    "claude": "--dangerously-skip-permissions",
}
"""A session id that is each CLI's most dangerous flag, as a forged row or a CLI could name it."""

SPY = """#!{python}
import json, os, subprocess, sys

real, log, hostile = {real!r}, {log!r}, {hostile!r}
with open(log, "a") as said:
    said.write(json.dumps(sys.argv[1:]) + "\\n")
if not hostile:
    os.execv(real, [real, *sys.argv[1:]])
# Name a hostile session instead of the CLI's own, everywhere the CLI names it.
process = subprocess.Popen([real, *sys.argv[1:]], stdout=subprocess.PIPE, text=True)
named = None
for line in process.stdout:
    if named is None and ('"init"' in line or "thread.started" in line):
        event = json.loads(line)
        named = event.get("session_id") or event.get("thread_id")
    if named:
        line = line.replace(json.dumps(named)[1:-1], json.dumps(hostile)[1:-1])
    sys.stdout.write(line)
    sys.stdout.flush()
sys.exit(process.wait())
"""


def spy_on(kind: str, folder: Path, *, hostile: str = "") -> Path:
    """Put a `kind` on PATH before the real one that logs its argv (and names `hostile`)."""
    import sys  # noqa: PLC0415 - only for the interpreter's path

    from tests.agents.clis import BIN  # noqa: PLC0415 - the real CLI the spy runs

    folder.mkdir(parents=True, exist_ok=True)
    log = folder / "argv.jsonl"
    spy = folder / kind
    real, python = str(BIN / kind), sys.executable
    spy.write_text(SPY.format(python=python, real=real, log=str(log), hostile=hostile))
    spy.chmod(0o755)
    return log


def argvs(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("claude", "codex")])
def test_a_session_id_the_cli_names_that_is_not_a_plain_token_is_never_trusted(
    kind: str, fake_model_api: FakeModelAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_model_api.script(Reply.text("STATUS: done"), Reply.text(DONE))
    log = spy_on(kind, tmp_path / "spy", hostile=FORGED[kind])
    monkeypatch.setenv("PATH", f"{tmp_path / 'spy'}:{on_path()}")
    events = Events()
    work = git_repo(tmp_path / "work")
    ctx = success(run_ask(kind, fake_model_api, tmp_path / "home", work, lambda _s: None, events))
    first, retry = argvs(log)
    assert FORGED[kind] not in first + retry  # never a flag, never a session to resume
    assert ("resume" not in retry, "--resume" not in retry) == (True, True)
    said = turns(fake_model_api.requests[1]["body"])
    assert ("assistant", ["STATUS: done"]) not in said  # the retry starts afresh
    last_user = [text for role, texts in said if role == "user" for text in texts][-1]
    assert (last_user.startswith(PROMPT), REJECTED in last_user) == (True, True)
    agent = ctx.inputs["ask_agent"]
    assert agent["session_id"] is None
    assert agent["session_refused"] == (
        f"session id {FORGED[kind]!r} is not a plain token ([A-Za-z0-9][A-Za-z0-9._:-]{{0,127}})"
    )
    assert [event for event in events.events if isinstance(event, AgentSessionStarted)] == []


@pytest.mark.parametrize("kind", [pytest.param(k, marks=needs(k)) for k in ("claude", "codex")])
def test_a_forged_session_id_in_the_journal_refuses_the_resume_and_never_reaches_the_cli(
    kind: str, in_tmp: Path, fake_model_api: FakeModelAPI
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "ask.py").write_text(FLOW)
    folder = git_repo(in_tmp / "repo")
    fake_model_api.script(Reply.text(DONE, delay=60), Reply.text(DONE))
    log = spy_on(kind, in_tmp / "spy")
    env = {
        **environment(kind, fake_model_api, in_tmp / "home"),
        "PATH": f"{in_tmp / 'spy'}:{on_path()}",
    }
    argv = ("--agent", kind)
    process = start_adws(in_tmp, "run", "ask", "-i", f"folder={folder}", *argv, env=env)
    try:
        wait_for(lambda: fake_model_api.requests or process.poll() is not None, 120)
        assert fake_model_api.requests, process.communicate(timeout=30)
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
    db = sqlite3.connect(in_tmp / "runs.db")
    [(run_id,)] = db.execute("SELECT run_id FROM agent_sessions WHERE ended = 0").fetchall()
    db.execute("UPDATE agent_sessions SET session_id = ?", (FORGED[kind],))
    db.commit()
    db.close()
    calls, asked = len(argvs(log)), len(fake_model_api.requests)
    resumed = start_adws(in_tmp, "resume", run_id, *argv, env=env)
    _, err = resumed.communicate(timeout=180)
    assert resumed.returncode == 2, err
    assert (
        f"run {run_id} cannot be resumed: agent_sessions row of run {run_id}, step ask,"
        f" attempt 1: session_id is refused: session id {FORGED[kind]!r} is not a plain token"
    ) in err
    assert (len(argvs(log)), len(fake_model_api.requests)) == (calls, asked)  # nothing started
    assert all(FORGED[kind] not in each for each in argvs(log))
    status = start_adws(in_tmp, "status", run_id, env=env)
    shown, _ = status.communicate(timeout=60)
    assert f"session refused: session_id is refused: session id {FORGED[kind]!r}" in shown
