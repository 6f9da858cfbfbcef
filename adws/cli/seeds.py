"""`adws seeds`: the seeds worktrees share, with their key files, setup, size and last use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.cli._output import err, out, out_json
from adws.cli.worktrees import roots_of, size_text
from adws.render import table
from adws.workspaces.seed_store import seeds_in

if TYPE_CHECKING:
    import argparse

__all__ = ["add_seeds", "cmd_seeds"]


def add_seeds(parser: argparse.ArgumentParser) -> None:
    """Declare `adws seeds [--json] [--worktrees DIR]`."""
    parser.description = (
        "List the seeds in the worktrees folders (the shared one, $ADWS_WORKTREES or"
        " $XDG_CACHE_HOME/adws/worktrees, and --worktrees): each a setup run once per hash of"
        " its key files, whose folders worktrees share. USERS counts the worktrees given it"
        " that still exist. `adws worktrees gc --older-than AGE` removes those unused since."
    )
    parser.add_argument("--worktrees", metavar="DIR", help="a worktrees folder to look in too")
    parser.add_argument("--json", action="store_true", help="print a JSON list")


def cmd_seeds(args: argparse.Namespace) -> int:
    """List the seeds."""
    found = seeds_in(roots_of(args.worktrees))
    if args.json:
        out_json([seed.to_dict() for seed in found])
        return 0
    if not found:
        err("no seeds")
        return 0
    rows = [
        (
            seed.hash,
            ", ".join(seed.setup_key) or "-",
            seed.setup or "(not ready)",
            size_text(seed.size),
            seed.last_used,
            str(seed.users),
        )
        for seed in found
    ]
    out(table(("HASH", "KEYS", "SETUP", "SIZE", "LAST USED", "USERS"), rows))
    return 0
