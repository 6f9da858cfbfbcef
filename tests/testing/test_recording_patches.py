"""A recording keeps what each call changed in its worktree, and a replay puts it back."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import zlib
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
from tests.conftest import REPO, shared_worktree
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


GIB = 1 << 30
BOMB_FLOW = """
from adws import OutputContract, Workflow, agent_step, worktree
from adws.agents import CommandAgent

edit = agent_step(
    "edit",
    prompt="Edit the project.",
    agent=CommandAgent("never-run"),
    contract=OutputContract(("NOTE",)),
)
workflow = Workflow("w", (worktree(edit, name="fix"),), inputs=("target_dir",))
"""
PEAK = """
import resource, subprocess, sys

done = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=False)
sys.stderr.write(done.stderr)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""
"""Run a command; print its exit code and the peak memory (KiB) of it and its children."""


def zeros_deflated(size: int, block: int = 1 << 20) -> bytes:
    """Deflate `size` zero bytes in milliseconds: one flushed block, repeated, then its checksum."""
    squeeze = zlib.compressobj(9)
    first = squeeze.compress(bytes(block)) + squeeze.flush(zlib.Z_FULL_FLUSH)
    body = squeeze.compress(bytes(block)) + squeeze.flush(zlib.Z_FULL_FLUSH)
    assert first[2:] == body  # a full flush forgets what came before: every block is the same
    adler = ((size % 65521) << 16) | 1  # Adler-32 of zeros: a stays 1, b grows by 1 a byte
    return first[:2] + body * (size // block) + b"\x03\x00" + adler.to_bytes(4, "big")


def literal_hunk(size: int, deflated: bytes) -> str:
    """Write a binary hunk as git does: `literal SIZE`, then base85 lines of 52 bytes at most."""
    lengths = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    lines = [
        lengths[len(part) - 1] + base64.b85encode(part, pad=True).decode()
        for part in (deflated[at : at + 52] for at in range(0, len(deflated), 52))
    ]
    return "\n".join([f"literal {size}", *lines]) + "\n"


def blob(request: AgentRequest) -> str:
    assert request.cwd is not None
    (Path(request.cwd) / "blob.bin").write_bytes(b"\x00\x01\x02 small\n")
    return ANSWER


def test_a_replayed_binary_hunk_declaring_a_gigabyte_is_refused_before_git_apply(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    recordings = tmp_path / "recordings"
    recordings.mkdir()
    path = recordings / "w.json"
    execute(in_worktree(RecordingAgent(ScriptedAgent([blob]), path, "record")), repo, "r1")
    kept = json.loads(path.read_text())
    patch = kept["answers"][0]["patch"]
    head, _, rest = patch.partition("GIT binary patch\n")
    reverse = rest[rest.index("\n\n") + 2 :]
    bomb = literal_hunk(GIB, zeros_deflated(GIB))
    kept["answers"][0]["patch"] = f"{head}GIT binary patch\n{bomb}\n{reverse}"
    path.write_text(json.dumps(kept))
    assert 1_300_000 < path.stat().st_size < 1_400_000  # a 1.34 MB recording
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "w.py").write_text(BOMB_FLOW)
    adws = [sys.executable, "-m", "adws", "run", "w", "-i", f"target_dir={repo}"]
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *adws, "--replay", str(recordings)],
        cwd=tmp_path,
        env={**os.environ, "ADWS_JOURNAL": str(tmp_path / "runs.db"), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    code, peak_kib = map(int, done.stdout.split())
    assert code == 1, done.stderr
    assert "'edit' made is refused: the patch" in done.stderr  # the line is cut to fit
    run_id = done.stderr.rsplit("(run ", 1)[1].split(")")[0]
    shown = subprocess.run(
        [sys.executable, "-m", "adws", "status", run_id, "--json"],
        cwd=tmp_path,
        env={**os.environ, "ADWS_JOURNAL": str(tmp_path / "runs.db"), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        check=False,
    )
    error = json.loads(shown.stdout)["error"]
    assert error["message"].endswith(
        "the change the recorded answer of step 'edit' made is refused: the patch's binary hunks"
        f" come to {GIB} bytes once inflated, past the step's output cap of 1048576 bytes"
        " (max_output_bytes): refused before git apply"
    )
    assert peak_kib < 400 << 10  # under 400 MiB: git never inflated it (2.1 GB before)
    kept_tree = shared_worktree(repo, run_id, "fix")
    assert sorted(p.name for p in kept_tree.iterdir()) == [".git", "README"]  # nothing written
    assert git(repo, "rev-parse", f"adws/{run_id}/fix") == git(repo, "rev-parse", "main")
