"""The fail-closed validator between an agent's answer and the pipeline.

An answer ends with a report block (`STATUS: done`, then the declared keys).
`validate_agent_output` proves it well-formed or returns a `PipelineError`
listing every problem at once; it never raises, whatever the text.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import NoneType, UnionType
from typing import Any, Final, Literal, cast, final

import attrs
import cattrs
from cattrs.cols import homogenous_tuple_structure_factory, is_sequence, list_structure_factory
from cattrs.gen import make_dict_structure_fn
from returns.result import Failure, Result, Success

from adws._frozen import freeze_mapping
from adws.errors import ErrorType, PipelineError

__all__ = [
    "MAX_OUTPUT_BYTES",
    "RAW_OUTPUT_LIMIT",
    "STATUSES",
    "AgentReport",
    "OutputContract",
    "validate_agent_output",
]

STATUSES: Final = ("done", "retry", "blocked")
MAX_OUTPUT_BYTES: Final = 1 << 20
RAW_OUTPUT_LIMIT: Final = 64 << 10
_ALWAYS_FIELDS: Final = frozenset({"STATUS", "REASON", "ISSUES"})
_KEY: Final = re.compile(r"[A-Z][A-Z0-9_]*")
_FIELD_LINE: Final = re.compile(r"([A-Z][A-Z0-9_]*):(.*)")
_FENCE_LINE: Final = re.compile(r"^[ \t]*```", re.MULTILINE)
_FENCED: Final = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n(.*)\n[ \t]*```", re.DOTALL)


def _to_keys(keys: Iterable[str]) -> tuple[str, ...]:
    return tuple(keys)


def _check_expects(
    _instance: object, _attribute: attrs.Attribute[tuple[str, ...]], keys: tuple[str, ...]
) -> None:
    for key in keys:
        if _KEY.fullmatch(str(key)) is None or key == "STATUS":
            msg = f"output key {key!r} must be UPPER_SNAKE_CASE and not STATUS"
            raise ValueError(msg)


def _check_schemas(
    _instance: object, _attribute: attrs.Attribute[Mapping[str, type]], schemas: Mapping[str, type]
) -> None:
    for key, schema in schemas.items():
        if _KEY.fullmatch(key) is None or not key.endswith("_JSON"):
            msg = f"schema key {key!r} must be an UPPER_SNAKE_CASE key ending in _JSON"
            raise ValueError(msg)
        if not attrs.has(schema):
            msg = f"schema for {key} must be an attrs class, got {schema!r}"
            raise TypeError(msg)


@final
@attrs.frozen
class OutputContract:
    """Declare the report keys a step needs and the schemas of its JSON keys.

    A key in `schemas` is expected too, whether or not `expects` lists it.
    Answers over `max_output_bytes` are refused unread.

    >>> OutputContract(expects=("FINAL_REPORT",)).keys
    ('FINAL_REPORT',)
    """

    expects: tuple[str, ...] = attrs.field(default=(), converter=_to_keys, validator=_check_expects)
    schemas: Mapping[str, type] = attrs.field(
        factory=dict, converter=freeze_mapping, validator=_check_schemas
    )
    max_output_bytes: int = attrs.field(default=MAX_OUTPUT_BYTES, kw_only=True)

    @property
    def keys(self) -> tuple[str, ...]:
        """Return every key the report must carry with `STATUS: done`."""
        extra = tuple(key for key in self.schemas if key not in self.expects)
        return self.expects + extra

    def instructions(self) -> str:
        """Tell an agent exactly how to end its answer."""
        lines = [
            "## Output contract",
            "End your answer with a report block. Each field starts a line as `KEY: value`;",
            "a value may continue on the following lines until the next field.",
            "",
            "STATUS: done",
        ]
        lines.extend(f"{key}: <{_describe(key)}>" for key in self.keys)
        lines += [
            "",
            "STATUS is exactly one of: done, retry, blocked.",
            "- done: every field above is present and non-empty.",
            "- retry: add `REASON: <what went wrong>` to be asked again.",
            "- blocked: add `REASON: <what you need>` when you cannot go on without a human.",
        ]
        json_keys = [key for key in self.keys if key.endswith("_JSON")]
        if json_keys:
            lines += [
                "",
                "Fields ending in _JSON hold strict JSON (no NaN, no duplicate keys),",
                "optionally inside one ```json fenced block and nothing else.",
            ]
        for key, schema in self.schemas.items():
            example = json.dumps(_example(schema), indent=2)
            lines += ["", f"{key} must have exactly this shape:", example]
        return "\n".join(lines)


def _describe(key: str) -> str:
    return "strict JSON" if key.endswith("_JSON") else "text"


def _example(tp: object, depth: int = 0) -> object:  # noqa: PLR0911 - one return per kind of type
    """Build a JSON example of type `tp`, for the instructions."""
    if depth > 8:  # noqa: PLR2004 - recursive schemas stop somewhere readable
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if isinstance(tp, type) and attrs.has(tp):
        try:
            hints = typing.get_type_hints(tp)
        except (NameError, TypeError):
            hints = {}
        return {
            field.name: _example(hints.get(field.name, field.type), depth + 1)
            for field in attrs.fields(tp)
        }
    if origin is Literal:
        return args[0]
    if origin in {typing.Union, UnionType}:
        return _example(next(arg for arg in args if arg is not NoneType), depth)
    if origin in {list, tuple, Sequence, set, frozenset} or tp in {list, tuple}:
        return [_example(args[0], depth + 1)] if args else []
    if origin in {dict, Mapping} or tp is dict:
        return {}
    return {str: "text", int: 0, float: 0.0, bool: True}.get(tp)  # type: ignore[call-overload] # any type may be asked


@final
@attrs.frozen
class AgentReport:
    """Hold a validated report: its status, each field's text, and parsed JSON.

    `fields` maps each key as written to its text; `data` maps each `*_JSON`
    key to its parsed value, or to an instance of the declared schema.
    """

    status: str
    fields: Mapping[str, str] = attrs.field(factory=dict, converter=freeze_mapping)
    data: Mapping[str, object] = attrs.field(factory=dict, converter=freeze_mapping)


# -- strict JSON ---------------------------------------------------------------


def _no_constants(name: str) -> object:
    msg = f"{name} is not allowed in strict JSON"
    raise ValueError(msg)


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    result: dict[str, object] = {}
    for key, value in pairs:
        if key in result:
            msg = f"duplicate key {key!r}"
            raise ValueError(msg)
        result[key] = value
    return result


def _unfence(text: str) -> Result[str, str]:
    """Unwrap exactly one surrounding fenced block; refuse anything else with fences."""
    stripped = text.strip()
    if not stripped.startswith("```"):
        # Backticks inside JSON strings are data; text after the JSON fails to parse.
        return Success(stripped)
    match = _FENCED.fullmatch(stripped)
    if match is None or _FENCE_LINE.search(match.group(1)):
        return Failure("expected bare JSON or exactly one fenced block around it, nothing else")
    return Success(match.group(1))


def parse_strict_json(text: str) -> Result[object, str]:
    r"""Parse strict JSON: no NaN/Infinity, no duplicate keys, one optional fence.

    >>> parse_strict_json('```json\n{"a": 1}\n```')
    <Success: {'a': 1}>
    >>> parse_strict_json('{"a": NaN}')
    <Failure: not valid JSON: NaN is not allowed in strict JSON>
    """
    unfenced = _unfence(text)
    if isinstance(unfenced, Failure):
        return unfenced
    try:
        return Success(
            json.loads(
                unfenced.unwrap(),
                parse_constant=_no_constants,
                object_pairs_hook=_unique_keys,
            )
        )
    except json.JSONDecodeError as exc:
        return Failure(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}")
    except (ValueError, RecursionError) as exc:
        return Failure(f"not valid JSON: {str(exc) or type(exc).__name__}")


# -- strict structuring --------------------------------------------------------


def _strict_primitive(tp: type) -> Callable[[object, type], object]:
    def structure(value: object, _: type) -> object:
        ok = type(value) is tp or (tp is float and type(value) is int)
        if not ok:
            msg = f"expected {_json_name(tp)}, got {_json_name(type(value))}"
            raise TypeError(msg)
        return float(value) if tp is float else value  # type: ignore[arg-type] # an int or float, checked above

    return structure


def _json_name(tp: type) -> str:
    names: dict[type, str] = {
        str: "string",
        int: "integer",
        float: "number",
        bool: "boolean",
        dict: "object",
        list: "array",
        NoneType: "null",
    }
    return names.get(tp, tp.__name__)


def _structure_attrs(cls: type, converter: cattrs.Converter) -> Callable[[object, type], object]:
    inner: Callable[[Any, Any], object] = make_dict_structure_fn(
        cls, converter, _cattrs_forbid_extra_keys=True, _cattrs_detailed_validation=True
    )

    def structure(value: object, tp: type) -> object:
        if not isinstance(value, dict):
            msg = f"expected object, got {_json_name(type(value))}"
            raise TypeError(msg)
        return inner(value, tp)

    return structure


def _structure_sequence(tp: Any, converter: cattrs.Converter) -> Callable[[object, type], object]:  # noqa: ANN401 - any generic alias
    origin = typing.get_origin(tp)
    inner: Callable[[Any, Any], object]
    if origin is tuple:
        inner = homogenous_tuple_structure_factory(tp, converter)
    else:
        inner = list_structure_factory(tp, converter)

    def structure(value: object, given: type) -> object:
        if not isinstance(value, list):
            msg = f"expected array, got {_json_name(type(value))}"
            raise TypeError(msg)
        return inner(value, given)

    return structure


def _strict_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True)
    for tp in (str, int, float, bool):
        converter.register_structure_hook(tp, _strict_primitive(tp))
    converter.register_structure_hook_factory(attrs.has, _structure_attrs)
    converter.register_structure_hook_factory(
        lambda tp: is_sequence(tp) and typing.get_args(tp) != () and tp is not str,
        _structure_sequence,
    )
    return converter


_CONVERTER: Final = _strict_converter()


def _format_exception(exc: BaseException, tp: type | None) -> str:
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return f"invalid type ({exc})"
    return cattrs.v.format_exception(exc, tp)


def _structure(key: str, value: object, schema: type) -> Result[object, list[str]]:
    try:
        return Success(_CONVERTER.structure(value, schema))
    except Exception as exc:  # noqa: BLE001 - the validator reports, it never raises
        messages = cattrs.transform_error(exc, path="$", format_exception=_format_exception)
        return Failure([f"{key} does not match {schema.__name__}: {m}" for m in messages])


# -- the report grammar --------------------------------------------------------


def _scan(text: str, declared: frozenset[str]) -> list[tuple[str, str]]:
    """Split `text` into (KEY, value) fields per the grammar in DESIGN.md."""
    fields: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    for line in text.splitlines():
        match = _FIELD_LINE.fullmatch(line.rstrip())
        if match is not None and match.group(1) in declared:
            key, rest = match.group(1), match.group(2)
            if key == "STATUS":
                fields.append((key, [rest.strip()]))
                current = None
            else:
                current = [rest]
                fields.append((key, current))
        elif current is not None:
            current.append(line)
    return [(key, "\n".join(lines).strip()) for key, lines in fields]


def _raw(text: str) -> str:
    if len(text) <= RAW_OUTPUT_LIMIT:
        return text
    return "…" + text[-RAW_OUTPUT_LIMIT:]


def _violation(step_name: str, problems: list[str], text: str) -> PipelineError:
    return PipelineError(
        step_name,
        ErrorType.CONTRACT_VIOLATION,
        "; ".join(problems),
        {"problems": problems, "raw_output": _raw(text)},
    )


def _check_status(scanned: list[tuple[str, str]]) -> Result[str, str]:
    statuses = [value for key, value in scanned if key == "STATUS"]
    if not statuses:
        return Failure("STATUS missing")
    if len(statuses) > 1:
        return Failure(f"STATUS appears {len(statuses)} times; give it once")
    if statuses[0] not in STATUSES:
        return Failure(f"STATUS {statuses[0]!r} is not one of done, retry, blocked")
    return Success(statuses[0])


def _check_field(  # noqa: PLR0911 - one return per rule, in the order DESIGN.md lists them
    key: str, count: int, value: str | None, contract: OutputContract
) -> Result[object, list[str]]:
    """Check one expected field; a `*_JSON` field's success is its parsed value."""
    if count > 1:
        return Failure([f"{key} appears {count} times; give it once"])
    if value is None:
        return Failure([f"{key} missing"])
    if not value:
        return Failure([f"{key} is empty"])
    if not key.endswith("_JSON"):
        return Success(value)
    parsed = parse_strict_json(value)
    if isinstance(parsed, Failure):
        return Failure([f"{key}: {parsed.failure()}"])
    schema = contract.schemas.get(key)
    if schema is None:
        return Success(parsed.unwrap())
    return _structure(key, parsed.unwrap(), schema)


