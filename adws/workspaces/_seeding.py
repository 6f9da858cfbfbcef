"""Build a seed once, and give each new worktree its shared paths.

Seeds live beside the run folders, in the worktrees folder's `.seeds`
(`<worktrees>/.seeds/<hash>`): outside every checkout, as worktrees are, so
the setup never reads the orchestrating project's configuration, and a
name no run id can take (run ids start with a letter or digit). Not in the
project's `.adws/seeds`: that folder is inside a checkout. A seed folder
holds `tree` (a detached git worktree at the base of the worktree that
built it, where the setup ran), `seed.json` (written last: a seed without
it, or without its `tree`, is not ready and is built again) and `users` (a file per worktree given
it, naming its folder; the newest says when it was last used). One
`<hash>.lock` per hash (an `flock`, taken by each thread and process on a
file of its own) makes concurrent worktrees wait for one build, not N. A
build that failed (the setup's exit code, or a shared path it did not
make) leaves no seed: the next worktree builds it again. A seed folder, its
`tree` or the `.seeds` folder replaced by a symbolic link is refused.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import json
import os
import shutil
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws import io_ops
from adws.workspaces._git import GitError, file_lock, git, repository_lock
from adws.workspaces._home import outside_checkouts
from adws.workspaces._sharing import share_into
from adws.workspaces.seeds import SeedError, SeedSpec, inside, seed_hash

if TYPE_CHECKING:
    from adws.workspaces._places import Place

__all__ = [
    "SEEDS",
    "SETUP_FAILED",
    "discard_seed",
    "is_link",
    "provide",
    "read_seed",
    "seed_lock",
]

SEEDS: Final = ".seeds"
"""The folder of a worktrees folder that holds its seeds."""
SETUP_FAILED: Final = "SetupFailed"
"""The error kind of a step whose seed's setup failed."""
SETUP_TIMEOUT: Final = 3600.0
"""The longest a setup may run."""
SETUP_OUTPUT_BYTES: Final = 16 << 20
"""How much a setup may print on each stream before it is stopped."""
SHOWN: Final = 4000
"""How much of a setup's output (its end) the step's outputs or error keep."""


def is_link(path: Path) -> bool:
    """Tell whether `path` is a symbolic link (False when it is missing)."""
    try:
        return stat.S_ISLNK(path.lstat().st_mode)
    except OSError:
        return False


def _refuse_link(path: Path) -> None:
    if is_link(path):
        msg = (
            f"the seed folder {path} is a symbolic link: adws refuses to build in or share"
            " from it; remove it"
        )
        raise SeedError(msg)


def seed_lock(folder: Path, digest: str) -> contextlib.AbstractContextManager[None]:
    """Hold the lock of the seed `digest` in the seeds `folder` (waiting up to a setup's time)."""
    return file_lock(folder / f"{digest}.lock", SETUP_TIMEOUT + 60, "building a seed")


