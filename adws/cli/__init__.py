"""The `adws` command line: the one place that prints and picks exit codes.

One module per command group (`workflows`, `runs`); `_args` builds the
parser and turns arguments into values; `_output` prints; `_interrupts`
handles signals during a run. `main` is the entry point and the single
boundary where a mistake on the command line becomes exit code 2.

Exit codes: 0 succeeded, 1 failed, 2 usage or invalid workflow, 3 blocked,
130 Ctrl-C, 143 SIGTERM, 129 SIGHUP. After a run, every input the run
produced whose name ends in `_path` is printed, so a workflow can tell its
user where its artifacts went (`report_path: reports/...md`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.cli._args import UsageError, build_parser
from adws.cli._output import err
from adws.cli.runs import EXIT_CODES, cmd_resume, cmd_run, cmd_runs, cmd_status
from adws.cli.workflows import cmd_list, cmd_show, cmd_validate

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Sequence

__all__ = ["EXIT_CODES", "main"]

EXIT_USAGE: Final = 2

_HANDLERS: Final[dict[str, Callable[[argparse.Namespace], int]]] = {
    "list": cmd_list,
    "show": cmd_show,
    "run": cmd_run,
    "runs": cmd_runs,
    "status": cmd_status,
    "resume": cmd_resume,
    "validate": cmd_validate,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:  # argparse exits for --help and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return _HANDLERS[args.command](args)
    except UsageError as exc:
        err(f"adws: error: {exc}")
        return EXIT_USAGE
