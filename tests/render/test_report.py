"""`adws report`: one self-contained page per run or batch, opened in a real headless Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adws import PipelineError
from adws.cli import main
from adws.engine.usage import Usage
from adws.journal import AttemptRecord, Journal, RunRecord
from adws.journal.records.exchanges import ExchangeRecord, Text
from adws.journal.store.exchanges import exchanges
from adws.render.report import RunView, batch_page, run_page
from tests.browser import Browser, browser, chromium
from tests.conftest import start_adws

REPORTED = r"""
from returns.io import IOSuccess

from adws import (
    OutputContract, RetryPolicy, Step, Workflow, agent_step, fan_out, shell_step, with_verification,
)
from adws.testing import FunctionAgent


def answer(request):
    prompt = request.prompt
    if request.step_name == "classify":
        if request.attempt == 1:
            return "Not sure. <script>alert('x')</script>"
        return "It is a bug.\n\nSTATUS: done\nLABEL: needs triage\n"
    if request.step_name == "check":
        if "claim c" in prompt:
            return "STATUS: blocked\nREASON: no source for claim c\n"
        return "STATUS: done\nNOTE: checked\n"
    if request.step_name == "review":
        if "longer" in prompt:
            return "STATUS: done\n"
        return "STATUS: retry\nREASON: the draft is too short\n"
    if "verification round 1/3 failed" in prompt:
        return "STATUS: done\nDRAFT: a longer draft\n"
    return "STATUS: done\nDRAFT: a draft\n"


agent = FunctionAgent(answer)


def claims(ctx):
    return IOSuccess(ctx.merge_outputs({"claims": ["claim a", "claim b", "claim c"]}))


