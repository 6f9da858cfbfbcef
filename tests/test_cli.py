"""The CLI through main([...]): exit codes, stdout and stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from adws.cli import main
from tests.conftest import REPO

FLOWS = """
from returns.io import IOFailure, IOSuccess
from adws import ErrorType, PipelineError, RetryPolicy, Step, Workflow

def ok(ctx):
    return IOSuccess(ctx.merge_outputs({"echo": ctx.inputs.get("word", "none")}))

def broken(ctx):
    return IOFailure(PipelineError("", ErrorType.SHELL_FAILED, "tests failed"))

def blocked(ctx):
    return IOFailure(PipelineError("", ErrorType.BLOCKED, "need a human"))

def cleanup(ctx):
    raise RuntimeError("cleanup broke")

passes = Workflow("passes", (Step("echo", ok),), description="Echo a word.\\nMore text.")
fails = Workflow("fails", (Step("build", broken), Step("cleanup", cleanup, always_run=True)))
stuck = Workflow("stuck", (Step("ask", blocked),))
needs = Workflow("needs", (Step("echo", ok),), inputs=("word",))
"""


@pytest.fixture
def flows(in_tmp: Path) -> Path:
    folder = in_tmp / "workflows"
    folder.mkdir()
    (folder / "flows.py").write_text(FLOWS)
    return folder


def test_list_prints_names_and_first_description_lines(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list"]) == 0
    assert capsys.readouterr().out == "fails\nneeds\npasses  Echo a word.\nstuck\n"


def test_list_names_a_module_that_fails_to_import_and_lists_the_others(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (flows / "zz_broken.py").write_text("1/0\n")
    assert main(["list"]) == 0
    captured = capsys.readouterr()
    assert "passes  Echo a word." in captured.out
    assert (
        captured.err
        == "warning: could not load zz_broken.py: ZeroDivisionError: division by zero (line 1)\n"
    )


def test_list_with_nothing_to_list(in_tmp: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (in_tmp / "empty").mkdir()
    assert main(["list", "--workflows", "empty"]) == 0
    assert capsys.readouterr().err == f"no workflows found in {in_tmp / 'empty'}\n"
    assert main(["list", "--workflows", "missing"]) == 2


def test_run_success_exits_0_with_a_json_summary(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "passes", "-i", "word=hi there", "--json"]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["workflow"] == "passes"
    assert summary["status"] == "succeeded"
    assert summary["inputs"] == {"word": "hi there", "echo": "hi there"}
    assert [(s["name"], s["status"], s["attempts"]) for s in summary["steps"]] == [
        ("echo", "succeeded", 1)
    ]
    assert summary["error"] is None
    assert "[1/1] echo … ok in" in captured.err


def test_run_failure_exits_1_and_reports_cleanup_failures(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "fails", "--json"]) == 1
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert summary["status"] == "failed"
    assert summary["error"]["step_name"] == "build"
    assert [s["status"] for s in summary["steps"]] == ["failed", "failed"]
    assert (
        "also failed while cleaning up: cleanup: StepException: step 'cleanup' raised RuntimeError"
        in captured.err
    )


def test_run_blocked_exits_3(flows: Path) -> None:
    assert main(["run", "stuck", "-q"]) == 3


def test_run_unknown_workflow_exits_2_listing_the_known_ones(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "nope"]) == 2
    assert capsys.readouterr().err.endswith("known workflows: fails, needs, passes, stuck\n")


def test_run_unknown_workflow_names_modules_that_failed_to_import(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (flows / "mine.py").write_text("syntax error here\n")
    assert main(["run", "mine"]) == 2
    err = capsys.readouterr().err
    assert "warning: could not load mine.py: SyntaxError" in err
    assert "unknown workflow 'mine'" in err


@pytest.mark.parametrize("pair", ["novalue", "Bad=1", "=x", "9lives=1"])
def test_run_bad_input_syntax_exits_2(
    flows: Path, pair: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "passes", "-i", pair]) == 2
    assert f"bad input {pair!r}: expected KEY=VALUE" in capsys.readouterr().err


def test_run_missing_required_input_is_named_before_anything_runs(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "needs"]) == 2
    assert (
        capsys.readouterr().err
        == "adws: error: workflow 'needs' needs input word: add -i word=...\n"
    )


def test_run_reads_inputs_from_a_json_file_and_flags_win(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("in.json").write_text('{"word": "file", "n": 3}')
    assert main(["run", "passes", "--inputs", "in.json", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["echo"] == "file"
    assert main(["run", "passes", "--inputs", "in.json", "-i", "word=flag", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["echo"] == "flag"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "must hold a JSON object, not list"),
        ("{nope", "is not valid JSON"),
        (None, "cannot read inputs file"),
    ],
)
def test_run_bad_inputs_file_exits_2(
    flows: Path, content: str | None, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if content is not None:
        Path("in.json").write_text(content)
    assert main(["run", "passes", "--inputs", "in.json"]) == 2
    assert message in capsys.readouterr().err


def test_usage_errors_exit_2_and_help_exits_0(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([]) == 2
    assert main(["frobnicate"]) == 2
    assert main(["--help"]) == 0
    assert "Exit codes: 0 succeeded" in capsys.readouterr().out


def test_python_m_adws_help_runs_in_a_fresh_process() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "adws", "--help"],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == 0
    assert done.stdout.startswith("usage: adws")
    for command in ("list", "show", "run", "validate"):
        assert command in done.stdout
