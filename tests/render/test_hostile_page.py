"""A report page from a hostile journal: nothing it holds becomes markup, and the page is bounded.

Rows are forged the way an attacker would (sqlite3 on a real journal) or
built directly for Hypothesis; pages are parsed, and one is loaded in a
real headless Chromium to show the CSP runs the page's own script only.
"""

from __future__ import annotations

import json
import sqlite3
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adws import PipelineError
from adws.journal import AttemptRecord, RunRecord
from adws.journal.records.diffs import DiffRecord
from adws.journal.records.exchanges import ExchangeRecord, Text
from adws.journal.records.workspaces import ApprovalRecord
from adws.render._page import PAGE_CAP
from adws.render.report import RunView, batch_page, run_page
from adws.render.words import RUN_WORDS, STEP_WORDS, UNKNOWN
from tests.browser import browser, chromium
from tests.conftest import start_adws
from tests.workspaces.conftest import make_repo

ATTACK = '"><svg onload="document.body.dataset.pwned=1">'

TAGS = frozenset(
    [
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "p",
        "button",
        "header",
        "h1",
        "h2",
        "h4",
        "span",
        "b",
        "code",
        "section",
        "details",
        "summary",
        "div",
        "pre",
        "a",
        "svg",
        "rect",
        "text",
        "line",
        "table",
        "tr",
        "td",
        "th",
        "script",
    ]
)
ATTRIBUTES = frozenset(
    [
        "lang",
        "charset",
        "http-equiv",
        "content",
        "name",
        "id",
        "type",
        "class",
        "data-path",
        "href",
        "x",
        "y",
        "width",
        "height",
        "fill",
        "stroke",
        "rx",
        "stroke-dasharray",
        "x1",
        "y1",
        "x2",
        "y2",
        "text-anchor",
        "xmlns",
        "role",
        "aria-label",
        "open",
    ]
)
WORDS = RUN_WORDS | STEP_WORDS | {UNKNOWN, "not_run", "partial"}
CLASSES = WORDS | frozenset(
    [
        "badge",
        "step",
        "branch",
        "attempt",
        "error",
        "run-error",
        "waiting",
        "run-waiting",
        "parked",
        "run-parked",
        "call",
        "facts",
        "note",
        "cut",
        "prompt",
        "answer",
        "stderr",
        "outputs",
        "approval",
        "run",
        "timeline",
        "diagram",
        "diff",
        "add",
        "del",
        "hunk",
        "file",
    ]
)


class Markup(HTMLParser):
    """Every element a page holds, with its attributes, and the text of its badges."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.badges: list[str] = []
        self._badge = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        self._badge = "badge" in (dict(attrs).get("class") or "").split()

    def handle_data(self, data: str) -> None:
        if self._badge:
            self.badges.append(data)
            self._badge = False


def assert_no_injected_markup(page: str) -> Markup:
    parsed = Markup()
    parsed.feed(page)
    parsed.close()
    tags = [tag for tag, _ in parsed.elements]
    assert set(tags) <= TAGS
    assert (tags.count("script"), tags.count("style"), tags.count("meta")) == (1, 1, 3)
    for _, attributes in parsed.elements:
        assert set(attributes) <= ATTRIBUTES
        assert set((attributes.get("class") or "").split()) <= CLASSES
        assert (attributes.get("href") or "#").startswith("#")
    assert set(parsed.badges) <= WORDS
    return parsed


def record(status: str = "failed", **changes: object) -> RunRecord:
    fields: dict[str, object] = {
        "run_id": "r1",
        "workflow": "w",
        "fingerprint": "f",
        "status": status,
        "steps": ("a", "b"),
        "inputs_json": "{}",
        "started": "t0",
        "finished": None,
        "seconds": None,
        "error": None,
        "failed_step": None,
        "pid": None,
        "host": None,
        "resumes": 2,
    }
    fields.update(changes)
    return RunRecord(**fields)  # type: ignore[arg-type] # the fields of a RunRecord, by name


hostile = st.one_of(st.just(ATTACK), st.text(), st.sampled_from(sorted(WORDS)))


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(hostile, min_size=1, max_size=4),
    run_status=hostile,
    names=st.lists(hostile, min_size=1, max_size=3, unique=True),
    text=hostile,
)
def test_nothing_a_journal_holds_becomes_markup(
    statuses: list[str], run_status: str, names: list[str], text: str
) -> None:
    error = PipelineError(text, text, text, {"stderr_tail": text})
    rows = tuple(
        AttemptRecord(
            f"{names[0]}[{text}]" if number % 2 else names[number % len(names)],
            0,
            number + 1,
            status,
            text,
            1.0,
            error if number else None,
            None,
            None,
            None,
            None,
            (),
            (text,),
            started=10.0 + number,
        )
        for number, status in enumerate(statuses)
    )
    call = ExchangeRecord(
        names[0], 1, text, text, 10.0, 1.0, Text(text, 1, text), Text(text, 1, text),
        Text(text, 1, text), None, text, text, text, None,
    )  # fmt: skip
    asked = ApprovalRecord(text, text, text, None, None)
    run = record(run_status, workflow=text, run_id=text, steps=tuple(names), error=error)
    diff = DiffRecord(names[0], 1, text, text, Text(text, 1, text))
    view = RunView(run, rows, (call,), (), (asked,), (diff,))
    assert_no_injected_markup(run_page(view))
    assert_no_injected_markup(batch_page(text, text, [view, view]))


def test_an_unknown_status_is_drawn_as_unknown() -> None:
    rows = (AttemptRecord("a", 0, 1, ATTACK, "t", 1.0, None, None, started=10.0),)
    page = run_page(RunView(record(ATTACK), rows))
    parsed = assert_no_injected_markup(page)
    assert parsed.badges == ["unknown", "unknown"]  # the run's, the step's
    assert "<title>w unknown · run r1</title>" in page
    assert "<title>1. a: unknown</title>" in page
    assert "attempt 1 — unknown in 1.0s" in page
    assert "onload" not in page


def test_the_policy_allows_the_page_s_own_style_and_script_by_hash_only() -> None:
    page = run_page(RunView(record(), ()))
    policy = page.split('http-equiv="Content-Security-Policy" content="')[1].split('"')[0]
    parts = [part.split(" ", 1) for part in policy.split("; ")]
    assert [name for name, _ in parts] == ["default-src", "style-src", "script-src"]
    assert parts[0][1] == "'none'"
    assert parts[1][1].startswith("'sha256-")
    assert parts[2][1].startswith("'sha256-")
    assert "unsafe" not in policy
    assert " style=" not in page


WORKFLOW = """
from returns.io import IOSuccess

