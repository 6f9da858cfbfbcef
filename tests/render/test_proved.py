"""What the checks proved, where a person decides: `adws status`, `--json` and the report page."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from returns.io import IOSuccess

from adws import PipelineError, Step, Workflow, with_verification
from adws.agents import AgentRequest
from adws.cli import main
from adws.discovery import discover_workflows
from adws.journal import AttemptRecord, RunRecord
from adws.render import status_text
from adws.render.describe import show_text
from adws.render.proved import proofs_of, proved_html, proved_lines
from adws.render.report import RunView, run_page
from adws.testing import FunctionAgent, run
from tests.engine.bugs import RIGHT, TARGET, WRONG, seeded
from tests.workflows.conftest import SHIPPED

PROVED = (
    f"targets fixed (1): {TARGET}\nnew failures: none\npre-existing failures left: none\n"
    "flaky: none\nkept passing: 1"
)


def fixes(text: str) -> FunctionAgent:
    def answer(request: AgentRequest) -> str:
        (Path(str(request.cwd)) / "words.py").write_text(text)
        return "STATUS: done\nSUMMARY: fixed"

    return FunctionAgent(answer)


@pytest.fixture
def journaled(in_tmp: Path) -> tuple[Path, dict[str, str]]:
    """Two runs of implement_verify on the seeded bug, in one journal: the right fix, a wrong one."""
    shipped = discover_workflows(SHIPPED).workflows
    journal = in_tmp / "runs.db"
    ids = {}
    for name, text in (("right", RIGHT), ("wrong", WRONG)):
        project = seeded(in_tmp / name)
        inputs = {
            "task": "count words",
            "target_dir": str(project),
            "check_command": f"{sys.executable} -m pytest -rA -q -p no:cacheprovider tests",
            "must_pass": TARGET,
            "output_dir": str(in_tmp / "reports"),
        }
        ids[name] = run(
            shipped["implement_verify"], inputs, agent=fixes(text), journal=journal
        ).run_id
    return journal, ids


def test_status_shows_what_the_checks_proved_after_the_steps(
    journaled: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    journal, ids = journaled
    assert main(["status", ids["right"], "--journal", str(journal)]) == 0
    shown = capsys.readouterr().out
    proved = "\n".join(f"  {line}" for line in PROVED.splitlines())
    assert "  2. finalize: succeeded (1 attempt, " in shown
    assert f"what the checks proved (implement_verified_proved):\n{proved}\n" in shown


def test_status_json_holds_the_proof_of_a_success_and_of_a_failed_round(
    journaled: tuple[Path, dict[str, str]], capsys: pytest.CaptureFixture[str]
) -> None:
    journal, ids = journaled
    assert main(["status", ids["right"], "--journal", str(journal), "--json"]) == 0
    right = json.loads(capsys.readouterr().out)["proved"]
    assert list(right) == ["implement_verified_proved"]
    assert right["implement_verified_proved"]["fixed"] == [TARGET]
    assert right["implement_verified_proved"]["text"] == PROVED
    assert main(["status", ids["wrong"], "--journal", str(journal), "--json"]) == 0
    wrong = json.loads(capsys.readouterr().out)["proved"]
    assert list(wrong) == ["checks"]
    assert wrong["checks"]["fixed"] == []
    assert list(wrong["checks"]["failing"]) == [TARGET]


def test_the_report_page_shows_the_proof_escaped(
    journaled: tuple[Path, dict[str, str]], in_tmp: Path
) -> None:
    journal, ids = journaled
    page = in_tmp / "page.html"
    assert main(["report", ids["right"], "--journal", str(journal), "-o", str(page)]) == 0
    html = page.read_text()
    assert '<div class="proved"><h2>what the checks proved · implement_verified_proved</h2>' in html
    assert f"<li>targets fixed (1): {TARGET}</li>" in html


def test_a_proof_from_an_agent_is_data_never_markup() -> None:
    hostile = {"v_proved": {"text": "<script>alert(1)</script>\nnew failures: none"}}
    assert proved_html(hostile) == (
        '<div class="proved"><h2>what the checks proved · v_proved</h2><ul>'
        "<li>&lt;script&gt;alert(1)&lt;/script&gt;</li><li>new failures: none</li></ul></div>"
    )
    assert proved_lines(hostile)[1] == "  <script>alert(1)</script>"


def test_only_succeeded_rows_with_a_proof_count_and_a_success_outweighs_an_error() -> None:
    proof = {"text": "flaky: none", "fixed": []}
    rows = [
        AttemptRecord("a", 0, 1, "failed", "t", 1.0, None, None, json.dumps({"a_proved": proof})),
        AttemptRecord(
            "b", 1, 1, "succeeded", "t", 1.0, None, None, json.dumps({"b_proved": proof, "x": 3})
        ),
        AttemptRecord("c", 2, 1, "succeeded", "t", 1.0, None, None, "not json"),
    ]
    error = PipelineError("checks", "NotFixed", "x", {"proved": {"text": "other"}})
    assert proofs_of(rows, error) == {"b_proved": proof}
    assert proofs_of(rows[2:], error) == {"checks": {"text": "other"}}
    assert proofs_of(rows[2:], PipelineError("s", "Blocked", "x", {"proved": "no"})) == {}
    record = RunRecord(
        "r", "w", "f", "failed", ("a", "b", "c"), "{}", "t0", None, None, error, None, None, None, 0
    )
    text = status_text(record, rows[:2])
    assert "what the checks proved (b_proved):\n  flaky: none\nerror at checks: NotFixed: x" in text
    assert "what the checks proved · b_proved" in run_page(RunView(record, tuple(rows[:2])))


def test_show_says_what_must_pass_or_that_nothing_must() -> None:
    fix, checks = Step("fix", IOSuccess), Step("checks", IOSuccess)
    words = "reproduced"
    shown = show_text(
        Workflow(
            "w",
            (
                with_verification(fix, checks, must_pass=words, name="a"),
                with_verification(fix, checks, must_pass=[TARGET, "t.py::*"], name="b"),
                with_verification(fix, checks, baseline=True, name="c"),
            ),
        )
    )
    assert "fix then checks, up to 3 rounds; must pass: reproduced" in shown
    assert f"fix then checks, up to 3 rounds; must pass: {TARGET}, t.py::*" in shown
    assert (
        "fix then checks, up to 3 rounds; checked against a baseline (nothing must pass: only"
        " that nothing broke)"
    ) in shown