def validate_agent_output(
    text: str, contract: OutputContract, *, step_name: str
) -> Result[AgentReport, PipelineError]:
    r"""Prove an agent's answer well-formed under `contract`, or say every way it is not.

    >>> answer = "Work done.\nSTATUS: done\nSUMMARY: all good"
    >>> validate_agent_output(answer, OutputContract(("SUMMARY",)), step_name="s").unwrap()
    AgentReport(status='done', fields=FrozenMap({'STATUS': 'done', 'SUMMARY': 'all good'}), data=FrozenMap({}))
    >>> print(validate_agent_output("ok", OutputContract(), step_name="s").failure())
    s: ContractViolation: STATUS missing
    """  # noqa: E501
    if not isinstance(cast("object", text), str):  # typed callers aside, never raise
        return Failure(
            _violation(step_name, [f"output is not text (got {type(text).__name__})"], "")
        )
    size = len(text.encode("utf-8", errors="replace"))
    if size > contract.max_output_bytes:
        problem = f"output is {size} bytes, over the {contract.max_output_bytes}-byte limit"
        return Failure(_violation(step_name, [problem], text))
    keys = contract.keys
    scanned = _scan(text, _ALWAYS_FIELDS | frozenset(keys))
    checked_status = _check_status(scanned)
    if isinstance(checked_status, Failure):
        return Failure(_violation(step_name, [checked_status.failure()], text))
    status = checked_status.unwrap()
    problems: list[str] = []
    fields = dict(scanned)
    if status != "done":
        reason = fields.get("REASON") or fields.get("ISSUES") or f"agent said STATUS: {status}"
        kind = ErrorType.BLOCKED if status == "blocked" else ErrorType.AGENT_RETRY_REQUESTED
        return Failure(PipelineError(step_name, kind, reason, {"raw_output": _raw(text)}))
    counts: dict[str, int] = {}
    for key, _ in scanned:
        counts[key] = counts.get(key, 0) + 1
    data: dict[str, object] = {}
    for key in keys:
        checked = _check_field(key, counts.get(key, 0), fields.get(key), contract)
        if isinstance(checked, Failure):
            problems.extend(checked.failure())
        elif key.endswith("_JSON"):
            data[key] = checked.unwrap()
    if problems:
        return Failure(_violation(step_name, problems, text))
    return Success(AgentReport(status, fields, data))
