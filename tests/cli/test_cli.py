"""The CLI through main([...]): exit codes, stdout and stderr."""

from __future__ import annotations

import io
import json
import runpy
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


SHOWN = """
from returns.io import IOSuccess
from adws import RetryPolicy, Step, Workflow, with_verification
from adws.agents.step import agent_step
from adws.agents import ScriptedAgent
from adws.contract.validator import OutputContract
from adws.shell.step import shell_step

def noop(ctx):
    return IOSuccess(ctx)

def has_plan(ctx):
    return "plan" in ctx.inputs

agent = ScriptedAgent([])
flow = Workflow(
    "shown",
    (
        agent_step("plan", prompt="Plan {goal}", agent=agent, contract=OutputContract(("PLAN",))),
        with_verification(
            agent_step("build", prompt="Build", agent=agent, retry=RetryPolicy(2, delay=1)),
            shell_step("test", "make test"),
            max_attempts=4,
        ),
        Step("publish", noop, when=has_plan),
        Step("cleanup", noop, always_run=True),
    ),
    description="Shown in tests.",
    inputs=("goal",),
)
"""


@pytest.fixture
def shown(in_tmp: Path) -> Path:
    folder = in_tmp / "workflows"
    folder.mkdir()
    (folder / "shown.py").write_text(SHOWN)
    return folder


def test_show_describes_every_step(shown: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "shown"]) == 0
    assert capsys.readouterr().out == (
        "shown — Shown in tests.\n"
        "inputs: goal\n"
        "  1. plan: agent · 3 attempts · expects PLAN\n"
        "  2. build_verified: verification · 1 attempt · build then test, up to 4 rounds\n"
        "     1. build: agent · 2 attempts, wait 1s x2 up to 60s\n"
        "     2. test: shell · 1 attempt · runs make test\n"
        "  3. publish: python · 1 attempt · when has_plan\n"
        "  4. cleanup: python · 1 attempt · always_run\n"
    )


def test_show_mermaid_draws_retries_verification_and_always_run(
    shown: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "shown", "--mermaid"]) == 0
    assert capsys.readouterr().out == (
        "flowchart TD\n"
        "    start((shown))\n"
        '    plan["plan<br/>agent · 3 attempts"]\n'
        "    start --> plan\n"
        "    plan -- retry --> plan\n"
        '    subgraph build_verified["build_verified · up to 4 rounds"]\n'
        '        build["build<br/>agent · 2 attempts"]\n'
        '        test["test<br/>shell"]\n'
        "        build --> test\n"
        "        test -. fails: feedback .-> build\n"
        "    end\n"
        "    build -- retry --> build\n"
        "    plan --> build_verified\n"
        '    publish["publish<br/>python<br/>when has_plan"]\n'
        "    build_verified --> publish\n"
        '    cleanup[["cleanup<br/>python<br/>always_run"]]:::always\n'
        "    publish --> cleanup\n"
        "    cleanup --> finish((done))\n"
        "    plan -. failure .-> cleanup\n"
        "    build_verified -. failure .-> cleanup\n"
        "    publish -. failure .-> cleanup\n"
        "    classDef always stroke-dasharray: 5 3\n"
    )


def test_show_of_an_unknown_workflow_exits_2(shown: Path) -> None:
    assert main(["show", "nope"]) == 2


