"""`adws run --agent claude|codex|claude-sdk` as a user runs it: the real CLIs, the fake model API."""

from __future__ import annotations

import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from adws.cli import main
from adws.testing import FakeModelAPI, Reply
from tests.agents.clis import environment, git_repo, kinds, needs, on_path
from tests.conftest import REPO, start_adws, wait_for
from tests.workspaces.conftest import git, make_repo

pytestmark = [pytest.mark.agent_process, pytest.mark.agent_cli]

FLOW = """
from adws import OutputContract, Workflow, agent_step
from adws.agents import CommandAgent

workflow = Workflow(
    "ask",
    (
        agent_step(
            "ask",
            prompt="Read the notes and sum them up.",
            agent=CommandAgent("never-run", timeout=3),
            contract=OutputContract(("SUMMARY",)),
            cwd="{folder}",
        ),
    ),
    inputs=("folder",),
)
"""

DONE = "STATUS: done\nSUMMARY: all good"


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "ask.py").write_text(FLOW)
    git_repo(in_tmp / "repo")
    monkeypatch.setenv("PATH", on_path())
    return in_tmp


def point_at(api: FakeModelAPI, kind: str, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in environment(kind, api, home).items():
        monkeypatch.setenv(name, value)


def alive_with(url: str) -> list[int]:
    """Find processes whose environment points at this fake API (a CLI left running)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if url.encode() in environ:
            found.append(int(entry.name))
    return found


@needs("claude")
def test_implement_verify_through_claude_edits_files_in_its_worktree_and_passes_its_checks(
    project: Path, fake_model_api: FakeModelAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(project / "target")
    point_at(fake_model_api, "claude", project / "home", monkeypatch)

    def in_the_worktree(prompt: str) -> dict[str, str]:
        found = re.search(r"\n(/\S+), your current directory", prompt)
        assert found is not None, prompt
        return {"file_path": f"{found.group(1)}/hello.txt", "content": "hi\n"}

    write = Reply.tool("Write", in_the_worktree)
    fake_model_api.script(write, Reply.text("STATUS: done\nSUMMARY: wrote hello.txt"))
    argv = ["run", "implement_verify", "--workflows", str(REPO / "workflows"), "--agent", "claude"]
    inputs = [
        "-i",
        "task=write hello",
        "-i",
        f"target_dir={repo}",
        "-i",
        "check_command=test -f hello.txt",
    ]
    assert main([*argv, *inputs, "-q", "--json"]) == 0
    assert not (repo / "hello.txt").exists()
    branch = git(repo, "branch", "--list", "adws/*", "--format=%(refname:short)")
    assert git(repo, "show", f"{branch}:hello.txt") == "hi"


@needs("claude")
def test_the_progress_line_shows_the_agents_latest_tool_call_and_status_its_session(
    project: Path,
    fake_model_api: FakeModelAPI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    notes = project / "repo" / "notes.txt"
    notes.write_text("one\n")
    point_at(fake_model_api, "claude", project / "home", monkeypatch)
    fake_model_api.script(Reply.tool("Read", {"file_path": str(notes)}), Reply.text(DONE))
    argv = ["run", "ask", "-i", f"folder={project / 'repo'}", "--agent", "claude", "--json"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"      ask … Read {notes}\n" in captured.err
    summary = json.loads(captured.out)
    session = summary["inputs"]["ask_agent"]["session_id"]
    assert main(["status", summary["run_id"]]) == 0
    assert f"attempt 1: succeeded · session {session}" in capsys.readouterr().out


@needs("claude")
def test_agent_keeps_the_workflow_agents_own_timeout(
    project: Path,
    fake_model_api: FakeModelAPI,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    point_at(fake_model_api, "claude", project / "home", monkeypatch)
    fake_model_api.script(*[Reply.text(DONE, delay=30)] * 3)
    started = time.monotonic()
    argv = ["run", "ask", "-i", f"folder={project / 'repo'}", "--agent", "claude", "--json", "-q"]
    assert main([*argv, "--no-journal"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["error_type"] == "Timeout"
    assert error["message"].endswith("ran past its 3s timeout and was killed")
    assert time.monotonic() - started < 3 * (3 + 1) + 3  # three attempts of 3s each, not 30s


def test_agent_on_a_workflow_without_an_agent_step_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["run", "hello", "--workflows", str(REPO / "workflows"), "-i", "name=Ada"]
    assert main([*argv, "--agent", "claude", "--no-journal"]) == 2
    assert "workflow 'hello' has no agent step to run it" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.parametrize("kind", kinds())
def test_ctrl_c_through_the_adws_cli_stops_the_agent_and_exits_130(
    kind: str, project: Path, fake_model_api: FakeModelAPI
) -> None:
    fake_model_api.script(Reply.text(DONE, delay=60))
    # A busy machine may take more than 3s to start the SDK: the agent may not time out first.
    flow = project / "workflows" / "ask.py"
    flow.write_text(FLOW.replace("timeout=3", "timeout=300"))
    env = {**environment(kind, fake_model_api, project / "home"), "PATH": on_path()}
    process = start_adws(
        project, "run", "ask", "-i", f"folder={project / 'repo'}", "--agent", kind, env=env
    )
    try:
        # A machine busy with other suites may take a while to start the agent; a run that
        # ended without asking fails here with what it printed.
        wait_for(lambda: fake_model_api.requests or process.poll() is not None, 120)
        assert fake_model_api.requests, process.communicate(timeout=30)
        asked = time.monotonic()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
        stopped = time.monotonic() - asked
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()  # reaps it and closes its pipes, on every path
    assert process.returncode == 130, stderr
    assert stopped < 5  # within a second or two of the Ctrl-C, not the SDK's own close
    assert alive_with(fake_model_api.url) == []
