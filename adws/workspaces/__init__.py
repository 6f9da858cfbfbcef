"""Workspaces and approvals: the repository as journaled state, best-of-N, a person in the loop.

- `worktree(step)` runs a step in a fresh `git worktree` on a branch of the
  run's own, commits what it changed, and journals the worktree (its base
  commit, and a hash of its content after every attempt) so a resume can
  tell whether someone edited it meanwhile (`drift`).
- `best_of(name, step, n=...)` runs n such worktrees side by side and keeps
  the best: the first that passed, the smallest diff, the fewest failures,
  a judge's (`judge(step)`) or your choice; `early_stop` cancels the rest.
- `approval_step(name, message=...)` pauses the run (`waiting`) until
  `adws approve` or `adws reject`.
- `fast_forward(name)` moves a checkout's branch to a commit a worktree made.
- `reproduce(step, verify)` has an agent write tests that fail on the
  untouched code first: their ids become a fix's targets
  (`with_verification(..., must_pass="reproduced")`).

Git itself is run by `_git` (bounded commands, lock contention retried),
worktrees live where `_places` says, and `_session` runs a step in one.
"""

from adws.engine.scope import Decision
from adws.workspaces._session import KEEP, WORKSPACE_FAILED, Keep
from adws.workspaces.approvals import ApprovalSpec, approval_step
from adws.workspaces.candidates import SELECTS, BestOfSpec, Select, best_of
from adws.workspaces.judging import JUDGE_CONTRACT, Choice, Judge, judge
from adws.workspaces.merge import FastForwardSpec, fast_forward
from adws.workspaces.reproducers import TESTS, ReproduceSpec, reproduce
from adws.workspaces.worktrees import WORKTREE_INPUT, WorktreeSpec, worktree

__all__ = [
    "JUDGE_CONTRACT",
    "KEEP",
    "SELECTS",
    "TESTS",
    "WORKSPACE_FAILED",
    "WORKTREE_INPUT",
    "ApprovalSpec",
    "BestOfSpec",
    "Choice",
    "Decision",
    "FastForwardSpec",
    "Judge",
    "Keep",
    "ReproduceSpec",
    "Select",
    "WorktreeSpec",
    "approval_step",
    "best_of",
    "fast_forward",
    "judge",
    "reproduce",
    "worktree",
]