from adws import Step, Workflow


def plan(ctx):
    return IOSuccess(ctx.merge_outputs({"plan": "ship it"}))


workflow = Workflow("plain", (Step("plan", plan, writes=("plan",)),))
"""


def adws(project: Path, *argv: str) -> tuple[int, str, str]:
    process = start_adws(project, *argv)
    out, err = process.communicate(timeout=120)
    return process.returncode, out, err


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_forged_status_runs_no_handler_in_a_real_browser(tmp_path: Path) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "plain.py").write_text(WORKFLOW)
    code, out, _ = adws(tmp_path, "run", "plain", "--workflows", "workflows", "--json", "-q")
    assert code == 0
    run_id = json.loads(out)["run_id"]
    with sqlite3.connect(tmp_path / "runs.db") as forged:
        forged.execute("UPDATE attempts SET status = ? WHERE run_id = ?", (ATTACK, run_id))
        forged.execute("UPDATE runs SET status = ? WHERE run_id = ?", (ATTACK, run_id))
    forged.close()
    assert adws(tmp_path, "report", run_id, "-o", "page.html") == (0, "page.html\n", "")
    with browser(tmp_path / "profile") as driver:
        driver.open((tmp_path / "page.html").as_uri())
        assert driver.evaluate("document.body.dataset.pwned === undefined")
        assert driver.evaluate("document.querySelectorAll('svg svg').length") == 0
        assert driver.evaluate("document.title") == f"plain unknown · run {run_id}"
        # The page's own style applies, and its own script runs: "expand all" opens every part.
        badge = "getComputedStyle(document.querySelector('.badge')).backgroundColor"
        assert driver.evaluate(badge) == "rgb(117, 117, 117)"
        assert driver.evaluate("[...document.querySelectorAll('details')].some(d => !d.open)")
        driver.evaluate("document.getElementById('expand').click()")
        assert driver.evaluate("[...document.querySelectorAll('details')].every(d => d.open)")
        assert driver.console_errors() == []


HOSTILE_WORKTREE = r"""
from pathlib import Path

from adws import OutputContract, Workflow, agent_step, worktree
from adws.testing import FunctionAgent


def edit(request):
    folder = Path(request.cwd)
    (folder / "page.html").write_text("<script>alert(1)</script>\n")
    (folder / "README").write_text(
        "</pre></details><img src=x onerror=\"document.body.dataset.pwned=1\">\n"
    )
    return "STATUS: done\nNOTE: edited\n"


