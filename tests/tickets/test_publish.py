"""`publish_pull_request`: real git pushing to a bare origin, the fake GitHub, limits fail closed."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from returns.io import IOSuccess

from adws import Step, Workflow, worktree
from adws.testing import run
from adws.testing.github_api import FAKE_TOKEN, FakeGitHub
from adws.tickets.publish import _ASKPASS, publish_pull_request

if TYPE_CHECKING:
    from collections.abc import Iterator

    from adws.engine.context import WorkflowContext

TICKET = {
    "ticket": "github:octo/app#1",
    "ticket_title": "Crash on empty input",
    "ticket_body": "It fails.",
    "ticket_url": "https://x/1",
    "ticket_author": "ana",
}


def sh(cwd: Path, *argv: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *argv], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def origin(tmp_path: Path) -> tuple[Path, Path]:
    bare, checkout = tmp_path / "origin.git", tmp_path / "checkout"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(bare)], check=True)
    subprocess.run(["git", "clone", "-q", str(bare), str(checkout)], check=True)
    sh(checkout, "config", "user.email", "t@example.com")
    sh(checkout, "config", "user.name", "t")
    (checkout / "app.py").write_text("print('hi')\n")
    (checkout / "tests").mkdir()
    (checkout / "tests" / "test_app.py").write_text("def test_app(): pass\n")
    sh(checkout, "add", "-A")
    sh(checkout, "commit", "-qm", "start")
    sh(checkout, "push", "-q", "origin", "main")
    return bare, checkout


@pytest.fixture
def github(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_repo("octo/app", permissions={"ana": "write"})
        fake.add_issue("octo/app", "Crash on empty input", "It fails.", author="ana")
        monkeypatch.setenv("ADWS_GITHUB_API_URL", fake.url)
        monkeypatch.setenv("GITHUB_TOKEN", fake.token)
        yield fake


def editing(files: dict[str, str]) -> Step:
    def edit(ctx: WorkflowContext) -> object:
        folder = Path(str(ctx.inputs["worktree"]))
        for name, text in files.items():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_text(text)
        return IOSuccess(ctx)

    return Step("fix", edit, reads=("worktree",), writes=())  # type: ignore[arg-type] # IOSuccess


def flow(files: dict[str, str], **publish: object) -> Workflow:
    return Workflow(
        "fixing",
        (
            worktree(editing(files), name="fix", base="main"),
            publish_pull_request("publish", worktree="fix", **publish),  # type: ignore[arg-type] # the keywords a test passes
        ),
        inputs=("target_dir", *TICKET),
    )


def test_the_commit_is_pushed_and_one_draft_pull_request_says_fixes(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    bare, checkout = origin
    report = run(
        flow({"app.py": "print('fixed')\n"}),
        {"target_dir": str(checkout), **TICKET},
        journal=tmp_path / "runs.db",
    )
    assert report.status == "succeeded", report.error
    branch = "adws/1-crash-on-empty-input"
    assert sh(bare, "show", f"{branch}:app.py") == "print('fixed')\n"
    pull = github.issue("octo/app", 2)
    assert (pull["head"]["ref"], pull["draft"], pull["base"]["ref"]) == (branch, True, "main")
    assert pull["body"].startswith("Fixes #1\n\nVerified: not beyond")
    assert report.inputs["pull_request_url"] == pull["html_url"]
    assert report.inputs["pull_request_number"] == 2
    assert FAKE_TOKEN.encode() not in (tmp_path / "runs.db").read_bytes()


def test_an_open_pull_request_for_the_branch_is_reused(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    _, checkout = origin
    github.open_issue("octo/app", "adws-bot", {"title": "x", "head": "adws/1-crash-on-empty-input"})
    report = run(flow({"app.py": "x = 1\n"}), {"target_dir": str(checkout), **TICKET})
    assert report.status == "succeeded", report.error
    assert report.inputs["pull_request_number"] == 2
    assert github.count("POST", "/repos/octo/app/pulls") == 0


def test_a_lost_answer_to_post_pulls_is_looked_up_by_head_before_a_retry(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    _, checkout = origin
    github.fail("POST", "/repos/octo/app/pulls", 502)
    report = run(flow({"app.py": "x = 1\n"}), {"target_dir": str(checkout), **TICKET})
    assert report.status == "succeeded", report.error
    assert github.count("GET", "/repos/octo/app/pulls") == 2
    assert github.count("POST", "/repos/octo/app/pulls") == 2
    assert [i["number"] for i in github.state["repos"]["octo/app"]["issues"]] == [1, 2]


def test_a_pull_request_made_before_its_answer_was_lost_is_found_not_made_again(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    _, checkout = origin
    github.fail("POST", "/repos/octo/app/pulls", 502, lost=True)
    report = run(flow({"app.py": "x = 1\n"}), {"target_dir": str(checkout), **TICKET})
    assert report.status == "succeeded", report.error
    assert github.count("POST", "/repos/octo/app/pulls") == 1
    assert report.inputs["pull_request_number"] == 2


def test_a_second_lost_answer_fails_the_step_and_an_odd_answer_is_named(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    _, checkout = origin
    github.fail("POST", "/repos/octo/app/pulls", 502, times=2)
    report = run(flow({"app.py": "x = 1\n"}), {"target_dir": str(checkout), **TICKET})
    assert report.error is not None
    assert (report.error.error_type, report.error.message) == (
        "PublishFailed",
        "GitHub answered POST /repos/octo/app/pulls with 502: injected",
    )
    github.fail("GET", "/repos/octo/app/pulls", 200, body={"not": "a list"})
    other = {**TICKET, "ticket_title": "Other"}
    report = run(flow({"app.py": "x = 2\n"}), {"target_dir": str(checkout), **other})
    assert report.error is not None
    assert report.error.message == "GitHub's answer to GET /repos/octo/app/pulls is not a list"


@pytest.mark.parametrize("status", [401, 403, 422])
def test_401_403_and_422_are_typed_failures_not_retried(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub, status: int
) -> None:
    _, checkout = origin
    github.fail("POST", "/repos/octo/app/pulls", status, body={"message": "no"})
    report = run(flow({"app.py": "x = 1\n"}), {"target_dir": str(checkout), **TICKET})
    assert report.status == "failed"
    assert report.error is not None
    assert (report.error.error_type, report.error.message) == (
        "PublishFailed",
        f"GitHub answered POST /repos/octo/app/pulls with {status}: no",
    )
    assert github.count("POST", "/repos/octo/app/pulls") == 1


@pytest.mark.parametrize(
    ("files", "publish", "said"),
    [
        (
            {"a.py": "1", "b.py": "2"},
            {"max_files": 1},
            "the change touches 2 files (at most 1)",
        ),
        (
            {"tests/test_app.py": "def test_app(): assert True\n"},
            {"protect": ("tests/**",)},
            "the change touches protected paths: tests/test_app.py",
        ),
        ({"app.py": "x" * 500}, {"max_bytes": 100}, "the change is "),
    ],
)
def test_a_change_past_the_limits_fails_closed_with_one_comment(  # noqa: PLR0913, PLR0917 - fixtures and cases
    tmp_path: Path,
    origin: tuple[Path, Path],
    github: FakeGitHub,
    files: dict[str, str],
    publish: dict[str, object],
    said: str,
) -> None:
    bare, checkout = origin
    report = run(flow(files, **publish), {"target_dir": str(checkout), **TICKET})
    assert report.status == "failed"
    assert report.error is not None
    assert report.error.message.startswith(said)
    (comment,) = github.comments("octo/app", 1)
    assert comment["body"].startswith(f"adws will not publish run {report.run_id}: {said}")
    assert sh(bare, "branch", "--list") == "* main\n"
    assert github.count("POST", "/repos/octo/app/pulls") == 0


def test_nothing_changed_or_a_ticket_not_githubs_publishes_nothing(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, checkout = origin
    report = run(flow({}), {"target_dir": str(checkout), **TICKET})
    assert report.error is not None
    assert report.error.message == "the worktree changed nothing: nothing to publish"
    report = run(
        flow({"a.py": "1"}), {"target_dir": str(checkout), **TICKET, "ticket": "jira:OPS-1"}
    )
    assert report.error is not None
    assert report.error.message == (
        "ticket 'jira:OPS-1' is not a GitHub issue (github:OWNER/NAME#N)"
    )
    monkeypatch.delenv("GITHUB_TOKEN")
    only_git = tmp_path / "bin"
    only_git.mkdir()
    (only_git / "git").symlink_to(str(shutil.which("git")))
    monkeypatch.setenv("PATH", str(only_git))
    report = run(flow({"a.py": "1"}), {"target_dir": str(checkout), **TICKET})
    assert report.error is not None
    assert report.error.message == "no GitHub token to publish with: set GITHUB_TOKEN or GH_TOKEN"
    assert github.comments("octo/app", 1) == []


def test_a_push_git_refuses_fails_with_git_s_words_and_never_the_token(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    bare, checkout = origin
    hook = bare / "hooks" / "pre-receive"
    hook.write_text('#!/bin/sh\necho "refused $ADWS_PUSH_TOKEN" >&2\nexit 1\n')
    hook.chmod(0o755)
    report = run(flow({"app.py": "x = 1\n"}), {"target_dir": str(checkout), **TICKET})
    assert report.status == "failed"
    assert report.error is not None
    assert "refused ***" in report.error.message
    assert FAKE_TOKEN not in report.error.message


def test_the_askpass_helper_answers_the_user_and_the_token_from_its_own_environment(
    tmp_path: Path,
) -> None:
    helper = tmp_path / "askpass"
    helper.write_text(_ASKPASS)
    helper.chmod(0o700)
    env = {**os.environ, "ADWS_PUSH_TOKEN": "t0k"}
    ask = [str(helper), "Username for 'https://github.com': "]
    assert subprocess.run(ask, env=env, capture_output=True, text=True, check=True).stdout == (
        "x-access-token\n"
    )
    ask = [str(helper), "Password for 'https://x@github.com': "]
    assert subprocess.run(ask, env=env, capture_output=True, text=True, check=True).stdout == (
        "t0k\n"
    )


def test_a_repo_placeholder_with_no_value_fails_the_step(
    tmp_path: Path, origin: tuple[Path, Path], github: FakeGitHub
) -> None:
    _, checkout = origin
    wf = Workflow(
        "fixing",
        (
            worktree(editing({"a.py": "1"}), name="fix", base="main"),
            publish_pull_request("publish", worktree="fix", repo="{elsewhere}"),
        ),
        inputs=("target_dir", *TICKET),
        optional_inputs=("elsewhere",),
    )
    report = run(wf, {"target_dir": str(checkout), **TICKET})
    assert report.status == "failed"
    assert report.error is not None
    assert (report.error.step_name, report.error.error_type) == ("publish", "MissingInput")
    report = run(wf, {"target_dir": str(checkout), **TICKET, "elsewhere": str(tmp_path / "no")})
    assert report.error is not None
    assert (report.error.step_name, report.error.error_type) == ("publish", "PublishFailed")
