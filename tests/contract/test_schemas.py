"""Schemas an agent can follow: attrs, dataclasses, TypedDicts and pydantic models."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path
from typing import Any, Literal, TypedDict

import attrs
import pydantic
import pytest
from returns.result import Failure, Success

from adws import OutputContract, Workflow, WorkflowContext, agent_step, run_workflow
from adws.agents import ScriptedAgent
from adws.check import check_workflow
from adws.cli import main
from adws.contract._schemas import instance_fields, schema_fields, schema_kind
from adws.contract._structure import schema_problems
from adws.contract.template import parse_placeholder, resolve
from adws.contract.validator import validate_agent_output
from adws.engine.errors import json_safe
from adws.journal.records.codec import decode_outputs, encode_outputs
from adws.testing import SchemaAgent
from tests.conftest import success


class Grade(enum.IntEnum):
    """A grade: only its members' values are grades."""

    LOW = 1
    HIGH = 2


class Colour(enum.StrEnum):
    """A colour by name."""

    RED = "red"
    BLUE = "blue"


class Shape(enum.Enum):
    """A plain enum of mixed values."""

    SQUARE = "square"
    FOUR = 4


def _at_least_one(_instance: object, _attribute: object, value: int) -> None:
    if value < 1:
        msg = "priority must be 1 (urgent) or more"
        raise ValueError(msg)


@attrs.frozen
class Triage:
    """An issue's triage: the attrs way."""

    label: Literal["bug", "feature", "question"] = attrs.field(
        metadata={"description": "what kind of issue this is"}
    )
    priority: int = attrs.field(validator=_at_least_one)
    grade: Grade = Grade.LOW
    colour: Colour | None = None
    shape: Shape = Shape.SQUARE


@dataclasses.dataclass(frozen=True)
class Step:
    """One step of a plan: the dataclass way."""

    title: str = dataclasses.field(metadata={"description": "a short imperative"})
    minutes: int = 5

    def __post_init__(self) -> None:
        """Refuse a step that takes no time."""
        if self.minutes <= 0:
            msg = "minutes must be positive"
            raise ValueError(msg)


@dataclasses.dataclass(frozen=True)
class Plan:
    """A plan of steps."""

    steps: tuple[Step, ...]
    owner: str | None = None


class _Dated(TypedDict, total=False):
    """The optional part of an issue."""

    createdAt: str


class Issue(_Dated):
    """An issue as a TypedDict."""

    title: str
    labels: list[Literal["bug", "docs"]]


class Review(pydantic.BaseModel):
    """A review: the pydantic way."""

    verdict: Literal["approve", "reject"] = pydantic.Field(description="the decision")
    score: int
    grade: Grade = Grade.LOW

    @pydantic.field_validator("score")
    @classmethod
    def _in_range(cls, value: int) -> int:
        if not 0 <= value <= 10:
            msg = "score must be between 0 and 10"
            raise ValueError(msg)
        return value


class Broken(pydantic.BaseModel):
    """A model whose own validator raises something pydantic does not wrap."""

    value: int

    @pydantic.field_validator("value")
    @classmethod
    def _explode(cls, value: int) -> int:
        raise KeyError(value)


def problems(schema: type, value: object) -> list[tuple[str, str]]:
    result = schema_problems(value, schema)
    assert isinstance(result, Failure), result
    found: list[tuple[str, str]] = result.failure()
    return found


def test_each_kind_of_schema_is_recognised_and_anything_else_refused() -> None:
    assert [schema_kind(tp) for tp in (Triage, Plan, Issue, Review, dict, int)] == [
        "attrs",
        "dataclass",
        "typeddict",
        "pydantic",
        None,
        None,
    ]
    with pytest.raises(TypeError, match=r"must be an attrs class, a dataclass, a TypedDict or a"):
        OutputContract(schemas={"X_JSON": dict})


