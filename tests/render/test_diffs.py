"""A worktree attempt's diff drawn for a reviewer: escaped, marked, coloured, capped.

Hypothesis feeds arbitrary diff text to the terminal and page drawings:
nothing of it reaches a terminal or a page unescaped, and every line of
it is shown.
"""

from __future__ import annotations

import html
import re
from typing import Final

from hypothesis import given
from hypothesis import strategies as st

from adws.io_ops.terminal import escape_controls
from adws.journal.records.diffs import DiffRecord
from adws.journal.records.exchanges import Text
from adws.render.diffs import diff_html, diff_lines, marked, review_lines, step_diff_lines
from adws.render.report import RunView, batch_page, run_page
from tests.render.test_hostile_page import assert_no_injected_markup, failed_row, record
from tests.strategies import diff_texts

COLOURS: Final = re.compile(r"\x1b\[(?:0|1|31|32|36)m")
UNSAFE: Final = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
"""What a terminal would obey or cannot print (a line holds no newline, tabs may stay)."""
TAGS: Final = re.compile(r'<pre>|</pre>|<span class="(?:add|del|hunk|file)">|</span>')
SMALL: Final = "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old\n+new\n"


def lines_of(text: str) -> list[str]:
    pieces = text.split("\n")
    return pieces[:-1] if pieces[-1] == "" else pieces


@given(text=diff_texts, colour=st.booleans())
def test_a_terminal_gets_every_line_escaped_and_only_its_own_colours(
    text: str, *, colour: bool
) -> None:
    shown = diff_lines(text, colour=colour, prefix="  ")
    plain = [COLOURS.sub("", line) for line in shown]
    assert plain == [f"  {escape_controls(line)}" for line in lines_of(text)]
    for line in plain:
        assert UNSAFE.search(line) is None
    if not colour:
        assert shown == plain
    for line in shown:
        assert line == COLOURS.sub("", line) or line.endswith("\x1b[0m")


@given(text=diff_texts)
def test_a_page_gets_every_line_escaped_inside_its_own_marks(text: str) -> None:
    page = diff_html(text, "adws status r1 --step fix --attempt 1 -v")
    bare = TAGS.sub("", page)
    assert "<" not in bare
    assert ">" not in bare
    assert html.unescape(bare) == escape_controls(text)


@given(text=diff_texts, cap=st.integers(min_value=2, max_value=30))
def test_a_capped_diff_keeps_its_head_and_tail_and_counts_the_cut(text: str, cap: int) -> None:
    head, cut, tail = marked(text, cap)
    size = len(text.encode("utf-8", "surrogatepass"))
    kept = ["\n".join(piece for piece, _ in part) for part in (head, tail)]
    if not cut:
        assert kept[0] == text
        assert tail == []
        return
    assert text.startswith(kept[0])
    assert text.endswith(kept[1])
    assert sum(len(part.encode("utf-8", "surrogatepass")) for part in kept) + cut == size


def test_a_tail_that_starts_a_line_keeps_its_mark() -> None:
    assert marked("@@ -1 +1 @@\n-ab\n+cd\n", 8) == (
        [("@@ -", "hunk")],
        12,
        [("+cd", "add"), ("", None)],
    )


def diff(
    text: str | None,
    *,
    size: int | None = None,
    label: str = "fix",
    problems: tuple[str, ...] = (),
) -> DiffRecord:
    whole = len((text or "").encode()) if size is None else size
    return DiffRecord("fix", 1, label, "t", Text("d" * 32, whole, text), problems)


def test_status_says_a_diff_that_changed_nothing_is_no_change() -> None:
    assert step_diff_lines(
        [diff("")], "adws status r1 --step fix --attempt 1 -v", verbose=True, colour=False
    ) == [
        "",
        "diff of worktree fix (attempt 1): no change (0 bytes)",
    ]


