"""Find the script in an argv that starts a shell with `-c`, as the shell itself would.

`shell_step(name, ["bash", "-o", "pipefail", "-ec", "echo {x}"])` runs a
script: its placeholders must become positional parameters, or a value
would be shell code. So the argv is read the way the programs read it:

- the known wrappers first (`env`, `timeout`, `nice`, `nohup`, `stdbuf`,
  `setsid`, `flock`, `ionice`, `xargs`, `chroot`, `unshare`, `sudo`, `su`,
  `busybox`), with their options, their option arguments (`flock -w 5`,
  `ionice -c 3`, `timeout -s KILL`) and their operands (`env`'s
  `NAME=VALUE`s, `timeout`'s duration, `flock`'s lock, `chroot`'s folder);
- then a shell (`sh`, `bash`, `dash`, `zsh`, `ksh`, `ash`, `hush`): option
  clusters (`-ec`: `c` anywhere in a `-` cluster means "run a script";
  `+c` does not), the options that take a value (`-o NAME`, `+o`, bash's
  `-O`/`+O`, `--rcfile FILE`, `--init-file FILE`, zsh's `--emulate MODE`;
  an `o` or `O` inside a cluster takes the next argument too), the long
  options that take none, and `--` or `-` ending the options.

An option no rule covers (a wrapper's `env -S`, an unknown `--long`
option) makes the script's place unknowable: `ArgvError`, at definition
time, rather than a guess that could run a value as code. A wrapper that
hands a script to a shell itself (`flock LOCK -c SCRIPT`, `su -c SCRIPT
USER`) leaves no room for the parameters that carry the values:
`NoParametersError`. A program adws does not know, with a shell and `-c` later
in its arguments (`docker exec box sh -c SCRIPT`), may hand that script to
a shell in any way: `HiddenShellError`, whatever the command holds.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import TYPE_CHECKING, Final

from adws._exceptions import AdwsError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "SHELLS",
    "WRAPPERS",
    "ArgvError",
    "HiddenShellError",
    "NoParametersError",
    "locate_script",
]

SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "hush"})
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


class ArgvError(AdwsError, ValueError):
    """An argv whose shell script cannot be located; the message says which option and why."""


class NoParametersError(ArgvError):
    """A wrapper hands a script to a shell itself, with no room for the values' parameters."""


class HiddenShellError(AdwsError, ValueError):
    """A program adws does not know has a shell with `-c` in its arguments; the message names it."""


def _option_width(
    name: str, option: str, flags: frozenset[str], valued: frozenset[str], optional: frozenset[str]
) -> int:
    """Return how many arguments the wrapper option `option` takes up (1 or 2), as getopt reads it.

    `flags` take no value; `valued` take the next argument (or `--opt=value`,
    or one glued on a short option: `-oL`); `optional` are long options
    whose value can only be glued on (`--mount=FILE`). Short flags may be
    clustered (`-mpf`), a valued one last (`-xw5`, `-xw 5`). Anything else
    is an option the wrapper may read differently: refused.
    """
    if option.startswith("--"):
        key, glued, _ = option.partition("=")
        if glued and (key in valued or key in optional):
            return 1
        if not glued and (key in flags or key in optional):
            return 1
        if not glued and key in valued:
            return 2
    elif name == "nice" and option[1:].isdigit():  # nice -10
        return 1
    else:
        for at, letter in enumerate(option[1:], start=2):
            if f"-{letter}" in valued:
                return 1 if option[at:] else 2
            if f"-{letter}" not in flags:
                break
        else:
            return 1
    msg = f"option {option!r} of {name!r} is not one adws knows"
    raise ArgvError(msg)


def _wrapper_options(
    argv: tuple[str, ...],
    index: int,
    flags: frozenset[str],
    valued: frozenset[str],
    optional: frozenset[str] = frozenset(),
) -> int:
    """Skip the options of the wrapper at `index - 1`; return the index of its first operand."""
    name = PurePath(argv[index - 1]).name
    while index < len(argv) and argv[index].startswith("-") and argv[index] != "-":
        if argv[index] == "--":
            return index + 1
        index += _option_width(name, argv[index], flags, valued, optional)
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


def _flock(argv: tuple[str, ...], index: int) -> int:
    flags = frozenset(
        {"-s", "--shared", "-x", "-e", "--exclusive", "-n", "--nb", "--nonblock", "-u", "--unlock"}
        | {"-o", "--close", "-F", "--no-fork", "--verbose"}
    )
    valued = frozenset({"-w", "--wait", "--timeout", "-E", "--conflict-exit-code"})
    index = _wrapper_options(argv, index, flags, valued) + 1  # past the lock's file or folder
    if index < len(argv) and argv[index] in {"-c", "--command"}:
        msg = (
            "flock's -c hands its script to a shell with no room for the values:"
            " write ['flock', LOCK, 'sh', '-c', SCRIPT]"
        )
        raise NoParametersError(msg)
    return index


def _ionice(argv: tuple[str, ...], index: int) -> int:
    valued = frozenset({"-c", "--class", "-n", "--classdata"})
    return _wrapper_options(argv, index, frozenset({"-t", "--ignore"}), valued)


def _xargs(argv: tuple[str, ...], index: int) -> int:
    flags = frozenset(
        {"-0", "--null", "-r", "--no-run-if-empty", "-t", "--verbose", "-x", "--exit"}
        | {"-p", "--interactive", "-o", "--open-tty"}
    )
    valued = frozenset(
        {"-a", "--arg-file", "-d", "--delimiter", "-E", "-n", "--max-args", "-P", "--max-procs"}
        | {"-s", "--max-chars", "-L", "--max-lines", "--process-slot-var"}
    )
    return _wrapper_options(argv, index, flags, valued)


