"""Placeholders: `{key}`, `{key.field}`, `{key[0]}`, literal braces and text that stays text."""

from __future__ import annotations

import dataclasses
import json

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from adws import (
    OutputContract,
    PipelineError,
    ScriptedAgent,
    Workflow,
    WorkflowContext,
    agent_step,
    run_workflow,
    shell_step,
)
from adws.contract.template import (
    Placeholder,
    check_template,
    parse_placeholder,
    render,
    render_for_step,
    template_paths,
)
from tests.conftest import failure, success


@attrs.frozen
class Triage:
    """A triage verdict."""

    label: str
    tags: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Owner:
    """Who owns an issue."""

    login: str


def test_a_path_reads_fields_elements_and_camel_case_keys() -> None:
    values = {
        "issue_json": {"createdAt": "2024-01-01", "labels": [{"name": "bug"}]},
        "triage": Triage("bug", ("a", "b")),
        "owner": Owner("ada"),
    }
    template = "{issue_json.createdAt} {issue_json.labels[0].name} {triage.tags[1]} {owner.login}"
    assert render(template, values) == Success("2024-01-01 bug b ada")


def test_a_structured_value_renders_as_json() -> None:
    assert render("{t}", {"t": Triage("bug")}) == Success('{\n  "label": "bug",\n  "tags": []\n}')


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{t.lable}", "t has no field 'lable' (it has: label)"),
        ("{t.label.x}", "t.label is text, which has no fields"),
        ("{t.label[0]}", "t.label is text, not a list"),
        ("{n[3]}", "n has 2 elements, so no [3]"),
        ("{n.size}", "n is a list, which has no fields"),
        ("{tr.x}", "tr has no field 'x' (it has: label, tags)"),
        ("{o.x}", "o has no field 'x' (it has: login)"),
        ("{e.x}", "e has no field 'x' (it has none)"),
        ("{i.x}", "i is an integer, which has no fields"),
        ("{z[0]}", "z is null, not a list"),
    ],
)
def test_a_missing_field_or_element_names_the_path(template: str, reason: str) -> None:
    values = {
        "t": {"label": "bug"},
        "n": [1, 2],
        "o": Owner("ada"),
        "e": {},
        "i": 3,
        "tr": Triage("bug"),
        "z": None,
    }
    rendered = render(template, values)
    assert isinstance(rendered, Failure)
    assert [item.reason for item in rendered.failure()] == [reason]


def test_a_field_list_is_cut_after_twelve_names() -> None:
    values = {"t": {f"k{i}": i for i in range(14)}}
    [unresolved] = render("{t.x}", values).failure()
    assert unresolved.reason == (
        "t has no field 'x' (it has: k0, k1, k2, k3, k4, k5, k6, k7, k8, k9, k10, k11, ...)"
    )


def test_the_missing_input_error_names_keys_and_paths_together() -> None:
    error = render_for_step(
        "{a} {t.lable} {b}", {"t": {"label": "x"}}, step_name="s", what="the prompt"
    )
    assert isinstance(error, PipelineError)
    assert error.message == (
        "the prompt of step 's' needs input 'a', 'b'; needs {t.lable}: t has no field 'lable'"
        " (it has: label); inputs available: t"
    )
    assert error.context["missing"] == ("a", "t.lable", "b")


@pytest.mark.parametrize(
    "text", ["Nope", "a..b", "x[", "x[]", "_x", "a.", "a[b]", "a]", "x.y[0]z", "Bad.x"]
)
def test_a_brace_group_that_looks_like_a_placeholder_must_be_one(text: str) -> None:
    assert parse_placeholder(text) is None
    with pytest.raises(ValueError, match=r"looks like a placeholder but is not one"):
        check_template("{" + text + "}", owner="step 's'", what="the prompt")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a", Placeholder("a", "a")),
        ("a.b.c", Placeholder("a.b.c", "a", ("b", "c"))),
        ("a[0][12]", Placeholder("a[0][12]", "a", (0, 12))),
        ("issue_json.createdAt", Placeholder("issue_json.createdAt", "issue_json", ("createdAt",))),
        ("a.0", Placeholder("a.0", "a", ("0",))),
    ],
)
def test_valid_placeholders_parse_into_key_and_path(text: str, expected: Placeholder) -> None:
    assert parse_placeholder(text) == expected


