"""Turn a shell template into a script whose values arrive as positional parameters.

A `{key}` in a shell template never becomes shell text. Each distinct key
is passed as a positional parameter (`sh -c SCRIPT sh V1 V2 ...`), copied
into a private variable (`_adws_1`, ...) and shifted away before the
script begins, so the script's own `$1`, `$@`, `$#` and `set --` are its
own; each placeholder is rewritten as the expansion of its variable its
quoting context needs: `"${_adws_1}"` where it stands bare, `${_adws_1}`
inside double quotes or an unquoted heredoc (expansions there are never
re-parsed). The shell then hands the command each value as one argument,
byte for byte; what that command does with it (`eval`, `sh -c "$1"`, bash
arithmetic) is its own business.

Where the shell cannot expand a parameter safely (inside single quotes,
`$'...'`, a quoted heredoc, backticks, `$((...))`, right after a `$` or a
backslash) the template is refused with a `ValueError` that names the step,
the placeholder and the fix. The lexer follows POSIX quoting: single and
double quotes, backslashes, `$(...)` (with nesting), backticks, comments and
here-documents (`<<`, `<<-`, quoted or not).
"""

from __future__ import annotations

import re
from typing import Final, final

import attrs

from adws._exceptions import DefinitionError
from adws.contract.template import TOKEN, Placeholder, parse_placeholder, refuse_brace

__all__ = ["ShellScript", "compile_script"]

_HEREDOC: Final = re.compile(r"<<(-?)[ \t]*((?:[^\s;&|<>()]|\\.)+)")

_FIXES: Final = {
    "single": "single quotes keep a value from being expanded: use double quotes",
    "ansi": "$'...' keeps a value from being expanded: use double quotes",
    "heredoc_quoted": "a quoted heredoc delimiter keeps a value from being expanded: "
    "write the delimiter unquoted (<<EOF)",
    "backtick": "backticks re-parse their contents: use $(...) instead",
    "arith": "a value inside $((...)) would be evaluated as arithmetic: "
    "pass it to a command instead",
    "dollar": "write {key} without a $ in front: adws expands it",
    "backslash": "a backslash right before a placeholder would escape its expansion: remove it",
}


@final
@attrs.frozen
class ShellScript:
    """A script to run with `sh -c`, and the placeholders its parameters hold, in order.

    The values go right after the script's `$0`; the script starts by moving
    them into its private variables and shifting them away.
    """

    script: str
    placeholders: tuple[Placeholder, ...]