def test_a_wrong_choice_names_the_field_and_the_choices() -> None:
    assert problems(Triage, {"label": "wontfix", "priority": 1}) == [
        ("$.label", "must be one of 'bug', 'feature', 'question', got \"wontfix\""),
    ]
    assert problems(Issue, {"title": "t", "labels": ["bug", "wontfix"]}) == [
        ("$.labels[1]", "must be one of 'bug', 'docs', got \"wontfix\""),
    ]
    assert problems(Review, {"verdict": "maybe", "score": 1}) == [
        ("$.verdict", "must be one of 'approve', 'reject', got \"maybe\""),
    ]


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("grade", 7, "must be one of 1, 2, got 7"),
        ("grade", True, "must be one of 1, 2, got true"),
        ("grade", "1", 'must be one of 1, 2, got "1"'),
        ("colour", "green", "must be one of 'red', 'blue', got \"green\""),
        ("shape", "4", "must be one of 'square', 4, got \"4\""),
    ],
)
def test_enum_fields_accept_their_members_values_only(
    field: str, value: object, message: str
) -> None:
    assert problems(Triage, {"label": "bug", "priority": 1, field: value}) == [
        (f"$.{field}", message)
    ]


def test_enum_fields_come_back_as_members() -> None:
    made = schema_problems(
        {"label": "bug", "priority": 2, "grade": 2, "colour": "blue", "shape": 4}, Triage
    )
    assert made == Success(Triage("bug", 2, Grade.HIGH, Colour.BLUE, Shape.FOUR))
    review = schema_problems({"verdict": "approve", "score": 3, "grade": 2}, Review)
    assert review == Success(Review(verdict="approve", score=3, grade=Grade.HIGH))
    assert problems(Review, {"verdict": "approve", "score": 3, "grade": 7}) == [
        ("$.grade", "must be one of 1, 2, got 7"),
    ]


def test_a_validators_own_message_reaches_the_agent_with_its_field() -> None:
    assert problems(Triage, {"label": "bug", "priority": 0}) == [
        ("$.priority", "priority must be 1 (urgent) or more"),
    ]
    assert problems(Plan, {"steps": [{"title": "a", "minutes": 0}]}) == [
        ("$.steps[0]", "minutes must be positive"),
    ]
    assert problems(Review, {"verdict": "approve", "score": 11}) == [
        ("$.score", "score must be between 0 and 10"),
    ]
    assert problems(Broken, {"value": 1}) == [("$", "KeyError: 1")]


def test_missing_extra_and_mistyped_fields_in_every_kind() -> None:
    assert problems(Plan, {"steps": [{"minutes": "5"}], "extra": 1}) == [
        ("$.steps[0].title", "required field missing"),
        ("$.steps[0].minutes", "expected integer, got string"),
        ("$.extra", "not a field of Plan (its fields: steps, owner)"),
    ]
    assert problems(Issue, {"labels": [], "creator": "x"}) == [
        ("$.title", "required field missing"),
        ("$.creator", "not a field of Issue (its fields: createdAt, title, labels)"),
    ]
    assert problems(Review, {"score": "1", "comment": "x"}) == [
        ("$.verdict", "required field missing"),
        ("$.score", "Input should be a valid integer"),
        ("$.comment", "not a field of the schema"),
    ]
    assert schema_problems({"title": "t", "labels": ["docs"]}, Issue) == Success(
        {"title": "t", "labels": ["docs"]}
    )


def test_the_instructions_list_each_field_with_its_type_choices_and_description() -> None:
    contract = OutputContract(
        schemas={"TRIAGE_JSON": Triage, "PLAN_JSON": Plan, "ISSUE_JSON": Issue, "R_JSON": Review}
    )
    text = contract.instructions()
    for block in (
        (
            "TRIAGE_JSON is one JSON object (Triage) with these fields and no others:\n"
            '- label (required): one of "bug", "feature", "question" — what kind of issue this is\n'
            "- priority (required): integer\n"
            "- grade (optional): one of 1, 2\n"
            '- colour (optional): one of "red", "blue", or null\n'
            '- shape (optional): one of "square", 4\n'
            "For example:\n"
        ),
        (
            "PLAN_JSON is one JSON object (Plan) with these fields and no others:\n"
            "- steps (required): array of object (Step)\n"
            "- steps[].title (required): string — a short imperative\n"
            "- steps[].minutes (optional): integer\n"
            "- owner (optional): string, or null\n"
        ),
        (
            "- createdAt (optional): string\n- title (required): string\n"
            '- labels (required): array of one of "bug", "docs"\n'
        ),
        '- verdict (required): one of "approve", "reject" — the decision\n',
    ):
        assert block in text
    example = text.split("TRIAGE_JSON is one")[1].split("For example:\n")[1].split("\n\n")[0]
    assert json.loads(example) == {
        "label": "bug",
        "priority": 0,
        "grade": 1,
        "colour": "red",
        "shape": "square",
    }


