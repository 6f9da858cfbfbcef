"""check_workflow and `adws check`: a workflow's dataflow, checked before any run."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Literal, Union

import attrs
import pytest
from returns.io import IOSuccess

from adws import (
    Key,
    OutputContract,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
    parallel,
    reproduce,
    shell_step,
    with_verification,
)
from adws.agents import ScriptedAgent
from adws.check import Problem, check_workflow
from adws.cli import main
from adws.discovery import discover_workflows
from tests.workflows.conftest import SHIPPED

if TYPE_CHECKING:
    from pathlib import Path

    from returns.io import IOResult

    from adws import PipelineError

AGENT = ScriptedAgent([])


def nothing(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    return IOSuccess(ctx)


def ask(name: str, prompt: str, *keys: str) -> Step:
    return agent_step(name, prompt=prompt, agent=AGENT, contract=OutputContract(keys))


def errors(workflow: Workflow) -> list[str]:
    return [str(p) for p in check_workflow(workflow) if p.severity == "error"]


def test_a_prompt_reading_a_key_nothing_writes_is_an_error() -> None:
    workflow = Workflow(
        "w",
        (ask("plan", "Plan {topic}", "PLAN"), ask("write", "Write {plan} for {audience}", "TEXT")),
        inputs=("topic",),
    )
    assert check_workflow(workflow) == (
        Problem(
            "error",
            "write",
            "audience",
            "reads 'audience', which no earlier step writes and the workflow's inputs do not declare",
        ),
        Problem("note", "write", "text", "writes 'text', which no later step reads"),
    )


def test_a_key_written_twice_is_an_error_before_any_run() -> None:
    workflow = Workflow(
        "w", (ask("a", "x", "SUMMARY"), ask("b", "{summary}", "SUMMARY")), inputs=()
    )
    assert errors(workflow) == ["error: b: writes 'summary', which step 'a' wrote"]


def test_a_declared_read_nobody_provides_is_an_error() -> None:
    workflow = Workflow("w", (Step("use", nothing, reads=("ticket",), writes=()),))
    assert errors(workflow) == [
        "error: use: reads 'ticket', which no earlier step writes and the workflow's inputs do not declare"
    ]


def test_every_shipped_workflow_passes() -> None:
    catalog = discover_workflows(SHIPPED)
    assert {name: errors(w) for name, w in catalog.workflows.items()} == {
        "deep_research": [],
        "fix_issue": [],
        "hello": [],
        "implement_best_of": [],
        "implement_verify": [],
        "plan_and_check": [],
    }
    assert all(p.severity == "note" for w in catalog.workflows.values() for p in check_workflow(w))


def test_a_step_writing_an_input_or_a_script_is_an_error() -> None:
    workflow = Workflow(
        "w",
        (
            ask("pick", "choose", "CHECK_COMMAND"),
            shell_step("checks", script_from="check_command"),
        ),
        inputs=("check_command",),
    )
    assert errors(workflow) == [
        (
            "error: pick: writes 'check_command', which shell step 'checks' runs as its script: only"
            " the user may choose a script"
        )
    ]
    plain = Workflow("w", (Step("s", nothing, reads=(), writes=("topic",)),), inputs=("topic",))
    assert errors(plain) == ["error: s: writes 'topic', which the workflow's inputs wrote"]


def test_an_undeclared_python_step_makes_later_missing_reads_warnings() -> None:
    workflow = Workflow("w", (Step("fetch", nothing), ask("use", "{data}", "OUT")))
    assert [str(p) for p in check_workflow(workflow)] == [
        (
            "warning: fetch: a plain Python step declaring no writes=: adws check cannot see what it"
            " writes (and reads, without reads=)"
        ),
        (
            "warning: use: reads 'data', which no earlier step declares writing; only 'fetch' might"
            " (declare its writes=)"
        ),
        "note: use: writes 'out', which no later step reads",
    ]


def test_combinators_combine_their_childrens_reads_and_writes() -> None:
    main_step = ask("implement", "Do {task}", "SUMMARY")
    checks = shell_step("checks", "make -C {target_dir} test")
    both = parallel(
        "reviews", [ask("style", "{summary}", "STYLE"), ask("tests", "{summary}", "TESTS")]
    )
    each = fan_out("per_file", ask("file", "{item} of {summary}", "FIX"), over="files")
    workflow = Workflow(
        "w",
        (with_verification(main_step, checks), both, each),
        inputs=("task", "target_dir", "files"),
    )
    # A shell step's outputs are by-products: never listed as unread.
    assert [str(p) for p in check_workflow(workflow)] == [
        f"note: reviews: writes '{key}', which no later step reads"
        for key in ("style", "tests", "reviews_failures")
    ] + [
        f"note: per_file: writes '{key}', which no later step reads"
        for key in ("per_file", "per_file_failures")
    ]


def test_two_branches_writing_one_key_is_an_error() -> None:
    """Contracts would refuse this at definition; declared writes are caught by the check."""
    branches = [Step(name, nothing, reads=(), writes=("note",)) for name in ("a", "b")]
    assert errors(Workflow("w", (parallel("reviews", branches),))) == [
        "error: reviews: two of its branches write 'note'"
    ]


def test_declared_reads_and_writes_override_what_is_inferred() -> None:
    summary = Key("summary", str)
    step = Step("summarise", nothing, reads=(Key("text", str),), writes=(summary,))
    workflow = Workflow(
        "w", (step, Step("show", nothing, reads=(summary,), writes=())), inputs=("text",)
    )
    assert check_workflow(workflow) == ()


def test_adws_check_prints_each_workflow_and_exits_1_on_an_error(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = in_tmp / "workflows"
    folder.mkdir()
    (folder / "broken.py").write_text(
        "from adws import Workflow, agent_step\nfrom adws.agents import ScriptedAgent\n"
        "workflow = Workflow('broken', (agent_step('a', prompt='{ghost}', agent=ScriptedAgent([])),))\n"
    )
    assert main(["check"]) == 1
    assert capsys.readouterr().out.splitlines() == [
        "broken: 1 error",
        "  error: a: reads 'ghost', which no earlier step writes and the workflow's inputs do not declare",
    ]
    assert main(["check", "broken", "--json"]) == 1
    assert json.loads(capsys.readouterr().out) == {
        "broken": [
            {
                "severity": "error",
                "step": "a",
                "key": "ghost",
                "message": "reads 'ghost', which no earlier step writes and the workflow's inputs do not declare",
            }
        ]
    }
    assert main(["list"]) == 0
    captured = capsys.readouterr()
    assert captured.err == (
        "warning: broken fails adws check (1 error: error: a: reads 'ghost', which no earlier"
        " step writes and the workflow's inputs do not declare); run `adws check broken`\n"
    )
    assert main(["check", "nope"]) == 2


def test_adws_check_passes_the_shipped_workflows(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--workflows", str(SHIPPED), "hello", "implement_verify"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "hello: ok"


def test_a_module_that_does_not_load_fails_the_check(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (in_tmp / "workflows").mkdir()
    (in_tmp / "workflows" / "bad.py").write_text("raise RuntimeError('no')\n")
    assert main(["check"]) == 1
    assert "warning: could not load" in capsys.readouterr().err


@attrs.frozen
class Maybe:
    """A schema with an optional nested field and a choice."""

    inner: Maybe | None = None
    kind: Literal["a", "b"] = "a"
    anything: dict[str, int] = attrs.field(factory=dict)
    many: tuple[int, ...] = ()
    loose: Union[int, str] = 0  # noqa: UP007 - a real union, which the walk cannot see into


def _paths_workflow(*later: Step) -> Workflow:
    from tests.strategies import Packet  # noqa: PLC0415 - the schema the checks walk through

    research = agent_step(
        "research",
        prompt="Research {topic}",
        agent=AGENT,
        contract=OutputContract(("SUMMARY",), {"PACKET_JSON": Packet, "RAW_JSON": Packet}),
    )
    loose = ask("loose", "{topic}", "FREE_JSON")
    return Workflow("w", (research, loose, *later), inputs=("topic",))


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("{packet_json.verdict}", None),
        ("{packet_json.claims[0].source}", None),
        ("{free_json.anything[3].goes}", None),
        (
            "{packet_json.verdcit}",
            "packet_json (Packet) has no field 'verdcit' (it has: verdict, claims)",
        ),
        (
            "{packet_json.claims[0].url}",
            "packet_json.claims[0] (Claim) has no field 'url' (it has: text, source)",
        ),
        ("{packet_json.claims.text}", "packet_json.claims is a list, which has no fields"),
        ("{packet_json.verdict.x}", "packet_json.verdict is text, which has no fields"),
        ("{packet_json.verdict[0]}", "packet_json.verdict is text, not a list"),
        ("{packet_json[0]}", "packet_json is a Packet object, not a list"),
        ("{summary.first}", "summary is text, which has no fields"),
    ],
)
def test_check_reads_placeholder_paths_through_declared_schemas(
    template: str, problem: str | None
) -> None:
    workflow = _paths_workflow(shell_step("use", f"echo {template}"))
    expected = [] if problem is None else [f"error: use: reads {template}, but {problem}"]
    assert errors(workflow) == expected


def test_paths_are_checked_inside_combinators_and_prompts() -> None:
    from adws.engine.combinators import sequence  # noqa: PLC0415 - as above

    inner = sequence(
        "stage",
        [
            ask("plan", "{packet_json.verdict}", "PLAN"),
            agent_step("act", prompt="{packet_json.nope}", agent=AGENT, cwd="{topic}"),
        ],
    )
    assert errors(_paths_workflow(inner)) == [
        (
            "error: stage: reads {packet_json.nope}, but packet_json (Packet) has no field 'nope'"
            " (it has: verdict, claims)"
        )
    ]


def test_optional_fields_and_unknown_types_are_walked_as_far_as_they_go() -> None:
    from tests.contract.test_validator import _Unresolvable  # noqa: PLC0415 - an annotation nobody can resolve

    step = agent_step(
        "make",
        prompt="p",
        agent=AGENT,
        contract=OutputContract((), {"M_JSON": Maybe, "U_JSON": _Unresolvable}),
    )
    reads = [
        "{m_json.inner.inner.kind}",
        "{m_json.anything.x}",
        "{m_json.loose.x}",
        "{m_json.many[0]}",
        "{u_json.thing.x}",
        "{m_json.kind.x}",
        "{m_json.many[0].x}",
    ]
    workflow = Workflow("w", (step, shell_step("use", "echo " + " ".join(reads))))
    assert errors(workflow) == [
        "error: use: reads {m_json.kind.x}, but m_json.kind is a choice, which has no fields",
        (
            "error: use: reads {m_json.many[0].x}, but m_json.many[0] is an integer, which has no"
            " fields"
        ),
    ]


def test_a_generated_script_is_noted_and_a_written_user_script_stays_an_error() -> None:
    plan = ask("plan", "Plan {task}", "VERIFY_SCRIPT")
    verify = shell_step("verify", script_from="verify_script", allow_generated=True)
    assert [str(p) for p in check_workflow(Workflow("w", (plan, verify), inputs=("task",)))] == [
        (
            "note: verify: runs the script in 'verify_script', which step 'plan' wrote"
            " (allow_generated=True): what that step's agent wrote runs as code"
        )
    ]
    user = shell_step("verify", script_from="verify_script")
    workflow = Workflow("w", (plan, user), inputs=("task", "verify_script"))
    assert errors(workflow) == [
        (
            "error: plan: writes 'verify_script', which shell step 'verify' runs as its script:"
            " only the user may choose a script"
        )
    ]


def test_known_inputs_are_what_steps_read_and_no_step_writes() -> None:
    from adws.check import known_inputs  # noqa: PLC0415 - the helper adws run uses

    workflow = Workflow(
        "w",
        (ask("a", "{topic}", "PACKET_JSON"), shell_step("b", "echo {packet_json.x} {extra}")),
        inputs=("topic",),
        optional_inputs=("output_dir",),
    )
    assert known_inputs(workflow) == frozenset({"topic", "output_dir", "extra"})
    assert known_inputs(Workflow("w", (Step("plain", nothing),))) is None


def test_what_must_pass_is_read_and_what_was_proved_is_written() -> None:
    checks = shell_step("checks", "pytest -rA", failures="pytest")
    fix = ask("fix", "Fix {task}", "SUMMARY")
    proved = Step("show", nothing, reads=("fix_verified_proved", "reproducer_check"), writes=())
    workflow = Workflow(
        "w",
        (
            reproduce(ask("write_test", "Show {task}", "TEST"), checks),
            with_verification(fix, checks, must_pass="reproduced"),  # noqa: S106 - a word
            proved,
        ),
        inputs=("task",),
    )
    assert errors(workflow) == []
    placeholder = "{targets}"
    from_input = Workflow(
        "w", (with_verification(fix, checks, must_pass=placeholder),), inputs=("task",)
    )
    assert errors(from_input) == [
        (
            "error: fix_verified: reads 'targets', which no earlier step writes and the"
            " workflow's inputs do not declare"
        )
    ]