def test_validate_a_good_answer_prints_the_fields(
    shown: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("answer.txt").write_text("Thinking...\nSTATUS: done\nPLAN: 1. build\n2. test\n")
    assert main(["validate", "--workflow", "shown", "--step", "plan", "answer.txt"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "status": "done",
        "fields": {"STATUS": "done", "PLAN": "1. build\n2. test"},
        "data": {},
    }


def test_validate_a_bad_answer_prints_every_problem(
    shown: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("answer.txt").write_text("STATUS: finished\n")
    assert main(["validate", "--workflow", "shown", "--step", "plan", "answer.txt"]) == 1
    assert capsys.readouterr().out == (
        "invalid: ContractViolation\n  - STATUS 'finished' is not one of done, retry, blocked\n"
    )


def test_validate_reads_stdin_and_finds_nested_steps(
    shown: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("STATUS: blocked\nREASON: no access"))
    assert main(["validate", "--workflow", "shown", "--step", "build", "-"]) == 1
    assert capsys.readouterr().out == "invalid: Blocked\n  - no access\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--step", "nope", "a.txt"],
            "workflow 'shown' has no step 'nope'; steps: plan, build_verified, build, test, publish, cleanup",
        ),
        (
            ["--step", "test", "a.txt"],
            "step 'test' is a shell step; only agent steps have an output contract",
        ),
        (["--step", "plan", "missing.txt"], "cannot read missing.txt: No such file or directory"),
    ],
)
def test_validate_usage_errors_exit_2(
    shown: Path, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--workflow", "shown", *argv]) == 2
    assert capsys.readouterr().err == f"adws: error: {message}\n"


@pytest.mark.agent_process  # a real command answers
def test_run_with_agent_replaces_every_agent_step(
    shown: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = "sh -c 'cat > /dev/null; echo STATUS: done; echo PLAN: go'"
    assert main(["run", "shown", "-i", "goal=ship", "--agent", agent, "-q", "--json"]) == 1
    summary = json.loads(capsys.readouterr().out)
    assert [s["status"] for s in summary["steps"]] == [
        "succeeded",
        "failed",
        "skipped",
        "succeeded",
    ]
    assert summary["error"]["step_name"] == "test"


def test_run_with_an_empty_agent_command_exits_2(
    shown: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "shown", "-i", "goal=x", "--agent", ""]) == 2
    assert capsys.readouterr().err == "adws: error: --agent: CommandAgent needs a command to run\n"


@pytest.mark.agent_process  # a real command answers
def test_a_contract_violation_lists_its_problems_on_stderr(
    shown: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "shown", "-i", "goal=x", "--agent", "echo nothing useful"]) == 1
    err = capsys.readouterr().err
    assert (
        "[1/4] plan … failed after 3 attempts: ContractViolation: STATUS missing\n"
        "      the answer:\n"
        "        nothing useful\n"
    ) in err