def test_an_agent_answering_a_choice_wrongly_is_told_the_choices() -> None:
    agent = ScriptedAgent(
        [
            'STATUS: done\nTRIAGE_JSON: {"label": "wontfix", "priority": 1}',
            'STATUS: done\nTRIAGE_JSON: {"label": "bug", "priority": 1}',
        ]
    )
    step = agent_step(
        "triage",
        prompt="Triage it",
        agent=agent,
        contract=OutputContract(schemas={"TRIAGE_JSON": Triage}),
    )
    ctx = success(run_workflow(Workflow("w", (step,))))
    assert ctx.inputs["triage_json"] == Triage("bug", 1)
    assert (
        "- attempt 1/3 failed: ContractViolation: TRIAGE_JSON does not match Triage: $.label:"
        " must be one of 'bug', 'feature', 'question', got \"wontfix\""
    ) in agent.prompts[1]


def test_fields_are_listed_and_read_in_every_kind() -> None:
    assert [f.name for f in schema_fields(Review)] == ["verdict", "score", "grade"]
    assert schema_fields(int) == ()
    review = Review(verdict="approve", score=3)
    assert instance_fields(review) == ("verdict", "score", "grade")
    assert instance_fields(Step("a")) == ("title", "minutes")
    found = resolve({"r": review}, parse_placeholder("r.verdict"))  # type: ignore[arg-type] # a valid placeholder
    assert found == Success("approve")


def test_any_structured_value_is_json_safe_and_survives_the_journal() -> None:
    values = {
        "triage": Triage("bug", 2, Grade.HIGH, Colour.BLUE, Shape.FOUR),
        "plan": Plan((Step("a", 3),), None),
        "review": Review(verdict="reject", score=1, grade=Grade.HIGH),
        "issue": {"title": "t", "labels": ["bug"]},
    }
    assert json_safe(values) == {
        "triage": {"label": "bug", "priority": 2, "grade": 2, "colour": "blue", "shape": 4},
        "plan": {"steps": [{"title": "a", "minutes": 3}], "owner": None},
        "review": {"verdict": "reject", "score": 1, "grade": 2},
        "issue": {"title": "t", "labels": ["bug"]},
    }
    assert decode_outputs(encode_outputs(values)) == values


def test_check_walks_paths_through_dataclasses_typeddicts_and_pydantic() -> None:
    ask = agent_step(
        "ask",
        prompt="p",
        agent=ScriptedAgent([]),
        contract=OutputContract(schemas={"PLAN_JSON": Plan, "ISSUE_JSON": Issue, "R_JSON": Review}),
    )
    use = agent_step(
        "use",
        prompt="{plan_json.steps[0].title} {issue_json.createdAt} {r_json.verdict} {r_json.vredict}"
        " {plan_json.steps[0].tilte}",
        agent=ScriptedAgent([]),
    )
    assert [str(p) for p in check_workflow(Workflow("w", (ask, use))) if p.severity == "error"] == [
        (
            "error: use: reads {r_json.vredict}, but r_json (Review) has no field 'vredict' (it has:"
            " verdict, score, grade)"
        ),
        (
            "error: use: reads {plan_json.steps[0].tilte}, but plan_json.steps[0] (Step) has no field"
            " 'tilte' (it has: title, minutes)"
        ),
    ]


