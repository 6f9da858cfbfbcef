"""The pages drawn from a hostile journal: whatever a run, a worker or a cap holds stays text.

Hypothesis draws names, messages, notes and statuses an attacker would
write into a shared journal; each page is parsed, and no element,
attribute, handler or link comes from them.
"""

from __future__ import annotations

import datetime as dt
from html.parser import HTMLParser
from typing import Final

from hypothesis import given, settings
from hypothesis import strategies as st

from adws import PipelineError
from adws.journal.records.caps import Cap
from adws.journal.records.diffs import DiffRecord
from adws.journal.records.exchanges import Text
from adws.journal.records.workers import WorkerRecord
from adws.journal.store.caps import CapState
from adws.render.report import RunView
from adws.serve import pages
from adws.serve.reading import Spend, Waiting
from tests.render.test_hostile_page import ATTACK, record

TAGS: Final = frozenset(
    [
        "html",
        "head",
        "meta",
        "title",
        "link",
        "body",
        "nav",
        "strong",
        "a",
        "span",
        "form",
        "input",
        "button",
        "main",
        "script",
        "h1",
        "h2",
        "p",
        "pre",
        "label",
        "select",
        "option",
        "table",
        "tr",
        "th",
        "td",
        "section",
        "textarea",
        "details",
        "summary",
        "code",
        "svg",
        "rect",
        "text",
        "ul",
        "li",
        "header",
        "div",
        "line",
        "g",
    ]
)
ATTRIBUTES: Final = frozenset(
    [
        "lang",
        "charset",
        "name",
        "content",
        "rel",
        "href",
        "class",
        "method",
        "action",
        "type",
        "value",
        "id",
        "maxlength",
        "autocomplete",
        "required",
        "selected",
        "inputmode",
        "src",
        "role",
        "viewbox",
        "width",
        "height",
        "xmlns",
        "x",
        "y",
        "fill",
        "x1",
        "x2",
        "y1",
        "y2",
        "stroke",
        "colspan",
    ]
)


class Parsed(HTMLParser):
    """Every start tag of a page, with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))


def assert_only_our_markup(page: str) -> None:
    parsed = Parsed()
    parsed.feed(page)
    parsed.close()
    tags = [tag for tag, _ in parsed.elements]
    assert set(tags) <= TAGS, set(tags) - TAGS
    assert tags.count("script") == 1
    for tag, attributes in parsed.elements:
        assert set(attributes) <= ATTRIBUTES, (tag, attributes)
        assert (attributes.get("href") or "/").startswith(("/", "#"))
        assert (attributes.get("action") or "/").startswith("/")
        if tag == "script":
            assert attributes == {"src": "/static/serve.js"}


hostile = st.one_of(st.just(ATTACK), st.text(max_size=80), st.just("waiting"))


def _token() -> str:
    return ATTACK


@settings(max_examples=40, deadline=None)
@given(text=hostile, status=hostile, budget=st.booleans())
def test_nothing_a_journal_holds_becomes_markup_on_any_page(
    text: str, status: str, *, budget: bool
) -> None:
    error = PipelineError(text, text, text, {})
    run = record(status, workflow=text, run_id=text, host=text, started=text, error=error)
    diff = DiffRecord(text, 1, text, text, Text(text, 1, text))
    waiting = Waiting(record("waiting", workflow=text, run_id=text, error=error), budget, (diff,))
    worker = WorkerRecord(text, text, 1, text, 0.0, 1.0, (text,))
    cap = Cap("n", "usd", 1.0, "day", "UTC", text, text)
    caps = [
        CapState(text, None, error=text),
        CapState(text, cap, resets=dt.datetime(2026, 1, 1, tzinfo=dt.UTC)),
    ]
    spend = Spend(("2026-01-01", text), ((text, (1.0, 2.0)),))
    title, body = pages.run_page(RunView(run, ()), _token, budget=budget)
    drawn = [
        pages.runs_page([run], (status, text, text)),
        body,
        pages.approvals_page([waiting], _token),
        pages.workers_page([worker]),
        pages.caps_page(caps),
        pages.cost_page(spend),
        pages.said_page(text, text, refused=True, back="/runs/ab"),
    ]
    for page in drawn:
        assert_only_our_markup(pages.document(title, page, text, _token))
    assert_only_our_markup(pages.login_page(ATTACK, text))


def test_an_empty_journal_says_so_on_each_page() -> None:
    assert "no run waits for approval" in pages.approvals_page([], _token)
    assert "no live adws worker" in pages.workers_page([])
    assert "no cap is set" in pages.caps_page([])
    assert "no run matches" in pages.runs_page([], (None, None, None))
