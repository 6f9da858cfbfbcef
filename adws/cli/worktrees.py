"""`adws worktrees`: the worktrees adws made, listed (`--json`) and collected (`gc`)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Final

from adws._durations import parse_duration
from adws._exceptions import MalformedError
from adws.cli._args import UsageError
from adws.cli._options import add_journal, journal_of
from adws.cli._output import err, out, out_json
from adws.render import table
from adws.runs.worktrees import collect, inventory
from adws.workspaces._home import shared_root

if TYPE_CHECKING:
    import argparse

    from adws.runs.worktrees import Collected, Found

__all__ = ["add_worktrees", "cmd_worktrees", "parse_size", "roots_of", "said", "size_text"]

_SIZE: Final = re.compile(r"([0-9]+(?:\.[0-9]+)?)([KMGT]?)B?", re.IGNORECASE)
_POWER: Final = {"": 0, "K": 1, "M": 2, "G": 3, "T": 4}


def parse_size(text: str) -> int:
    """Read a size in bytes: a number and an optional unit (K, M, G, T: powers of 1024).

    >>> parse_size("10G"), parse_size("512m"), parse_size("100"), parse_size("1.5K")
    (10737418240, 536870912, 100, 1536)
    >>> parse_size("ten")
    Traceback (most recent call last):
    ...
    adws._exceptions.MalformedError: --max-disk 'ten' is not a size (100M, 10G)
    """
    matched = _SIZE.fullmatch(text.strip())
    if matched is None:
        msg = f"--max-disk {text!r} is not a size (100M, 10G)"
        raise MalformedError(msg)
    return int(float(matched[1]) * 1024 ** _POWER[matched[2].upper()])


def size_text(size: int) -> str:
    """Say a size as people read it.

    >>> size_text(0), size_text(1536), size_text(5 << 30), size_text(3 << 50)
    ('0 B', '1.5 KiB', '5.0 GiB', '3072.0 TiB')
    """
    value, unit = float(size), "B"
    for name in ("KiB", "MiB", "GiB", "TiB"):
        if value < 1024:  # noqa: PLR2004 - the next unit up
            break
        value, unit = value / 1024, name
    return f"{size} B" if unit == "B" else f"{value:.1f} {unit}"


def add_worktrees(parser: argparse.ArgumentParser) -> None:
    """Declare `adws worktrees [--json]` and `adws worktrees gc [...]`."""
    parser.description = (
        "List the worktrees adws made (the journal's present ones, and folders no journal row"
        " names: orphans) with their run, step, branch, size and state: in use (its run is"
        " queued, running, parked or waiting), dirty, merged, kept or orphan. `gc` removes them."
    )
    _common(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    verbs = parser.add_subparsers(dest="verb", metavar="{gc}")
    gc = verbs.add_parser(
        "gc",
        help="remove merged or old worktrees of ended runs",
        description=(
            "Remove the worktrees of ended runs whose branch is merged (its tip in its checkout's"
            " branch, or an equal tree: squash merges count) or that ended before --older-than,"
            " then the oldest until the rest fit in --max-disk. A dirty one is first committed"
            " as `adws wip` on its branch, which is kept. Merged branches go with their"
            " worktrees; unmerged ones stay unless --branches. Worktrees of queued, running,"
            " parked and waiting runs are never touched; orphans go only with --orphans."
            " `git worktree prune` follows. With --older-than, the seeds unused since then and"
            " given to no worktree that still exists go too (see `adws seeds`)."
        ),
    )
    _common(gc)
    gc.add_argument(
        "--older-than", metavar="AGE", help="30s, 5h, 7d: runs ended (seeds unused) before then"
    )
    gc.add_argument("--max-disk", metavar="SIZE", help="remove the oldest until under SIZE (10G)")
    gc.add_argument("--dry-run", action="store_true", help="say what would go; remove nothing")
    gc.add_argument("--orphans", action="store_true", help="remove orphans too")
    gc.add_argument(
        "--branches",
        action="store_true",
        help="also delete the unmerged branches of removed worktrees older than --older-than",
    )
    gc.add_argument("--json", action="store_true", help="print what went as JSON")


def _common(parser: argparse.ArgumentParser) -> None:
    add_journal(parser)
    parser.add_argument(
        "--worktrees", metavar="DIR", help="a worktrees folder to look in for orphans too"
    )


def roots_of(chosen: str | None) -> list[Path]:
    """Name the folders that hold run folders: each repository's in the shared one, and `chosen`."""
    shared = shared_root(os.environ, Path.home())
    try:
        roots = sorted(p for p in shared.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        roots = []
    return [*roots, *([Path(chosen).resolve()] if chosen else [])]


def _listed(found: list[Found]) -> str:
    rows = [
        (f.run_id or "-", f.step or "-", f.branch or "-", size_text(f.size), f.state, f.path)
        for f in found
    ]
    return table(("RUN", "STEP", "BRANCH", "SIZE", "STATE", "PATH"), rows)


def said(done: Collected, *, dry: bool) -> str:
    """Say in one line what a gc pass removed (or, dry, would remove), deleted and committed."""
    verb = "would remove" if dry else "removed"
    count = len(done.removed)
    line = f"{verb} {count} worktree{'' if count == 1 else 's'} ({size_text(done.freed)})"
    if done.branches:
        line += f", deleted {len(done.branches)} branch{'' if len(done.branches) == 1 else 'es'}"
    if done.committed:
        line += f", committed {len(done.committed)} as `adws wip`"
    if done.seeds:
        freed = size_text(sum(seed.size for seed in done.seeds))
        line += f", {len(done.seeds)} seed{'' if len(done.seeds) == 1 else 's'} ({freed})"
    return line


def cmd_worktrees(args: argparse.Namespace) -> int:
    """List the worktrees, or collect them (`gc`)."""
    journal = journal_of(args, readonly=args.verb != "gc")
    roots = roots_of(args.worktrees)
    if args.verb != "gc":
        found = inventory(journal, roots)
        if args.json:
            out_json([f.to_dict() for f in found])
        elif found:
            out(_listed(found))
        else:
            err("no worktrees")
        return 0
    try:
        older = None if args.older_than is None else parse_duration(args.older_than, "--older-than")
        most = None if args.max_disk is None else parse_size(args.max_disk)
    except MalformedError as exc:
        raise UsageError(str(exc)) from None
    done = collect(
        journal,
        roots=roots,
        older_than=older,
        max_disk=most,
        dry_run=args.dry_run,
        orphans=args.orphans,
        branches=args.branches,
    )
    if args.json:
        out_json(
            {
                "removed": [f.to_dict() for f in done.removed],
                "branches": list(done.branches),
                "committed": list(done.committed),
                "freed": done.freed,
                "seeds": [seed.to_dict() for seed in done.seeds],
                "dry_run": args.dry_run,
            }
        )
    else:
        for each in done.removed:
            err(f"{'would remove' if args.dry_run else 'removed'} {each.path} ({each.state})")
        err(said(done, dry=args.dry_run))
    return 0
