"""Find the script in an argv that starts a shell with `-c`, as the shell itself would.

`shell_step(name, ["bash", "-o", "pipefail", "-ec", "echo {x}"])` runs a
script: its placeholders must become positional parameters, or a value
would be shell code. So the argv is read the way the programs read it:

- the common wrappers first (`env`, `timeout`, `nice`, `nohup`, `stdbuf`,
  `setsid`), with their options and operands (`env`'s `NAME=VALUE`s,
  `timeout`'s duration);
- then a shell (`sh`, `bash`, `dash`, `zsh`, `ksh`): option clusters
  (`-ec`: `c` anywhere in a `-` cluster means "run a script"; `+c` does
  not), the options that take a value (`-o NAME`, `+o`, bash's `-O`/`+O`,
  `--rcfile FILE`, `--init-file FILE`, zsh's `--emulate MODE`; an `o` or
  `O` inside a cluster takes the next argument too), the long options that
  take none, and `--` or `-` ending the options.

An option no rule covers (a wrapper's `env -S`, an unknown `--long`
option) makes the script's place unknowable: `ArgvError`, at definition
time, rather than a guess that could run a value as code.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Final

__all__ = ["SHELLS", "WRAPPERS", "ArgvError", "locate_script"]

SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
"""Programs whose `-c` argument is a script: its placeholders are parameters too."""

_SHELL_VALUE_OPTIONS: Final = frozenset({"-o", "+o", "-O", "+O"})
_SHELL_LONG_WITH_VALUE: Final = frozenset({"--rcfile", "--init-file", "--emulate"})
_SHELL_LONG: Final = frozenset(
    {
        "--debug",
        "--debugger",
        "--dump-po-strings",
        "--dump-strings",
        "--help",
        "--login",
        "--noediting",
        "--noprofile",
        "--norc",
        "--posix",
        "--pretty-print",
        "--restricted",
        "--verbose",
        "--version",
    }
)


class ArgvError(ValueError):
    """An argv whose shell script cannot be located; the message says which option and why."""


def _wrapper_options(
    argv: tuple[str, ...], index: int, flags: frozenset[str], valued: frozenset[str]
) -> int:
    """Skip the options of the wrapper at `index - 1`; return the index of its first operand.

    `flags` take no value; `valued` take the next argument (or `--opt=value`,
    or a short one glued on: `-oL`). Anything else starting with `-` is an
    option the wrapper may read differently: refused.
    """
    name = PurePath(argv[index - 1]).name
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
        option = argv[index]
        if option == "--":
            return index + 1
        glued = (
            (option.startswith("--") and option.split("=", 1)[0] in valued and "=" in option)
            or (not option.startswith("--") and option[:2] in valued and option[2:] != "")  # -oL
            or (name == "nice" and option[1:].lstrip("-").isdigit())  # nice -10
        )
        if option in flags or glued:
            index += 1
        elif option in valued:
            index += 2
        else:
            msg = f"option {option!r} of {name!r} is not one adws knows"
            raise ArgvError(msg)
    return index


def _env(argv: tuple[str, ...], index: int) -> int:
    index = _wrapper_options(
        argv,
        index,
        frozenset({"-i", "--ignore-environment", "-0", "--null", "-v", "--debug"}),
        frozenset({"-u", "--unset", "-C", "--chdir"}),
    )
    while index < len(argv) and "=" in argv[index] and not argv[index].startswith("-"):
        index += 1  # NAME=VALUE assignments
    return index


def _timeout(argv: tuple[str, ...], index: int) -> int:
    index = _wrapper_options(
        argv,
        index,
        frozenset({"--preserve-status", "--foreground", "-v", "--verbose"}),
        frozenset({"-s", "--signal", "-k", "--kill-after"}),
    )
    return index + 1  # the duration


def _nice(argv: tuple[str, ...], index: int) -> int:
    return _wrapper_options(argv, index, frozenset(), frozenset({"-n", "--adjustment"}))


def _nohup(argv: tuple[str, ...], index: int) -> int:
    return _wrapper_options(argv, index, frozenset(), frozenset())


def _stdbuf(argv: tuple[str, ...], index: int) -> int:
    valued = frozenset({"-i", "-o", "-e", "--input", "--output", "--error"})
    return _wrapper_options(argv, index, frozenset(), valued)


def _setsid(argv: tuple[str, ...], index: int) -> int:
    flags = frozenset({"-c", "--ctty", "-f", "--fork", "-w", "--wait"})
    return _wrapper_options(argv, index, flags, frozenset())


WRAPPERS: Final = {
    "env": _env,
    "timeout": _timeout,
    "nice": _nice,
    "nohup": _nohup,
    "stdbuf": _stdbuf,
    "setsid": _setsid,
}
"""Programs that run the command after their options: a shell behind them still runs a script."""


def _shell_script(argv: tuple[str, ...], index: int) -> int | None:
    """Find the script of a shell whose name is at `index - 1`, or None when it runs none."""
    shell = PurePath(argv[index - 1]).name
    takes_script = False
    while index < len(argv) and argv[index][:1] in {"-", "+"}:
        option = argv[index]
        index += 1
        if option in {"--", "-"}:
            break
        if option.startswith("--"):
            if option in _SHELL_LONG_WITH_VALUE:
                index += 1
            elif option not in _SHELL_LONG:
                msg = f"option {option!r} of {shell!r} is not one adws knows"
                raise ArgvError(msg)
            continue
        if option in _SHELL_VALUE_OPTIONS:
            index += 1
            continue
        letters = option[1:]
        takes_script = takes_script or (option[0] == "-" and "c" in letters)
        index += sum(1 for letter in letters if letter in "oO")
    return index if takes_script and index < len(argv) else None


def locate_script(argv: tuple[str, ...]) -> int | None:
    """Return the index of the script an argv runs with a shell's `-c`, or None if it runs none.

    Raises `ArgvError` when a wrapper or a shell is given an option whose
    effect on where the script stands is unknown.

    >>> locate_script(("bash", "--rcfile", "/dev/null", "-c", "echo {x}"))
    4
    >>> locate_script(("env", "-i", "LANG=C", "timeout", "10", "sh", "-ec", "echo {x}"))
    7
    >>> locate_script(("bash", "-o", "pipefail", "-ec", "echo {x}"))
    4
    >>> locate_script(("sh", "script.sh", "{x}")) is None
    True
    """
    index = 0
    while index < len(argv):
        name = PurePath(argv[index]).name
        if name in SHELLS:
            return _shell_script(argv, index + 1)
        wrapper = WRAPPERS.get(name)
        if wrapper is None:
            return None
        index = wrapper(argv, index + 1)
    return None
