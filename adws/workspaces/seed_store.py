"""`adws seeds` and the seeds part of `adws worktrees gc`: the seeds in worktrees folders.

A seed is in use while a worktree it was given still exists (its folder,
named in the seed's `users`): `collect_seeds` never removes one then,
whatever its age, nor one another process is building (its lock is
held). A seed folder that is a symbolic link, or a `.seeds` that is one,
is never followed: gc removes the link itself and nothing it points at.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import os
from pathlib import Path
from typing import TYPE_CHECKING, final

import attrs

from adws.workspaces._seeding import SEEDS, discard_seed, is_link, read_seed

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["SeedFound", "collect_seeds", "seeds_in"]


@final
@attrs.frozen
class SeedFound:
    """One seed as `adws seeds` lists it."""

    hash: str
    path: str
    setup: str
    setup_key: tuple[str, ...]
    repo: str
    size: int
    made: str
    last_used: str
    """When a worktree was last given it (or it was made): ISO 8601."""
    users: int
    """How many worktrees it was given still exist."""
    ready: bool

    def to_dict(self) -> dict[str, object]:
        """Return the entry as `adws seeds --json` prints it."""
        return {**attrs.asdict(self), "setup_key": list(self.setup_key)}


def _size(path: Path) -> int:
    """Add up the sizes of the files under `path`, never following a link; a linked file once."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for folder, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            with contextlib.suppress(OSError):
                found = os.lstat(os.path.join(folder, name))  # noqa: PTH118 - os.walk's strings
                if (found.st_dev, found.st_ino) not in seen:
                    seen.add((found.st_dev, found.st_ino))
                    total += found.st_size
    return total


def _when(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, tz=dt.UTC).isoformat(timespec="seconds")


def _usage(seed: Path) -> tuple[float, int]:
    """Say when the seed was last used (a timestamp) and how many of its worktrees still exist."""
    latest = seed.lstat().st_mtime
    live = 0
    with contextlib.suppress(OSError):
        for user in (seed / "users").iterdir():
            with contextlib.suppress(OSError):
                latest = max(latest, user.lstat().st_mtime)
                if Path(user.read_text(encoding="utf-8", errors="surrogateescape")).is_dir():
                    live += 1
    return latest, live


def _folders(roots: Iterable[Path]) -> Iterator[Path]:
    """Yield each seed folder (or link where one should be) in the roots' `.seeds`, by name."""
    for root in roots:
        seeds = Path(root) / SEEDS
        if is_link(seeds) or not seeds.is_dir():
            continue
        yield from sorted(p for p in seeds.iterdir() if p.suffix != ".lock")


def _found(seed: Path) -> SeedFound:
    record = read_seed(seed) or {}
    used, live = _usage(seed)
    keys = record.get("setup_key", [])
    return SeedFound(
        seed.name,
        str(seed),
        str(record.get("setup", "")),
        tuple(map(str, keys)) if isinstance(keys, list) else (),
        str(record.get("repo", "")),
        _size(seed),
        str(record.get("made", "")),
        _when(used),
        live,
        bool(record),
    )


def seeds_in(roots: Iterable[Path]) -> list[SeedFound]:
    """List the seeds in the worktrees folders `roots` (links are skipped, never followed)."""
    return [_found(seed) for seed in _folders(roots) if not is_link(seed)]


@contextlib.contextmanager
def _unless_building(seed: Path) -> Iterator[bool]:
    """Hold the seed's lock while the block runs; yield False (holding nothing) if another does."""
    fd = os.open(seed.parent / f"{seed.name}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
        else:
            yield True
    finally:
        os.close(fd)


def collect_seeds(
    roots: Iterable[Path], *, older_than: int, dry_run: bool = False, now: dt.datetime
) -> list[SeedFound]:
    """Remove the seeds unused for `older_than` seconds and in use by no worktree; say which.

    A symbolic link where a seed should be goes as a link (its target stays).
    """
    cutoff = (now - dt.timedelta(seconds=older_than)).timestamp()
    gone: list[SeedFound] = []
    for seed in _folders(roots):
        if is_link(seed):
            if not dry_run:
                seed.unlink()
            continue
        with _unless_building(seed) as free:
            used, live = _usage(seed)
            if not free or live or used >= cutoff:
                continue
            found = _found(seed)
            if not dry_run:
                discard_seed(seed, found.repo)
            gone.append(found)
    return gone
