r"""A worktree attempt's diff as a reviewer reads it: on a terminal, and on the report page.

Each attempt of a step in a worktree leaves a diff from the worktree's
base (see `adws.journal.store.diffs`). It is an agent's work, so it is data:
every line is escaped as agent text is (`escape_controls` on a terminal,
`escape` on a page), and only then marked: on a terminal, when colour is
on, added lines are green, removed lines red, hunk headers cyan and a
file's header lines bold; on the page, each such line is a `<span>` of
class `add`, `del`, `hunk` or `file`, styled by the page's own (hashed)
stylesheet. A line is read in its place: `--- a/x` opens a file's change
in the header, but is a removed line `-- a/x` inside a hunk.

A diff is headed by its worktree and what it changes, e.g.
`diff of worktree fix (attempt 1): 2 files changed, +3 -1 (378 bytes)`.
`adws status R --step S -v` shows it whole (without `-v`, only that
heading, and how to see it); `adws approvals -v` and the report page
show its first and last `TEXT_CAP // 2` bytes when it is longer than
`TEXT_CAP`, around a line naming the command that shows all.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Final

from adws.io_ops.terminal import escape_controls
from adws.render._page import TEXT_CAP, cut_note, escape
from adws.render._text import head_and_tail

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.records.diffs import DiffRecord

__all__ = [
    "diff_dict",
    "diff_heading",
    "diff_html",
    "diff_kinds",
    "diff_lines",
    "diff_summary",
    "marked",
    "review_lines",
    "shows_diff",
    "step_diff_lines",
]

_SGR: Final = {"add": "\x1b[32m", "del": "\x1b[31m", "hunk": "\x1b[36m", "file": "\x1b[1m"}
"""The terminal's colour for each kind of line: green, red, cyan, bold."""
_RESET: Final = "\x1b[0m"


def diff_kinds(lines: Sequence[str]) -> list[str | None]:
    """Say what each line of a diff is: `file` (a header), `hunk`, `add`, `del`, or None.

    >>> diff_kinds(["diff --git a/x b/x", "--- a/x", "+++ b/x", "@@ -1 +1 @@", "-- a", "+b", " c"])
    ['file', 'file', 'file', 'hunk', 'del', 'add', None]
    """
    kinds: list[str | None] = []
    header = True  # before a file's first hunk: its `diff --git`, mode, index, ---/+++ lines
    for line in lines:
        kind: str | None = None
        if line.startswith("diff --git "):
            header, kind = True, "file"
        elif line.startswith("@@"):
            header, kind = False, "hunk"
        elif header:
            kind = "file" if line else None
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        kinds.append(kind)
    return kinds


def diff_summary(text: str) -> str:
    r"""Count what a diff changes: its files, its added and its removed lines.

    >>> diff_summary("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b\n")
    '1 file changed, +1 -0'
    >>> diff_summary("")
    'no change'
    """
    if not text:
        return "no change"
    lines = text.split("\n")
    kinds = diff_kinds(lines)
    files = sum(1 for line in lines if line.startswith("diff --git "))
    return (
        f"{files} file{'' if files == 1 else 's'} changed, "
        f"+{kinds.count('add')} -{kinds.count('del')}"
    )


Marked = list[tuple[str, str | None]]
"""A diff's pieces between newlines, each with its kind (see `diff_kinds`)."""


def marked(text: str, cap: int | None = None) -> tuple[Marked, int, Marked]:
    r"""Split a diff at its newlines (only: a form feed is data), each piece with its kind.

    Past `cap` bytes, return its first pieces, the bytes cut and its last
    pieces (see `head_and_tail`); else all pieces, 0 and none. A piece is
    marked as the line it is part of, but the tail's first when it starts
    mid-line (it is not known to be a line of its own).

    >>> marked("@@ -1 +1 @@\n+a\x0cb\n")
    ([('@@ -1 +1 @@', 'hunk'), ('+a\x0cb', 'add'), ('', None)], 0, [])
    >>> marked("@@ -1 +1 @@\n+aaaa\n+bbbb\n", 8)
    ([('@@ -', 'hunk')], 16, [('bbb', None), ('', None)])
    """
    pieces = text.split("\n")
    kinds = diff_kinds(pieces)
    parts = None if cap is None else head_and_tail(text, cap)
    if parts is None:
        return list(zip(pieces, kinds, strict=True)), 0, []
    head, cut, tail = parts
    first = head.split("\n")
    last = tail.split("\n")
    tail_kinds = kinds[len(pieces) - len(last) :]
    if text[len(text) - len(tail) - 1] != "\n":
        tail_kinds[0] = None
    return (
        list(zip(first, kinds, strict=False)),
        cut,
        list(zip(last, tail_kinds, strict=True)),
    )


def _terminal(pieces: Marked, *, colour: bool, prefix: str) -> list[str]:
    if pieces and pieces[-1][0] == "":
        pieces = pieces[:-1]  # what follows the last newline: nothing
    shown = []
    for line, kind in pieces:
        escaped = escape_controls(line)
        if colour and kind is not None:
            escaped = f"{_SGR[kind]}{escaped}{_RESET}"
        shown.append(prefix + escaped)
    return shown


def diff_lines(text: str, *, colour: bool, prefix: str = "") -> list[str]:
    r"""Escape each line of a diff for a terminal, after `prefix`; colour it when `colour`.

    Nothing of the diff reaches the terminal raw: the only escape sequences
    in what this returns are its own colours (and resets).

    >>> diff_lines("@@ -1 +1 @@\n-a\x1b[2J\n+b\n", colour=False, prefix="  ")
    ['  @@ -1 +1 @@', '  -a\\x1b[2J', '  +b']
    >>> diff_lines("@@ -1 +1 @@\n+b\n c\n", colour=True)
    ['\x1b[36m@@ -1 +1 @@\x1b[0m', '\x1b[32m+b\x1b[0m', ' c']
    """
    return _terminal(marked(text)[0], colour=colour, prefix=prefix)


