"""Values a schema accepts, for `SchemaAgent`: examples that satisfy choices and validators.

Start from the example the agent's instructions show; for each field the
schema refuses, try a few likely values of its type, in order, and keep the
first the schema accepts. Nested schemas are satisfied the same way.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from enum import Enum
from types import NoneType, UnionType
from typing import Final, Literal

from returns.result import Failure

from adws.contract._describe import example_of
from adws.contract._schemas import schema_fields, schema_kind
from adws.contract._structure import schema_problems

__all__ = ["satisfying"]

_TRIES: Final[dict[object, tuple[object, ...]]] = {
    bool: (True, False),
    int: (0, 1, 2, 3, 5, 10, 100, 1000, -1),
    float: (0.0, 0.5, 1.0, 2.0, 10.0, 100.0, -1.0),
    str: (
        "example",
        "x",
        "example text long enough for most minimum lengths",
        "https://example.com",
        "example@example.com",
        "2024-01-01",
    ),
}


def _candidates(tp: object, depth: int) -> list[object]:  # noqa: PLR0911 - one list per kind of type
    """List values of type `tp` worth trying, most likely first."""
    if typing.get_origin(tp) is Literal:
        return [arg.value if isinstance(arg, Enum) else arg for arg in typing.get_args(tp)]
    if isinstance(tp, type) and issubclass(tp, Enum):
        return [member.value for member in tp]
    if isinstance(tp, type) and schema_kind(tp) is not None:
        return [satisfying(tp, depth + 1)[0]]
    if typing.get_origin(tp) in {typing.Union, UnionType}:
        members = [arg for arg in typing.get_args(tp) if arg is not NoneType]
        found = [value for arg in members for value in _candidates(arg, depth)]
        return [*found, None] if NoneType in typing.get_args(tp) else found
    args = typing.get_args(tp)
    if typing.get_origin(tp) in {list, tuple, Sequence, set, frozenset}:
        inner = _candidates(args[0], depth)[:4] if args else []
        return [*([value] for value in inner), []]
    if typing.get_origin(tp) in {dict, Mapping} or tp is dict:
        return [{}]
    return list(_TRIES.get(tp, (example_of(tp),)))


def _under(path: str, name: str) -> bool:
    field = f"$.{name}"
    return path == field or path.startswith((f"{field}.", f"{field}["))


def satisfying(schema: type, depth: int = 0) -> tuple[dict[str, object], tuple[str, ...]]:
    """Build a value `schema` accepts; also return the paths no tried value could satisfy.

    >>> import attrs
    >>> @attrs.frozen
    ... class Task:
    ...     priority: int = attrs.field(validator=attrs.validators.ge(3))
    ...     kind: Literal["bug", "chore"] = "bug"
    >>> satisfying(Task)
    ({'priority': 3, 'kind': 'bug'}, ())
    """
    example = example_of(schema, depth)
    value: dict[str, object] = dict(example) if isinstance(example, dict) else {}
    if depth > 8:  # noqa: PLR2004 - as deep as the instructions describe
        return value, ()
    checked = schema_problems(value, schema)
    for field in schema_fields(schema):
        if not isinstance(checked, Failure):
            break
        paths = [path for path, _ in checked.failure()]
        if not any(path == "$" or _under(path, field.name) for path in paths):
            continue
        for candidate in _candidates(field.type, depth):
            trial = schema_problems({**value, field.name: candidate}, schema)
            # Keep a value that clears this field's problems, or the object's own (a check
            # across fields, such as `__post_init__`) without adding any.
            if not isinstance(trial, Failure) or len(trial.failure()) < len(paths):
                value, checked = {**value, field.name: candidate}, trial
                break
    if isinstance(checked, Failure):
        return value, tuple(dict.fromkeys(path for path, _ in checked.failure()))
    return value, ()
