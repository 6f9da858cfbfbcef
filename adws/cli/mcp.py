"""`adws mcp`: the workflows as tools of an agent (Claude Code, Codex, any MCP client)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._optional import import_optional
from adws.cli._args import UsageError
from adws.cli._options import add_journal, add_workflows, opened, runs_of
from adws.cli._output import err
from adws.cli._values import positive
from adws.discovery import workflows_dir

if TYPE_CHECKING:
    import argparse

__all__ = ["add_mcp", "cmd_mcp"]

_HIGHEST_PORT = 65535


def add_mcp(parser: argparse.ArgumentParser) -> None:
    """Declare `adws mcp [--workflows DIR] [--journal J] [--http PORT]`."""
    parser.description = (
        "Serve the workflows as MCP tools, on stdin and stdout (or --http PORT): one tool per "
        "workflow, its input schema from the workflow's declared inputs and typed keys, and "
        "run_status, await_run (a bounded wait), list_runs and cancel_run. A workflow's tool "
        "queues a run in the journal and starts it in a process of its own (as adws worker "
        "does), answering at once with its id; approvals are never tools. Runs still going "
        "when the server stops end interrupted (adws resume continues them). Needs the mcp "
        "extra: pip install 'adws[mcp]'. For Claude Code: claude mcp add adws -- adws mcp"
    )
    add_workflows(parser)
    add_journal(parser)
    parser.add_argument(
        "--http",
        type=positive,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio",
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve the workflows of `--workflows` over MCP until the client goes (or a signal).

    Exit 0 when the client closed stdin; 130, 143 or 129 on Ctrl-C, SIGTERM or SIGHUP.
    """
    if args.http is not None and args.http > _HIGHEST_PORT:
        msg = f"--http {args.http}: a port is at most {_HIGHEST_PORT}"
        raise UsageError(msg)
    try:
        import_optional("mcp")
    except ImportError as exc:
        err(f"adws: error: adws mcp needs the MCP SDK ({exc}): pip install 'adws[mcp]'")
        return 2
    from adws.mcp_server import Held, Tools, serve  # noqa: PLC0415 - loads the SDK's server

    runs = runs_of(args, whole_process=False)
    opened(runs)
    folder = str(workflows_dir(args.workflows).resolve())
    held = Held(runs, folder)
    return serve(Tools(runs, held, err), args.http)