def _chroot(argv: tuple[str, ...], index: int) -> int:
    valued = frozenset({"--groups", "--userspec"})
    return _wrapper_options(argv, index, frozenset({"--skip-chdir"}), valued) + 1  # the new root


def _unshare(argv: tuple[str, ...], index: int) -> int:
    namespaces = frozenset({"--mount", "--uts", "--ipc", "--net", "--pid", "--user", "--cgroup"})
    optional = namespaces | {"--time", "--mount-proc", "--kill-child", "--map-auto"}
    flags = frozenset(
        {"-m", "-u", "-i", "-n", "-p", "-U", "-C", "-T", "-f", "--fork", "-r", "-c"}
        | {"--map-root-user", "--map-current-user", "--keep-caps"}
    )
    valued = frozenset(
        {"--propagation", "--setgroups", "-R", "--root", "-w", "--wd", "-S", "--setuid"}
        | {"-G", "--setgid", "--monotonic", "--boottime", "--map-user", "--map-group"}
    )
    return _wrapper_options(argv, index, flags, valued, optional)


def _sudo(argv: tuple[str, ...], index: int) -> int:
    flags = frozenset(
        {"-A", "--askpass", "-b", "--background", "-E", "-H", "--set-home", "-n", "-P", "-S"}
        | {"--non-interactive", "--preserve-groups", "--stdin", "-B", "--bell", "-N", "-k"}
        | {"--no-update", "--reset-timestamp"}
    )
    valued = frozenset(
        {"-u", "--user", "-g", "--group", "-C", "--close-from", "-D", "--chdir", "-p", "-r"}
        | {"--prompt", "--role", "-t", "--type", "-T", "--command-timeout", "-U", "-R"}
        | {"--other-user", "--chroot"}
    )
    return _wrapper_options(argv, index, flags, valued, frozenset({"--preserve-env"}))


def _su(argv: tuple[str, ...], index: int) -> int:
    """Read `su [OPTIONS] [-] [USER]`; a script (`-c`) or arguments for the user's shell: refused.

    su hands both to the user's login shell, and reads options anywhere
    before `--` (a value after the user could be one), so adws cannot pass
    the values as parameters.
    """
    flags = frozenset(
        {"-l", "--login", "-m", "-p", "--preserve-environment", "-f", "--fast", "-P", "--pty"}
    )
    valued = frozenset(
        {"-s", "--shell", "-g", "--group", "-G", "--supp-group", "-w", "--whitelist-environment"}
    )
    commands = ("-c", "--command", "--session-command")
    operands: list[str] = []
    while index < len(argv):
        part = argv[index]
        if part == "--":
            operands.extend(argv[index + 1 :])
            break
        if part.startswith(commands) or (part[:2] != "--" and part[:1] == "-" and "c" in part):
            msg = (
                "su's -c hands its script to the user's login shell with no room for the"
                " values: write ['sudo', '-u', USER, 'sh', '-c', SCRIPT]"
            )
            raise NoParametersError(msg)
        if part.startswith("-") and part != "-":
            index += _option_width("su", part, flags, valued, frozenset())
        else:
            operands.append(part)
            index += 1
    if len(operands) > 1 + (operands[:1] == ["-"]):
        msg = "su hands the arguments after the user to the user's login shell"
        raise NoParametersError(msg)
    return len(argv)


def _busybox(argv: tuple[str, ...], index: int) -> int:
    return _wrapper_options(argv, index, frozenset(), frozenset())  # the applet comes next


WRAPPERS: Final[dict[str, Callable[[tuple[str, ...], int], int]]] = {
    "env": _env,
    "timeout": _timeout,
    "nice": _nice,
    "nohup": _nohup,
    "stdbuf": _stdbuf,
    "setsid": _setsid,
    "flock": _flock,
    "ionice": _ionice,
    "xargs": _xargs,
    "chroot": _chroot,
    "unshare": _unshare,
    "sudo": _sudo,
    "su": _su,
    "busybox": _busybox,
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


def _refuse_hidden_shell(argv: tuple[str, ...], index: int) -> None:
    """Refuse an unknown program at `index` whose arguments start a shell with `-c` later on."""
    for at in range(index + 1, len(argv)):
        if PurePath(argv[at]).name not in SHELLS:
            continue
        try:
            found = _shell_script(argv, at + 1)
        except ArgvError:
            found = at
        if found is not None:
            program = PurePath(argv[index]).name
            msg = (
                f"{program!r} is neither a shell nor a wrapper adws knows, and its arguments"
                f" start {PurePath(argv[at]).name!r} with -c: adws cannot tell how {program!r}"
                " hands that script on, so a value could run as shell code there"
            )
            raise HiddenShellError(msg)


def locate_script(argv: tuple[str, ...]) -> int | None:
    """Return the index of the script an argv runs with a shell's `-c`, or None if it runs none.

    Raises `ArgvError` when a wrapper or a shell is given an option whose
    effect on where the script stands is unknown (`NoParametersError` when a
    wrapper runs the script itself), and `HiddenShellError` when a program that
    is neither a shell nor a known wrapper has a shell with `-c` later on.

    >>> locate_script(("bash", "--rcfile", "/dev/null", "-c", "echo {x}"))
    4
    >>> locate_script(("env", "-i", "LANG=C", "timeout", "10", "sh", "-ec", "echo {x}"))
    7
    >>> locate_script(("flock", "-w", "5", "/tmp/lock", "ionice", "-c", "3", "sh", "-c", "x"))
    9
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
            _refuse_hidden_shell(argv, index)
            return None
        index = wrapper(argv, index + 1)
    return None
