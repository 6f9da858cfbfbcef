"""Small pieces every drawing shares: durations, one-line errors, tables, costs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from adws.render.words import waiting_for, waits

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from adws.engine.errors import PipelineError
    from adws.engine.usage import Usage

__all__ = [
    "ONE_LINE",
    "cost_cell",
    "head_and_tail",
    "indent",
    "seconds",
    "short",
    "sum_usage",
    "table",
]

ONE_LINE: Final = 240


def short(error: PipelineError) -> str:
    r"""Say what went wrong in one line: the kind and the message's first line, cut to fit.

    A colon that introduced the lines below is dropped: they are shown under it. A pause
    for approval is no failure: it says what the run waits for.

    >>> from adws import PipelineError
    >>> short(PipelineError("s", "ShellFailed", "`x` exited with 4:\nboom"))
    'ShellFailed: `x` exited with 4'
    >>> short(PipelineError("s", "AwaitingApproval", "Merge?"))
    'waiting for approval: Merge?'
    """
    if waits(error):
        text = waiting_for(error)
    else:
        lines = error.message.strip().splitlines()
        first = lines[0] if lines else ""
        if len(lines) > 1 and first.endswith(":"):
            first = first[:-1]
        text = f"{error.error_type}: {first}"
    return text if len(text) <= ONE_LINE else text[: ONE_LINE - 1] + "…"


def seconds(value: float) -> str:
    """Show a duration.

    >>> seconds(1.25)
    '1.2s'
    """
    return f"{value:.1f}s"


def indent(lines: Iterable[str], prefix: str) -> list[str]:
    """Put `prefix` before every line (blank lines stay blank)."""
    return [prefix + line if line else "" for line in lines]


def table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> str:
    """Align `rows` under `header` in columns two spaces apart."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in [header, *rows]
    ]
    return "\n".join(line.rstrip() for line in lines)


def cost_cell(usage: Usage | None) -> str:
    """Show a cost in a table cell: dollars, else tokens, else a dash.

    >>> from adws.engine.usage import Usage
    >>> cost_cell(Usage(0.12345)), cost_cell(Usage(input_tokens=900)), cost_cell(None)
    ('$0.1235', '900 tokens', '-')
    """
    if usage is None:
        return "-"
    return usage.describe().split(", ")[0]


def sum_usage(usages: Iterable[Usage | None]) -> Usage | None:
    """Add up the usages that are known (None when none is)."""
    known = [usage for usage in usages if usage is not None]
    return sum(known[1:], known[0]) if known else None


def _continues(data: bytes, index: int) -> bool:
    """Tell whether the byte at `index` is inside a character (a UTF-8 continuation byte)."""
    return data[index] & 0xC0 == 0x80  # noqa: PLR2004 - 10xxxxxx


def head_and_tail(text: str, cap: int) -> tuple[str, int, str] | None:
    """Cut a text longer than `cap` bytes (UTF-8) to its first and last `cap // 2` or fewer.

    Return the head, how many bytes were cut and the tail, never half a
    character (a lone surrogate counts as its 3 bytes); None when the text
    fits. The report's pages and `adws approvals -v` cap texts so.

    >>> head_and_tail("abcdefgh", 4)
    ('ab', 4, 'gh')
    >>> head_and_tail("a€€b", 6)
    ('a', 6, 'b')
    >>> head_and_tail("abc", 4) is None
    True
    >>> head_and_tail("€", 2)
    ('', 3, '')
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return None
    end, start = cap // 2, len(data) - cap // 2
    while _continues(data, end):
        end -= 1
    while start < len(data) and _continues(data, start):
        start += 1
    head = data[:end].decode("utf-8", "surrogatepass")
    tail = data[start:].decode("utf-8", "surrogatepass")
    return head, start - end, tail
