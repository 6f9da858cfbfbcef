"""Seeing a run from the command line: errors whole, one attempt whole, tracebacks, replays."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from adws.cli import main
from adws.journal import Journal
from tests.conftest import start_adws

SEEING = r"""
from returns.io import IOSuccess

from adws import OutputContract, RetryPolicy, Step, Workflow, agent_step, fan_out, shell_step
from adws.testing import FunctionAgent


def answer(request):
    if request.step_name == "classify":
        if request.attempt == 1:
            return "I am not sure.\x1b[31m red"
        return "It is a bug.\n\nSTATUS: done\nLABEL: needs triage\n"
    return f"STATUS: done\nNOTE: checked {request.prompt.splitlines()[0]}\n"


agent = FunctionAgent(answer)


def explode(ctx):
    raise RuntimeError("kaboom")


def items(ctx):
    return IOSuccess(ctx.merge_outputs({"claims": ["a", "b"]}))


LABEL = "printf 'labelling %s\\n' {issue_id}; echo 'error: could not reach the tracker' >&2; exit 4"

triage = Workflow(
    "triage",
    (
        agent_step(
            "classify",
            prompt="Classify issue {issue_id}.",
            agent=agent,
            contract=OutputContract(("LABEL",)),
        ),
        shell_step("label", LABEL + " # {label}"),
    ),
    inputs=("issue_id",),
)
crash = Workflow("crash", (Step("explode", explode),))
skips = Workflow("skips", (Step("never", items, when=lambda ctx: False),))
checks = Workflow(
    "checks",
    (
        Step("items", items),
        fan_out(
            "check",
            agent_step("check", prompt="Check {item}.", agent=agent, contract=OutputContract(("NOTE",))),
            over="claims",
        ),
    ),
)
"""


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "seeing.py").write_text(SEEING)
    monkeypatch.delenv("ADWS_TRANSCRIPTS", raising=False)
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    return in_tmp


def last_run(project: Path) -> str:
    journal = Journal(project / ".adws" / "runs.db", readonly=True)
    return journal.runs(limit=1)[0].run_id


def test_a_failed_command_is_printed_whole_with_its_values(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "triage", "-i", "issue_id=42"]) == 1
    err = capsys.readouterr().err
    assert (
        "[2/2] label … failed: ShellFailed: `printf 'labelling %s\\n' {issue_id}; echo 'error: "
        "could not reach the tracker' >&2; exit 4 # {label}` exited with 4\n"
        "      ran: printf 'labelling %s\\n' {issue_id}; echo 'error: could not reach the "
        "tracker' >&2; exit 4 # {label}\n"
        "        with issue_id=42 label='needs triage'\n"
        "      stdout:\n"
        "        labelling 42\n"
        "      stderr:\n"
        "        error: could not reach the tracker\n"
    ) in err
    assert "[1/2] classify … attempt 1/3 failed: ContractViolation: STATUS missing;" in err


def test_quiet_still_prints_why_a_run_failed_whole(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "triage", "-i", "issue_id=42", "-q"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("triage failed in ")
    assert err[1:] == [
        (
            "  ran: printf 'labelling %s\\n' {issue_id}; echo 'error: could not reach the tracker'"
            " >&2; exit 4 # {label}"
        ),
        "    with issue_id=42 label='needs triage'",
        "  stdout:",
        "    labelling 42",
        "  stderr:",
        "    error: could not reach the tracker",
    ]


def test_verbose_adds_the_traceback_on_run_and_status(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "crash"]) == 1
    assert "traceback" not in capsys.readouterr().err
    assert main(["run", "crash", "-v"]) == 1
    err = capsys.readouterr().err
    assert "      traceback:\n        Traceback (most recent call last):\n" in err
    assert '    raise RuntimeError("kaboom")\n' in err
    run_id = last_run(project)
    assert main(["status", run_id]) == 0
    assert "traceback" not in capsys.readouterr().out
    assert main(["status", run_id, "-v"]) == 0
    assert "  traceback:\n    Traceback (most recent call last):\n" in capsys.readouterr().out


def test_status_step_prints_an_attempt_whole_escaped_for_the_terminal(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "triage", "-i", "issue_id=42"])
    run_id = last_run(project)
    capsys.readouterr()
    assert main(["status", run_id, "--step", "classify", "--attempt", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"run {run_id} · triage · failed\nstep classify, attempt 1: retried in ")
    assert "agent call 1 of 1: asked by classify · " in out
    assert "\nprompt (" in out
    assert "  Classify issue 42.\n" in out
    assert "answer (23 bytes):\n  I am not sure.\\x1b[31m red\n" in out
    assert "this call ended: ContractViolation: STATUS missing" in out
    assert "\nerror: ContractViolation: STATUS missing\n  the answer:\n" in out
    assert main(["status", run_id, "--step", "classify"]) == 0
    last = capsys.readouterr().out
    assert "step classify, attempt 2: succeeded in " in last
    assert "## Feedback from earlier attempts" in last
    assert 'outputs added:\n  {\n    "label": "needs triage"\n  }' in last
    assert main(["status", run_id, "--step", "label"]) == 0
    shell = capsys.readouterr().out
    assert "no agent call recorded for this attempt" in shell
    assert "  with issue_id=42 label='needs triage'" in shell


def test_status_step_json_holds_the_exchanges(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "checks"])
    run_id = last_run(project)
    capsys.readouterr()
    assert main(["status", run_id, "--step", "check"]) == 0
    assert capsys.readouterr().out.endswith(
        "no agent call recorded for this attempt\n\noutputs added:\n"
        '  {\n    "check": [\n      {\n        "note": "checked Check a."\n      },\n'
        '      {\n        "note": "checked Check b."\n      }\n    ],\n'
        '    "check_failures": []\n  }\n\n'
        "branches (see --step 'PATH'): check[0], check[1]\n"
    )
    assert main(["status", run_id, "--step", "check[1]", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["step"], shown["attempt"], shown["branches"]) == ("check[1]", 1, [])
    [call] = shown["exchanges"]
    assert call["asked_by"] == "check"
    assert call["prompt"]["text"].startswith("Check b.")
    assert call["answer"] == {
        "sha256": call["answer"]["sha256"],
        "size": 36,
        "text": "STATUS: done\nNOTE: checked Check b.\n",
        "cut": False,
    }
    assert [row["status"] for row in shown["rows"]] == ["succeeded"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--step", "nope"], "has no step or branch 'nope' that ran; its steps: items, check"),
        (["--step", "check", "--attempt", "3"], "step 'check' of run {run} has no attempt 3;"),
        (["--attempt", "1"], "--attempt needs --step STEP"),
    ],
)
def test_status_step_names_what_it_cannot_find(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    main(["run", "checks"])
    run_id = last_run(project)
    capsys.readouterr()
    assert main(["status", run_id, *argv]) == 2
    assert message.format(run=run_id) in capsys.readouterr().err


def test_status_step_of_a_skipped_step_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "skips"])
    capsys.readouterr()
    assert main(["status", last_run(project), "--step", "never"]) == 2
    assert "step 'never' of run " in capsys.readouterr().err


def test_no_transcripts_keeps_hashes_and_resumes_keep_none(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "triage", "-i", "issue_id=42", "--no-transcripts"]) == 1
    run_id = last_run(project)
    capsys.readouterr()
    assert main(["status", run_id, "--step", "classify"]) == 0
    assert "prompt: not kept (" in capsys.readouterr().out
    (project / "workflows" / "seeing.py").write_text(SEEING.replace("exit 4", "exit 0"))
    assert main(["resume", run_id]) == 0
    assert "no_transcripts: True" in capsys.readouterr().err
    journal = Journal(project / ".adws" / "runs.db", readonly=True)
    assert journal.query("SELECT COUNT(*) FROM texts") == [(0,)]


def test_the_environment_switches_transcripts_off(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADWS_TRANSCRIPTS", "0")
    main(["run", "checks"])
    journal = Journal(project / ".adws" / "runs.db", readonly=True)
    assert journal.query("SELECT COUNT(*) FROM texts") == [(0,)]
    assert journal.query("SELECT COUNT(*) FROM exchanges") == [(2,)]
    capsys.readouterr()


def test_a_recorded_run_replays_offline_and_a_miss_shows_the_diff(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["run", "checks"])
    recorded = last_run(project)
    module = project / "workflows" / "seeing.py"
    module.write_text(SEEING.replace('return f"STATUS', "return 'STATUS: blocked\\nREASON: live'#"))
    assert main(["run", "checks", "--replay", recorded[:6], "--json", "-q"]) == 0
    replayed = json.loads(capsys.readouterr().out)
    assert replayed["options"]["replay"] == recorded
    assert replayed["usage"] is None
    module.write_text(SEEING.replace('"Check {item}."', '"Check {item} twice."'))
    assert main(["run", "checks", "--replay", recorded]) == 1
    err = capsys.readouterr().err
    assert (
        f"AgentFailed: RecordingAgent('run {recorded}', mode='replay') has no answer for this"
        " prompt of step 'check'; the closest recorded prompt differs"
    ) in err
    # The branches run side by side: whichever misses first fails the step (and cancels the other).
    assert re.search(r"      -Check (a|b)\.\n      \+Check \1 twice\.\n", err), err
    assert re.search(r"      check\[[01]\]: failed: AgentFailed: RecordingAgent\(", err), err


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("none", "--replay nope: no such folder, and no run journal at .adws/runs.db to look in"),
        ("journal", "--replay nope: no such folder of recordings, and no run 'nope' in"),
        ("empty", "kept no agent answers to replay"),
    ],
)
def test_replay_names_a_run_it_cannot_use(
    project: Path, capsys: pytest.CaptureFixture[str], setup: str, message: str
) -> None:
    replay = "nope"
    if setup != "none":
        main(["run", "checks", "--no-transcripts"])
        replay = last_run(project) if setup == "empty" else replay
    capsys.readouterr()
    assert main(["run", "checks", "--replay", replay]) == 2
    assert message in capsys.readouterr().err


def test_status_step_from_another_process_shows_the_same_attempt(project: Path) -> None:
    env = {"PYTHONHASHSEED": "1", "ADWS_JOURNAL": str(project / ".adws" / "runs.db")}
    runner = start_adws(project, "run", "triage", "-i", "issue_id=7", env=env)
    runner.communicate(timeout=60)
    assert runner.returncode == 1
    journal = Journal(project / ".adws" / "runs.db", readonly=True)
    run_id = journal.runs(limit=1)[0].run_id
    reader = start_adws(
        project, "status", run_id, "--step", "classify", env={**env, "PYTHONHASHSEED": "2"}
    )
    out, _ = reader.communicate(timeout=60)
    assert reader.returncode == 0
    assert "  Classify issue 7.\n" in out
    assert "answer (47 bytes):\n  It is a bug.\n" in out
