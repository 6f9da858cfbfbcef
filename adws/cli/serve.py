"""`adws serve [--host 127.0.0.1] [--port 8765]`: the journal as a web application.

Needs the `serve` extra (Starlette and uvicorn), imported only here, when
the command runs: adws without it works, and `adws serve` says how to
install it. See `adws.serve` for the pages and the rules of access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._optional import import_optional
from adws.cli._args import UsageError
from adws.cli._options import add_journal, opened, runs_of
from adws.cli._output import err

if TYPE_CHECKING:
    import argparse

__all__ = ["add_serve", "cmd_serve"]


def add_serve(parser: argparse.ArgumentParser) -> None:
    """Declare `adws serve [--host H] [--port N] [--tls-cert F --tls-key F] [--insecure-http]`."""
    parser.description = (
        "Serve the run journal as web pages: the runs (live, filtered by status, workflow and "
        "ticket), each run as adws report draws it with its worktrees' diffs, the approvals "
        "with approve and reject, cancel, cost per day and workflow, the workers and the caps. "
        "A decision made on a page is adws approve/reject/cancel --by NAME, the same claim. "
        "On first start a token is written to .adws/serve-token (mode 0600); the login page "
        "exchanges it and your name for a session. Needs pip install 'adws[serve]'."
    )
    add_journal(parser)
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only; another needs "
        "--tls-cert and --tls-key, or --insecure-http)",
    )
    parser.add_argument("--port", type=int, default=8765, help="the TCP port (default 8765)")
    parser.add_argument("--tls-cert", metavar="FILE", help="the server's certificate (PEM)")
    parser.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    parser.add_argument(
        "--insecure-http",
        action="store_true",
        help="listen on another --host without TLS (sessions and decisions cross the network "
        "in clear)",
    )


def cmd_serve(args: argparse.Namespace) -> int:
    """Serve the pages until Ctrl-C; exit 2 when the extra is missing or the address refused."""
    try:
        for name in ("starlette", "uvicorn"):
            import_optional(name)
        from adws.serve import server  # noqa: PLC0415 - needs the extra just checked
    except ImportError as exc:
        msg = f"adws serve needs Starlette and uvicorn: pip install 'adws[serve]' ({exc})"
        raise UsageError(msg) from exc
    where = server.listening(
        args.host, args.port, (args.tls_cert, args.tls_key), insecure_http=args.insecure_http
    )
    if isinstance(where, str):
        raise UsageError(where)
    runs = runs_of(args, create=False)
    refused = server.serve(runs, opened(runs), where, err)
    if refused is not None:
        raise UsageError(refused)
    return 0
