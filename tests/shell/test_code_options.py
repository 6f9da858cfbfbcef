"""A value never follows `-c`, `-e`, `--command` or `--eval` of a program adws does not know.

`rbash -c "echo {x}"` ran the value as code: rbash is no shell adws
compiles scripts for. Such a placeholder is refused when the step is
defined, with the rewrite that passes the value after the code; the
rewrites are run here through the real programs with hostile values.
"""

from __future__ import annotations

import ast
import shutil
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adws import Workflow, WorkflowContext, run_workflow
from adws.shell._code import DATA, family
from adws.shell._plan import plan_command
from adws.shell.step import shell_step
from tests.conftest import success
from tests.shell.test_shell_injection import HOSTILE, text_without_nul

if TYPE_CHECKING:
    from pathlib import Path

UNKNOWN = [
    "rbash",
    "mksh",
    "yash",
    "posh",
    "fish",
    "csh",
    "tcsh",
    "python",
    "python3",
    "python3.12",
    "pypy3",
    "perl",
    "node",
    "ruby",
    "sed",
    "awk",
    "osascript",
    "Rscript",
    "docker",
    "my-tool",
]
"""Programs adws does not know to take data after `-c` or `-e`: any of them may run it."""


def refusal(command: list[str]) -> str:
    with pytest.raises(ValueError, match="so a value there would be code") as refused:
        shell_step("s", command)
    return str(refused.value)


def rewrite(message: str) -> list[str]:
    """Read the argv a refusal suggests (`write [...]`)."""
    suggested = message.split(": write ", 1)[1].split("] (", 1)[0] + "]"
    found = ast.literal_eval(suggested)
    assert isinstance(found, list)
    return [str(part) for part in found]


@pytest.mark.skipif(shutil.which("rbash") is None, reason="rbash is not installed")
@pytest.mark.parametrize("value", HOSTILE)
def test_rbash_c_with_a_value_is_refused_and_its_rewrite_runs_the_value_as_data(
    value: str, in_tmp: Path
) -> None:
    said = refusal(["rbash", "-c", "echo {x}"])
    assert said == (
        "shell_step 's': argument 2 of the command ('echo {x}') follows rbash's -c, which may"
        " run it as code, so a value there would be code: write ['rbash', '-c', 'echo \"$1\"',"
        " 'rbash', '{x}'] (each value after the script is its $1, $2, ...)"
    )
    step = shell_step("s", ["rbash", "-c", "printf '%s' \"$1\"", "rbash", "{x}"])
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"x": value})))
    assert (ctx.inputs["s_stdout"], sorted(in_tmp.iterdir())) == (value, [])


@pytest.mark.parametrize("program", UNKNOWN)
@pytest.mark.parametrize("option", ["-c", "-e", "--command", "--eval"])
def test_every_code_option_of_a_program_adws_does_not_know_is_refused(
    program: str, option: str
) -> None:
    said = refusal([program, option, "print({x})"])
    assert said.startswith(
        f"shell_step 's': argument 2 of the command ('print({{x}})') follows {program}'s {option},"
    )


def test_the_shells_adws_knows_get_their_values_as_parameters_even_ksh() -> None:
    for shell in ("sh", "bash", "dash", "zsh", "ksh", "ash"):
        assert plan_command("s", (shell, "-c", "echo {x}")).script_at == 2


@pytest.mark.parametrize(
    ("command", "advice"),
    [
        (
            ["python3", "-c", "print({x}, {y.z})"],
            (
                "write ['python3', '-c', 'import sys; print(sys.argv[1])', '{x}', '{y.z}'] (the code"
                " reads each value from the arguments after it: sys.argv[1], ...)"
            ),
        ),
        (
            ["/usr/bin/perl", "-le", "print {x}"],
            (
                "write ['/usr/bin/perl', '-le', 'print $ARGV[0]', '--', '{x}'] (the code reads each"
                " value from the arguments after it: $ARGV[0], ...)"
            ),
        ),
        (
            ["node", "--eval=console.log({x})"],
            (
                "write ['node', '--eval', 'console.log(process.argv[1])', '--', '{x}'] (the code reads"
                " each value from the arguments after it: process.argv[1], ...)"
            ),
        ),
        (
            ["tcsh", "-c", "echo {x}"],
            (
                "write ['tcsh', '-c', 'echo $argv[1]:q', '{x}'] (the code reads each value from the"
                " arguments after it: $argv[1], ...)"
            ),
        ),
        (["python3", "-m", "{module}"], "name what python3 runs in the command itself"),
        (["perl", "-MFoo={x}", "-e", "1"], "name what perl runs in the command itself"),
        (["fish", "-c", "{x}"], "write shell_step(NAME, script_from='x')"),
        (
            ["docker", "run", "-e", "A={x}", "img"],
            (
                "pass each value as an argument of its own after the code, for the code to read; or,"
                " if docker takes data after -e, write that option's long form"
            ),
        ),
        (
            ["env", "-i", "timeout", "5", "mksh", "-cx", "echo {x}"],
            "write ['mksh', '-cx', 'echo \"$1\"', 'mksh', '{x}']",
        ),
    ],
)
def test_each_refusal_names_the_argument_and_the_rewrite(command: list[str], advice: str) -> None:
    assert advice in refusal(command)


