"""Refuse a value where a program adws does not know may run it as code: after `-c`, `-e`, ....

`shell_step("s", ["rbash", "-c", "echo {x}"])` hands `echo VALUE` to
rbash as a script: the value is code there, whatever adws does with its
characters. adws compiles the scripts of the shells it knows
(`adws.shell._argv.SHELLS`) so that each value is a parameter; any other
program's `-c` (`rbash`, `mksh`, `yash`, `posh`, `fish`, `csh`, `tcsh`,
`python`, `perl`, ...), `-e` (`perl`, `node`, `ruby`, `sed`, ...),
`--command` or `--eval` may run its argument as code, so a placeholder
there is refused when the step is defined, with the rewrite that passes
the value as an argument after the code instead (`["rbash", "-c", 'echo
"$1"', "rbash", "{x}"]`).

The argv is read as an attacker would write it: behind the wrappers adws
knows (`env`, `timeout`, ...), the program named by any path, the option
as its own argument (`-c CODE`), glued (`-cCODE`, `--eval=CODE`) or in
a cluster, for the programs that take clusters (`mksh -ec CODE`, `-cx
CODE`, perl's `-le CODE`). A few other
options of the common interpreters choose code too (perl's `-E` and `-M`,
`node -p`/`--print`/`-r`/`--require`/`--import`, `python -m`, `ruby -r`)
and are read the same way. A handful of everyday programs take data
after `-c` or `-e` (grep's pattern, head's count, wc's flag: `DATA`);
for any other, write the option's long form when it takes data there
(docker's `-e NAME=V` as `--env=NAME=V`).
"""

from __future__ import annotations

import re
from pathlib import PurePath
from typing import Final

from adws._exceptions import DefinitionError
from adws.contract.template import template_paths
from adws.shell._argv import SHELLS, WRAPPERS

__all__ = ["CODE_OPTIONS", "DATA", "CodeValueError", "refuse_code_values"]

CODE_OPTIONS: Final = frozenset({"-c", "-e", "--command", "--eval"})
"""The options whose argument a program may run as code (DESIGN's list)."""
_MORE: Final[dict[str, frozenset[str]]] = {
    "perl": frozenset({"-E", "-M"}),
    "node": frozenset({"-p", "--print", "-r", "--require", "--import"}),
    "python": frozenset({"-m"}),
    "ruby": frozenset({"-r"}),
}
"""Other options of the common interpreters that choose code (by the program's family)."""
_CHOOSES: Final = frozenset({"-M", "-m", "-r", "--require", "--import"})
"""Those of them whose argument names the code to load (a module, a file), not the code."""
DATA: Final[dict[str, frozenset[str]]] = {
    **dict.fromkeys(("grep", "egrep", "fgrep", "zgrep", "rg"), frozenset({"-c", "-e"})),
    **dict.fromkeys(("head", "tail", "cut"), frozenset({"-c"})),
    **dict.fromkeys(("wc", "sort", "uniq", "ls", "touch", "tar"), frozenset({"-c"})),
    **dict.fromkeys(("gzip", "gunzip", "zcat", "bzip2", "xz", "zstd"), frozenset({"-c"})),
    "diff": frozenset({"-c", "-e"}),
    "echo": frozenset({"-e"}),
}
"""Programs adws knows to take data (or nothing: a flag) after these options."""
_FAMILIES: Final = (
    ("python", re.compile(r"(python|pypy)[0-9.]*")),
    ("perl", re.compile(r"perl[0-9.]*")),
    ("node", re.compile(r"node(js)?[0-9.]*")),
    ("ruby", re.compile(r"ruby[0-9.]*")),
    ("fish", re.compile(r"fish")),
    ("csh", re.compile(r"t?csh")),
)
_SH_LIKE: Final = frozenset({"rbash", "mksh", "yash", "posh", "lksh", "pdksh", "oksh", "ksh93"})
_CLUSTERS: Final = frozenset({"sh", "fish", "csh", "python", "perl", "ruby"})
"""The families whose short options cluster (`-ec`, `-le`): a code letter counts anywhere."""
_READS: Final = {
    "python": ("import sys; print(sys.argv[1])", "sys.argv[1]", ()),
    "perl": ("print $ARGV[0]", "$ARGV[0]", ("--",)),
    "node": ("console.log(process.argv[1])", "process.argv[1]", ("--",)),
    "ruby": ("puts ARGV[0]", "ARGV[0]", ("--",)),
    "fish": ("echo $argv[1]", "$argv[1]", ("--",)),
    "csh": ("echo $argv[1]:q", "$argv[1]", ()),
}
"""How a program of each family reads the values given after its code, and what goes first.

perl, node, ruby and fish read options after the code too (`perl -e CODE
-0` is perl's `-0`, `node -e CODE --version` prints node's version): `--`
ends them, and they do not pass it on. python and csh take every argument
after the code as its own: a `--` would be the first value.
"""


class CodeValueError(DefinitionError):
    """A placeholder where a program may run its value as code; the message says the rewrite."""


