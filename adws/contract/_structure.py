"""Strict structuring of an agent's JSON into a schema, with problems an agent can act on.

attrs classes, dataclasses and `TypedDict`s are structured by a cattrs
converter of adws's own that coerces nothing (no `"1"` -> 1, no bool ->
int), forbids extra keys, accepts a `Literal` or an `Enum` field's values
only (an `IntEnum` field takes 1 or 2, never 7), and runs attrs validators.
pydantic models are validated in strict JSON mode with extra fields
forbidden. Every problem names its JSON path and what was allowed:

    $.label: must be one of 'bug', 'feature', 'question', got "wontfix"
    $.priority: 'priority' must be >= 1: 0        (an attrs validator's own words)
"""

from __future__ import annotations

import json
import typing
from collections.abc import Callable, Mapping
from enum import Enum
from types import NoneType, UnionType
from typing import Any, Final, Literal

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, is_sequence, list_structure_factory
from cattrs.errors import ClassValidationError, ForbiddenExtraKeysError, IterableValidationError
from cattrs.gen import make_dict_structure_fn
from cattrs.gen.typeddicts import make_dict_structure_fn as make_typeddict_structure_fn
from returns.result import Failure, Result, Success

from adws._exceptions import MalformedError
from adws._optional import import_optional
from adws.contract._schemas import is_pydantic_model, schema_fields

__all__ = ["Problem", "json_name", "schema_problems", "structure"]

Problem = tuple[str, str]
"""A JSON path (`$.claims[0].source`) and what is wrong there."""


class _InvalidChoiceError(MalformedError):
    """A value outside what its field allows; the message says it all."""


def json_name(tp: object) -> str:
    """Name a Python type the way JSON would.

    >>> json_name(str), json_name(list), json_name(NoneType), json_name(set)
    ('string', 'array', 'null', 'set')
    """
    names: dict[object, str] = {
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        dict: "object",
        list: "array",
        NoneType: "null",
    }
    return names.get(tp, getattr(tp, "__name__", str(tp)))


def _choices(values: typing.Iterable[object]) -> str:
    return ", ".join(repr(value) for value in values)


