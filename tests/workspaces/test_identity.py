"""A worktree's commit where git knows no identity: made as adws, and said so; else git's own."""

from __future__ import annotations

from pathlib import Path

import pytest
from returns.io import IOSuccess

from adws import Workflow, WorkflowContext, run_workflow, worktree
from tests.workspaces.conftest import git, writes

IDENTITY_VARIABLES = (
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "EMAIL",
)


@pytest.fixture
def anonymous(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository in an environment with no git identity: a fresh container, a CI runner."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    for name in IDENTITY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    git(repo, "config", "--unset", "user.name")
    git(repo, "config", "--unset", "user.email")
    # Never guess one from the host's name, which a host with a domain would allow.
    git(repo, "config", "user.useConfigOnly", "true")
    return repo


def commit(repo: Path, tmp_path: Path) -> str:
    """Run a worktree step that writes a file; return its commit as `name <email>|...|body`."""
    result = run_workflow(
        Workflow("w", (worktree(writes("impl", {"a.txt": "a\n"}, summary="Add a")),)),
        WorkflowContext(inputs={"target_dir": str(repo)}),
        run_id="r1",
        worktrees=str(tmp_path / "wt"),
    )
    assert isinstance(result, IOSuccess), result
    return git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%B", "adws/r1/impl")


def test_with_no_identity_anywhere_the_commit_is_made_as_adws_and_says_so(
    anonymous: Path, tmp_path: Path
) -> None:
    assert commit(anonymous, tmp_path) == (
        "adws <adws@localhost>|adws <adws@localhost>|Add a\n\n"
        "Committed-by: adws (no git identity configured)"
    )


def test_an_identity_the_environment_gives_is_used_and_only_the_missing_role_is_adws(
    anonymous: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Ann")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "ann@example.com")
    assert commit(anonymous, tmp_path) == (
        "Ann <ann@example.com>|adws <adws@localhost>|Add a\n\n"
        "Committed-by: adws (no git identity configured)"
    )


def test_the_repositorys_own_identity_is_used_unchanged(repo: Path, tmp_path: Path) -> None:
    assert commit(repo, tmp_path) == (
        "Test User <test@example.com>|Test User <test@example.com>|Add a"
    )