@final
class _Lexer:
    """Track the quoting context of a shell script as it is read, one character at a time."""

    def __init__(self) -> None:
        # The stack of open contexts: "top", "dq", "single", "ansi", "cmd", "backtick",
        # "arith", "heredoc", "heredoc_quoted", "comment". "cmd" carries its paren depth.
        self.stack: list[str] = ["top"]
        self.depth: list[int] = []
        self.escaped = False
        self.line = ""  # the current line, for heredoc delimiters and comments
        self.pending: list[tuple[str, bool, bool]] = []  # (delimiter, quoted, strip_tabs)
        self.heredoc = ("", False)

    @property
    def context(self) -> str:
        return self.stack[-1]

    def _start_heredocs(self) -> None:
        if self.pending:
            delimiter, quoted, strip = self.pending[0]
            self.stack.append("heredoc_quoted" if quoted else "heredoc")
            self.heredoc = (delimiter, strip)

    def _end_of_line(self) -> None:
        context = self.context
        line = self.line
        self.line = ""
        if context in {"heredoc", "heredoc_quoted"}:
            delimiter, strip = self.heredoc
            if (line.lstrip("\t") if strip else line) == delimiter:
                self.stack.pop()
                self.pending.pop(0)
                self._start_heredocs()
            return
        if context == "comment":
            self.stack.pop()
        if self.context in {"top", "cmd"}:
            self._start_heredocs()

    def _word_context(self, char: str, following: str) -> None:
        """Handle a character in unquoted shell text (top level or inside `$(...)`)."""
        if char == "'":
            self.stack.append("single")
        elif char == '"':
            self.stack.append("dq")
        elif char == "#" and (not self.line[:-1] or self.line[-2] in " \t;&|()"):
            self.stack.append("comment")
        elif char == "<" and following.startswith("<") and not self.line.endswith("<<"):
            match = _HEREDOC.match("<" + following)
            if match is not None and not following.startswith("<<"):
                word = match.group(2)
                quoted = any(quote in word for quote in "'\"\\")
                delimiter = re.sub(r"\\(.)", r"\1", word).replace("'", "").replace('"', "")
                self.pending.append((delimiter, quoted, bool(match.group(1))))
        elif self.context == "cmd" and char == "(":
            self.depth[-1] += 1
        elif self.context == "cmd" and char == ")":
            self.depth[-1] -= 1
            if self.depth[-1] == 0:
                self.depth.pop()
                self.stack.pop()

    def feed(self, char: str, following: str) -> None:
        """Read one character; `following` is the text after it (for lookahead)."""
        if self.escaped:
            self.escaped = False
            self.line = "" if char == "\n" else self.line + char
            return
        if char == "\n":
            self._end_of_line()
            return
        self.line += char
        _HANDLERS.get(self.context, _Lexer._code)(self, char, following)

    def _ignore(self, _char: str, _following: str) -> None:
        """Read a comment or a quoted heredoc's body: nothing in it is special."""

    def _single(self, char: str, _following: str) -> None:
        if char == "'":
            self.stack.pop()

    def _ansi(self, char: str, _following: str) -> None:
        if char == "'":
            self.stack.pop()
        elif char == "\\":
            self.escaped = True

    def _backtick(self, char: str, _following: str) -> None:
        if char == "`":
            self.stack.pop()
        elif char == "\\":
            self.escaped = True

    def _arith(self, char: str, following: str) -> None:
        if char == ")" and following.startswith(")"):
            self.stack[-1] = "arith_end"

    def _pop(self, _char: str, _following: str) -> None:
        self.stack.pop()

    def _open_cmd(self, _char: str, _following: str) -> None:
        self.stack[-1] = "cmd"
        self.depth.append(1)

    def _open_ansi(self, _char: str, _following: str) -> None:
        self.stack[-1] = "ansi"

    def _special(self, char: str, following: str, *, ansi: bool) -> bool:
        """Handle a backslash or a `$` that opens something; tell whether it did."""
        if char == "\\":
            self.escaped = True
        elif char == "$" and following.startswith("(("):
            self.stack.append("arith")
        elif char == "$" and following.startswith("("):
            self.stack.append("cmd_open")
        elif ansi and char == "$" and following.startswith("'"):
            self.stack.append("ansi_open")
        elif char == "`":
            self.stack.append("backtick")
        else:
            return False
        return True

    def _double(self, char: str, following: str) -> None:
        """Read inside double quotes or an unquoted heredoc's body."""
        special = self._special(char, following, ansi=False)
        if not special and char == '"' and self.context == "dq":
            self.stack.pop()

    def _code(self, char: str, following: str) -> None:
        """Read unquoted shell text (top level or inside `$(...)`)."""
        if not self._special(char, following, ansi=True):
            self._word_context(char, following)

    def refusal(self) -> str | None:
        """Say why a placeholder cannot stand here, or None when it can."""
        if self.escaped:
            return "backslash"
        if self.line.endswith("$"):
            return "dollar"
        context = self.context
        if context in {"single", "ansi", "heredoc_quoted", "backtick", "arith"}:
            return context
        return None

    def expansion(self, number: int) -> str:
        """Return the expansion of value `number`'s private variable for the current context."""
        if self.context in {"dq", "heredoc", "comment"}:
            return f"${{_adws_{number}}}"
        return f'"${{_adws_{number}}}"'