def _got(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def _strict_primitive(base: type) -> Callable[[object, type], object]:
    """Take exactly JSON's `base` type; a subclass asked for (an enum, say) goes to `_scalar`."""

    def structure(value: object, tp: type) -> object:
        if tp is not base:
            return _scalar(value, tp)
        ok = type(value) is base or (base is float and type(value) is int)
        if not ok:
            msg = f"expected {json_name(base)}, got {json_name(type(value))}"
            raise MalformedError(msg)
        return float(value) if base is float else value  # type: ignore[arg-type] # an int or float, checked above

    return structure


def _same(value: object, allowed: object) -> bool:
    """Compare as JSON does: `1` is not `true`, and `1` is not `1.0`'s type either."""
    return type(value) is type(allowed) and value == allowed


def _literal(tp: Any, _converter: cattrs.Converter) -> Callable[[object, type], object]:  # noqa: ANN401 - any Literal alias
    allowed = typing.get_args(tp)
    values = [arg.value if isinstance(arg, Enum) else arg for arg in allowed]

    def structure(value: object, _: type) -> object:
        for arg, plain in zip(allowed, values, strict=True):
            if _same(value, plain):
                return arg
        msg = f"must be one of {_choices(values)}, got {_got(value)}"
        raise _InvalidChoiceError(msg)

    return structure


def _enum(value: object, tp: type[Enum]) -> Enum:
    members = list(tp)
    for member in members:
        if _same(value, member.value):
            return member
    msg = f"must be one of {_choices(m.value for m in members)}, got {_got(value)}"
    raise _InvalidChoiceError(msg)


def _scalar(value: object, tp: type) -> object:
    """Structure a JSON scalar into `tp`: an enum by its members' values, else exactly its type."""
    if issubclass(tp, Enum):
        return _enum(value, tp)
    base = next(kind for kind in (bool, int, float, str) if issubclass(tp, kind))
    made: Callable[[object], object] = tp  # a subclass of text or a number (`Slug(str)`)
    return made(_PRIMITIVES[base](value, base))


_PRIMITIVES: Final = {tp: _strict_primitive(tp) for tp in (bool, int, float, str)}


def _require(
    json_type: type, inner: Callable[[Any, Any], object]
) -> Callable[[object, type], object]:
    """Wrap a structuring hook so it refuses values of any other JSON type."""

    def structure(value: object, tp: type) -> object:
        if not isinstance(value, json_type):
            msg = f"expected {json_name(json_type)}, got {json_name(type(value))}"
            raise MalformedError(msg)
        return inner(value, tp)

    return structure


def _structure_class(cls: type, converter: cattrs.Converter) -> Callable[[object, type], object]:
    make = make_typeddict_structure_fn if typing.is_typeddict(cls) else make_dict_structure_fn
    return _require(
        dict,
        make(cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True),
    )


def _structure_sequence(tp: Any, converter: cattrs.Converter) -> Callable[[object, type], object]:  # noqa: ANN401 - any generic alias
    if typing.get_origin(tp) is tuple:
        return _require(list, homogenous_tuple_structure_factory(tp, converter))
    return _require(list, list_structure_factory(tp, converter))


def _is_class_schema(tp: object) -> bool:
    import dataclasses  # noqa: PLC0415 - only needed to tell schemas apart

    return isinstance(tp, type) and (
        attrs.has(tp) or dataclasses.is_dataclass(tp) or typing.is_typeddict(tp)
    )


def _is_union(tp: object) -> bool:
    return typing.get_origin(tp) in {typing.Union, UnionType}


def _union(tp: Any, converter: cattrs.Converter) -> Callable[[object, type], object]:  # noqa: ANN401 - any union alias
    """Structure into the first member of a union that takes the value, strictly."""
    members = typing.get_args(tp)
    others = [member for member in members if member is not NoneType]

    def structure(value: object, _: type) -> object:
        if value is None and len(others) < len(members):
            return None
        if len(others) == 1:  # `X | None`: X's own problem says more than "expected X or null"
            return converter.structure(value, others[0])
        for member in others:
            try:
                return converter.structure(value, member)
            except Exception:  # noqa: BLE001, S112 - the next member may take it; all failing is reported below
                continue
        names = " or ".join(json_name(member) for member in members)
        msg = f"expected {names}, got {json_name(type(value))}"
        raise MalformedError(msg)

    return structure


def _is_literal(tp: object) -> bool:
    return typing.get_origin(tp) is Literal


def _strict_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    # By class (and subclass): an IntEnum is an int and a StrEnum a str, so each hook
    # sends a subclass on to `_scalar`, which takes an enum by its members' values.
    for tp, hook in _PRIMITIVES.items():
        converter.register_structure_hook(tp, hook)
    converter.register_structure_hook(Enum, _scalar)
    converter.register_structure_hook_factory(
        lambda tp: is_sequence(tp) and typing.get_args(tp) != () and tp is not str,
        _structure_sequence,
    )
    converter.register_structure_hook_factory(_is_class_schema, _structure_class)
    converter.register_structure_hook_factory(_is_union, _union)
    converter.register_structure_hook_factory(_is_literal, _literal)
    return converter


_CONVERTER: Final = _strict_converter()


def _message(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return "required field missing"
    if isinstance(exc, ValueError | TypeError):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _field_problems(cls: type, value: object, path: str, exc: Exception) -> list[Problem]:
    """Say which field a class-level error (an attrs validator, a `__post_init__`) is about."""
    if isinstance(exc, ForbiddenExtraKeysError):
        names = ", ".join(field.name for field in schema_fields(cls))
        return [
            (f"{path}.{key}", f"not a field of {cls.__name__} (its fields: {names})")
            for key in sorted(exc.extra_fields)
        ]
    found: list[Problem] = []
    if attrs.has(cls) and isinstance(value, Mapping):
        hints = typing.get_type_hints(cls)
        for field in attrs.fields(cls):
            if field.validator is None or field.name not in value:
                continue
            try:
                structured = _CONVERTER.structure(value[field.name], hints[field.name])
                field.validator(None, field, structured)
            except Exception as bad:  # noqa: BLE001 - a validator may raise anything; it is reported
                found.append((f"{path}.{field.name}", _message(bad)))
    return found or [(path, _message(exc))]


def _problems(exc: BaseException, path: str, value: object) -> list[Problem]:
    """Turn cattrs' nested exceptions into (path, message) pairs, in order."""
    if isinstance(exc, ClassValidationError):
        with_notes, without = exc.group_exceptions()
        found: list[Problem] = []
        for inner, note in with_notes:
            child = value.get(note.name) if isinstance(value, Mapping) else None
            found.extend(_problems(inner, f"{path}.{note.name}", child))
        for inner in without:
            found.extend(_field_problems(exc.cl, value, path, inner))
        return found
    if isinstance(exc, IterableValidationError):
        with_indexes, rest = exc.group_exceptions()
        items: list[Problem] = []
        for inner, spot in with_indexes:
            index = spot.index
            child = value[index] if isinstance(value, list) and isinstance(index, int) else None
            items.extend(_problems(inner, f"{path}[{spot.index}]", child))
        items.extend((path, _message(inner)) for inner in rest)
        return items
    return [(path, _message(exc))]


def _pydantic_path(location: tuple[object, ...]) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in location)


def _pydantic_message(error: Mapping[str, Any]) -> str:
    kind, context = error.get("type"), error.get("ctx") or {}
    if kind in {"literal_error", "enum"} and "expected" in context:
        expected = ", ".join(str(context["expected"]).rsplit(" or ", 1))
        return f"must be one of {expected}, got {_got(error.get('input'))}"
    if kind == "missing":
        return "required field missing"
    if kind == "extra_forbidden":
        return "not a field of the schema"
    return str(error.get("msg", "")).removeprefix("Value error, ")


def _validate_pydantic(value: object, schema: type) -> Result[object, list[Problem]]:
    """Validate with pydantic in strict JSON mode, extra fields forbidden."""
    try:
        pydantic = import_optional("pydantic")
    except ImportError as exc:  # a workflows-folder module named pydantic.py, say
        return Failure([("$", f"cannot validate a pydantic model: {exc}")])
    try:
        validated: object = schema.model_validate_json(  # type: ignore[attr-defined] # a pydantic model class
            json.dumps(value), strict=True, extra="forbid"
        )
    except pydantic.ValidationError as exc:
        errors = exc.errors(include_url=False)
        return Failure([(_pydantic_path(e["loc"]), _pydantic_message(e)) for e in errors])
    except Exception as exc:  # noqa: BLE001 - a model's own code may raise anything; reported
        return Failure([("$", f"{type(exc).__name__}: {exc}")])
    return Success(validated)


def schema_problems(value: object, schema: type) -> Result[object, list[Problem]]:
    """Structure `value` into `schema`, or list every problem with its JSON path."""
    if is_pydantic_model(schema):
        return _validate_pydantic(value, schema)
    try:
        return Success(_CONVERTER.structure(value, schema))
    except Exception as exc:  # noqa: BLE001 - the validator reports, it never raises
        return Failure(_problems(exc, "$", value))


def structure(key: str, value: object, schema: type) -> Result[object, list[str]]:
    """Structure a `*_JSON` key's value into its schema, or describe each problem for the agent.

    >>> @attrs.frozen
    ... class Issue:
    ...     label: Literal["bug", "feature"]
    >>> print(*structure("ISSUE_JSON", {"label": "wontfix"}, Issue).failure())
    ISSUE_JSON does not match Issue: $.label: must be one of 'bug', 'feature', got "wontfix"
    """
    made = schema_problems(value, schema)
    if isinstance(made, Failure):
        name = getattr(schema, "__name__", str(schema))
        return Failure([f"{key} does not match {name}: {at}: {why}" for at, why in made.failure()])
    return Success(made.unwrap())