def _html(pieces: Marked) -> str:
    drawn = []
    for line, kind in pieces:
        escaped = escape(line, None)
        drawn.append(escaped if kind is None else f'<span class="{kind}">{escaped}</span>')
    return "\n".join(drawn)


def diff_html(text: str, shows: str) -> str:
    r"""Draw a diff in a `<pre>`, each added, removed, hunk or header line in its `<span>`.

    Capped as the page's other texts (`capped`): past `TEXT_CAP` bytes, its
    head and tail around a line saying the command `shows` shows all.

    >>> diff_html("@@ -1 +1 @@\n-<b>\n+&\n same\n", "adws status r1")
    '<pre><span class="hunk">@@ -1 +1 @@</span>\n<span class="del">-&lt;b&gt;</span>\n<span class="add">+&amp;</span>\n same\n</pre>'
    """  # noqa: E501
    head, cut, tail = marked(text, TEXT_CAP)
    if not cut:
        return f"<pre>{_html(head)}</pre>"
    return f"<pre>{_html(head)}</pre>{cut_note(cut, shows)}<pre>{_html(tail)}</pre>"


def shows_diff(run_id: str, path: str, attempt: int) -> str:
    """Name the command that shows one attempt's diffs whole.

    >>> shows_diff("r1", "candidates[2]", 1)
    "adws status r1 --step 'candidates[2]' --attempt 1 -v"
    """
    return f"adws status {run_id} --step {shlex.quote(path)} --attempt {attempt} -v"


def diff_dict(record: DiffRecord) -> dict[str, object]:
    """Describe one diff for `--json`: whose, when, its size, whether it was cut, its text.

    `text` is None when it was not kept (transcripts were off) or cannot be read.
    """
    diff = record.diff
    return {
        "step": record.step,
        "attempt": record.attempt,
        "label": record.label,
        "recorded": record.recorded,
        "sha256": diff.digest,
        "size": diff.size,
        "cut": diff.cut,
        "taken": record.taken,
        "text": diff.text,
    }


def diff_heading(record: DiffRecord, where: str) -> str:
    """Say whose diff this is and what it changes, or why it cannot be shown (not escaped).

    `where` says which attempt it is (`attempt 1`, `step fix, attempt 2`).
    """
    head = f"diff of worktree {record.label} ({where})"
    diff = record.diff
    size = f"{diff.size:,} bytes"
    if record.problems:
        return f"{head}: unreadable ({size}; the rows it cannot read are named on stderr)"
    if not record.taken:
        return f"{head}: not taken (git could not make it; the worktree's branch holds the work)"
    if diff.text is None:
        return f"{head}: not kept ({size}, sha256 {diff.digest}…; transcripts were off)"
    if diff.cut:
        kept = len(diff.text.encode("utf-8", "surrogatepass"))
        return f"{head}: {diff_summary(diff.text)} in its first {kept:,} bytes ({size})"
    return f"{head}: {diff_summary(diff.text)} ({size})"


def _cut_line(record: DiffRecord) -> str:
    """Say that the journal kept only the start of a diff (past its `DIFF_LIMIT`)."""
    kept = len((record.diff.text or "").encode("utf-8", "surrogatepass"))
    return f"… cut: the journal keeps the first {kept:,} bytes of a diff"


def _shown(record: DiffRecord) -> bool:
    return not record.problems and bool(record.diff.text)


def step_diff_lines(
    records: Sequence[DiffRecord], shows: str, *, verbose: bool, colour: bool
) -> list[str]:
    """Render the diffs of one attempt for `adws status R --step S`: whole with `verbose`.

    Without `verbose`, each says what it changes and that `shows` shows it.
    The lines are escaped already (and coloured when `colour`): print them as they are.
    """
    lines: list[str] = []
    for record in records:
        heading = escape_controls(diff_heading(record, f"attempt {record.attempt}"))
        if not _shown(record):
            lines.extend(["", heading])
        elif not verbose:
            lines.extend(["", f"{heading}; {escape_controls(shows)} shows it"])
        else:
            text = record.diff.text or ""
            lines.extend(["", f"{heading}:", *diff_lines(text, colour=colour, prefix="  ")])
            if record.diff.cut:
                lines.append(f"  {_cut_line(record)}")
    return lines


def review_lines(
    records: Sequence[DiffRecord], run_id: str, *, colour: bool, prefix: str = "  "
) -> list[str]:
    """Render each worktree's latest diff for `adws approvals -v`, capped like any text.

    A diff longer than `TEXT_CAP` bytes shows its first and last
    `TEXT_CAP // 2` around a line naming the command that shows all. The
    lines are escaped already (and coloured when `colour`).
    """
    lines: list[str] = []
    for record in records:
        where = f"step {record.step}, attempt {record.attempt}"
        heading = escape_controls(diff_heading(record, where))
        if not _shown(record):
            lines.append(prefix + heading)
            continue
        lines.append(f"{prefix}{heading}:")
        text = record.diff.text or ""
        inner = prefix + "  "
        head, cut, tail = marked(text, TEXT_CAP)
        lines.extend(_terminal(head, colour=colour, prefix=inner))
        if cut:
            shows = escape_controls(shows_diff(run_id, record.step, record.attempt))
            lines.append(f"{inner}… {cut:,} bytes cut: {shows} shows all")
            lines.extend(_terminal(tail, colour=colour, prefix=inner))
        if record.diff.cut:
            lines.append(f"{inner}{_cut_line(record)}")
    return lines
