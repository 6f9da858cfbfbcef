"""`adws worktrees` and `adws worktrees gc`: the worktrees adws made, listed and collected.

`inventory` lists every worktree the journal says is present, and every
folder in a worktrees folder no row names (an orphan), each with its run,
step, branch, size and state: `in use` (its run is queued, running, parked
or waiting: never touched), `dirty` (files its branch does not hold),
`merged` (its branch holds nothing its checkout's branch does not: an
ancestor, or an equal tree, so a squash merge counts), `kept` (anything
else) or `orphan`.

`collect` removes those of ended runs that are merged or ended before
`older_than`, then the oldest others until the rest fit in `max_disk`; a
dirty one is first committed as `adws wip` on its branch, which is kept.
A removed worktree's branch goes when merged, an unmerged one only with
`branches` (and only once its run is older than `older_than`). Orphans go
only with `orphans`. `git worktree prune` follows in each repository. Then,
with `older_than`, the seeds unused for that long and given to no worktree
that still exists go (see `adws.workspaces.seed_store`); a worktrees
folder's `.seeds` is never listed as an orphan. The
size of a folder counts its files, never following a symbolic link, and a
symbolic link in a worktrees folder is removed as a link, never followed.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

import attrs

from adws._exceptions import AdwsError
from adws.journal.store.workspaces import mark_removed, worktrees_of
from adws.workspaces._git import GitError, commit_all, git, repository_lock, uncommitted
from adws.workspaces._seeding import SEEDS
from adws.workspaces.branches import delete_branch, merged, owned_by
from adws.workspaces.seed_store import SeedFound, collect_seeds

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from adws.journal import Journal, RunRecord

__all__ = [
    "GOES_ON",
    "Collected",
    "Found",
    "collect",
    "folder_size",
    "inventory",
    "repositories_of",
]

GOES_ON: Final = frozenset({"queued", "running", "parked", "waiting"})
"""A run in one of these states goes on: its worktrees and branches are never touched."""
WIP: Final = "adws wip"
"""The message of the commit a dirty worktree's changes get before it is removed."""


@final
@attrs.frozen
class Found:
    """One worktree (or orphan folder) as `adws worktrees` lists it."""

    path: str
    state: str
    size: int
    run_id: str = ""
    step: str = ""
    branch: str = ""
    repo: str = ""
    ended: str = ""
    """When its run ended (or started, when it has not): ISO 8601, "" for an orphan."""
    label: str = ""

    def to_dict(self) -> dict[str, object]:
        """Return the entry as `adws worktrees --json` prints it."""
        return attrs.asdict(self)


@final
@attrs.frozen
class Collected:
    """What one `gc` pass removed (or, dry, would remove), and the branches it deleted."""

    removed: tuple[Found, ...]
    branches: tuple[str, ...]
    committed: tuple[str, ...]
    """The branches a dirty worktree's changes were committed on as `adws wip`."""
    freed: int
    seeds: tuple[SeedFound, ...] = ()
    """The seeds removed: unused for `older_than`, given to no worktree that still exists."""


def folder_size(path: Path) -> int:
    """Add up the sizes of the files under `path`, never following a symbolic link."""
    total = 0
    for folder, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size  # noqa: PTH118 - os.walk's strings
    return total


def _state(run: RunRecord | None, path: Path, repo: Path, branch: str) -> str:
    if run is not None and run.status in GOES_ON:
        return "in use"
    try:
        if _dirty(path):
            return "dirty"
        return "merged" if merged(repo, branch) else "kept"
    except GitError:
        return "kept"


def _dirty(path: Path) -> bool:
    found = git(path, "status", "--porcelain", "--untracked-files=all", "--ignored=no")
    return bool(found.stdout.strip()) or bool(uncommitted(path))


def _is_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(path.lstat().st_mode)
    except OSError:
        return False


def inventory(journal: Journal, roots: Iterable[Path] = ()) -> list[Found]:
    """List the present worktrees the journal names, then the orphans in their folders and `roots`.

    A root holds run folders (`<root>/<run>/<name>`); a folder of the shared
    worktrees folder holds one root per repository, and is passed as those.
    """
    found: list[Found] = []
    named: set[Path] = set()
    folders = {Path(root) for root in roots}
    for run in journal.runs():
        with contextlib.suppress(AdwsError):
            for tree in worktrees_of(journal, run.run_id):
                path = Path(tree.path)
                if tree.state != "present" or not path.is_absolute():
                    continue
                named.add(path)
                folders.add(path.parent.parent)
                if not _is_folder(path):
                    continue
                found.append(
                    Found(
                        str(path),
                        _state(run, path, Path(tree.repo), tree.branch),
                        folder_size(path),
                        run.run_id,
                        tree.step,
                        tree.branch,
                        tree.repo,
                        run.finished or run.started,
                        tree.label,
                    )
                )
    found.extend(_orphans(sorted(folders), named))
    return found


