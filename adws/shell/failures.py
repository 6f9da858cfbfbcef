"""Name the failures a check printed, so rounds of a verification compare them by id.

A parser is given what a failing command left (`CommandOutput`) and
returns `{id: detail}`: a stable id per failure, and the line that says
what failed (what the agent is told). Ids leave out line numbers, which
move whenever the agent edits a file above them:

- `pytest`: the node id of each `FAILED` or `ERROR` line of pytest's short
  summary, `tests/test_x.py::test_name[param]` (`tests/test_x.py` for a
  module that did not collect).
- `junit(path)`: each `<testcase>` with a `<failure>` or `<error>` in the
  JUnit XML file `path` (relative to the command's folder) as
  `classname::name`, `tests.test_x.TestC::test_m[1]`.
- `ruff`: `path: CODE message`, `src/app.py: F401 `os` imported but unused`,
  from ruff's `full` or `concise` output.
- `mypy`: `path: message  [code]`, `src/app.py: Incompatible return value type
  (got "int", expected "str")  [return-value]`.
- `auto`: what `pytest`, `ruff` and `mypy` find together (for a
  `make check` that runs them all; the shipped workflows use it).
- `exit_status` (the fallback, and what any parser falls back to when it
  finds nothing in a failing command): the one id `exit status`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Final, TypeAlias, final

import attrs

__all__ = [
    "EXIT_STATUS",
    "PARSERS",
    "CommandOutput",
    "FailureParser",
    "auto",
    "exit_status",
    "failures_of",
    "junit",
    "mypy",
    "pytest",
    "ruff",
]

EXIT_STATUS: Final = "exit status"
"""The one id of a failure no parser could name: the command's exit status alone."""

_MAX_REPORT_BYTES: Final = 64 << 20


@final
@attrs.frozen
class CommandOutput:
    """What a finished command left: its output, its exit status and the folder it ran in."""

    stdout: str
    stderr: str
    returncode: int | None
    cwd: str | None = None


FailureParser: TypeAlias = Callable[[CommandOutput], Mapping[str, str]]


def _tail(text: str) -> str:
    lines = text.strip().splitlines()
    return "\n".join(lines[-20:])


def exit_status(output: CommandOutput) -> dict[str, str]:
    """Name any failure by the exit status alone: one id, whatever failed.

    >>> exit_status(CommandOutput("", "boom", 2))
    {'exit status': 'exited with 2: boom'}
    """
    told = _tail(output.stdout + "\n" + output.stderr)
    return {EXIT_STATUS: f"exited with {output.returncode}" + (f": {told}" if told else "")}


_PYTEST_LINE: Final = re.compile(r"^(?:FAILED|ERROR) (?P<id>\S+)(?: - .*)?$", re.MULTILINE)


def pytest(output: CommandOutput) -> dict[str, str]:
    """Name pytest's failures by node id, from the `FAILED`/`ERROR` lines of its summary.

    >>> pytest(CommandOutput("FAILED tests/t.py::test_a[1] - assert 1 == 2", "", 1))
    {'tests/t.py::test_a[1]': 'FAILED tests/t.py::test_a[1] - assert 1 == 2'}
    """
    return {match["id"]: match[0] for match in _PYTEST_LINE.finditer(output.stdout)}


def junit(path: str) -> FailureParser:
    """Return a parser that reads the JUnit XML report at `path` (from the command's folder).

    A report that is missing or unreadable names nothing (the exit status
    then stands for the failure).
    """

    def parse(output: CommandOutput) -> dict[str, str]:
        report = Path(output.cwd or ".") / path
        try:
            with report.open("rb") as handle:
                data = handle.read(_MAX_REPORT_BYTES)
            root = ET.fromstring(data)  # noqa: S314 - the check's own report, read capped
        except (OSError, ET.ParseError):
            return {}
        found: dict[str, str] = {}
        for case in root.iter("testcase"):
            for kind in ("failure", "error"):
                problem = case.find(kind)
                if problem is not None:
                    name = f"{case.get('classname', '')}::{case.get('name', '')}"
                    found[name] = f"{kind.upper()} {name} - {problem.get('message', '')}".strip()
        return found

    parse.__name__ = parse.__qualname__ = f"junit({path!r})"
    return parse


_RUFF_CONCISE: Final = re.compile(
    r"^(?P<path>[^\s:][^:\n]*):\d+:\d+: (?P<code>[A-Z]+[0-9]+) (?:\[\*\] )?(?P<message>.+)$",
    re.MULTILINE,
)
_RUFF_FULL: Final = re.compile(
    r"^(?P<code>[A-Z]+[0-9]+) (?:\[\*\] )?(?P<message>.+)\n\s*--> (?P<path>[^:\n]+):\d+:\d+$",
    re.MULTILINE,
)


def ruff(output: CommandOutput) -> dict[str, str]:
    """Name ruff's findings as `path: CODE message` (its `full` or `concise` output).

    >>> ruff(CommandOutput("a.py:1:8: F401 [*] `os` imported but unused", "", 1))
    {'a.py: F401 `os` imported but unused': 'a.py:1:8: F401 [*] `os` imported but unused'}
    """
    found: dict[str, str] = {}
    for pattern in (_RUFF_CONCISE, _RUFF_FULL):
        for match in pattern.finditer(output.stdout):
            found[f"{match['path']}: {match['code']} {match['message']}"] = match[0]
    return found


_MYPY_LINE: Final = re.compile(
    r"^(?P<path>[^\s:][^:\n]*):\d+(?::\d+)?: error: (?P<message>.+)$", re.MULTILINE
)


def mypy(output: CommandOutput) -> dict[str, str]:
    """Name mypy's errors as `path: message  [code]` (its notes are not failures).

    >>> list(mypy(CommandOutput('a.py:2: error: Name "x" is not defined  [name-defined]', "", 1)))
    ['a.py: Name "x" is not defined  [name-defined]']
    """
    return {f"{m['path']}: {m['message']}": m[0] for m in _MYPY_LINE.finditer(output.stdout)}


def auto(output: CommandOutput) -> dict[str, str]:
    r"""Name what pytest, ruff and mypy found, for a check command that runs any of them.

    >>> sorted(auto(CommandOutput("FAILED t.py::a\nb.py:1: error: x  [misc]", "", 1)))
    ['b.py: x  [misc]', 't.py::a']
    """
    return {**pytest(output), **ruff(output), **mypy(output)}


PARSERS: Final[Mapping[str, FailureParser]] = {
    "auto": auto,
    "exit_status": exit_status,
    "mypy": mypy,
    "pytest": pytest,
    "ruff": ruff,
}
"""The shipped parsers by name: `shell_step(..., failures="pytest")`."""


def failures_of(parser: FailureParser, output: CommandOutput) -> dict[str, str]:
    """Name a failing command's failures with `parser`; the exit status when it names none."""
    found = {str(key): str(value) for key, value in parser(output).items()}
    return found or exit_status(output)
