"""A workflow's tool schema from its declared inputs and typed keys, and a call checked against it."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from hypothesis import given
from hypothesis import strategies as st
from returns.io import IOSuccess

from adws import Key, Step, Workflow, WorkflowContext
from adws.mcp_server.schema import (
    MAX_CALL_BYTES,
    MAX_FIELD_BYTES,
    check_arguments,
    input_schema,
    json_type,
    typed_keys,
)


@attrs.frozen
class Packet:
    """A schema class: JSON Schema has no type for it."""

    title: str


def keep(ctx: WorkflowContext) -> IOSuccess[WorkflowContext]:
    return IOSuccess(ctx)


FLOW = Workflow(
    "flow",
    (
        Step("first", keep, reads=("topic", "packet"), writes=()),
        Step("second", keep, reads=("topic",), writes=()),
    ),
    inputs=("topic", "packet"),
    optional_inputs=("notes", "ratio"),
)
KEYS = {"packet": Key("packet", Packet), "ratio": Key("ratio", float)}


def test_json_types_follow_the_keys_python_types() -> None:
    kinds = [bool, int, float, str, tuple, tuple[str, ...], Mapping[str, int], Packet, "str"]
    assert [json_type(kind) for kind in kinds] == [
        "boolean",
        "integer",
        "number",
        "string",
        "array",
        "array",
        "object",
        None,
        None,
    ]


def test_the_keys_of_a_module_are_found_by_the_names_they_give() -> None:
    topic = Key("topic", str)
    assert typed_keys({"TOPIC": topic, "other": 3, "flow": FLOW}) == {"topic": topic}


def test_the_schema_has_every_input_required_or_optional_with_its_type_and_readers() -> None:
    assert input_schema(FLOW, KEYS) == {
        "type": "object",
        "properties": {
            "topic": {"description": "required input; read by first, second", "type": "string"},
            "packet": {"description": "required input (Packet); read by first"},
            "notes": {"description": "optional input", "type": "string"},
            "ratio": {"description": "optional input (float)", "type": "number"},
        },
        "required": ["topic", "packet"],
        "additionalProperties": False,
    }


SCHEMA = {
    "properties": {
        name: {"type": kind}
        for name, kind in [
            ("n", "integer"),
            ("x", "number"),
            ("b", "boolean"),
            ("s", "string"),
            ("a", "array"),
            ("o", "object"),
            ("free", None),
        ]
        if kind is not None
    }
    | {"free": {"description": "any"}},
    "required": [],
}


def test_values_of_each_json_type_pass_and_an_integral_number_is_an_integer() -> None:
    good = {"n": 3.0, "x": 2, "b": False, "s": "", "a": [1], "o": {"k": None}, "free": None}
    assert check_arguments(SCHEMA, good) is None


def test_a_value_of_another_type_is_named_with_its_json_type() -> None:
    bad: list[dict[str, object]] = [
        {"n": True},
        {"n": 1.5},
        {"x": "1"},
        {"b": 0},
        {"a": {}},
        {"o": []},
        {"s": None},
    ]
    said = [check_arguments(SCHEMA, arguments) for arguments in bad]
    assert said == [
        "field 'n' must be an integer, not boolean",
        "field 'n' must be an integer, not number",
        "field 'x' must be a number, not string",
        "field 'b' must be a boolean, not integer",
        "field 'a' must be an array, not object",
        "field 'o' must be an object, not array",
        "field 's' must be a string, not null",
    ]


def test_arguments_that_are_no_object_or_name_no_field_are_refused() -> None:
    assert check_arguments(SCHEMA, [1]) == "arguments must be an object, not list"
    empty: dict[str, object] = {"properties": {}, "required": []}
    assert check_arguments(empty, {"a": 1}) == "unknown field 'a'; the fields: none"


def test_huge_arguments_are_refused_a_field_at_a_time_and_together() -> None:
    schema = {"properties": {f"f{i}": {"type": "string"} for i in range(5)}, "required": []}
    near = "x" * (MAX_FIELD_BYTES - 2)  # with its quotes, exactly the most a field takes
    assert check_arguments(schema, {"f0": near}) is None
    assert check_arguments(schema, {"f0": near + "é"}) == (
        f"field 'f0' holds {MAX_FIELD_BYTES + 2:,} bytes; at most {MAX_FIELD_BYTES:,} are taken"
    )
    said = check_arguments(schema, {f"f{i}": near for i in range(5)})
    assert said == f"the arguments hold 327,720 bytes; at most {MAX_CALL_BYTES:,} are taken"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(st.dictionaries(st.sampled_from(["n", "x", "b", "s", "a", "o", "free", "zz"]), JSON))
def test_any_json_arguments_pass_or_are_refused_naming_a_field(
    arguments: dict[str, object],
) -> None:
    said = check_arguments(SCHEMA, arguments)
    assert said is None or any(f"field {name!r}" in said for name in arguments)
