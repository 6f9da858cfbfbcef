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
  finds nothing in a failing command): the one id `exit status`, which
  names no failure (`with_verification` cannot tell new from old by it).

`pytest`, `junit(path)` and `auto` list passes too (`Listing.passes`):
pytest's `PASSED` and `XPASS` lines (its summary with `-rA`, or `-v`'s
`path::test PASSED`), JUnit's test cases with no failure, error or skip.
A round's targets must be listed as passed: a test that did not run is
not a pass (see `adws.engine.proof`).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import Final, TypeAlias, final

import attrs

from adws.engine.proof import EXIT_STATUS

__all__ = [
    "EXIT_STATUS",
    "PARSERS",
    "CommandOutput",
    "FailureParser",
    "Listing",
    "PassLister",
    "auto",
    "exit_status",
    "failures_of",
    "junit",
    "mypy",
    "name_of",
    "passes_of",
    "pytest",
    "ruff",
    "unnamed",
]


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
PassLister: TypeAlias = Callable[[CommandOutput], Collection[str] | None]
"""Name what passed; None when the output does not list passes (pytest without `-rA`)."""


@final
@attrs.frozen
class Listing:
    r"""A parser that lists passes too: called, it names failures; `passes` names what passed.

    >>> pytest.passes(CommandOutput("PASSED t.py::a\nt.py::b PASSED [ 50%]", "", 0))
    ['t.py::a', 't.py::b']
    """

    name: str
    failures: FailureParser
    lister: PassLister

    def __call__(self, output: CommandOutput) -> Mapping[str, str]:
        """Name the failures, as any parser does."""
        return self.failures(output)

    @property
    def __name__(self) -> str:
        """Name the parser as a function's name does (`junit('r.xml')`)."""
        return self.name

    def passes(self, output: CommandOutput) -> list[str] | None:
        """Name (sorted) the ids the command's output says passed (None: it does not list them)."""
        listed = self.lister(output)
        return None if listed is None else sorted({str(found) for found in listed})


def name_of(parser: FailureParser) -> str:
    """Name a parser for `adws show` and the fingerprint: its function's name, or its `repr`."""
    return str(getattr(parser, "__name__", repr(parser)))


def passes_of(parser: FailureParser | None, output: CommandOutput) -> list[str] | None:
    """Name (sorted) what passed, when the parser lists passes and the output names them."""
    return parser.passes(output) if isinstance(parser, Listing) else None


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
_PYTEST_PASSED: Final = re.compile(
    r"^(?:(?:PASSED|XPASS) (?P<summary>\S+::\S+)(?: - .*)?"  # the -rA summary
    r"|(?P<verbose>\S+::\S+) (?:PASSED|XPASS)\b.*)$",  # -v
    re.MULTILINE,
)


def _pytest_failures(output: CommandOutput) -> dict[str, str]:
    """Name pytest's failures by node id, from the `FAILED`/`ERROR` lines of its summary.

    >>> _pytest_failures(CommandOutput("FAILED tests/t.py::test_a[1] - assert 1 == 2", "", 1))
    {'tests/t.py::test_a[1]': 'FAILED tests/t.py::test_a[1] - assert 1 == 2'}
    """
    return {match["id"]: match[0] for match in _PYTEST_LINE.finditer(output.stdout)}


_PYTEST_RESULT: Final = re.compile(
    r"\b\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected)\b.* in [\d.]+s\b"
)
_PYTEST_PASSED_COUNT: Final = re.compile(r"\b(?P<count>\d+) passed\b.* in [\d.]+s\b")


def _pytest_passes(output: CommandOutput) -> set[str] | None:
    r"""Name the tests pytest listed as passed; None when it names none it ran (or is not pytest).

    >>> sorted(_pytest_passes(CommandOutput("PASSED t.py::a\nt.py::b PASSED [ 50%]", "", 0)))
    ['t.py::a', 't.py::b']
    >>> _pytest_passes(CommandOutput("..  [100%]\n2 passed in 0.01s", "", 0)) is None
    True
    >>> _pytest_passes(CommandOutput("F  [100%]\n1 failed in 0.01s", "", 1))
    set()
    """
    found = {m["summary"] or m["verbose"] for m in _PYTEST_PASSED.finditer(output.stdout)}
    if found:
        return found
    if not _PYTEST_RESULT.search(output.stdout):
        return None  # not pytest's output: nothing said what passed
    counted = [int(m["count"]) for m in _PYTEST_PASSED_COUNT.finditer(output.stdout)]
    return None if any(counted) else found  # `pytest -q`: passes counted, never named


pytest: Final = Listing("pytest", _pytest_failures, _pytest_passes)
"""pytest's failures by node id (`FAILED`/`ERROR` lines); its passes, `PASSED` and `XPASS` lines."""


def _cases(path: str, output: CommandOutput) -> list[ET.Element]:
    """Read the JUnit report's test cases (none when it is missing or unreadable)."""
    report = Path(output.cwd or ".") / path
    try:
        with report.open("rb") as handle:
            data = handle.read(_MAX_REPORT_BYTES)
        root = ET.fromstring(data)  # noqa: S314 - the check's own report, read capped
    except (OSError, ET.ParseError):
        return []
    return list(root.iter("testcase"))


def _case_id(case: ET.Element) -> str:
    return f"{case.get('classname', '')}::{case.get('name', '')}"


def junit(path: str) -> Listing:
    """Return a parser that reads the JUnit XML report at `path` (from the command's folder).

    A report that is missing or unreadable names nothing (the exit status
    then stands for the failure). Its passes are the test cases with no
    `<failure>`, `<error>` or `<skipped>`.
    """

    def failures(output: CommandOutput) -> dict[str, str]:
        found: dict[str, str] = {}
        for case in _cases(path, output):
            for kind in ("failure", "error"):
                problem = case.find(kind)
                if problem is not None:
                    name = _case_id(case)
                    found[name] = f"{kind.upper()} {name} - {problem.get('message', '')}".strip()
        return found

    def passes(output: CommandOutput) -> list[str]:
        ended = ("failure", "error", "skipped")
        cases = _cases(path, output)
        return [_case_id(case) for case in cases if all(case.find(k) is None for k in ended)]

    return Listing(f"junit({path!r})", failures, passes)


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


def _auto_failures(output: CommandOutput) -> dict[str, str]:
    r"""Name what pytest, ruff and mypy found, for a check command that runs any of them.

    >>> sorted(_auto_failures(CommandOutput("FAILED t.py::a\nb.py:1: error: x  [misc]", "", 1)))
    ['b.py: x  [misc]', 't.py::a']
    """
    return {**_pytest_failures(output), **ruff(output), **mypy(output)}


auto: Final = Listing("auto", _auto_failures, _pytest_passes)
"""What pytest, ruff and mypy found, for a `make check` that runs them all; pytest's passes."""


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


def unnamed(found: Mapping[str, str]) -> bool:
    """Tell whether failures name nothing but the exit status (no parser could say more).

    >>> unnamed({EXIT_STATUS: "exited with 1"}), unnamed({"t.py::a": "FAILED t.py::a"})
    (True, False)
    """
    return list(found) == [EXIT_STATUS]