@pytest.mark.parametrize(
    "command",
    [
        ["grep", "-e", "{pattern}", "notes.txt"],
        ["grep", "-c", "{pattern}", "notes.txt"],
        ["head", "-c", "{count}", "notes.txt"],
        ["echo", "-e", "{x}"],
        ["tar", "-czf", "{archive}", "."],
        ["find", ".", "-name", "{pattern}"],
        ["java", "-Dconfig={x}", "-cp", "lib", "Main"],
        ["docker", "run", "--env=A={x}", "img"],
        ["python3", "-c", "import sys; print(sys.argv[1])", "{x}"],
        ["env", "{x}"],
        ["timeout", "5"],
        ["sh", "script.sh", "-c", "{x}"],
    ],
)
def test_data_after_an_option_adws_knows_or_no_code_option_is_accepted(
    command: list[str],
) -> None:
    assert plan_command("s", tuple(command)).argv == tuple(command)


CODE = st.sampled_from(["print({x})", "echo {x}", "{x}", "x = '{x}'", "f({x}, {y})"])
WRAPPERS = st.sampled_from(
    [[], ["env"], ["env", "-i", "LC_ALL=C"], ["timeout", "5"], ["nice", "-n", "5"], ["nohup"]]
)


@st.composite
def code_argvs(draw: st.DrawFn) -> tuple[list[str], int]:
    """Draw an argv that hands a placeholder to a code option, and the index it stands at."""
    wrappers = draw(st.lists(WRAPPERS, max_size=2))
    prefix = [part for wrapper in wrappers for part in wrapper]
    program = draw(st.sampled_from(["", "/usr/bin/", "./bin/"])) + draw(st.sampled_from(UNKNOWN))
    noise = draw(st.lists(st.sampled_from(["-q", "--verbose", "-n", "-W", "-x"]), max_size=2))
    code = draw(CODE)
    option = draw(st.sampled_from(["-c", "-e", "--command", "--eval"]))
    shape = draw(st.sampled_from(["apart", "glued"]))
    if shape == "glued":
        parts = [f"{option}={code}" if option.startswith("--") else option + code]
    else:
        parts = [option, code]
    tail = draw(st.lists(st.sampled_from(["--", "-", "{y}", "file"]), max_size=2))
    argv = [*prefix, program, *noise, *parts, *tail]
    return argv, len(prefix) + 1 + len(noise) + len(parts) - 1


@settings(max_examples=300, deadline=None)
@given(drawn=code_argvs())
def test_any_argv_shape_that_hands_a_value_to_a_code_option_is_refused(
    drawn: tuple[list[str], int],
) -> None:
    argv, at = drawn
    said = refusal(argv)
    assert f"argument {at} of the command ({argv[at]!r})" in said


RUNNABLE = [name for name in ("rbash", "python3", "perl", "node") if shutil.which(name)]
PRINTS = {"sh": "printf '%s' {x}", "python": "print({x})", "perl": "print {x}", "node": "f({x})"}
ENDS = {"sh": "", "python": "\n", "perl": "", "node": "\n"}


@pytest.mark.slow
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(program=st.sampled_from(RUNNABLE), value=text_without_nul | st.sampled_from(HOSTILE))
def test_the_rewrite_a_refusal_suggests_runs_any_value_as_data_through_the_real_program(
    in_tmp: Path, program: str, value: str
) -> None:
    kind = family(program)
    option = "-c" if kind in {"sh", "python"} else "-e"
    argv = rewrite(refusal([program, option, PRINTS[kind]]))
    step = shell_step("s", argv)
    ctx = success(run_workflow(Workflow("w", (step,)), WorkflowContext(inputs={"x": value})))
    assert (ctx.inputs["s_stdout"], sorted(in_tmp.iterdir())) == (value + ENDS[kind], [])


def test_the_programs_adws_knows_take_data_only_after_their_own_options() -> None:
    assert DATA["grep"] == frozenset({"-c", "-e"})
    assert "sed" not in DATA  # a sed script is code (GNU sed's `e` runs a command)
    assert (family("nodejs"), family("csh"), family("lksh")) == ("node", "csh", "sh")
