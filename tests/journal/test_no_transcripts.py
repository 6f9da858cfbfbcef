"""`--no-transcripts` keeps no text an agent or a command produced, errors included.

A rejected answer (`raw_output`), a command's output tails, and the output a
message quotes are journaled as their size and hash; the run itself (the
retry's feedback, what is printed live) still has them whole.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from typing import TYPE_CHECKING, Final

import pytest
from returns.io import IOFailure, IOResult

from adws import OutputContract, PipelineError, Workflow, WorkflowContext, agent_step, run_workflow
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.engine.events import AttemptFailed
from adws.journal import Journal, JournalObserver
from adws.journal.records.codec import decode_error, encode_error, withheld
from tests.conftest import start_adws

if TYPE_CHECKING:
    from pathlib import Path

    from tests.conftest import Events

REJECTED: Final = "I think it is REJECTED-7f3a-answer, but I give no report."
STDOUT: Final = "STDOUT-91c2"
STDERR: Final = "STDERR-5d0e"
PRINTED: Final = (f"{STDOUT}\n", f"{STDERR}\n", f"{STDOUT}\n{STDERR}")
"""What the failing command printed on stdout and on stderr, and what its message quotes."""
SECRETIVE: Final = r"""
from pathlib import Path

from adws import OutputContract, Workflow, agent_step, shell_step
from adws.testing import FunctionAgent

REJECTED = "I think it is REJECTED-7f3a" + "-answer, but I give no report."


def answer(request):
    with Path("prompts.log").open("a") as log:
        log.write(f"--- attempt {request.attempt}\n{request.prompt}\n")
    return REJECTED if request.attempt == 1 else "STATUS: done\nLABEL: bug\n"


secretive = Workflow(
    "secretive",
    (
        agent_step(
            "classify",
            prompt="Classify {issue}.",
            agent=FunctionAgent(answer),
            contract=OutputContract(("LABEL",)),
        ),
        shell_step("label", "printf '%s-%s\n' STDOUT 91c2; printf '%s-%s\n' STDERR 5d0e >&2; exit 3"),
    ),
    inputs=("issue",),
)
"""
"""The secrets are made at run time: the workflow's own source never holds them."""


def journal_bytes(folder: Path) -> bytes:
    """Every byte the journal wrote: the database, its write-ahead log and its index."""
    return b"".join(path.read_bytes() for path in sorted(folder.glob("runs.db*")))


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "secretive.py").write_text(SECRETIVE)
    monkeypatch.delenv("ADWS_TRANSCRIPTS", raising=False)
    return in_tmp


def test_no_transcripts_journals_no_byte_of_a_rejected_answer_or_a_commands_output(
    project: Path,
) -> None:
    env = {"ADWS_JOURNAL": str(project / ".adws" / "runs.db")}
    runner = start_adws(project, "run", "secretive", "-i", "issue=x", "--no-transcripts", env=env)
    _, live = runner.communicate(timeout=60)
    assert runner.returncode == 1
    assert f"      stdout:\n        {STDOUT}\n      stderr:\n        {STDERR}\n" in live
    retry = (project / "prompts.log").read_text().split("--- attempt 2\n")[1]
    assert "- attempt 1/3 failed: ContractViolation: STATUS missing\n" in retry
    kept = journal_bytes(project / ".adws")
    for secret in ("REJECTED-7f3a", STDOUT, STDERR):
        assert secret.encode() not in kept
    db = sqlite3.connect(project / ".adws" / "runs.db")
    [(rejected,)] = db.execute("SELECT error FROM attempts WHERE status = 'retried'").fetchall()
    [(failed,), (run_error,)] = db.execute(
        "SELECT error FROM attempts WHERE step = 'label' UNION ALL SELECT error FROM runs"
    ).fetchall()
    db.close()
    assert decode_error(rejected).context["raw_output"] == withheld(REJECTED)
    stdout, stderr, quoted = (withheld(text) for text in PRINTED)
    for text in (failed, run_error):
        error = decode_error(text)
        assert error.message.endswith(f"` exited with 3:\n{quoted}")
        assert (error.context["stdout_tail"], error.context["stderr_tail"]) == (stdout, stderr)


