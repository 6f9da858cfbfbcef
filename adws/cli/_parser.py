"""The `adws` argument parser: the commands by group, and each command's own flags.

`build_parser()` describes every command (the documentation's reference
is drawn from it); `adws` itself builds the parser with only the command
it runs configured (`only=`), so a command's module is imported when it
runs, and `adws --help` imports none (see `adws.cli._commands`).
"""

from __future__ import annotations

import argparse
import importlib
from typing import TYPE_CHECKING, Final

from adws.cli._commands import COMMANDS, GROUPS, HIDDEN, MAINTAIN

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["build_parser", "command_in"]

_EPILOG: Final = """\
Exit codes: 0 succeeded, 1 failed (or cancelled), 2 usage or invalid workflow,
3 blocked or waiting for approval, 75 parked on an agent's usage limit (adws
resume --due goes on once it resets), 130 interrupted. adws COMMAND --help says
more of each."""
_WIDTH: Final = 14


class _Version(argparse.Action):
    """Print the installed version; looked up only when asked, so start-up stays fast."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        _namespace: argparse.Namespace,
        _values: object,
        _option: str | None = None,
    ) -> None:
        from importlib.metadata import version  # noqa: PLC0415 - only `adws --version` pays for it

        from adws.cli._output import out  # noqa: PLC0415 - as above

        out(f"adws {version('adws')}")
        parser.exit()


def _listing() -> str:
    """List the commands by group, as `adws --help` shows them (and what maintains a journal)."""
    lines = []
    for group in GROUPS:
        lines.append(f"\n{group}:")
        listed = [
            (name, command[1])
            for name, command in COMMANDS.items()
            if command[2] == group and name not in HIDDEN
        ]
        if group == GROUPS[-1]:
            listed.extend(MAINTAIN)
        lines += [f"  {name:<{_WIDTH}}{summary}" for name, summary in listed]
    return "\n".join(lines)


def _top_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="adws",
        usage="adws [-h] [--version] COMMAND ...",
        description="Run AI-developer workflows as pipelines that fail closed.\n\n" + _listing(),
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_Version, nargs=0, help="print adws's version and exit")
    return parser


def command_in(argv: Sequence[str]) -> str:
    """Name the command `argv` runs ("" when it names none: `adws --help`, a typo).

    >>> command_in(["run", "hello", "-i", "name=Ada"]), command_in(["--help"]), command_in(["rnu"])
    ('run', '', '')
    """
    first = next((arg for arg in argv if not arg.startswith("-")), "")
    return first if first in COMMANDS else ""


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Describe the commands; `only` configures that command's flags alone ("" none, None all).

    Each command's flags are declared in its own module, beside its
    handler, as `add_NAME(parser)`; `adws.cli` dispatches on `command`.
    """
    parser = _top_parser()
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, help=argparse.SUPPRESS, prog="adws"
    )
    for name, (module, summary, _group) in COMMANDS.items():
        described = {} if name in HIDDEN else {"help": summary}
        command = commands.add_parser(name, **described)  # type: ignore[arg-type] # help= or none
        if only is None or only == name:
            add = getattr(importlib.import_module(module), "add_" + name.replace("-", "_"))
            add(command)
    return parser