def test_literal_braces_and_json_looking_text_stay_text() -> None:
    template = 'Answer {"a": 1} or { x } or {} or {x[-1]} or {{name}}: {name}'
    check_template(template, owner="s", what="w")
    assert [p.text for p in template_paths(template)] == ["name"]
    assert render(template, {"name": "Ada"}) == Success(
        'Answer {"a": 1} or { x } or {} or {x[-1]} or {name}: Ada'
    )


_NOT_PLACEHOLDER = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="{}"), max_size=20
)


@given(st.lists(_NOT_PLACEHOLDER, min_size=1, max_size=5))
def test_doubled_braces_always_stay_literal_braces(pieces: list[str]) -> None:
    """`{{...}}` around anything renders as `{...}`, never as a placeholder."""
    template = "".join("{{" + piece + "}}" for piece in pieces)
    check_template(template, owner="s", what="w")
    assert template_paths(template) == ()
    assert render(template, {}) == Success("".join("{" + piece + "}" for piece in pieces))


_BRACELESS = st.characters(blacklist_categories=["Cs"], blacklist_characters="{}")
# JSON's own braces, around strings with none: a `{a}` inside a string is a placeholder.
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(_BRACELESS, max_size=8),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.text(_BRACELESS, min_size=1, max_size=6), children, min_size=1, max_size=3
        )
    ),
    max_leaves=6,
)


@given(_JSON.filter(lambda value: isinstance(value, dict | list)))
def test_json_text_stays_text(value: object) -> None:
    """JSON objects in a prompt (keys are quoted) never contain a placeholder."""
    text = json.dumps(value)
    check_template(text, owner="s", what="w")
    assert template_paths(text) == ()
    assert render(text, {}) == Success(text.replace("{{", "{").replace("}}", "}"))


def test_an_agent_prompt_with_a_typo_does_not_load() -> None:
    with pytest.raises(ValueError, match=r"^step 'ask': the prompt has \{Topic\}, which"):
        agent_step("ask", prompt="About {Topic}", agent=ScriptedAgent([]))
    with pytest.raises(ValueError, match=r"^step 'ask': the cwd has \{a\.\.b\}, which"):
        agent_step("ask", prompt="p", agent=ScriptedAgent([]), cwd="{a..b}")


def test_an_agent_prompt_reads_a_field_of_an_earlier_json_output() -> None:
    agent = ScriptedAgent(["STATUS: done\nOK: yes"])
    step = agent_step(
        "ask", prompt="Label {triage_json.label}", agent=agent, contract=OutputContract(("OK",))
    )
    ctx = WorkflowContext(inputs={"triage_json": {"label": "bug"}})
    success(run_workflow(Workflow("w", (step,)), ctx))
    assert agent.prompts[0].startswith("Label bug\n")
    error = failure(
        run_workflow(
            Workflow("w", (step,)), WorkflowContext(inputs={"triage_json": {"lable": "x"}})
        )
    )
    assert error.error_type == "MissingInput"
    assert error.message == (
        "the prompt of step 'ask' needs {triage_json.label}: triage_json has no field 'label'"
        " (it has: lable); inputs available: triage_json"
    )


def test_a_shell_cwd_with_a_typo_does_not_load() -> None:
    with pytest.raises(ValueError, match=r"^step 's': the cwd has \{Dir\}"):
        shell_step("s", "true", cwd="{Dir}")


@given(st.lists(_NOT_PLACEHOLDER, min_size=1, max_size=5))
def test_doubled_braces_stay_literal_in_shell_scripts_too(pieces: list[str]) -> None:
    """A shell template's `{{...}}` is the script's own braces, never a parameter."""
    from adws.shell._script import compile_script  # noqa: PLC0415 - the shell's side of the grammar

    compiled = compile_script("".join("{{" + piece + "}}" for piece in pieces), step_name="s")
    assert compiled.placeholders == ()
    assert compiled.script == "".join("{" + piece + "}" for piece in pieces)


@given(_JSON.filter(lambda value: isinstance(value, dict | list)))
def test_json_text_stays_text_in_shell_scripts(value: object) -> None:
    """JSON in a shell command is the command's text: no parameter is made of it."""
    from adws.shell._script import compile_script  # noqa: PLC0415 - as above

    text = json.dumps(value)
    while "{{" in text or "}}" in text:  # `}}}` has a `}}` left after one replacement
        text = text.replace("{{", "{ {").replace("}}", "} }")
    compiled = compile_script(text, step_name="s")
    assert (compiled.placeholders, compiled.script) == ((), text)