def read_seed(seed: Path) -> dict[str, object] | None:
    """Read a seed's `seed.json`; None when it is missing or unreadable (not ready)."""
    try:
        found = json.loads((seed / "seed.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and found.get("hash") == seed.name else None


def discard_seed(seed: Path, repo: str) -> None:
    """Remove a seed's folder and git's record of its worktree; links inside are not followed."""
    tree = seed / "tree"
    if repo:
        with contextlib.suppress(GitError, OSError):
            git(Path(repo), "worktree", "remove", "--force", "--force", str(tree))
    if seed.is_dir() and not is_link(seed):
        shutil.rmtree(seed)
    if repo:
        with contextlib.suppress(GitError, OSError):
            git(Path(repo), "worktree", "prune")


def provide(place: Place, spec: SeedSpec) -> dict[str, object]:
    """Give the worktree `place` the seed's shared paths, building the seed if none is ready.

    Paths the worktree has already (a kept worktree going on) are left as
    they are; when it has them all, nothing is hashed or built. Returns the
    step's `<prefix>_seed` output: the hash, whether this worktree built it,
    and (when it did) the setup's seconds and the end of its output.
    """
    wanted = [path for path in spec.share if not os.path.lexists(_shared(place.path, path))]
    if not wanted:
        return {"hash": "", "built": False}
    digest = seed_hash(spec, place.path)
    folder = outside_checkouts(place.path.parent.parent) / SEEDS
    _refuse_link(folder)
    folder.mkdir(exist_ok=True)
    seed = folder / digest
    made: dict[str, object] = {"hash": digest, "built": False}
    with seed_lock(folder, digest):
        _refuse_link(seed)
        _refuse_link(seed / "tree")
        if read_seed(seed) is None or not (seed / "tree").is_dir():
            made = {"hash": digest, "built": True, **_build(place, spec, seed)}
        users = seed / "users"
        users.mkdir(exist_ok=True)
        name = hashlib.sha256(str(place.path).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        (users / name).write_text(str(place.path), encoding="utf-8", errors="surrogateescape")
    tree = seed / "tree"
    for path in wanted:
        source = _shared(tree, path)
        if not os.path.lexists(source):
            msg = f"the seed {seed} has no {path!r} to share (setup {spec.setup!r} did not make it)"
            raise SeedError(msg)
        share_into(source, place.path / path, spec.share_mode)
    _check_ignored(place, wanted)
    return made


def _shared(folder: Path, path: str) -> Path:
    """Return `folder/path` for a shared `path`; refuse one that leads out of `folder`."""
    try:
        return inside(folder, path)
    except SeedError as exc:
        msg = f"share {exc}"
        raise SeedError(msg) from None


def _build(place: Place, spec: SeedSpec, seed: Path) -> dict[str, object]:
    """Make the seed's worktree, run the setup in it, and mark it ready; discard it on failure."""
    discard_seed(seed, str(place.repo))  # a build that failed before, if any
    seed.mkdir()
    tree = seed / "tree"
    try:
        with repository_lock(place.common):
            git(place.repo, "worktree", "add", "--quiet", "--detach", str(tree), place.base)
        made = _set_up(spec, tree)
    except BaseException:
        with contextlib.suppress(OSError):
            discard_seed(seed, str(place.repo))
        raise
    record = {
        "hash": seed.name,
        "setup": spec.setup,
        "setup_key": list(spec.setup_key),
        "repo": str(place.repo),
        "base": place.base,
        "made": dt.datetime.now(tz=dt.UTC).isoformat(timespec="seconds"),
    }
    ready = seed / "seed.json.part"
    ready.write_text(json.dumps(record, indent=1), encoding="utf-8")
    ready.replace(seed / "seed.json")
    return made


def _set_up(spec: SeedSpec, tree: Path) -> dict[str, object]:
    """Run the setup in the seed's worktree; raise `SeedError` (`SetupFailed`) when it fails."""
    outcome = io_ops.run_process(
        ("/bin/sh", "-c", spec.setup),
        cwd=tree,
        timeout=SETUP_TIMEOUT,
        max_output_bytes=SETUP_OUTPUT_BYTES,
    )
    said = (outcome.stdout + outcome.stderr)[-SHOWN:]
    if outcome.returncode != 0 or not outcome.finished:
        how = outcome.error or (
            f"exited with {outcome.returncode}"
            if outcome.finished
            else "was stopped (past its timeout or its output cap, or cancelled)"
        )
        msg = f"setup {spec.setup!r} {how} in the seed {tree}" + (f": {said}" if said else "")
        raise SeedError(msg, SETUP_FAILED)
    missing = [path for path in spec.share if not os.path.lexists(_shared(tree, path))]
    if missing:
        msg = f"setup {spec.setup!r} made no {', '.join(map(repr, missing))} in the seed {tree}"
        raise SeedError(msg, SETUP_FAILED)
    return {"seconds": round(outcome.seconds, 3), "output": said}


def _check_ignored(place: Place, paths: list[str]) -> None:
    """Refuse shared paths the repository's `.gitignore` files leave in: adws would commit them.

    What `adws.workspaces._git.own_index` stages is what counts: only
    `.gitignore` files keep a file out. The paths are removed again first.
    """
    listed = git(
        place.path,
        "ls-files",
        "-z",
        "--others",
        "--directory",
        "--exclude-per-directory=.gitignore",
        "--",
        *paths,
        gitdir=place.gitdir,
        env={"GIT_LITERAL_PATHSPECS": "1"},
    ).stdout
    if not listed:
        return
    for path in paths:
        target = place.path / path
        if target.is_dir() and not is_link(target):
            shutil.rmtree(target)
        else:
            target.unlink()
    names = ", ".join(repr(name.rstrip("/")) for name in listed.split("\0") if name)
    msg = (
        f"the shared {names} is not ignored by the repository's .gitignore: adws would hash and"
        " commit it with the step's work; add it to .gitignore (a symbolic link, share_mode"
        " 'symlink', needs a pattern without a trailing '/')"
    )
    raise SeedError(msg)