def family(program: str) -> str:
    """Name the family of a program, for its code options and its rewrite.

    >>> family("/usr/bin/python3.12"), family("perl5.36"), family("rbash"), family("jq")
    ('python', 'perl', 'sh', 'jq')
    """
    name = PurePath(program).name
    if name in _SH_LIKE:
        return "sh"
    return next((known for known, like in _FAMILIES if like.fullmatch(name)), name)


def _program(argv: tuple[str, ...]) -> int:
    """Return the index of the program the argv runs, behind the wrappers adws knows."""
    index = 0
    while index < len(argv) and PurePath(argv[index]).name in WRAPPERS:
        index = WRAPPERS[PurePath(argv[index]).name](argv, index + 1)
    return index


def _code_flags(data: frozenset[str], more: frozenset[str]) -> frozenset[str]:
    return (CODE_OPTIONS | more) - data


def _takes_code(option: str, flags: frozenset[str], *, clusters: bool) -> str | None:
    """Return the code option `option` is, or holds in a cluster (`-ec`, `-Bc`), else None.

    Clusters are read only for the programs that take them (shells and the
    interpreters): elsewhere `-name` or `-cp` is one option of its own.
    """
    if option in flags:
        return option
    if clusters and option[:1] == "-" and option[1:].isalnum():
        return next((f"-{letter}" for letter in option[1:] if f"-{letter}" in flags), None)
    return None


def _glued(option: str, flags: frozenset[str], *, clusters: bool) -> tuple[str, str] | None:
    """Return the code option an argument starts with and the code glued on, else None.

    `--eval=CODE`, `-cCODE`; for the programs that take clusters, a code
    letter anywhere in the leading letters too (perl's `-leCODE`).
    """
    if option.startswith("--"):
        long, equals, code = option.partition("=")
        return (long, code) if equals and long in flags else None
    letters = re.match(r"-([A-Za-z0-9]+)", option)
    run = letters.group(1) if letters else ""
    for at, letter in enumerate(run if clusters else run[:1]):
        if f"-{letter}" in flags:
            return f"-{letter}", option[at + 2 :]
    return None


def _holds(part: str) -> bool:
    return bool(template_paths(part))


def _rewrite(program: str, flag: str, option: str, code: str) -> str:
    """Suggest the argv that passes the values as arguments after the code, not in it.

    `flag` is the code option found, `option` the argument that holds it as
    written (a cluster stays whole: `-le`).
    """
    name = PurePath(program).name
    if flag in _CHOOSES:
        return f"name what {name} runs in the command itself, never in a value"
    found = template_paths(code)
    values = [f"{{{placeholder.text}}}" for placeholder in found]
    if values and code.strip() == values[0]:
        return (
            "to run code held in an input on purpose, write"
            f" shell_step(NAME, script_from={found[0].key!r})"
        )
    kind = family(program)
    if kind in _READS:
        reads, where, first = _READS[kind]
        return (
            f"write {[program, option, reads, *first, *values]!r} (the code reads each value"
            f" from the arguments after it: {where}, ...)"
        )
    if kind == "sh":
        script = code
        for number, value in enumerate(values, start=1):
            script = script.replace(value, f'"${number}"')
        shown = [program, option, script, name, *values]
        return f"write {shown!r} (each value after the script is its $1, $2, ...)"
    return (
        f"pass each value as an argument of its own after the code, for the code to read;"
        f" or, if {name} takes data after {option}, write that option's long form"
    )


def refuse_code_values(argv: tuple[str, ...]) -> None:
    """Refuse a placeholder in an argument a program adws does not know may run as code.

    The argv is one `adws.shell._argv.locate_script` found no script of a
    known shell in (a known shell's own options are its business).
    Raises `CodeValueError`, naming the argument, the program, the option
    and the rewrite.

    >>> refuse_code_values(("grep", "-e", "{pattern}", "notes.txt"))
    >>> refuse_code_values(("rbash", "-c", "echo {x}"))
    Traceback (most recent call last):
    ...
    adws.shell._code.CodeValueError: argument 2 of the command ('echo {x}') follows rbash's -c, which may run it as code, so a value there would be code: write ['rbash', '-c', 'echo "$1"', 'rbash', '{x}'] (each value after the script is its $1, $2, ...)
    """  # noqa: E501
    at = _program(argv)
    if at >= len(argv) or PurePath(argv[at]).name in SHELLS:
        return
    program = argv[at]
    name, kind = PurePath(program).name, family(program)
    flags = _code_flags(DATA.get(name, frozenset()), _MORE.get(kind, frozenset()))
    clusters = kind in _CLUSTERS
    for index in range(at + 1, len(argv)):
        part = argv[index]
        found = _glued(part, flags, clusters=clusters) if _holds(part) else None
        where = index
        if found is None and index + 1 < len(argv) and _holds(argv[index + 1]):
            option = _takes_code(part, flags, clusters=clusters)
            where = index + 1
            found = None if option is None else (option, argv[where])
        if found is not None:
            option, code = found
            given = part if where > index else option
            msg = (
                f"argument {where} of the command ({argv[where]!r}) follows {name}'s {option},"
                f" which may run it as code, so a value there would be code:"
                f" {_rewrite(program, option, given, code)}"
            )
            raise CodeValueError(msg)