fix = Workflow(
    "fix",
    (
        worktree(
            agent_step("edit", prompt="Edit.", agent=FunctionAgent(edit),
                       contract=OutputContract(("NOTE",))),
            name="fix",
        ),
    ),
    inputs=("target_dir",),
)
"""


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_a_hostile_diff_is_shown_as_text_in_a_real_browser(tmp_path: Path) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "fix.py").write_text(HOSTILE_WORKTREE)
    make_repo(tmp_path / "repo")
    target = f"target_dir={tmp_path / 'repo'}"
    code, out, _ = adws(tmp_path, "run", "fix", "--workflows", "workflows", "-i", target, "--json")
    assert code == 0
    run_id = json.loads(out)["run_id"]
    assert adws(tmp_path, "report", run_id, "-o", "page.html") == (0, "page.html\n", "")
    assert_no_injected_markup((tmp_path / "page.html").read_text())
    with browser(tmp_path / "profile") as driver:
        driver.open((tmp_path / "page.html").as_uri())
        driver.evaluate("document.getElementById('expand').click()")
        assert driver.evaluate("document.body.dataset.pwned === undefined")
        assert driver.evaluate("document.querySelectorAll('img').length") == 0
        assert driver.evaluate("document.querySelectorAll('script').length") == 1  # its own
        added = "[...document.querySelectorAll('details.diff .add')].map(s => s.textContent)"
        assert driver.evaluate(added) == [
            '+</pre></details><img src=x onerror="document.body.dataset.pwned=1">',
            "+<script>alert(1)</script>",
        ]
        removed = "[...document.querySelectorAll('details.diff .del')].map(s => s.textContent)"
        assert driver.evaluate(removed) == ["-hello"]
        # The page's own (hashed) stylesheet marks the lines.
        colour = "getComputedStyle(document.querySelector('.diff .{}')).{}"
        assert driver.evaluate(colour.format("add", "color")) == "rgb(27, 94, 32)"
        assert driver.evaluate(colour.format("del", "color")) == "rgb(183, 28, 28)"
        assert driver.evaluate(colour.format("hunk", "color")) == "rgb(0, 131, 143)"
        assert driver.evaluate(colour.format("file", "fontWeight")) == "700"
        assert driver.console_errors() == []


def exchange(path: str, answer: str, prompt: str = "Check it.") -> ExchangeRecord:
    size = len(answer.encode())
    return ExchangeRecord(
        path, 1, path, "t", 10.0, 1.0, Text("p", len(prompt), prompt), Text("a", size, answer),
        None, 0, None, None, None, None,
    )  # fmt: skip


def failed_row(path: str, error: PipelineError | None = None) -> AttemptRecord:
    return AttemptRecord(path, 0, 1, "failed", "t", 1.0, error, None, started=10.0)


def test_a_long_answer_keeps_its_head_and_tail_around_an_exact_cut_line() -> None:
    answer = "h" * 50_000 + "t" * 50_000
    page = run_page(RunView(record(), (failed_row("a"),), (exchange("a", answer),)))
    assert (
        f'<pre>{"h" * 16_000}</pre><p class="cut">68,000 bytes cut: '
        f"<code>adws status r1 --step a --attempt 1</code> shows all</p><pre>{'t' * 16_000}</pre>"
    ) in page


def test_a_cut_never_splits_a_character_and_names_the_branch_quoted() -> None:
    error = PipelineError("a", "ShellFailed", "boom\n" + "€" * 20_000)  # 3 bytes a character
    rows = (failed_row("a"), failed_row("a[2]", error))
    page = run_page(RunView(record(error=error), rows))
    cut = "28,023 bytes cut: <code>adws status r1 --step &#x27;a[2]&#x27; --attempt 1</code>"
    head = f"ShellFailed: boom\n  {'€' * 5_326}"  # 15,998 bytes of the first 16,000
    assert f'<div class="error"><pre>{head}</pre><p class="cut">{cut} shows all</p>' in page
    assert f"<pre>{'€' * 5_333}</pre></div>" in page  # 15,999 bytes of the last 16,000
    run_error = "bytes cut: <code>adws status r1</code> shows all"  # the run's error, above
    assert page.count(run_error) == 1


def test_a_one_line_field_is_cut_at_a_thousand_characters() -> None:
    page = run_page(RunView(record(workflow="w" * 5_000_000), ()))
    assert f"<h1>{'w' * 999}… <span" in page
    assert len(page.encode()) < 10_000


def test_a_page_of_a_huge_run_stays_under_its_cap_and_says_where_it_stopped() -> None:
    paths = [f"a[{number}]" for number in range(5_000)]
    rows = (failed_row("a"), *(failed_row(path) for path in paths))
    calls = tuple(exchange(path, f"{path} " * 200_000, "p" * 900_000) for path in paths[:200])
    page = run_page(RunView(record(), rows, calls))
    assert len(page.encode()) <= PAGE_CAP
    assert page.endswith(
        '<p class="cut">the page stops here: it holds at most 4,000,000 bytes; '
        "<code>adws status r1</code> shows all</p>\n<script>" + page.split("<script>")[1]
    )
    assert (
        "the timeline and the step diagram are left out: they would draw 10,202 rows, "
        "attempts and calls (a page draws 3,000)"
    ) in page
    assert_no_injected_markup(page)


def test_a_batch_page_stays_under_its_cap() -> None:
    views = [
        RunView(
            record(run_id=f"r{number}"),
            (failed_row("a"),),
            (exchange("a", f"{number} " * 400_000),),
        )
        for number in range(300)
    ]
    page = batch_page("b1", "w", views)
    assert len(page.encode()) <= PAGE_CAP
    assert "<code>adws runs --batch b1</code> shows all</p>" in page
    assert "300 runs: 300 failed" in page
    assert_no_injected_markup(page)


FANNED = """
from returns.io import IOSuccess

