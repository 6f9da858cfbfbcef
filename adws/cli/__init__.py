"""The `adws` command line: what is printed, and the exit code a command ends with.

One module per command or family (`workflows`: list, show, check,
validate; `approvals`: approvals, approve, reject; `worker`: worker and
its held runs), each declaring its flags beside its handler (`add_NAME`,
`cmd_NAME`); `_commands` lists them by what a person is doing, `_parser`
builds the parser, `_options` holds the flags several commands share and
turns arguments into typed values (a `RunRequest`, `RunOptions`), `_runs`
says what a run did, `_output` prints (through `adws.io_ops.terminal`).
Below this folder nothing takes an `argparse.Namespace`: commands hand
`adws.runs.Runs` typed values and print what it returns.

`main` is the entry point and the single boundary where a mistake on the
command line becomes exit code 2 (and journal rows a command needs but
cannot read, exit code 1); only a second signal during a run exits from
elsewhere (`adws.runs.interrupts`, at once). Only the command that runs is
imported: `adws --help` imports argparse and this folder's table.

Exit codes: 0 succeeded, 1 failed (or cancelled), 2 usage or invalid
workflow, 3 blocked (or waiting for approval), 75 parked on an agent's
usage limit (`EX_TEMPFAIL`), 130 Ctrl-C, 143 SIGTERM, 129 SIGHUP. After a
run, every input the run produced whose name ends in `_path` is printed,
so a workflow can tell its user where its artifacts went (`report_path:
reports/...md`).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

__all__ = ["EXIT_CODES", "dispatch", "main"]

EXIT_USAGE: Final = 2
EXIT_CODES: Final = {
    "succeeded": 0,
    "failed": 1,
    "cancelled": 1,
    "blocked": 3,
    "waiting": 3,
    "parked": 75,
    "interrupted": 130,
}
"""75 is `EX_TEMPFAIL` (sysexits.h): try again later, as a parked run asks."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI and return its exit code."""
    from adws.cli._parser import build_parser, command_in  # noqa: PLC0415 - loaded when run

    given = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser(only=command_in(given)).parse_args(given)
    except SystemExit as exc:  # argparse exits for --help and usage errors
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    return dispatch(args)


def dispatch(args: argparse.Namespace) -> int:
    """Run the command `args` were parsed for; return its exit code (2 for a usage error).

    `adws worker`'s forked runs enter here, with the arguments the worker
    parsed once (see `adws.cli.worker.held_in_fork`).
    """
    import importlib  # noqa: PLC0415 - `adws --help` never needs it

    from adws._exceptions import SettingError  # noqa: PLC0415 - a command runs from here on
    from adws.cli._args import UsageError  # noqa: PLC0415 - as above
    from adws.cli._commands import COMMANDS  # noqa: PLC0415 - as above
    from adws.cli._output import err  # noqa: PLC0415 - as above

    module = importlib.import_module(COMMANDS[args.command][0])
    handler = getattr(module, "cmd_" + args.command.replace("-", "_"))
    try:
        code: int = handler(args)
    except (UsageError, SettingError) as exc:
        err(f"adws: error: {exc}")
        return EXIT_USAGE
    return code
