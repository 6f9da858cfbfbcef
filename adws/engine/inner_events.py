"""Events from inside a step: its parallel branches, verification rounds, agents and worktrees.

Each is a `RunEvent` (see `adws.engine.events`, which re-exports them); the
executor, the parallel scheduler, `agent_step` and `worktree` report them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeAlias, final

import attrs

from adws.engine.errors import PipelineError
from adws.engine.usage import Usage

__all__ = [
    "AgentActivity",
    "AgentExchanged",
    "AgentSessionStarted",
    "BranchAttemptFailed",
    "BranchFinished",
    "BranchStarted",
    "BranchStatus",
    "RoundFailed",
    "WorktreeRecorded",
]


BranchStatus: TypeAlias = Literal["succeeded", "failed", "cancelled", "reused"]


@final
@attrs.frozen
class BranchStarted:
    """A branch of parallel step `step` (index `index` of `total`) started.

    `branch` is its path: `verify_claims[3]` for a fan-out, `checks[lint]`
    for a named branch of `parallel`.
    """

    run_id: str
    step: str
    index: int
    total: int
    branch: str
    max_attempts: int


@final
@attrs.frozen
class BranchAttemptFailed:
    """One attempt of a branch failed; `will_retry` says whether another follows."""

    run_id: str
    step: str
    index: int
    total: int
    branch: str
    attempt: int
    max_attempts: int
    error: PipelineError
    will_retry: bool
    delay: float
    seconds: float
    usage: Usage | None = None


@final
@attrs.frozen
class BranchFinished:
    """A branch ended; `done`, `failed` and `of` count the step's branches so far.

    `attempts` is how many attempts it made (0 when it never started);
    `reused` means a resume took the outputs it stored in an earlier run.
    """

    run_id: str
    step: str
    index: int
    total: int
    branch: str
    status: BranchStatus
    attempts: int
    seconds: float
    error: PipelineError | None
    outputs: Mapping[str, Any]
    done: int
    failed: int
    of: int
    usage: Usage | None = None


@final
@attrs.frozen
class AgentActivity:
    """An agent step's agent is doing something worth showing: its latest tool call.

    `text` is a short description from the agent's own output (`Write
    src/app.py`, `$ make test`); `branch` is the branch path, or "".
    Nothing is journaled: it feeds the progress line.
    """

    run_id: str
    step: str
    branch: str
    text: str


@final
@attrs.frozen
class RoundFailed:
    """A round of a `with_verification` step failed: its verify step rejected what main made.

    `path` and `attempt` name the attempt the round belongs to, as the
    journal records it (the step, or the branch it runs in); `will_retry`
    says whether main runs again, with this error as feedback.
    """

    run_id: str
    step: str
    index: int
    total: int
    path: str
    attempt: int
    round: int
    max_rounds: int
    error: PipelineError
    will_retry: bool


@final
@attrs.frozen
class AgentExchanged:
    """One call to an agent, whole: what it was asked and what it answered.

    `path` and `attempt` name the attempt the call belongs to, as the
    journal records it (a step, or a branch `verify_claims[2]`); `asked_by`
    is the agent step that asked (inside a `with_verification`, its main or
    verify step). `answer` is None when the agent gave none (it could not
    start, timed out, or its output could not be read); `error` is what the
    call ended with, its answer's validation included. `limit` is the
    step's output cap, which bounds what the journal keeps of each text.
    `patch` is what the call changed in the worktree it ran in (a `git
    diff --binary` from the worktree just before the call to just after;
    "" when it changed nothing), None outside a worktree or when git could
    not say: a replay applies it (see `adws.workspaces.patches`).
    """

    run_id: str
    path: str
    attempt: int
    asked_by: str
    prompt: str
    answer: str | None
    exit_code: int | None
    stderr: str
    session_id: str | None
    seconds: float
    usage: Usage | None
    error: PipelineError | None
    limit: int
    patch: str | None = None


@final
@attrs.frozen
class AgentSessionStarted:
    """An agent call runs in session `session_id`, as the agent's CLI named it.

    Reported as soon as the CLI names its session (its init event), so a
    call stopped halfway still has its session journaled. `path`,
    `attempt` and `asked_by` name the call as `AgentExchanged` does.
    `continued` says whether the call continued the session `continues`
    of attempt `from_attempt` (None: no continuation was asked; False: it
    was asked, and `why` says why the call started afresh instead).
    """

    run_id: str
    path: str
    attempt: int
    asked_by: str
    session_id: str
    continued: bool | None = None
    continues: str | None = None
    from_attempt: int | None = None
    why: str = ""


@final
@attrs.frozen
class WorktreeRecorded:
    """A `worktree` step made, hashed or removed its worktree; the journal keeps the latest.

    `step` is the step (or branch path) running in it; `label` names its
    folder and branch within the run; `tree` hashes its content (tracked
    and untracked files git does not ignore) as the last attempt left it,
    "" once removed; `state` is `created` (just made, or found again by a
    resume), `present` (after an attempt) or `removed` (by adws itself, as
    its `keep` said, or on Ctrl-C) or `discarded` (a `best_of` loser:
    removed with its branch). `gitdir` is the git directory git made for
    it: adws's git names it, and a resume refuses a worktree whose `.git`
    points elsewhere. A resume compares a worktree that is still there
    with `tree` and refuses one that changed. After an attempt, `diff` is
    the patch from `base` to the content it left ("" when it changed
    nothing; None when not taken), and `attempt_path` and `attempt` name that
    attempt as the journal records it, so a reviewer reads the change
    without the worktree.
    """

    run_id: str
    step: str
    label: str
    repo: str
    path: str
    branch: str
    base: str
    tree: str
    state: Literal["created", "present", "removed", "discarded"]
    gitdir: str = ""
    """The git directory git made for the worktree ("" once removed, or never known)."""
    diff: str | None = None
    attempt_path: str = ""
    attempt: int = 0