from adws import OutputContract, Step, Workflow, agent_step, fan_out
from adws.testing import FunctionAgent


def answer(request):
    return "x" * 600_000 + "\\nSTATUS: done\\nNOTE: checked\\n"


def claims(ctx):
    return IOSuccess(ctx.merge_outputs({"claims": [f"claim {n} " + "y" * 300_000 for n in range(30)]}))


workflow = Workflow(
    "fanned",
    (
        Step("claims", claims, writes=("claims",)),
        fan_out(
            "check",
            agent_step("check", prompt="Check {item}.", agent=FunctionAgent(answer),
                       contract=OutputContract(("NOTE",))),
            over="claims",
        ),
        Step("late", lambda ctx: IOSuccess(ctx), reads=()),
    ),
)
"""


@pytest.mark.slow
def test_a_report_of_thirty_branches_of_long_answers_stays_under_the_cap(tmp_path: Path) -> None:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "fanned.py").write_text(FANNED)
    code, out, err = adws(tmp_path, "run", "fanned", "--workflows", "workflows", "--json", "-q")
    assert (code, err) == (0, "")
    run_id = json.loads(out)["run_id"]
    assert adws(tmp_path, "report", run_id, "-o", "page.html") == (0, "page.html\n", "")
    page = (tmp_path / "page.html").read_text()
    assert len(page.encode()) <= PAGE_CAP
    assert page.count("bytes cut: <code>adws status") == 61  # the outputs, 30 prompts, 30 answers
    assert (
        "568,028 bytes cut: <code>adws status " + run_id + " --step &#x27;check[29]&#x27;" in page
    )


class Balance(HTMLParser):
    """Count what a page opens and closes of the elements that nest its parts."""

    NESTING = frozenset({"section", "details", "div", "table", "pre", "p"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []

    def handle_starttag(self, tag: str, _attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.NESTING:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.NESTING:
            assert self.open.pop() == tag


def balanced(page: str) -> bool:
    parsed = Balance()
    parsed.feed(page)
    return parsed.open == []


def small_run(run_id: str) -> RunView:
    error = PipelineError("a", "ShellFailed", "boom\nlater")
    rows = (
        AttemptRecord("a", 0, 1, "retried", "t", 1.0, error, None, started=10.0),
        AttemptRecord("a", 0, 2, "failed", "t", 1.0, error, None, started=11.0),
        failed_row("a[0]", error),
        failed_row("a[1]", error),
    )
    calls = (exchange("a", "an answer"), exchange("a[0]", "another"), exchange("a[1]", "more"))
    return RunView(record(run_id=run_id, error=error), rows, calls)


def test_a_page_cut_anywhere_stays_under_its_cap_with_every_element_closed() -> None:
    whole = run_page(small_run("r1"))
    batch = batch_page("b1", "w", [small_run("r1"), small_run("r2")])

    def one(cap: int) -> str:
        return run_page(small_run("r1"), cap=cap)

    def both(cap: int) -> str:
        return batch_page("b1", "w", [small_run("r1"), small_run("r2")], cap=cap)

    for drawn in (one, both):
        # From a cap that holds no more than the document around the page (and the
        # reserve kept for closing it) to one that holds it all.
        for cap in range(19_000, 19_000 + len(batch.encode()), 11):
            page = drawn(cap)
            assert len(page.encode()) <= cap
            assert balanced(page)
            assert ("the page stops here: it holds at most" in page) == (page not in {whole, batch})
