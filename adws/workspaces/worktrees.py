"""`worktree(step)`: run a step in a fresh git worktree, on a branch of the run's own."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final, final

import attrs

from adws._checks import require_type
from adws._exceptions import DefinitionError
from adws.contract.template import check_template
from adws.engine.protect import check_protect
from adws.engine.step import Step
from adws.workspaces._session import KEEP, Keep, Session
from adws.workspaces.seeds import SeedSpec, ShareMode, check_seed

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["WORKTREE_INPUT", "WorktreeSpec", "worktree"]

WORKTREE_INPUT: Final = "worktree"
"""The input that holds the worktree's folder, for the steps inside."""


@final
@attrs.frozen
class WorktreeSpec:
    """Describe a `worktree` step, for `adws show`, `adws check`, the fingerprint and `--agent`."""

    step: Step
    repo: str
    base: str
    keep: Keep
    protect: tuple[str, ...] = ()
    seed: SeedSpec | None = attrs.field(default=None, metadata={"unset_unseen": True})
    """The setup whose made folders the worktree gets (see `adws.workspaces.seeds`)."""

    def describe(self) -> str:
        """Say what the step does, for `adws show`."""
        return (
            f"runs {self.step.name} in a fresh worktree of {self.repo} from {self.base}, then"
            f" commits (keep: {self.keep})"
        )


def check_repo(owner: str, repo: object) -> str:
    """Refuse, at definition time, a `repo` that is not a template (`{target_dir}`, a path)."""
    require_type(owner, "repo", repo, str, "a path or a placeholder such as '{target_dir}'")
    check_template(str(repo), owner=owner, what="the repo")
    return str(repo)


def worktree(  # noqa: PLR0913 - DESIGN's signature, all keyword-only
    step: Step,
    *,
    name: str | None = None,
    repo: str = "{target_dir}",
    base: str = "HEAD",
    keep: Keep = "on_failure",
    protect: Sequence[str] = (),
    setup: str | None = None,
    setup_key: Sequence[str] = (),
    share: Sequence[str] = (),
    share_mode: ShareMode = "hardlink",
) -> Step:
    """Build a step that runs `step` in a fresh `git worktree` of `repo`, then commits.

    The worktree is the folder `<worktrees>/<run_id>/<name>`: the run's
    `worktrees` folder, else `$ADWS_WORKTREES/<repository key>`, else
    `$XDG_CACHE_HOME/adws/worktrees/<repository key>` (`~/.cache` when
    unset), so the target's tools never read the configuration of the
    project that runs adws; a folder inside any checkout is refused (see
    `adws.workspaces._home`). A run recorded with its worktree elsewhere
    (`.adws/worktrees` in the project, before) goes on where git keeps it.
    The folder holds a `.gitignore` of `*`. The worktree is on a new branch `adws/<run_id>/<name>`
    from `base` (`HEAD`: the commit `repo`'s checkout is on; any revision,
    or a placeholder, will do). Inside a `fan_out` or `parallel` branch
    each branch gets a worktree of its own, named after the branch too
    (`<name>-items-2`).

    Inside, the input `worktree` holds the folder's absolute path (Python
    steps read it; it is not promoted after the step), and the run's scope
    names it too: agent and shell steps that give no `cwd` of their own run
    there (see `adws.engine.scope.current_worktree`). The inner step runs under
    its own retry policy; after each of its attempts the worktree's content
    is hashed and journaled (`WorktreeRecorded`). After it succeeds, every
    change is committed on the branch (the message is the `summary` output
    or input, else one naming the run and step; nothing changed, no
    commit) and the outputs are the inner step's plus `<name>_branch`,
    `<name>_commit` (the new commit, or the base when nothing changed) and
    `<name>_diffstat` (`files`, each with `path`, `added`, `deleted`; the
    totals `added` and `deleted`; and `text`, as `git diff --shortstat`
    says it).

    `keep`: `on_failure` removes the worktree after a success and keeps it
    after a failure, for inspection (a resume goes on in it); `always`
    keeps it; `never` removes it. Ctrl-C or SIGTERM (or a parallel step
    cancelling the branch) removes it unless `keep="always"`. Branches
    stay while they hold work: a worktree removed after a success that
    changed nothing takes its branch along (`<name>_branch` still names it,
    `<name>_commit` is the base), and once the run ends each branch the
    checkout's branch holds (fast-forwarded, or squash-merged: an equal
    tree) is deleted (see `adws.workspaces.branches`). A resumed run refuses a kept worktree whose
    content changed since it was journaled (see `adws resume --accept-drift`),
    resets one the attempt in flight when the run stopped changed, and
    starts a worktree adws removed itself again from the base it recorded.
    No hook runs, and a commit with no git identity configured is made as
    `adws <adws@localhost>` (see `adws.workspaces._git.commit_all`). A
    failure of git (not a repository, an unknown base) is a
    `WorkspaceFailed` error with git's message.

    `protect=("tests/**", ".github/**")`: an attempt of the inner step that
    changes a protected path fails `Tampered`, naming the files and asking
    for them restored; the inner step's retry policy decides whether it
    tries again. Nothing is committed from a tampered worktree. The files
    on disk are compared (ignored ones too) with the base commit's blobs,
    replace objects off, so no index flag, ignore rule, filter or moved
    `HEAD` hides a change (see `adws.engine.protect`).

    `setup="npm ci", setup_key=("package-lock.json",), share=("node_modules",)`:
    the worktree gets `node_modules` from a seed instead of running the
    setup: the setup runs once per hash of the key files' bytes (as the new
    worktree holds them) and the command, with `sh -c` in a seed worktree
    of its own (`<worktrees>/.seeds/<hash>/tree`, at the base of the
    worktree that needed it first); concurrent worktrees, threads or
    processes, wait for that one build. `share_mode`: `hardlink` (the
    default; each file a hard link, a copy where the file system refuses),
    `copy`, or `symlink` (one link to the seed's folder). A failed setup
    fails the step (`SetupFailed`, naming the command, its exit code and
    the end of its output) and leaves no seed: the next try builds it again.
    The output `<name>_seed` says the hash, whether this worktree built
    the seed, and then the setup's seconds and the end of its output.
    Shared paths must be ignored by the repository's `.gitignore` (they are
    never hashed or committed; one that is not is refused), and a key file
    or shared path outside the repository is refused (see
    `adws.workspaces._seeding`). `adws seeds` lists the seeds; `adws
    worktrees gc --older-than` removes those unused since.
    """
    owner = "worktree"
    require_type(owner, "step", step, Step, "a Step")
    name = step.name if name is None else name
    owner = f"worktree {name!r}"
    check_repo(owner, repo)
    require_type(owner, "base", base, str, "a revision such as 'HEAD' or 'main'")
    check_template(base, owner=owner, what="the base")
    if keep not in KEEP:
        msg = f"{owner}: keep must be one of {', '.join(map(repr, KEEP))}, got {keep!r}"
        raise DefinitionError(msg)
    globs = check_protect(owner, protect)
    seed = check_seed(owner, setup, setup_key, share, share_mode)
    session = Session(
        name, step, repo=repo, base=base, keep=keep, prefix=name, protect=globs, seed=seed
    )
    return Step(
        name,
        session,
        kind="worktree",
        spec=WorktreeSpec(step, repo, base, keep, globs, seed),
        children=(step,),
    )
