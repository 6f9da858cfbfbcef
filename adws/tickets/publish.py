"""`publish_pull_request`: the one step that holds the write token; one draft pull request.

It runs after a `worktree` step's last commit. It reads the ticket
(`ticket`, `ticket_title`) and the worktree's `<worktree>_commit` and
`<worktree>_diffstat`; checks the change against the limits (files,
bytes) and the protected paths, failing closed with one comment on the
issue that says why; pushes the commit to the branch `adws/<number>-<slug>`
of the checkout's `origin` (a review round: to its pull request's branch,
`review_branch`); then opens one draft pull request whose body says
`Fixes #N` and what was verified, or reuses the one open for the branch.

The token (`GITHUB_TOKEN`, `GH_TOKEN` or `gh auth token`) reaches `git
push` only through an askpass helper and that one process's environment:
never its argv, never another step's environment, the journal or any
output. A 5xx or a timeout on `POST /pulls` is looked up by head before
it is tried again (once); 401, 403 and 422 fail at once (`PublishFailed`).
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from returns.io import IOFailure, IOResult, IOSuccess

from adws._checks import require_type
from adws._exceptions import AdwsError
from adws.contract.template import check_template, render_for_step
from adws.engine.errors import PipelineError
from adws.engine.protect import check_protect, protected_paths
from adws.engine.scope import current_scope
from adws.engine.step import Step
from adws.tickets.github import GitHub, GitHubError, GitHubUnavailableError, token_from
from adws.tickets.values import TicketError, branch_name
from adws.workspaces._git import GitError, git

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.context import WorkflowContext

__all__ = ["PUBLISH_FAILED", "publish_pull_request"]

PUBLISH_FAILED: Final = "PublishFailed"
_KEY: Final = re.compile(
    r"github:([A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100})#([1-9][0-9]{0,9})"
)
_ASKPASS: Final = (
    '#!/bin/sh\ncase "$1" in\n  Username*) echo x-access-token ;;\n'
    '  *) printf "%s\\n" "$ADWS_PUSH_TOKEN" ;;\nesac\n'
)
OUTPUTS: Final = ("pull_request_url", "pull_request_number", "pull_request_branch")


class _Refused(AdwsError):  # noqa: N818 - a step's early end, turned into its PipelineError
    def __init__(self, message: str, *, comment: bool = False) -> None:
        super().__init__(message)
        self.comment = comment


def publish_pull_request(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    name: str = "publish",
    *,
    worktree: str,
    repo: str = "{target_dir}",
    base: str = "main",
    draft: bool = True,
    max_files: int = 100,
    max_bytes: int = 4_000_000,
    protect: Sequence[str] = (),
) -> Step:
    """Build the step that pushes `worktree`'s commit and opens (or reuses) one pull request.

    `repo` is the checkout whose `origin` is pushed to (the worktree
    step's `repo`, a placeholder). Outputs `pull_request_url`,
    `pull_request_number` and `pull_request_branch`.
    """
    owner = f"publish_pull_request {name!r}"
    require_type(owner, "worktree", worktree, str, "the name of a worktree step")
    check_template(repo, owner=owner, what="the repo")
    globs = check_protect(owner, protect)
    limits = (max_files, max_bytes)

    def run(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
        inputs = {**ctx.inputs, **ctx.outputs}
        checkout = render_for_step(repo, inputs, step_name=name, what="the repo")
        if isinstance(checkout, PipelineError):
            return IOFailure(checkout)
        publisher = _Publisher(name, Path(checkout), base, draft=draft)
        try:
            made = publisher.publish(inputs, worktree, limits, globs)
        except _Refused as refused:
            return IOFailure(PipelineError(name, PUBLISH_FAILED, str(refused)))
        return IOSuccess(ctx.merge_outputs(made))

    reads = ("ticket", "ticket_title", f"{worktree}_commit", f"{worktree}_diffstat")
    return Step(name, run, kind="publish", reads=reads, writes=OUTPUTS)


class _Publisher:
    """One publish: the checks, the push and the pull request, for one run's step."""

    def __init__(self, name: str, checkout: Path, base: str, *, draft: bool) -> None:
        self.name = name
        self.checkout = checkout
        self.base = base
        self.draft = draft

    def publish(
        self,
        inputs: Mapping[str, Any],
        worktree: str,
        limits: tuple[int, int],
        globs: Sequence[str],
    ) -> dict[str, object]:
        found = _KEY.fullmatch(str(inputs.get("ticket", "")))
        if found is None:
            given = str(inputs.get("ticket"))[:80]
            msg = f"ticket {given!r} is not a GitHub issue (github:OWNER/NAME#N)"
            raise _Refused(msg)
        repo, number = found.group(1), int(found.group(2))
        token = token_from(os.environ)
        if token is None:
            msg = "no GitHub token to publish with: set GITHUB_TOKEN or GH_TOKEN"
            raise _Refused(msg)
        api = GitHub(os.environ.get("ADWS_GITHUB_API_URL") or "https://api.github.com", token)
        commit = str(inputs.get(f"{worktree}_commit", ""))
        paths = _paths(inputs.get(f"{worktree}_diffstat"))
        try:
            self._check(commit, paths, limits, globs)
        except _Refused as refused:
            if refused.comment:
                said = f"adws will not publish run {current_scope().run_id}: {refused}"
                api.comment(repo, number, said)
            raise
        branch = str(
            inputs.get("review_branch") or branch_name(number, str(inputs["ticket_title"]))
        )
        self._push(commit, branch, token)
        try:
            pull = self._pull(api, repo, number, branch, inputs)
        except (GitHubError, TicketError) as exc:
            raise _Refused(str(exc)) from None
        return {
            "pull_request_url": str(pull.get("html_url", "")),
            "pull_request_number": int(pull.get("number", 0)),
            "pull_request_branch": branch,
        }

    def _check(
        self, commit: str, paths: tuple[str, ...], limits: tuple[int, int], globs: Sequence[str]
    ) -> None:
        max_files, max_bytes = limits
        if not paths:
            msg = "the worktree changed nothing: nothing to publish"
            raise _Refused(msg)
        if len(paths) > max_files:
            msg = f"the change touches {len(paths)} files (at most {max_files})"
            raise _Refused(msg, comment=True)
        hit = protected_paths(paths, globs)
        if hit:
            msg = f"the change touches protected paths: {', '.join(hit[:10])}"
            raise _Refused(msg, comment=True)
        try:
            diff = git(self.checkout, "diff", "--binary", f"{commit}^", commit)
        except GitError as exc:
            raise _Refused(str(exc)) from None
        size = len(diff.stdout.encode())
        if size > max_bytes:
            msg = f"the change is {size} bytes (at most {max_bytes})"
            raise _Refused(msg, comment=True)

    def _push(self, commit: str, branch: str, token: str) -> None:
        """Push `commit` to `branch` of `origin`, the token given to that one `git push` only."""
        with tempfile.TemporaryDirectory(prefix="adws-askpass-") as folder:
            helper = Path(folder) / "askpass"
            helper.write_text(_ASKPASS)
            helper.chmod(stat.S_IRWXU)
            env = {"GIT_ASKPASS": str(helper), "ADWS_PUSH_TOKEN": token, "GIT_TERMINAL_PROMPT": "0"}
            try:
                git(self.checkout, "push", "origin", f"{commit}:refs/heads/{branch}", env=env)
            except GitError as exc:
                raise _Refused(str(exc).replace(token, "***")) from None

    def _pull(
        self, api: GitHub, repo: str, number: int, branch: str, inputs: Mapping[str, Any]
    ) -> dict[str, Any]:
        head = f"{repo.split('/', maxsplit=1)[0]}:{branch}"
        fields = {
            "title": f"{inputs['ticket_title']} (adws)"[:250],
            "head": branch,
            "base": self.base,
            "draft": self.draft,
            "body": _body(number, inputs),
        }
        found = api.open_pulls(repo, head)
        if found:
            return dict(found[0])
        try:
            return dict(api.create_pull(repo, fields))
        except GitHubUnavailableError:
            found = api.open_pulls(repo, head)  # it may have been made before the answer was lost
            if found:
                return dict(found[0])
            return dict(api.create_pull(repo, fields))


def _paths(diffstat: object) -> tuple[str, ...]:
    """Return the paths a worktree's diffstat names (none: nothing, or not a diffstat)."""
    files = diffstat.get("files") if isinstance(diffstat, Mapping) else None
    if not isinstance(files, (list, tuple)):
        return ()
    return tuple(
        str(item["path"]) for item in files if isinstance(item, Mapping) and "path" in item
    )


def _body(number: int, inputs: Mapping[str, Any]) -> str:
    """Write the pull request's body: `Fixes #N`, then what the run verified."""
    fixed = [
        f"- {key.removesuffix('_fixed')}: {', '.join(map(str, value)) or 'none'}"
        for key, value in sorted(inputs.items())
        if key.endswith("_fixed") and isinstance(value, (list, tuple))
    ]
    verified = (
        "Targets fixed (failing before, passing after):\n" + "\n".join(fixed)
        if fixed
        else "Verified: not beyond what the workflow's own checks did (no must_pass targets)."
    )
    run_id = current_scope().run_id
    return (
        f"Fixes #{number}\n\n{verified}\n\n"
        f"Made by adws run {run_id}; `adws status {run_id}` shows its steps, checks and cost."
    )