def _orphans(roots: Sequence[Path], named: set[Path]) -> list[Found]:
    """List `<root>/<run>/<name>` folders no journal row names (a link is listed, not followed)."""
    found: list[Found] = []
    for root in roots:
        for run in _entries(root):
            inside = _entries(run) if _is_folder(run) else [run]
            for path in inside:
                if path not in named:
                    size = folder_size(path) if _is_folder(path) else 0
                    found.append(Found(str(path), "orphan", size, run_id=run.name))
    return found


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(
            entry for entry in folder.iterdir() if entry.name not in {".gitignore", SEEDS}
        )
    except OSError:
        return []


def _older(found: Found, cutoff: dt.datetime | None) -> bool:
    if cutoff is None or not found.ended:
        return False
    try:
        ended = dt.datetime.fromisoformat(found.ended)
    except ValueError:
        return False
    return ended.astimezone(dt.UTC) < cutoff


def _doomed(
    found: Sequence[Found], cutoff: dt.datetime | None, max_disk: int | None
) -> list[Found]:
    """Choose what goes: merged or old worktrees of ended runs, then the oldest past max_disk."""
    ended = sorted(
        (f for f in found if f.state in {"merged", "kept", "dirty"}), key=lambda f: f.ended
    )
    doomed = [f for f in ended if f.state == "merged" or _older(f, cutoff)]
    if max_disk is not None:
        total = sum(f.size for f in found) - sum(f.size for f in doomed)
        for each in ended:
            if total <= max_disk:
                break
            if each not in doomed:
                doomed.append(each)
                total -= each.size
    return doomed


def collect(  # noqa: PLR0913 - gc's options, all keyword-only
    journal: Journal,
    *,
    roots: Iterable[Path] = (),
    older_than: int | None = None,
    max_disk: int | None = None,
    dry_run: bool = False,
    orphans: bool = False,
    branches: bool = False,
    now: dt.datetime | None = None,
) -> Collected:
    """Remove what `adws worktrees gc` removes (see the module docstring); say what went."""
    found = inventory(journal, roots)
    moment = now or dt.datetime.now(tz=dt.UTC)
    cutoff = None if older_than is None else moment - dt.timedelta(seconds=older_than)
    doomed = _doomed(found, cutoff, max_disk)
    if orphans:
        doomed.extend(f for f in found if f.state == "orphan")
    places = {*roots, *(Path(f.path).parent.parent for f in found if f.state != "orphan")}
    if dry_run:
        seeds = _seeds(places, older_than, moment, dry_run=True)
        return Collected(tuple(doomed), (), (), sum(f.size for f in doomed), seeds)
    gone: list[str] = []
    committed: list[str] = []
    repos: set[Path] = set()
    removed: list[Found] = []
    for each in doomed:
        try:
            if each.state == "orphan":
                _remove_orphan(Path(each.path))
            else:
                repo = Path(each.repo)
                if each.state == "dirty" and commit_all(Path(each.path), WIP):
                    committed.append(each.branch)
                _remove(repo, Path(each.path))
                mark_removed(journal, each.run_id, each.label)
                repos.add(repo)
                unmerged_goes = branches and _older(each, cutoff) and each.state != "dirty"
                if (
                    owned_by(each.branch, each.run_id)
                    and (merged(repo, each.branch) or unmerged_goes)
                    and delete_branch(repo, each.branch)
                ):
                    gone.append(each.branch)
        except (GitError, OSError):
            continue
        removed.append(each)
    for repo in sorted(repos):
        with contextlib.suppress(GitError):
            git(repo, "worktree", "prune")
    seeds = _seeds(places, older_than, moment, dry_run=False)
    freed = sum(f.size for f in removed)
    return Collected(tuple(removed), tuple(gone), tuple(committed), freed, seeds)


def _seeds(
    roots: set[Path], older_than: int | None, now: dt.datetime, *, dry_run: bool
) -> tuple[SeedFound, ...]:
    """Collect the seeds of the worktrees folders, once the worktrees that used them went."""
    if older_than is None:
        return ()
    return tuple(collect_seeds(sorted(roots), older_than=older_than, dry_run=dry_run, now=now))


def _remove(repo: Path, path: Path) -> None:
    common = Path(
        git(repo, "rev-parse", "--path-format=absolute", "--git-common-dir").stdout.strip()
    )
    with repository_lock(common):
        git(repo, "worktree", "remove", "--force", "--force", str(path))
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def _remove_orphan(path: Path) -> None:
    """Remove a folder no row names; a symbolic link goes as a link, whatever it points at."""
    if _is_folder(path):
        shutil.rmtree(path)  # rmtree never follows a link inside (it unlinks it)
    else:
        path.unlink()
    with contextlib.suppress(OSError):
        path.parent.rmdir()


def repositories_of(journal: Journal, run_ids: Iterable[str]) -> dict[str, list[str]]:
    """Name the repositories each run made worktrees of, from the journal."""
    return {run_id: [tree.repo for tree in worktrees_of(journal, run_id)] for run_id in run_ids}
