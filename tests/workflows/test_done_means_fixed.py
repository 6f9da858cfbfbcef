"""The shipped workflows on a seeded bug: a do-nothing agent, a wrong fix and the right fix.

The bug: `words(text)` counts the empty string between two spaces as a
word. `tests/test_double.py::test_double_spaces` fails because of it;
`tests/test_one.py::test_one` passes before and after. The checks are
real pytest (`-rA`, so passes are listed) in a real git repository.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from adws import Workflow
from adws.agents import AgentRequest
from adws.journal import Journal
from adws.testing import FunctionAgent, RunReport, run
from tests.engine.bugs import DOUBLE, RIGHT, TARGET, WRONG, git, seeded
from tests.workflows.conftest import NOTHING_PROVED

CHECK = f"{sys.executable} -m pytest -rA -q -p no:cacheprovider tests"
TASK = "words() counts a double space as a word"
REPORT = "implement_verify-words-counts-a-double-space-as-a-word-e1a3c3e7.md"
REPRODUCER = "tests/test_spaces.py"
REPRODUCER_ID = "tests/test_spaces.py::test_double_spaces"


def agent(fix: str | None, *, reproducer: str | None = DOUBLE) -> FunctionAgent:
    """An agent that writes the reproducer when asked for one, and `fix` (None: nothing) else."""

    def answer(request: AgentRequest) -> str:
        folder = Path(str(request.cwd))
        if "Write a test that shows the problem" in request.prompt:
            if reproducer is not None:
                (folder / REPRODUCER).write_text(reproducer)
            return "STATUS: done\nREPRODUCER: a double space"
        if fix is not None:
            (folder / "words.py").write_text(fix)
        return "STATUS: done\nSUMMARY: counted words right"

    return FunctionAgent(answer)


@pytest.fixture
def project(in_tmp: Path) -> Path:
    return seeded(in_tmp / "project", double=True)


def verify(
    shipped: dict[str, Workflow], project: Path, answer: FunctionAgent, **inputs: str
) -> RunReport:
    given = {"task": TASK, "target_dir": str(project), "check_command": CHECK, **inputs}
    return run(shipped["implement_verify"], given, agent=answer)


def report(in_tmp: Path, name: str = REPORT) -> str:
    return (in_tmp / "reports" / name).read_text()


def test_a_do_nothing_agent_ends_no_change_and_is_never_verified(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    done = verify(shipped, project, agent(None), must_pass=TARGET)
    assert done.status == "failed"
    assert done.error is not None
    assert (done.error.step_name, done.error.error_type) == ("implement", "NoChange")
    assert done.error.message == (
        "you changed no file: the task needs a change to the files in your working folder;"
        " make it, then answer"
    )
    assert "**Result:** NoChange at `implement`." in report(in_tmp)


def test_with_neither_input_a_do_nothing_agent_is_not_verified_either(
    shipped: dict[str, Workflow], project: Path
) -> None:
    done = verify(shipped, project, agent(None))
    assert (done.status, done.error and done.error.error_type) == ("failed", "NoChange")


def test_a_wrong_fix_ends_not_fixed_naming_the_target(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    answer = agent(WRONG)
    done = verify(shipped, project, answer, must_pass=TARGET)
    assert done.status == "failed"
    assert done.error is not None
    detail = f"FAILED {TARGET} - AssertionError: assert 3 == 2"
    assert (done.error.step_name, done.error.error_type, done.error.message) == (
        "checks",
        "NotFixed",
        f"1 target still not passing:\n- {TARGET}: {detail}",
    )
    assert done.error.context["rounds"] == 3
    assert (
        f"These tests fail now and must pass when you are done (they must run, too):\n- {TARGET}"
        in answer.requests[0].prompt
    )
    assert (
        f"verification round 1/3 failed: 1 target still not passing:\n- {TARGET}: {detail}"
        in answer.requests[1].prompt
    )
    written = report(in_tmp)
    assert "**Result:** NotFixed at `checks`." in written
    assert (
        f"## What the checks proved\ntargets fixed: none\ntargets not passing (1): {TARGET}"
        f" (failing: {detail})\nnew failures: none\npre-existing failures left: none\n"
        "flaky: none\nkept passing: 1\n"
    ) in written


def test_the_right_fix_is_verified_and_the_report_says_what_was_proved(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    done = verify(shipped, project, agent(RIGHT), must_pass=TARGET)
    assert done.status == "succeeded"
    assert done.inputs["implement_verified_fixed"] == (TARGET,)
    proved = (
        f"targets fixed (1): {TARGET}\nnew failures: none\npre-existing failures left: none\n"
        "flaky: none\nkept passing: 1"
    )
    assert done.inputs["implement_verified_proved"]["text"] == proved
    assert f"## What the checks proved\n{proved}\n" in report(in_tmp)
    branch = done.inputs["workspace_branch"]
    assert git(project, "show", f"{branch}:words.py") + "\n" == RIGHT


def test_with_neither_input_a_wrong_fix_is_only_checked_to_break_nothing(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    done = verify(shipped, project, agent(WRONG))
    assert done.status == "succeeded"  # the limit of a baseline: it proves nothing broke
    pre_existing = NOTHING_PROVED.replace(
        "pre-existing failures left: none", f"pre-existing failures left (1): {TARGET}"
    )
    assert f"## What the checks proved\n{pre_existing}\nkept passing: 1\n" in report(in_tmp)


def test_reproduce_first_then_the_right_fix_commits_both(
    shipped: dict[str, Workflow], in_tmp: Path
) -> None:
    project = seeded(in_tmp / "fresh", double=False)
    done = verify(shipped, project, agent(RIGHT), reproduce="yes")
    assert done.status == "succeeded"
    assert (done.inputs["reproducer_ids"], done.inputs["reproducer_files"]) == (
        (REPRODUCER_ID,),
        (REPRODUCER,),
    )
    assert done.inputs["implement_verified_fixed"] == (REPRODUCER_ID,)
    changed = git(project, "show", "--name-only", "--format=", done.inputs["workspace_commit"])
    assert changed.split() == [REPRODUCER, "words.py"]


def test_a_reproducer_that_passes_on_the_old_code_is_not_reproduced(
    shipped: dict[str, Workflow], in_tmp: Path
) -> None:
    project = seeded(in_tmp / "fresh", double=False)
    passing = DOUBLE.replace("'a  b'", "'a b'")
    done = verify(shipped, project, agent(RIGHT, reproducer=passing), reproduce="yes")
    assert done.error is not None
    assert (done.error.step_name, done.error.error_type) == ("reproduce", "NotReproduced")
    assert done.error.message.startswith("no new test fails on the untouched code")


def test_a_reproduce_switch_that_is_neither_yes_nor_no_is_refused(
    shipped: dict[str, Workflow], project: Path
) -> None:
    done = verify(shipped, project, agent(RIGHT), reproduce="maybe")
    assert done.error is not None
    assert done.error.error_type == "StepException"
    assert "input 'reproduce' must be yes or no, got 'maybe'" in done.error.message


def test_the_report_escapes_terminal_controls_an_agent_wrote(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    clipboard = "\x1b]52;c;ZXZpbA==\x07"
    clear = "\x1b[2J"

    def answer(request: AgentRequest) -> str:
        folder = Path(str(request.cwd))
        (folder / "words.py").write_text(RIGHT)
        (folder / f"notes{clear}.txt").write_text("x\n")
        return f"STATUS: done\nSUMMARY: fixed {clipboard} it{clear}"

    done = verify(shipped, project, FunctionAgent(answer), must_pass=TARGET)
    assert done.status == "succeeded"
    written = report(in_tmp)
    assert "\x1b" not in written
    assert "\x07" not in written
    assert "fixed \\x1b]52;c;ZXZpbA==\\x07 it\\x1b[2J" in written
    assert "`notes\\x1b[2J.txt` (+1 -0)" in written


def best_of(
    shipped: dict[str, Workflow], project: Path, answer: FunctionAgent, in_tmp: Path, **inputs: str
) -> RunReport:
    given = {"task": TASK, "target_dir": str(project), "check_command": CHECK, **inputs}
    return run(shipped["implement_best_of"], given, agent=answer, journal=Journal(in_tmp / "r.db"))


def test_best_of_with_do_nothing_agents_never_reaches_the_approval(
    shipped: dict[str, Workflow], project: Path, in_tmp: Path
) -> None:
    done = best_of(shipped, project, agent(None), in_tmp, must_pass=TARGET)
    assert done.status == "failed"
    assert done.error is not None
    assert done.error.error_type == "NoChange"
    assert done["approve"].status == "skipped"


def test_best_of_reproduces_once_and_its_question_says_what_was_proved(
    shipped: dict[str, Workflow], in_tmp: Path
) -> None:
    project = seeded(in_tmp / "fresh", double=False)
    answer = agent(RIGHT)
    waiting = best_of(shipped, project, answer, in_tmp, reproduce="yes")
    assert waiting.status == "waiting"
    assert waiting.error is not None
    question = waiting.error.message
    assert question.endswith(
        f"What the checks proved:\ntargets fixed (1): {REPRODUCER_ID}\nnew failures: none\n"
        "pre-existing failures left: none\nflaky: none\nkept passing: 1"
    )
    asked = [request.prompt for request in answer.requests]
    assert sum("Write a test that shows the problem" in prompt for prompt in asked) == 1
    start = waiting.inputs["reproduction_commit"]
    winner = waiting.inputs["best_commit"]
    assert git(project, "rev-parse", f"{winner}^") == start
    assert git(project, "show", f"{start}:{REPRODUCER}") + "\n" == DOUBLE