def test_schema_agent_satisfies_choices_enums_and_validators() -> None:
    agent = SchemaAgent()
    contract = OutputContract(schemas={"TRIAGE_JSON": Triage, "PLAN_JSON": Plan, "R_JSON": Review})
    step = agent_step("ask", prompt="p", agent=agent, contract=contract)
    ctx = success(run_workflow(Workflow("w", (step,))))
    assert ctx.inputs["triage_json"] == Triage("bug", 1, colour=Colour.RED)
    assert ctx.inputs["plan_json"] == Plan((Step("text", 1),), "text")
    assert ctx.inputs["r_json"] == Review(verdict="approve", score=0)


@attrs.frozen
class Impossible:
    """A field no likely value satisfies."""

    code: str = attrs.field(validator=attrs.validators.matches_re(r"[A-Z]{3}-[0-9]{4}"))
    fine: int = 0


def test_schema_agent_names_the_fields_it_could_not_satisfy() -> None:
    step = agent_step(
        "ask",
        prompt="p",
        agent=SchemaAgent(),
        contract=OutputContract(schemas={"TICKET_JSON": Impossible}),
    )
    from tests.conftest import failure  # noqa: PLC0415 - only this test fails

    error = failure(run_workflow(Workflow("w", (step,))))
    assert (error.error_type, error.message) == (
        "AgentFailed",
        (
            "SchemaAgent could not build a TICKET_JSON that its schema accepts: no value it tried"
            " satisfies $.code; give one with SchemaAgent(values={'TICKET_JSON': ...})"
        ),
    )
    given = SchemaAgent({"TICKET_JSON": {"code": "ABC-1234"}})
    ok = agent_step("ask", prompt="p", agent=given, contract=step.spec.contract)  # type: ignore[attr-defined] # an agent step's spec
    assert success(run_workflow(Workflow("w", (ok,)))).inputs["ticket_json"] == Impossible(
        "ABC-1234"
    )


