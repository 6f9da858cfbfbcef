"""A recording keeps what each call changed in its worktree, and a replay puts it back."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from returns.io import IOFailure, IOSuccess
from returns.unsafe import unsafe_perform_io

from adws import (
    OutputContract,
    PipelineError,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    worktree,
)
from adws.agents import AgentRequest, AgentResponse, ScriptedAgent
from adws.runs.recording import Recording
from adws.testing import RecordingAgent
from tests.workspaces.conftest import git, make_repo

ANSWER = "STATUS: done\nNOTE: wrote it\n"


def edit(request: AgentRequest) -> str:
    assert request.cwd is not None
    (Path(request.cwd) / "NOTES").write_text("written by the agent\n")
    return ANSWER


def in_worktree(agent: RecordingAgent, *, wrapped: bool = True) -> Workflow:
    step = agent_step(
        "edit", prompt="Edit the project.", agent=agent, contract=OutputContract(("NOTE",))
    )
    return Workflow("w", (worktree(step, name="fix") if wrapped else step,), inputs=("target_dir",))


def execute(workflow: Workflow, repo: Path, run_id: str) -> WorkflowContext | PipelineError:
    result = run_workflow(
        workflow,
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id=run_id,
        worktrees=str(repo.parent / "wt"),
    )
    if isinstance(result, IOSuccess):
        done: WorkflowContext = unsafe_perform_io(result.unwrap())
        return done
    assert isinstance(result, IOFailure)
    failed: PipelineError = unsafe_perform_io(result.failure())
    return failed


def test_a_recording_keeps_each_calls_change_and_a_replay_puts_it_back(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    path = tmp_path / "answers.json"
    recorded = execute(
        in_worktree(RecordingAgent(ScriptedAgent([edit]), path, "record")), repo, "r1"
    )
    assert isinstance(recorded, WorkflowContext)
    [entry] = json.loads(path.read_text())["answers"]
    assert entry["patch"].endswith("+++ b/NOTES\n@@ -0,0 +1 @@\n+written by the agent\n")
    replayed = execute(in_worktree(RecordingAgent(None, path)), repo, "r2")
    assert isinstance(replayed, WorkflowContext)
    assert git(repo, "show", f"{replayed.inputs['fix_commit']}:NOTES") == "written by the agent"
    assert git(repo, "rev-parse", f"{replayed.inputs['fix_commit']}^{{tree}}") == git(
        repo, "rev-parse", f"{recorded.inputs['fix_commit']}^{{tree}}"
    )


def test_an_answer_that_changed_nothing_records_an_empty_patch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    path = tmp_path / "answers.json"
    execute(in_worktree(RecordingAgent(ScriptedAgent([ANSWER]), path, "record")), repo, "r1")
    [entry] = json.loads(path.read_text())["answers"]
    assert (entry["patch"], entry["path"]) == ("", "fix")


def test_an_answer_that_changed_a_worktree_is_refused_outside_one(tmp_path: Path) -> None:
    path = tmp_path / "answers.json"
    repo = make_repo(tmp_path / "repo")
    execute(in_worktree(RecordingAgent(ScriptedAgent([edit]), path, "record")), repo, "r1")
    failed = execute(in_worktree(RecordingAgent(None, path), wrapped=False), repo, "r2")
    assert isinstance(failed, PipelineError)
    assert (failed.error_type, failed.message) == (
        "AgentFailed",
        (
            f"the answer RecordingAgent({str(path)!r}, mode='replay') holds for step 'edit'"
            " changed files in a worktree, but this call runs in none"
        ),
    )
    assert not (repo / "NOTES").exists()
    assert failed.context["permanent"] is True


class Unreplayable:
    """A cassette whose one answer's change to the worktree was not kept."""

    source = "a cut journal"

    def find(self, _step: str, _prompt: str, _path: str = "") -> dict[str, object]:
        return {"text": ANSWER, "unreplayable": "it was kept only in part"}

    def prompts(self, _step: str) -> list[str]:
        return []

    def keep(
        self,
        _step: str,
        _prompt: str,
        _response: AgentResponse,
        _patch: str | None = None,
        _path: str = "",
    ) -> None:
        raise AssertionError


def test_an_answer_whose_change_was_not_kept_is_refused_with_the_reason(tmp_path: Path) -> None:
    failed = execute(
        in_worktree(RecordingAgent(None, Unreplayable())), make_repo(tmp_path / "repo"), "r"
    )
    assert isinstance(failed, PipelineError)
    assert failed.message == (
        "the answer RecordingAgent('a cut journal', mode='replay') holds for step 'edit'"
        " cannot be replayed: it was kept only in part"
    )


def latin1(request: AgentRequest) -> str:
    assert request.cwd is not None
    (Path(request.cwd) / "notes.txt").write_bytes(b"caf\xe9\n")
    return ANSWER


def test_a_recording_file_keeps_bytes_that_are_not_utf8_and_puts_them_back(
    tmp_path: Path,
) -> None:
    """The file stays UTF-8 JSON: a byte of a Latin-1 file is written as an escape."""
    repo = make_repo(tmp_path / "repo")
    path = tmp_path / "answers.json"
    execute(in_worktree(RecordingAgent(ScriptedAgent([latin1]), path, "record")), repo, "r1")
    saved = path.read_bytes()
    assert b"caf\\udce9" in saved
    saved.decode("utf-8")  # every byte of it is UTF-8
    replayed = execute(in_worktree(RecordingAgent(None, path)), repo, "r2")
    assert isinstance(replayed, WorkflowContext)
    commit = replayed.inputs["fix_commit"]
    shown = subprocess.run(
        ["git", "-C", str(repo), "show", f"{commit}:notes.txt"], capture_output=True, check=True
    )
    assert shown.stdout == b"caf\xe9\n"


def test_an_answer_recorded_with_no_patch_is_refused_in_a_worktree(tmp_path: Path) -> None:
    """An answer from before patches were kept cannot say what it changed: it is not guessed."""
    repo = make_repo(tmp_path / "repo")
    path = tmp_path / "answers.json"
    execute(in_worktree(RecordingAgent(ScriptedAgent([edit]), path, "record")), repo, "r1")
    kept = json.loads(path.read_text())
    del kept["answers"][0]["patch"]
    path.write_text(json.dumps(kept))
    failed = execute(in_worktree(RecordingAgent(None, path)), repo, "r2")
    assert isinstance(failed, PipelineError)
    assert failed.message == (
        f"the answer RecordingAgent({str(path)!r}, mode='replay') holds for step 'edit' comes"
        " with no record of what it changed in its worktree (it was recorded outside one,"
        " before adws kept patches, or git could not take it): record the run again"
    )


def test_a_recording_file_gives_each_branch_the_answer_it_recorded(tmp_path: Path) -> None:
    """One prompt asked by two branches: each path gets its own, an unknown path the first."""
    path = tmp_path / "answers.json"
    recording = Recording(path)
    for branch in ("best[0]", "best[1]"):
        recording.keep("impl", "same", AgentResponse(branch), f"+{branch}\n", branch)
    again = Recording(path)
    found = [again.find("impl", "same", p) for p in ("best[1]", "best[0]", "x")]
    assert [None if f is None else f["text"] for f in found] == ["best[1]", "best[0]", "best[0]"]
    assert again.prompts("impl") == ["same"]
    assert again.find("impl", "other", "best[0]") is None
