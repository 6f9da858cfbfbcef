"""A workflow as an MCP tool: its input schema, and the check of a call's arguments against it.

Each declared input is a property: required (`inputs`) or not
(`optional_inputs`), typed by the workflow module's `Key` of that name
(`Key("limit", int)` is an integer) and otherwise a string, as `adws run
-i KEY=VALUE` gives it. Its description says which steps read it. A call
is checked here before anything starts, so a bad one is refused naming
the field; arguments over `MAX_FIELD_BYTES` a field, or `MAX_CALL_BYTES`
in all, are refused too (a prompt is not a place for a megabyte).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from adws.contract.keys import Key
from adws.flows import flow_of

if TYPE_CHECKING:
    from adws.engine.step import Workflow

__all__ = [
    "MAX_CALL_BYTES",
    "MAX_FIELD_BYTES",
    "check_arguments",
    "input_schema",
    "json_type",
    "typed_keys",
]

MAX_FIELD_BYTES: Final = 64 * 1024
"""The most one argument may hold, as JSON in UTF-8."""
MAX_CALL_BYTES: Final = 256 * 1024
"""The most all of a call's arguments may hold together, as JSON in UTF-8."""

_JSON_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (bool, "boolean"),  # before int: a bool is an int to Python, never to JSON
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (tuple, "array"),
    (list, "array"),
    (Mapping, "object"),
)


def json_type(kind: object) -> str | None:
    """Name the JSON Schema type of a `Key`'s Python type; None when JSON has no such type.

    >>> json_type(int), json_type(tuple[str, ...]), json_type(bytes)
    ('integer', 'array', None)
    """
    origin = getattr(kind, "__origin__", None) or kind
    if not isinstance(origin, type):
        return None
    return next((name for base, name in _JSON_TYPES if issubclass(origin, base)), None)


def typed_keys(namespace: Mapping[str, object]) -> dict[str, Key[object]]:
    """Collect the `Key`s a workflow module defines, by the name of the value each names."""
    return {value.name: value for value in namespace.values() if isinstance(value, Key)}


def _readers(workflow: Workflow) -> dict[str, list[str]]:
    """Map each key to the top-level steps that read it, in step order."""
    readers: dict[str, list[str]] = {}
    for step in workflow.steps:
        for key in flow_of(step).reads:
            readers.setdefault(key, []).append(step.name)
    return readers


def input_schema(workflow: Workflow, keys: Mapping[str, Key[object]]) -> dict[str, object]:
    """Describe the inputs a run of `workflow` takes as a JSON Schema object (no others allowed)."""
    readers = _readers(workflow)
    properties: dict[str, object] = {}
    for name in (*workflow.inputs, *workflow.optional_inputs):
        key = keys.get(name)
        kind = "string" if key is None else json_type(key.type)
        needed = "required" if name in workflow.inputs else "optional"
        steps = readers.get(name)
        read = f"; read by {', '.join(steps)}" if steps else ""
        typed = "" if key is None else f" ({key.type.__name__})"
        described = f"{needed} input{typed}{read}"
        properties[name] = {"description": described} | ({} if kind is None else {"type": kind})
    return {
        "type": "object",
        "properties": properties,
        "required": list(workflow.inputs),
        "additionalProperties": False,
    }


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def _is(value: object, kind: str) -> bool:
    """Tell whether a JSON value is of a JSON Schema type (an integral float is an integer)."""
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and math.isfinite(value) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    checks = {"boolean": bool, "string": str, "array": list | tuple, "object": Mapping}
    return isinstance(value, checks[kind])


def _kind_of(value: object) -> str:
    """Name a JSON value's type as JSON Schema does.

    >>> _kind_of(None), _kind_of(True), _kind_of([1])
    ('null', 'boolean', 'array')
    """
    if value is None:
        return "null"
    return json_type(type(value)) or type(value).__name__


def _field_problem(properties: Mapping[str, Any], name: str, value: object) -> str | None:
    """Say what is wrong with one argument: a field the tool lacks, too big, of another type."""
    if name not in properties:
        return f"unknown field {name!r}; the fields: {', '.join(properties) or 'none'}"
    size = _size(value)
    if size > MAX_FIELD_BYTES:
        return f"field {name!r} holds {size:,} bytes; at most {MAX_FIELD_BYTES:,} are taken"
    kind = properties[name].get("type")
    if kind is not None and not _is(value, kind):
        article = "an" if kind[0] in "aeiou" else "a"
        return f"field {name!r} must be {article} {kind}, not {_kind_of(value)}"
    return None


def check_arguments(schema: Mapping[str, object], arguments: object) -> str | None:
    """Say what is wrong with a call's `arguments`, naming the field (None: nothing).

    >>> schema = {"properties": {"n": {"type": "integer"}}, "required": ["n"]}
    >>> check_arguments(schema, {"n": "3"})
    "field 'n' must be an integer, not string"
    >>> check_arguments(schema, {}), check_arguments(schema, {"n": 3, "m": 1})
    ("missing required field 'n'", "unknown field 'm'; the fields: n")
    """
    if not isinstance(arguments, Mapping):
        return f"arguments must be an object, not {type(arguments).__name__}"
    properties = schema["properties"]
    required = schema["required"]
    assert isinstance(properties, Mapping)  # noqa: S101 - input_schema wrote it
    assert isinstance(required, list)  # noqa: S101 - as above
    for name, value in arguments.items():
        problem = _field_problem(properties, name, value)
        if problem is not None:
            return problem
    missing = [name for name in required if name not in arguments]
    if missing:
        return f"missing required field {missing[0]!r}"
    size = _size(arguments)
    if size > MAX_CALL_BYTES:
        return f"the arguments hold {size:,} bytes; at most {MAX_CALL_BYTES:,} are taken"
    return None