def test_a_diff_git_could_not_make_is_said_to_be_not_taken() -> None:
    """Never hidden behind an earlier attempt's diff: the reviewer is told, and where the work is."""
    untaken = DiffRecord("fix", 2, "fix", "t", Text("", 0, None), taken=False)
    shows = "adws status r1 --step fix --attempt 2 -v"
    assert step_diff_lines([untaken], shows, verbose=True, colour=False) == [
        "",
        (
            "diff of worktree fix (attempt 2): not taken (git could not make it; the worktree's"
            " branch holds the work)"
        ),
    ]


def test_approvals_names_a_row_it_cannot_read() -> None:
    unreadable = diff(None, size=0, problems=("diff_size is not a whole number",))
    assert review_lines([unreadable], "r1", colour=False) == [
        (
            "  diff of worktree fix (step fix, attempt 1): unreadable (0 bytes; the rows it "
            "cannot read are named on stderr)"
        )
    ]


def test_a_label_is_escaped_in_every_heading() -> None:
    hostile = diff(SMALL, label="fix\x1b]0;x\x07")
    heading = "diff of worktree fix\\x1b]0;x\\x07 (attempt 1): 1 file changed, +1 -1 (57 bytes)"
    shows = "adws status r1 --step fix --attempt 1 -v"
    assert step_diff_lines([hostile], shows, verbose=False, colour=True) == [
        "",
        f"{heading}; {shows} shows it",
    ]


def view(*found: DiffRecord, status: str = "failed") -> RunView:
    return RunView(record(status, steps=("fix",)), (failed_row("fix"),), diffs=found)


def test_the_page_shows_a_diff_collapsed_with_its_lines_marked() -> None:
    page = run_page(view(diff(SMALL)))
    assert (
        '<details class="diff"><summary>diff of worktree fix (attempt 1): 1 file changed, +1 -1 '
        '(57 bytes)</summary><pre><span class="file">diff --git a/x b/x</span>\n'
        '<span class="file">--- a/x</span>\n<span class="file">+++ b/x</span>\n'
        '<span class="hunk">@@ -1 +1 @@</span>\n<span class="del">-old</span>\n'
        '<span class="add">+new</span>\n</pre></details>'
    ) in page
    assert_no_injected_markup(page)


def test_the_page_caps_a_long_diff_and_names_the_command_that_shows_all() -> None:
    long = "@@ -0,0 +1,40000 @@\n" + "+x\n" * 40_000
    page = run_page(view(diff(long)))
    assert (
        (
            '<span class="add">+x</span>\n<span class="add">+x</span></pre>'  # a whole line, 16,000 bytes
            '<p class="cut">88,020 bytes cut: <code>adws status r1 --step fix --attempt 1 -v</code> '
            'shows all</p><pre>\n<span class="add">+x</span>\n'  # its newline, then the last lines
        )
        in page
    )


def test_the_page_says_a_diff_was_cut_not_kept_or_unreadable() -> None:
    cut = diff(SMALL, size=1_000)
    hashes = diff(None, size=52, label="other")
    unreadable = diff(None, size=0, label="bad", problems=("diff_size is not a whole number",))
    page = run_page(view(cut, hashes, unreadable))
    assert ("in its first 57 bytes (1,000 bytes)</summary>") in page
    assert '<p class="note">cut: the journal keeps the first bytes of a diff</p></details>' in page
    assert (
        f'<p class="note">diff of worktree other (attempt 1): not kept (52 bytes, sha256 {"d" * 32}…; '
        "transcripts were off)</p>"
    ) in page
    assert (
        '<p class="note">diff of worktree bad (attempt 1): unreadable (0 bytes; the rows it cannot '
        "read are named on stderr)</p>"
    ) in page


def test_a_batch_page_leaves_out_the_diffs_of_runs_that_succeeded() -> None:
    page = batch_page("b1", "w", [view(diff(SMALL), status="succeeded"), view(diff(SMALL))])
    assert page.count('<details class="diff">') == 1
