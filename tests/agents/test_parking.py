"""A usage limit parks the run, through the real claude and codex CLIs and real adws processes.

The fake model API answers as a subscription's limit does (`Reply.usage_limit`:
Anthropic's `anthropic-ratelimit-unified-*` headers, which claude reads when
signed in with an OAuth token, and OpenAI's `usage_limit_reached` body, which
codex reads). Each `adws` command is a process of its own, with its own
`PYTHONHASHSEED`; the clock is the real one, and resets are seconds away.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Final

import pytest

from adws.testing import FakeModelAPI, Reply
from adws.testing._wire import prompt_of
from tests.agents.clis import git_repo, needs, on_path
from tests.conftest import REPO, start_adws

pytestmark = [pytest.mark.agent_process, pytest.mark.agent_cli, pytest.mark.slow]

ASK: Final = """
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

FAN: Final = """
from adws import OutputContract, Workflow, agent_step, fan_out
from adws.agents import CommandAgent

workflow = Workflow(
    "fan",
    (
        fan_out(
            "each",
            agent_step(
                "ask",
                prompt="Sum up {item}.",
                agent=CommandAgent("never-run", timeout=300),
                contract=OutputContract(("SUMMARY",)),
                cwd="{folder}",
            ),
            over="items",
        ),
    ),
    inputs=("folder", "items"),
)
"""

DONE: Final = "STATUS: done\nSUMMARY: all good"
_SEEDS: Final = iter(range(1, 1000))


@pytest.fixture
def project(in_tmp: Path) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "ask.py").write_text(ASK)
    (in_tmp / "workflows" / "fan.py").write_text(FAN)
    git_repo(in_tmp / "repo")
    return in_tmp


def environment(kind: str, api: FakeModelAPI, home: Path) -> dict[str, str]:
    """Point the CLI at the fake API, claude signed in as a subscription (an OAuth token)."""
    env = api.codex_env(home) if kind == "codex" else api.claude_env(home, oauth=True)
    return {**env, "PATH": on_path()}


