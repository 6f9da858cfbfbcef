"""What a step's process sees: the user's environment, less adws's credentials unless named."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adws import CommandAgent, agent_step, io_ops, shell_step
from adws._exceptions import DefinitionError, DefinitionTypeError
from adws.agents.scripted import ScriptedAgent
from adws.agents.step import AgentSpec
from adws.io_ops.environment import kept_home
from adws.shell.step import ShellSpec

NAMES = st.one_of(
    st.sampled_from(["ADWS_JOURNAL", "GH_TOKEN", "GITHUB_TOKEN", "PGPASSWORD", "PGHOST", "PATH"]),
    st.from_regex(r"[A-Z_][A-Z0-9_]{0,12}", fullmatch=True),
)


@given(
    environ=st.dictionaries(NAMES, st.text(max_size=5)),
    passed=st.lists(NAMES, max_size=4),
    given_env=st.dictionaries(NAMES, st.text(max_size=5), max_size=3),
)
def test_a_child_sees_no_credential_it_did_not_name_and_everything_else(
    environ: dict[str, str], passed: list[str], given_env: dict[str, str]
) -> None:
    child = io_ops.child_environment(given_env, passed, environ=environ)
    expected = {key: value for key, value in environ.items() if key in passed or not kept_home(key)}
    assert child == {**expected, **given_env}
    assert not {key for key in child if kept_home(key)} - set(passed) - set(given_env)


def test_run_process_keeps_the_journal_and_tokens_home_unless_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ADWS_JOURNAL", "postgresql://u:pw@db/adws")
    monkeypatch.setenv("PGPASSWORD", "pw")
    monkeypatch.setenv("GH_TOKEN", "tok")
    monkeypatch.setenv("ADWS_TEST_KEPT", "yes")
    show = (
        "import os; print(sorted(k for k in os.environ if k in "
        "{'ADWS_JOURNAL', 'PGPASSWORD', 'GH_TOKEN', 'ADWS_TEST_KEPT', 'GIVEN'}))"
    )
    plain = io_ops.run_process([sys.executable, "-c", show], timeout=30)
    named = io_ops.run_process(
        [sys.executable, "-c", show], timeout=30, env={"GIVEN": "1"}, env_pass=("GH_TOKEN",)
    )
    assert (plain.stdout, named.stdout) == (
        "['ADWS_TEST_KEPT']\n",
        "['ADWS_TEST_KEPT', 'GH_TOKEN', 'GIVEN']\n",
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: shell_step("db", "psql", env_pass="PGPASSWORD"),  # noqa: S106 - a name
            (
                "shell_step 'db': env_pass must be a list or tuple of variable names, got "
                "'PGPASSWORD' (write ('PGPASSWORD',))"
            ),
        ),
        (
            lambda: agent_step("ask", prompt="p", agent=ScriptedAgent([]), env_pass=7),  # type: ignore[arg-type] # what the check is for
            "agent_step 'ask': env_pass must be a list or tuple of variable names, got 7",
        ),
        (
            lambda: CommandAgent("cat", env_pass=["GH TOKEN"]),
            "CommandAgent: env_pass holds 'GH TOKEN', which is no environment variable's name",
        ),
        (
            lambda: shell_step("db", "psql", env_pass=[None]),  # type: ignore[list-item] # as above
            "shell_step 'db': env_pass holds None, which is no environment variable's name",
        ),
    ],
)
def test_env_pass_that_names_no_variables_is_refused_at_definition(
    build: object, message: str
) -> None:
    with pytest.raises((DefinitionError, DefinitionTypeError)) as raised:
        build()  # type: ignore[operator] # a lambda
    assert str(raised.value) == message


def test_the_steps_say_what_they_pass_and_rebuild_with_it() -> None:
    shell = shell_step("db", "psql", env_pass=("PGHOST", "PGPASSWORD"))
    asked = agent_step("ask", prompt="p", agent=ScriptedAgent([]), env_pass=["GH_TOKEN"])
    assert isinstance(shell.spec, ShellSpec)
    assert isinstance(asked.spec, AgentSpec)
    rebuilt = asked.spec.build(asked).spec
    assert isinstance(rebuilt, AgentSpec)
    assert (shell.spec.env_pass, asked.spec.env_pass, rebuilt.env_pass) == (
        ("PGHOST", "PGPASSWORD"),
        ("GH_TOKEN",),
        ("GH_TOKEN",),
    )
