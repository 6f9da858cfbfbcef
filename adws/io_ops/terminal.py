r"""Make text that came from an agent or a command safe to show on a terminal, and show it.

An agent's answer or a command's output can hold escape sequences that move
the cursor, retitle the window or hide text; bidirectional overrides can
make a line read differently from what it holds; a lone surrogate cannot
be encoded at all. `escape_controls` writes each of these as a visible
escape (`\x1b`), keeping newlines and tabs; `escape_json` does the same for
JSON text, where the escapes are JSON's own, so a parser still reads the
exact text.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from typing import Final, TextIO

__all__ = ["err", "escape_controls", "escape_json", "write_line"]

_UNSAFE: Final = "\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROL: Final = re.compile(f"[\x00-\x08\x0b-\x1f{_UNSAFE}]")
_JSON_UNSAFE: Final = re.compile(f"[{_UNSAFE}]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"  # noqa: PLR2004 - one byte or not


def escape_controls(text: str) -> str:
    r"""Write control characters (but newline and tab) as visible escapes.

    >>> escape_controls("ok\x1b[2J\tdone\r\n\u202eevil\udce9")
    'ok\\x1b[2J\tdone\\x0d\n\\u202eevil\\udce9'
    """
    return _CONTROL.sub(_escape, text)


def escape_json(text: str) -> str:
    r"""Escape what `json.dumps(..., ensure_ascii=False)` leaves raw but a terminal obeys.

    JSON itself escapes C0 controls; this adds C1 controls, DEL, bidi
    overrides and lone surrogates, as `\uXXXX`, which a JSON parser reads
    back as the same characters.

    >>> escape_json('"\x9b31m\u202e"')
    '"\\u009b31m\\u202e"'
    """
    return _JSON_UNSAFE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


_READER_GONE: Final = frozenset({errno.EPIPE, errno.EIO})
"""A pipe whose reader left (`| head`), a terminal that was closed (after SIGHUP)."""


def write_line(stream: TextIO, text: str) -> None:
    """Print `text` and a newline on `stream`; a reader that has gone is not an error."""
    try:
        print(text, file=stream, flush=True)
    except OSError as exc:
        if exc.errno not in _READER_GONE:
            raise
        # `adws runs | head`, or a closed terminal: the reader has gone. Point the
        # stream at /dev/null, so neither this print nor the interpreter's last flush
        # fails, and carry on: the exit code still tells how the command went.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)


def err(message: str) -> None:
    """Print a line on stderr, control characters escaped."""
    write_line(sys.stderr, escape_controls(message))