def test_run_json_prints_enum_and_dataclass_values(
    in_tmp: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = in_tmp / "workflows"
    folder.mkdir()
    (folder / "grading.py").write_text(
        "import enum\n"
        "import attrs\n"
        "from adws import OutputContract, Workflow, agent_step\n"
        "from adws.agents import ScriptedAgent\n"
        "class Grade(enum.IntEnum):\n    A = 1\n    B = 2\n"
        "@attrs.frozen\nclass Graded:\n    g: Grade\n"
        "workflow = Workflow('grading', (agent_step('grade', prompt='p',"
        " agent=ScriptedAgent(['STATUS: done\\nG_JSON: {\"g\": 7}', 'STATUS: done\\nG_JSON: {\"g\": 2}']),"
        " contract=OutputContract(schemas={'G_JSON': Graded})),))\n",
        encoding="utf-8",
    )
    assert main(["run", "grading", "--json", "-q", "--no-journal"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["inputs"] == {"g_json": {"g": 2}}
    assert payload["steps"][0]["attempts"] == 2


def test_check_on_the_contract_helpers_for_a_fresh_workflow() -> None:
    checked = validate_agent_output(
        'STATUS: done\nR_JSON: {"verdict": "approve", "score": 3, "extra": 1}',
        OutputContract(schemas={"R_JSON": Review}),
        step_name="s",
    )
    assert isinstance(checked, Failure)
    assert checked.failure().context["problems"] == (
        "R_JSON does not match Review: $.extra: not a field of the schema",
    )
    assert isinstance(WorkflowContext(), WorkflowContext)


def _explodes(_instance: object, _attribute: object, _value: Any) -> None:
    msg = "the validator itself broke"
    raise RuntimeError(msg)


@attrs.frozen
class Fragile:
    """A schema whose validator raises something unexpected."""

    value: int = attrs.field(validator=_explodes)


def test_a_validator_raising_anything_is_reported_with_its_type() -> None:
    assert problems(Fragile, {"value": 1}) == [
        ("$.value", "RuntimeError: the validator itself broke")
    ]


class Kind(enum.Enum):
    """A choice for the examples."""

    A = "a"
    B = "b"


def _even(_instance: object, _attribute: object, value: int) -> None:
    if value % 2:
        msg = "must be even"
        raise ValueError(msg)


def _not_first(_instance: object, _attribute: object, value: Any) -> None:
    if value in {Kind.A, "x", 0, None}:
        msg = "not the first choice"
        raise ValueError(msg)


@attrs.frozen
class Inner:
    """Nested: its own validator decides its example."""

    n: int = attrs.field(validator=_even)


@attrs.frozen
class Picky:
    """Fields whose first example each validator refuses."""

    kind: Kind = attrs.field(validator=_not_first)
    either: int | str = attrs.field(default=0, validator=_not_first)
    inner: Inner = attrs.field(factory=lambda: Inner(0))
    table: dict[str, int] = attrs.field(factory=dict, validator=attrs.validators.min_len(0))
    maybe: str | None = attrs.field(default=None, validator=_not_first)


@attrs.frozen
class Deep:
    """A schema nested past the depth examples go to."""

    child: Deep | None = None


def test_schema_agent_tries_choices_unions_and_nested_schemas() -> None:
    from adws.testing._examples import satisfying  # noqa: PLC0415 - the helper under test

    value, unsatisfied = satisfying(Picky)
    assert unsatisfied == ()
    assert value == {"kind": "b", "either": 1, "inner": {"n": 0}, "table": {}, "maybe": "text"}
    assert satisfying(Deep, depth=9) == ({}, ())
    assert render_schema_free_text() == "{Bad} stays"


def render_schema_free_text() -> str:
    from adws.contract.template import render  # noqa: PLC0415 - an unchecked template, rendered directly

    return str(render("{Bad} stays", {}).unwrap())


def test_enum_values_and_mappings_inside_schemas_survive_the_journal() -> None:
    @attrs.frozen
    class Holder:
        """A schema holding a mapping and an enum."""

        table: dict[str, Grade]

    outputs = {"grade": Grade.HIGH, "shape": Shape.FOUR}
    assert decode_outputs(encode_outputs(outputs)) == {"grade": 2, "shape": 4}
    assert json.loads(encode_outputs({"h": Holder({"x": Grade.LOW})})) == {
        "h": {"__adws_attrs__": f"{__name__}:{Holder.__qualname__}", "value": {"table": {"x": 1}}}
    }


@attrs.frozen
class Stubborn:
    """A choice whose first value is refused, and a table no likely value fills."""

    choice: Literal["x", "y"] = attrs.field(validator=_not_first)
    table: dict[str, int] = attrs.field(factory=dict, validator=attrs.validators.min_len(1))


@attrs.frozen
class Either:
    """A field that takes a number or a text."""

    value: int | str


def test_schema_agent_reports_what_no_likely_value_fills_and_unions_take_any_member() -> None:
    from adws.testing._examples import satisfying  # noqa: PLC0415 - the helper under test

    assert satisfying(Stubborn) == ({"choice": "y", "table": {}}, ("$.table",))
    assert schema_problems({"value": "a"}, Either) == Success(Either("a"))
    assert problems(Either, {"value": [1]}) == [
        ("$.value", "expected integer or string, got array")
    ]


def test_a_pydantic_model_is_never_validated_by_a_workflow_file_named_pydantic(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from adws import _optional  # noqa: PLC0415 - the folders discovery registers

    folder = Path(pydantic.__file__).resolve().parent
    monkeypatch.setattr(_optional, "WORKFLOW_FOLDERS", {folder})
    [(path, message)] = problems(Review, {"verdict": "approve", "score": 1})
    assert path == "$"
    assert message.startswith("cannot validate a pydantic model: No module named 'pydantic'")


class Slug(str):
    """Text of a kind of its own."""

    __slots__ = ()


@attrs.frozen
class Page:
    """A field typed as a subclass of str."""

    slug: Slug


def test_a_subclass_of_a_json_type_takes_that_type_only_and_comes_back_as_itself() -> None:
    made = schema_problems({"slug": "home"}, Page)
    assert made == Success(Page(Slug("home")))
    assert type(made.unwrap().slug) is Slug  # type: ignore[attr-defined] # a Page, checked above
    assert problems(Page, {"slug": 3}) == [("$.slug", "expected string, got integer")]
