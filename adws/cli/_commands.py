"""Every command, by what a person is doing: its module, its one line of help, its group.

`adws --help` is drawn from this table alone, so it imports no command:
a command's module (its flags beside its handler, `add_NAME` and
`cmd_NAME`) is imported only when that command runs or asks for its own
`--help`.
"""

from __future__ import annotations

from typing import Final

__all__ = ["COMMANDS", "GROUPS", "HIDDEN", "MAINTAIN", "Command"]

Command = tuple[str, str, str]
"""A command's module, its one line of help, and the group it is listed in."""

GROUPS: Final = ("run and author", "see", "decide", "team", "maintain")
"""The groups of `adws --help`, in the order a person meets them."""

COMMANDS: Final[dict[str, Command]] = {
    "new": (
        "adws.cli.new",
        "write a new workflow module and its test (never overwrites)",
        GROUPS[0],
    ),
    "list": ("adws.cli.workflows", "list the workflows", GROUPS[0]),
    "show": ("adws.cli.workflows", "describe a workflow's steps", GROUPS[0]),
    "check": (
        "adws.cli.workflows",
        "check workflows' dataflow before any run (exit 1 on an error)",
        GROUPS[0],
    ),
    "validate": (
        "adws.cli.workflows",
        "check an agent answer against a step's contract",
        GROUPS[0],
    ),
    "run": ("adws.cli.run", "run a workflow", GROUPS[0]),
    "resume": (
        "adws.cli.resume",
        "continue a run from its first step that did not succeed",
        GROUPS[0],
    ),
    "batch": (
        "adws.cli.batch",
        "start one run per line of a JSONL file of inputs, on a pool of workers",
        GROUPS[0],
    ),
    "eval": (
        "adws.cli.eval",
        "run every task N times per variant on the batch pool; pass rates compared",
        GROUPS[0],
    ),
    "runs": ("adws.cli.runs", "list recorded runs, newest first", GROUPS[1]),
    "status": ("adws.cli.status", "show one run's steps, attempts and errors", GROUPS[1]),
    "report": (
        "adws.cli.report",
        "write one run (or a batch) as a self-contained HTML page",
        GROUPS[1],
    ),
    "cost": ("adws.cli.cost", "sum what agent calls cost, from the journal", GROUPS[1]),
    "worktrees": (
        "adws.cli.worktrees",
        "list the worktrees adws made (size, state); `gc` removes merged and old ones",
        GROUPS[1],
    ),
    "seeds": (
        "adws.cli.seeds",
        "list the seeds worktrees share (hash, key files, setup, size, last used)",
        GROUPS[1],
    ),
    "caps": (
        "adws.cli.caps",
        "list, set or remove the caps that hold across runs (dollars, tokens, runs a window)",
        GROUPS[1],
    ),
    "approvals": (
        "adws.cli.approvals",
        "list the runs waiting for approval, with their messages",
        GROUPS[2],
    ),
    "approve": (
        "adws.cli.approvals",
        "approve a run waiting for approval, and continue it",
        GROUPS[2],
    ),
    "reject": (
        "adws.cli.approvals",
        "reject a run waiting for approval: its cleanup steps run and it ends Rejected",
        GROUPS[2],
    ),
    "serve": (
        "adws.cli.serve",
        "serve the journal as web pages: live runs, approvals with diffs, cancel, cost, workers",
        GROUPS[2],
    ),
    "cancel": (
        "adws.cli.cancel",
        "end a run: queued, waiting or parked at once, a running one through its holder",
        GROUPS[2],
    ),
    "submit": (
        "adws.cli.submit",
        "queue a run for an adws worker to start, on whatever host it runs",
        GROUPS[3],
    ),
    "worker": (
        "adws.cli.worker",
        "continue, on this host, every run that is due, until Ctrl-C",
        GROUPS[3],
    ),
    "workers": (
        "adws.cli.workers",
        "list the live adws workers: host, pid, since, runs held",
        GROUPS[3],
    ),
    "watch": (
        "adws.cli.watch",
        "turn labelled issues (or any command's tickets) into runs, one per ticket and round",
        GROUPS[3],
    ),
    "trigger": (
        "adws.cli.trigger",
        "turn one webhook payload (a GitHub Actions event) into a run, as a watcher would",
        GROUPS[3],
    ),
    "mcp": (
        "adws.cli.mcp",
        "serve the workflows as MCP tools for an agent (claude mcp add adws -- adws mcp)",
        GROUPS[3],
    ),
    "held-run": ("adws.cli.worker", "", ""),
}
"""Every command, in the order `adws --help` lists it within its group."""

HIDDEN: Final = frozenset({"held-run"})
"""Commands not listed: `held-run` is what `adws worker` starts for each run it holds."""

MAINTAIN: Final = (
    ("runs --prune", "delete finished runs (--older-than DAYS, --keep N) and reclaim the space"),
    ("worktrees gc", "remove merged and old worktrees, and unused seeds (--older-than 7d)"),
    ("resume --due", "resume every run of this host that is due: parked, interrupted, orphaned"),
)
"""What keeps a journal tidy: flags of commands listed above, shown under `maintain`."""