def adws(project: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m adws ARGV` to its end, each in a process with another hash seed."""
    seeded = {**env, "PYTHONHASHSEED": str(next(_SEEDS))}
    process = start_adws(project, *argv, env=seeded)
    try:
        stdout, stderr = process.communicate(timeout=240)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def status(project: Path, env: dict[str, str], run_id: str) -> dict[str, object]:
    done = adws(project, env, "status", run_id, "--json")
    assert done.returncode == 0, done.stderr
    loaded: dict[str, object] = json.loads(done.stdout)
    return loaded


def clock(moment: float) -> str:
    """Show a moment as `adws status` does: local time, to the minute (today's)."""
    return time.strftime("%H:%M", time.localtime(moment))


def wait_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.time()) + 0.2)


@pytest.mark.parametrize(
    "kind",
    [pytest.param("claude", marks=needs("claude")), pytest.param("codex", marks=needs("codex"))],
)
def test_a_usage_limit_parks_the_run_with_no_further_request_and_exit_75(
    kind: str, project: Path, fake_model_api: FakeModelAPI
) -> None:
    env = environment(kind, fake_model_api, project / "home")
    limit = Reply.usage_limit(3 * 3600, time.time())
    resets_at = float(limit.body["resets_at"])
    fake_model_api.script(limit)
    ran = adws(project, env, "run", "ask", "-i", f"folder={project / 'repo'}", "--agent", kind)
    assert ran.returncode == 75, ran.stderr
    assert len(fake_model_api.requests) == 1  # no retry: neither the CLI's nor the step's
    # claude names the reset to the second; codex a local time of day, its seconds cut off.
    wake_at = resets_at if kind == "claude" else (resets_at // 60) * 60 + 60
    until = f"parked until {clock(wake_at)}: {kind} usage limit"
    assert until in ran.stderr
    run_id = ran.stderr.split("(run ")[-1].split(")")[0]

    seen = status(project, env, run_id)
    assert (seen["status"], seen["wake_at"], seen["parked_reason"]) == (
        "parked",
        wake_at,
        f"{kind} usage limit",
    )
    shown = adws(project, env, "status", run_id)
    assert f"\n{until}\n" in shown.stdout
    listed = adws(project, env, "runs", "--status", "parked")
    assert run_id in listed.stdout
    assert f"parked until {clock(wake_at)}" in listed.stdout

    early = adws(project, env, "resume", run_id)
    assert early.returncode == 75
    assert f"run {run_id} is {until}; adws resume {run_id} --now goes on before" in early.stderr
    assert len(fake_model_api.requests) == 1

    fake_model_api.script(Reply.text(DONE))
    now = adws(project, env, "resume", run_id, "--now", "--json")
    assert now.returncode == 0, now.stderr
    assert json.loads(now.stdout)["status"] == "succeeded"
    assert len(fake_model_api.requests) == 2
    assert status(project, env, run_id)["wake_at"] is None


@needs("claude")
def test_resume_due_in_another_process_finishes_the_run_with_the_failed_call_charged_once(
    project: Path, fake_model_api: FakeModelAPI
) -> None:
    env = environment("claude", fake_model_api, project / "home")
    notes = project / "repo" / "notes.txt"
    notes.write_text("one\n")
    # The limit comes mid-call, after a tool call that cost 1000 input tokens.
    read = Reply.tool("Read", {"file_path": str(notes)}, input_tokens=1000)
    limit = Reply.usage_limit(30, time.time())  # room for a loaded machine before the park
    fake_model_api.script(read, limit)
    folder = f"folder={project / 'repo'}"
    # A reset 30s away would be waited for in the process: --max-wait 1 makes it park.
    ran = adws(project, env, "run", "ask", "-i", folder, "--agent", "claude", "--max-wait", "1")
    assert ran.returncode == 75, ran.stderr
    assert len(fake_model_api.requests) == 2
    run_id = ran.stderr.split("(run ")[-1].split(")")[0]
    parked = status(project, env, run_id)
    parked_usage = parked["usage"]
    assert isinstance(parked_usage, dict)
    assert parked_usage["input_tokens"] == 1000
    assert parked_usage["cost_usd"] > 0

    nothing = adws(project, env, "resume", "--due")
    assert (nothing.returncode, len(fake_model_api.requests)) == (0, 2)
    assert nothing.stdout.startswith("no run of this host is due in ")

    wait_until(float(limit.body["resets_at"]))
    fake_model_api.script(Reply.text(DONE, input_tokens=10))
    due = adws(project, env, "resume", "--due")
    assert due.returncode == 0, due.stderr
    assert due.stdout == f"{run_id} ask: succeeded (exit 0)\n"
    assert len(fake_model_api.requests) == 3
    assert fake_model_api.unanswered == []

    finished = status(project, env, run_id)
    usage = finished["usage"]
    assert isinstance(usage, dict)
    assert finished["status"] == "succeeded"
    assert usage["input_tokens"] == 1000 + 10  # the parked call once, and the one after it
    attempts = finished["attempts"]
    assert isinstance(attempts, list)
    assert [(row["status"], row["usage"]["input_tokens"]) for row in attempts] == [
        ("failed", 1000),
        ("succeeded", 10),
    ]
    assert attempts[0]["error"]["error_type"] == "Parked"


@needs("claude")
def test_a_fan_out_parks_only_the_branch_and_a_resume_keeps_its_siblings(
    project: Path, fake_model_api: FakeModelAPI
) -> None:
    env = environment("claude", fake_model_api, project / "home")
    items = ["ITEM-0", "ITEM-1", "ITEM-2"]
    inputs = project / "inputs.json"
    inputs.write_text(json.dumps({"folder": str(project / "repo"), "items": items}))
    limit = Reply.usage_limit(30, time.time())  # room for a loaded machine before the park
    fake_model_api.script(Reply.text("STATUS: done\nSUMMARY: zero"), marker="ITEM-0")
    fake_model_api.script(limit, marker="ITEM-1")
    fake_model_api.script(Reply.text("STATUS: done\nSUMMARY: two", delay=2), marker="ITEM-2")
    waits = {**env, "ADWS_MAX_WAIT": "1"}  # the reset, 30s away, is past it: the branch parks
    ran = adws(project, waits, "run", "fan", "--inputs", str(inputs), "--agent", "claude")
    assert ran.returncode == 75, ran.stderr
    assert re.search(r"each\[1\] … parked for \d+ s, until \d\d:\d\d:\d\d: ", ran.stderr)
    assert "each[2] … ok in" in ran.stderr  # the sibling ran to its end after the park
    run_id = ran.stderr.split("(run ")[-1].split(")")[0]
    shown = adws(project, env, "status", run_id).stdout
    assert "each[1]: parked (1 attempt" in shown
    assert "each[2]: succeeded (1 attempt" in shown
    assert sorted(request["marker"] for request in fake_model_api.requests) == items

    wait_until(float(limit.body["resets_at"]))
    fake_model_api.script(Reply.text("STATUS: done\nSUMMARY: one"), marker="ITEM-1")
    due = adws(project, env, "resume", "--due", "--json")
    assert due.returncode == 0, due.stderr
    # one more request, for the parked branch only: its siblings' answers were kept
    assert [prompt_of(r["body"]).count("ITEM-1") > 0 for r in fake_model_api.requests[3:]] == [True]
    assert fake_model_api.unanswered == []
    summary, end = json.JSONDecoder().raw_decode(due.stdout)
    assert due.stdout[end:] == f"\n{run_id} fan: succeeded (exit 0)\n"
    assert [branch["summary"] for branch in summary["inputs"]["each"]] == ["zero", "one", "two"]


@needs("claude")
def test_make_demo_parked_parks_a_run_and_resume_due_finishes_it(tmp_path: Path) -> None:
    """`make demo-parked` runs demo/parked.sh: the transcript in docs/guides/cost.md, offline."""
    done = subprocess.run(
        ["sh", "demo/parked.sh"],
        cwd=REPO,
        env={
            **os.environ,
            "ADWS": f"{sys.executable} -m adws",
            "PYTHON": sys.executable,
            "PYTHONPATH": str(REPO),
            "TMPDIR": str(tmp_path),
            "RESET": "40",  # room for a loaded machine: the first resume must come before it
            "PATH": on_path(),
        },
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("(exit 75)") == 2  # the run parked; a resume before the time
    (run_id,) = re.findall(r"^\$ adws resume (\w+)$", done.stdout, re.MULTILINE)
    assert f"\n$ adws resume --due\n{run_id} ask: succeeded (exit 0)\n" in done.stdout
    assert f"run {run_id} · ask · succeeded" in done.stdout
    assert re.search(r"ask … parked for \d+ s, until \d\d:\d\d:\d\d: claude usage", done.stderr)