def test_python_m_adws_runs_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["adws", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_module("adws", run_name="__main__")
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.startswith("usage: adws")


def test_text_from_a_step_is_printed_with_control_characters_escaped(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "noisy.py").write_text(
        "from returns.io import IOFailure\n"
        "from adws import PipelineError, Step, Workflow\n"
        "def loud(ctx):\n"
        "    return IOFailure(PipelineError('', 'ShellFailed', 'bad\\x1b[2J\\x9b31m\\u202e\\udce9 end'))\n"
        "workflow = Workflow('noisy', (Step('loud', loud),))\n",
        encoding="utf-8",
    )
    assert main(["run", "noisy", "--no-journal"]) == 1
    err = capsys.readouterr().err
    assert "\x1b" not in err
    assert "bad\\x1b[2J\\x9b31m\\u202e\\udce9 end" in err
    assert main(["run", "noisy", "--no-journal", "--json", "-q"]) == 1
    captured = capsys.readouterr()
    assert "\x1b" not in captured.out
    assert "\x9b" not in captured.out
    assert json.loads(captured.out)["error"]["message"] == "bad\x1b[2J\x9b31m\u202e\udce9 end"
    assert captured.err.startswith("noisy failed in ")


def test_show_names_the_input_a_script_comes_from(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "checks.py").write_text(
        "from adws import Workflow, shell_step\n"
        "workflow = Workflow('checks', (shell_step('check', script_from='cmd'),"
        " shell_step('argv', ['make', 'test'])), inputs=('cmd',))\n",
        encoding="utf-8",
    )
    assert main(["show", "checks"]) == 0
    assert capsys.readouterr().out == (
        "checks\n"
        "inputs: cmd\n"
        "  1. check: shell · 1 attempt · runs the script in input cmd\n"
        '  2. argv: shell · 1 attempt · runs ["make", "test"]\n'
    )


def test_an_inputs_file_with_a_key_that_is_not_an_input_name_is_refused(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "in.json").write_text('{"topic": "x", "Bad Key": 1}', encoding="utf-8")
    assert main(["run", "anything", "--inputs", "in.json"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: inputs file in.json: key 'Bad Key' is not an input name; "
        "use lower_snake_case, as with -i\n"
    )


def test_two_modules_defining_one_workflow_name_make_run_refuse(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    for name in ("a_first", "b_second"):
        (in_tmp / "workflows" / f"{name}.py").write_text(
            "from adws import Workflow\nworkflow = Workflow('same', ())\n", encoding="utf-8"
        )
    assert main(["run", "same"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: workflow 'same' is defined in both a_first.py and b_second.py; "
        "rename one of them\n"
    )


def test_a_syntax_error_names_its_real_line(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "broken.py").write_text(
        "x = 1\n\ndef f(:\n    pass\n", encoding="utf-8"
    )
    assert main(["list"]) == 2
    assert capsys.readouterr().err == (
        "warning: could not load broken.py: SyntaxError: invalid syntax (line 3)\n"
        f"no workflows found in {in_tmp / 'workflows'}\n"
    )


def test_an_error_raised_while_a_module_loads_names_the_line_in_that_module(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "raises.py").write_text(
        "import json\n\njson.loads('{')\n", encoding="utf-8"
    )
    assert main(["list"]) == 2
    assert (
        "raises.py: JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1) (line 3)"
        in capsys.readouterr().err
    )


def test_max_agents_must_be_a_whole_number_of_at_least_one(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "nothing.py").write_text(
        "from adws import Workflow\nworkflow = Workflow('nothing', ())\n", encoding="utf-8"
    )
    assert main(["run", "nothing", "--max-agents", "2", "-q"]) == 0
    for bad in ("0", "two"):
        assert main(["run", "nothing", "--max-agents", bad]) == 2
        assert (
            f"argument --max-agents: expected a whole number of at least 1, got '{bad}'"
            in capsys.readouterr().err
        )


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("/dev/zero", "adws: error: inputs file /dev/zero is not a regular file\n"),
        ("huge.json", "adws: error: inputs file huge.json is larger than 64 MiB\n"),
        ("latin1.json", "adws: error: inputs file latin1.json is not valid JSON: "),
    ],
)
def test_an_inputs_file_that_would_never_end_or_fill_memory_is_refused(
    flows: Path, capsys: pytest.CaptureFixture[str], source: str, message: str
) -> None:
    with Path("huge.json").open("wb") as huge:
        huge.truncate((64 << 20) + 1)  # sparse: no disk used
    Path("latin1.json").write_bytes(b'{"word": "\xe9"}')
    assert main(["run", "passes", "--inputs", source]) == 2
    assert capsys.readouterr().err.startswith(message)


def test_a_recording_nested_past_the_recursion_limit_is_named_not_a_traceback(
    flows: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("answers").mkdir()
    Path("answers/passes.json").write_text('{"answers": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert main(["run", "passes", "-i", "word=w", "--replay", "answers"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: answers/passes.json is not a recording of agent answers (RecursionError)\n"
    )


def test_a_write_that_fails_for_another_reason_than_a_gone_reader_is_raised() -> None:
    import errno  # noqa: PLC0415 - only this test builds the error

    from adws.io_ops.terminal import write_line  # noqa: PLC0415 - the printing helper, alone

    class Full:
        """A stream on a full disk."""

        def write(self, _text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def flush(self) -> None:
            pass

    with pytest.raises(OSError, match="No space left"):
        write_line(Full(), "x")  # type: ignore[arg-type] # a fake stream


def test_a_run_inside_a_run_gives_the_outer_run_its_id_back(
    flows: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os  # noqa: PLC0415 - only this test reads the environment

    monkeypatch.setenv("ADWS_RUN_ID", "outer")
    assert main(["run", "passes", "-i", "word=w", "-q"]) == 0
    assert os.environ["ADWS_RUN_ID"] == "outer"


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version  # noqa: PLC0415 - what --version must agree with

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"adws {version('adws')}\n"


DECLARED = """
from returns.io import IOSuccess
from adws import OutputContract, RetryPolicy, ScriptedAgent, Step, Workflow, agent_step, shell_step

def save(ctx):
    return IOSuccess(ctx.merge_outputs({"saved": ctx.inputs.get("output_dir", "here")}))

declared = Workflow(
    "declared",
    (shell_step("echo", "echo {topic}"), Step("save", save, reads=("output_dir",), writes=("saved",))),
    inputs=("topic",),
    optional_inputs=("output_dir",),
)
broken = Workflow("broken", (shell_step("echo", "echo {topic} {tpoic}"),), inputs=("topic",))
events = Workflow(
    "events",
    (agent_step("ask", prompt="p", agent=ScriptedAgent(
        ['{"type": "system", "session_id": "s"}\\n[1]\\nnot json']
    ), contract=OutputContract(), retry=RetryPolicy(max_attempts=1)),),
)
claude = Workflow(
    "claude",
    (agent_step("ask", prompt="p", agent=ScriptedAgent(
        ['{"type": "result", "subtype": "success", "is_error": false, "result": "STATUS: done"}']
    ), contract=OutputContract(), retry=RetryPolicy(max_attempts=1)),),
)
"""


@pytest.fixture
def declared(in_tmp: Path) -> Path:
    folder = in_tmp / "workflows"
    folder.mkdir()
    (folder / "declared.py").write_text(DECLARED)
    return folder


def test_an_unknown_input_is_refused_naming_it_and_the_known_ones(
    declared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "declared", "-i", "topic=t", "-i", "tpoic=x", "-i", "outptu=y"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: workflow 'declared' takes no input 'tpoic', 'outptu'; the inputs it reads:"
        " output_dir, topic\n"
    )
    assert main(["run", "declared", "-i", "topic=t", "-i", "output_dir=o", "-q", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["saved"] == "o"


def test_run_refuses_a_workflow_that_fails_adws_check(
    declared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "broken", "-i", "topic=t"]) == 2
    assert capsys.readouterr().err == (
        "adws: error: workflow 'broken' fails adws check: error: echo: reads 'tpoic', which no"
        " earlier step writes and the workflow's inputs do not declare; see `adws check broken`\n"
    )
    # an input given on the command line is one the steps may read
    assert main(["run", "broken", "-i", "topic=t", "-i", "tpoic=u", "-q", "--no-journal"]) == 0


def test_an_agent_printing_claudes_json_is_told_how_to_read_it(
    declared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "claude", "-q", "--no-journal", "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["message"] == (
        "STATUS missing: the answer looks like the JSON Claude Code prints with --output-format"
        " json or stream-json, not the answer inside it: read it with --agent-output claude-json"
        " (or use --agent claude, or CommandAgent(..., parse=claude_json))"
    )
    assert main(["run", "events", "-q", "--no-journal", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["error"]["message"] == "STATUS missing"


def test_show_lists_optional_inputs_and_both_kinds_of_one_input_are_refused(
    declared: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", "declared"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == "inputs: topic (optional: output_dir)"
    from adws import Workflow  # noqa: PLC0415 - only this test builds one here

    with pytest.raises(ValueError, match="input 'a' cannot be both required and optional"):
        Workflow("w", (), inputs=("a",), optional_inputs=("a",))


def test_agent_request_is_part_of_the_authors_kit() -> None:
    from adws.agents import AgentRequest, AgentResponse  # noqa: PLC0415 - the same classes
    from adws.testing import AgentRequest as KitRequest  # noqa: PLC0415 - as a user imports it
    from adws.testing import AgentResponse as KitResponse  # noqa: PLC0415 - as above

    assert (KitRequest, KitResponse) == (AgentRequest, AgentResponse)