def test_status_shows_what_was_not_kept_by_size_and_hash(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from adws.cli import main  # noqa: PLC0415 - the CLI, in this process

    assert main(["run", "secretive", "-i", "issue=x", "--no-transcripts", "--json", "-q"]) == 1
    run_id = json.loads(capsys.readouterr().out)["run_id"]
    assert main(["status", run_id]) == 0
    out = capsys.readouterr().out
    stdout, stderr, _ = (withheld(text) for text in PRINTED)
    assert f"  stdout:\n    {stdout}\n  stderr:\n    {stderr}" in out
    digest = hashlib.sha256(PRINTED[0].encode()).hexdigest()[:32]
    assert stdout == f"<not kept (--no-transcripts): 12 bytes, sha256 {digest}…>"


def test_the_retry_uses_the_whole_answer_in_memory_and_the_journal_keeps_its_hash(
    tmp_path: Path, journal_at: str, events: Events
) -> None:
    agent = ScriptedAgent([REJECTED, "STATUS: done\nLABEL: bug\n"])
    step = agent_step(
        "classify", prompt="Classify.", agent=agent, contract=OutputContract(("LABEL",))
    )
    journal = Journal(journal_at)
    run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(),
        observers=[JournalObserver(journal, "f", transcripts=False), events],
        run_id="r",
        sleep=lambda _s: None,
    )
    [failed] = [event for event in events.events if isinstance(event, AttemptFailed)]
    assert failed.error.context["raw_output"] == REJECTED
    assert "attempt 1/3 failed: ContractViolation: STATUS missing" in agent.requests[1].prompt
    [first, _] = journal.attempts("r")
    assert first.error is not None
    assert first.error.context["raw_output"] == withheld(REJECTED)
    assert b"REJECTED-7f3a" not in journal_bytes(tmp_path)


def test_every_produced_text_in_an_error_is_withheld_at_any_depth() -> None:
    shell = PipelineError(
        "test",
        "ShellFailed",
        "`make` exited with 2:\nboom",
        {"stdout_tail": "boom", "stderr_tail": "", "returncode": 2, "command": "make"},
    )
    branch = PipelineError("check[0]", "ContractViolation", "STATUS missing", {"raw_output": "no"})
    error = PipelineError(
        "check",
        "ContractViolation",
        "1 of 1 branches failed",
        {
            "errors": [branch],
            "branches": {"0": {"raw_output": "no", "attempts": 2}},
            "feedback": ["attempt 1/2 failed: ShellFailed: `make` exited with 2:\nboom"],
            "late": (shell,),
            "seconds": 1.5,
        },
    )
    assert json.loads(str(encode_error(error, transcripts=False))) == {
        "step_name": "check",
        "error_type": "ContractViolation",
        "message": "1 of 1 branches failed",
        "context": {
            "errors": [
                {
                    "__adws_error__": {
                        "step_name": "check[0]",
                        "error_type": "ContractViolation",
                        "message": "STATUS missing",
                        "context": {"raw_output": withheld("no")},
                    }
                }
            ],
            "branches": {"0": {"raw_output": withheld("no"), "attempts": 2}},
            "feedback": [
                f"attempt 1/2 failed: ShellFailed: `make` exited with 2:\n{withheld('boom')}"
            ],
            "late": [
                {
                    "__adws_error__": {
                        "step_name": "test",
                        "error_type": "ShellFailed",
                        "message": f"`make` exited with 2:\n{withheld('boom')}",
                        "context": {
                            "stdout_tail": withheld("boom"),
                            "stderr_tail": withheld(""),
                            "returncode": 2,
                            "command": "make",
                        },
                    }
                }
            ],
            "seconds": 1.5,
        },
    }
    assert encode_error(error) == encode_error(error, transcripts=True)
    assert "boom" in str(encode_error(error))


def test_an_agent_calls_error_quoting_its_output_is_cut_in_the_exchange(
    tmp_path: Path, journal_at: str
) -> None:
    def failing(request: AgentRequest) -> IOResult[AgentResponse, PipelineError]:
        message = "agent command `claude` exited with 1: SECRET-ab12 token expired"
        return IOFailure(PipelineError(request.step_name, "AgentFailed", message))

    step = agent_step("ask", prompt="Ask.", agent=failing, contract=OutputContract(("LABEL",)))
    journal = Journal(journal_at)
    run_workflow(
        Workflow("w", (step,)),
        WorkflowContext(),
        observers=[JournalObserver(journal, "f", transcripts=False)],
        run_id="r",
        sleep=lambda _s: None,
    )
    said = {row[0] for row in journal.query("SELECT error FROM exchanges")}
    assert said == {
        f"agent command `claude` exited with 1: {withheld('SECRET-ab12 token expired')}"
    }
    assert b"SECRET-ab12" not in journal_bytes(tmp_path)