_HANDLERS: Final = {
    "comment": _Lexer._ignore,  # noqa: SLF001 - the lexer's own dispatch table
    "heredoc_quoted": _Lexer._ignore,  # noqa: SLF001 - as above
    "single": _Lexer._single,  # noqa: SLF001 - as above
    "ansi": _Lexer._ansi,  # noqa: SLF001 - as above
    "backtick": _Lexer._backtick,  # noqa: SLF001 - as above
    "arith": _Lexer._arith,  # noqa: SLF001 - as above
    "arith_end": _Lexer._pop,  # noqa: SLF001 - as above
    "cmd_open": _Lexer._open_cmd,  # noqa: SLF001 - as above
    "ansi_open": _Lexer._open_ansi,  # noqa: SLF001 - as above
    "dq": _Lexer._double,  # noqa: SLF001 - as above
    "heredoc": _Lexer._double,  # noqa: SLF001 - as above
}


def compile_script(template: str, *, step_name: str) -> ShellScript:
    """Rewrite each placeholder of a shell template as a positional parameter expansion.

    `{{` and `}}` stand for literal braces, and `${...}` that is not a
    placeholder (`${HOME}`, `${1}`, `${x:-default}`) is the shell's own.
    Raises `ValueError`, naming the step and the placeholder, where a value
    could not be expanded safely, or where a brace group looks like a
    placeholder but is not a valid one. Each distinct placeholder (a key or
    a path into one) is one parameter.

    >>> print(compile_script('git commit -m "{summary}" && echo {summary} {t.label}', step_name="s").script)
    _adws_1=$1 _adws_2=$2; shift 2; git commit -m "${_adws_1}" && echo "${_adws_1}" "${_adws_2}"
    >>> compile_script("echo '{x}'", step_name="s")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: step 's': placeholder {x} is inside single quotes, where the shell cannot expand it (single quotes keep a value from being expanded: use double quotes)
    """  # noqa: E501
    lexer = _Lexer()
    numbers: dict[str, int] = {}
    found: list[Placeholder] = []
    parts: list[str] = []
    position = 0

    def read(text: str) -> None:
        for index, char in enumerate(text):
            lexer.feed(char, text[index + 1 :])
        parts.append(text)

    for match in TOKEN.finditer(template):
        literal = template[position : match.start()]
        position = match.end()
        read(literal)
        inside = match.group(1)
        if inside is None:
            read(match.group(0)[0])
            continue
        placeholder = parse_placeholder(inside)
        if placeholder is None and template[: match.start()].endswith("$"):
            read(match.group(0))  # the shell's own ${NAME}
            continue
        if placeholder is None:
            refuse_brace(inside, owner=f"step {step_name!r}", what="the command")
        refused = lexer.refusal()
        if refused is not None:
            where = {
                "single": "inside single quotes",
                "ansi": "inside $'...'",
                "heredoc_quoted": "in a heredoc with a quoted delimiter",
                "backtick": "inside backticks",
                "arith": "inside $((...))",
                "dollar": "right after a $",
                "backslash": "right after a backslash",
            }[refused]
            fix = _FIXES[refused].replace("{key}", "{" + inside + "}")
            msg = (
                f"step {step_name!r}: placeholder {{{inside}}} is {where}, where the shell "
                f"cannot expand it ({fix})"
            )
            raise DefinitionError(msg)
        if inside not in numbers:
            numbers[inside] = len(numbers) + 1
            found.append(placeholder)
        parts.append(lexer.expansion(numbers[inside]))
    read(template[position:])
    if not found:
        return ShellScript("".join(parts), ())
    copies = " ".join(f"_adws_{number}=${number}" for number in range(1, len(found) + 1))
    return ShellScript(f"{copies}; shift {len(found)}; " + "".join(parts), tuple(found))