reported = Workflow(
    "reported",
    (
        agent_step("classify", prompt="Classify issue {issue_id}.", agent=agent,
                   contract=OutputContract(("LABEL",))),
        Step("claims", claims),
        fan_out(
            "check",
            agent_step("check", prompt="Check {item}.", agent=agent,
                       contract=OutputContract(("NOTE",))),
            over="claims",
            min_successes=2,
            max_concurrency=1,
        ),
        with_verification(
            agent_step("draft", prompt="Draft a reply.", agent=agent,
                       contract=OutputContract(("DRAFT",))),
            agent_step("review", prompt="Review: {draft}", agent=agent, retry=RetryPolicy(1)),
        ),
        shell_step("label", "echo 'error: could not reach the tracker' >&2; exit 4 # {label}"),
    ),
    inputs=("issue_id",),
)
"""


@pytest.fixture
def project(in_tmp: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "reported.py").write_text(REPORTED)
    monkeypatch.delenv("ADWS_TRANSCRIPTS", raising=False)
    return in_tmp


def reported_run(project: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["run", "reported", "-i", "issue_id=42", "-q"]) == 1
    capsys.readouterr()
    return Journal(project / ".adws" / "runs.db", readonly=True).runs(limit=1)[0].run_id


def test_the_page_is_written_beside_the_journal_and_loads_nothing(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = reported_run(project, capsys)
    assert main(["report", run_id[:5]]) == 0
    path = project / ".adws" / "reports" / f"{run_id}.html"
    assert capsys.readouterr().out == f"{path.relative_to(project)}\n"
    page = path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched, ever
    assert page.count("<script") == 1  # its own; an agent's is text
    assert "Not sure. &lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert len(page.encode()) < 60_000


def test_the_page_goes_where_asked_or_to_stdout(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_id = reported_run(project, capsys)
    assert main(["report", run_id, "-o", "out/run.html"]) == 0
    assert capsys.readouterr().out == "out/run.html\n"
    assert (project / "out" / "run.html").read_text().startswith("<!DOCTYPE html>")
    assert main(["report", run_id, "-o", "-"]) == 0
    assert capsys.readouterr().out.startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "give a run id, --batch BATCH or --eval ID: one of them"),
        (["RUN", "--batch", "b"], "give a run id, --batch BATCH or --eval ID: one of them"),
        (["--batch", "nope"], "no batch 'nope' in"),
        (["RUN", "-o", "/proc/none/x.html"], "cannot write the report /proc/none/x.html:"),
    ],
)
def test_report_names_what_it_cannot_do(
    project: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    run_id = reported_run(project, capsys)
    assert main(["report", *[run_id if part == "RUN" else part for part in argv]]) == 2
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_a_batch_page_has_a_row_per_run_and_the_prompts_of_the_failed_ones(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "lines.jsonl").write_text('{"issue_id": "1"}\n{"issue_id": "2"}\n')
    assert main(["batch", "reported", "lines.jsonl", "--concurrency", "2", "--json", "-q"]) == 1
    batch = json.loads(capsys.readouterr().out)
    journal = Journal(project / ".adws" / "runs.db", readonly=True)
    for run in batch["runs"]:  # the workers' exchanges reached the journal
        assert len(exchanges(journal, run["run_id"])) == 9
    assert main(["report", "--batch", batch["batch_id"], "-o", "batch.html"]) == 0
    page = (project / "batch.html").read_text()
    assert page.count('<section class="run"') == 2
    assert "2 runs: 2 failed" in page
    assert page.count("Classify issue 1.") == page.count("Classify issue 2.") > 0


@pytest.mark.slow
def test_a_batch_without_transcripts_keeps_only_hashes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "lines.jsonl").write_text('{"issue_id": "1"}\n')
    argv = ["batch", "reported", "lines.jsonl", "--concurrency", "1", "-q", "--no-transcripts"]
    assert main(argv) == 1
    journal = Journal(project / ".adws" / "runs.db", readonly=True)
    assert journal.query("SELECT COUNT(*) FROM exchanges") == [(9,)]
    assert journal.query("SELECT COUNT(*) FROM texts") == [(0,)]
    capsys.readouterr()


def record(status: str = "failed", error: PipelineError | None = None) -> RunRecord:
    return RunRecord(
        "r1", "w", "f", status, ("a", "b"), "{}", "t0", None, None, error, None, None, None, 2
    )


def test_a_page_of_an_old_or_empty_run_still_draws() -> None:
    rows = (AttemptRecord("a", 0, 1, "failed", "t", 1.0, None, None),)  # no start: schema 6
    page = run_page(RunView(record("running"), rows))
    assert "<h2>timeline</h2>" in page
    assert "2. b: not run" in page
    assert "<h2>timeline</h2>" not in run_page(RunView(record("queued"), ()))
    empty = batch_page("b1", "w", [])
    assert "0 runs: none" in empty


def test_a_call_without_transcripts_or_an_answer_says_so() -> None:
    call = ExchangeRecord(
        "a",
        1,
        "a",
        "t",
        10.0,
        1.0,
        Text("d", 9, None),
        None,
        None,
        2,
        "s-1",
        "Timeout",
        "slow",
        Usage(0.5),
    )
    rows = (
        AttemptRecord("a", 0, 1, "failed", "t", 1.0, None, None, None, None, None, started=10.0),
    )
    page = run_page(RunView(record(), rows, (call,)))
    assert "prompt: not kept (9 bytes; transcripts were off)" in page
    assert "answer: none (the agent gave no answer)" in page
    assert "exit 2 · session s-1 · $0.5000" in page
    assert "this call ended: Timeout: slow" in page


@settings(max_examples=40, deadline=None)
@given(text=st.text())
def test_no_text_an_agent_writes_can_become_markup(text: str) -> None:
    call = ExchangeRecord(
        "a",
        1,
        "a",
        "t",
        10.0,
        1.0,
        Text("d", 1, text),
        Text("e", 1, text),
        Text("f", 1, text),
        None,
        text,
        "AgentFailed",
        text,
        None,
    )
    error = PipelineError("a", "AgentFailed", text, {"stderr_tail": text})
    rows = (
        AttemptRecord("a", 0, 1, "failed", "t", 1.0, error, None, None, None, None, started=10.0),
    )
    page = run_page(RunView(record(error=error), rows, (call,)))
    assert page.count("<script") == 1
    assert page.count("<pre>") == page.count("</pre>")
    for character in "\x1b\x00\u202e":
        assert character not in page


def click(driver: Browser, selector: str) -> None:
    """Click an element the way a person does: scroll to it, press and release the mouse."""
    x, y = driver.evaluate(
        f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
        " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
        " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
    )
    for kind in ("mousePressed", "mouseReleased"):
        driver.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def text_of(driver: Browser, selector: str) -> str:
    return str(driver.evaluate(f"document.querySelector({json.dumps(selector)}).innerText"))


def visible(driver: Browser, selector: str) -> bool:
    return bool(
        driver.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " return !!e && e.checkVisibility({contentVisibilityAuto: true})"
            " && e.getBoundingClientRect().height > 0; })()"
        )
    )


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None, reason="needs Debian's chromium (apt-get install chromium)")
def test_the_page_in_a_real_browser(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run_id = reported_run(project, capsys)
    # The page comes from another process, as a user would make it.
    maker = start_adws(
        project,
        "report",
        run_id,
        "-o",
        "page.html",
        env={
            "ADWS_JOURNAL": str(project / ".adws" / "runs.db"),
            "PYTHONHASHSEED": "7",
        },
    )
    out, err = maker.communicate(timeout=60)
    assert (maker.returncode, out, err) == (0, "page.html\n", "")
    page = project / "page.html"
    with browser(tmp_path / "profile") as driver:
        driver.open(page.as_uri())
        assert driver.evaluate("document.title") == f"reported failed · run {run_id}"
        failed = "section.step.failed:not(.branch)"
        assert driver.evaluate(f"document.querySelector('{failed}').dataset.path") == "label"
        assert visible(driver, f"{failed} .error pre")
        assert "exited with 4" in text_of(driver, f"{failed} .error pre")
        assert "error: could not reach the tracker" in text_of(driver, ".run-error pre")
        prompt = "section[data-path='classify'] details.prompt"
        assert not visible(driver, f"{prompt} pre")
        click(driver, "section[data-path='classify'] > details > summary")
        click(driver, f"{prompt} > summary")
        assert visible(driver, f"{prompt} pre")
        assert text_of(driver, f"{prompt} pre").startswith("Classify issue 42.")
        assert driver.evaluate("document.querySelectorAll('svg.timeline rect').length") > 10
        assert driver.console_errors() == []
        shot = driver.screenshot(tmp_path / "report.png")
    assert shot.read_bytes().startswith(b"\x89PNG")


def test_a_page_says_what_each_step_and_attempt_cost() -> None:
    rows = (
        AttemptRecord(
            "a", 0, 1, "succeeded", "t", 1.0, None, None, None, None, Usage(0.5), started=10.0
        ),
        AttemptRecord(
            "b", 1, 0, "skipped:halted", "t", 0.0, None, None, None, None, None, started=11.0
        ),
    )
    page = run_page(RunView(record("succeeded"), rows))
    assert "attempt 1 — succeeded in 1.0s · $0.5000" in page
    assert "1 attempt · 1.0s · $0.5000" in page
    assert '<span class="badge skipped">skipped</span> <b>2. b</b> — 0 attempts' in page
