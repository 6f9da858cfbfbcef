"""The fail-closed validator between an agent's answer and the pipeline.

An answer ends with a report block (`STATUS: done`, then the declared keys).
`validate_agent_output` proves it well-formed or returns a `PipelineError`
listing every problem at once; it never raises, whatever the text.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from typing import Final, cast, final

import attrs
from returns.result import Failure, Result, Success

from adws._checks import require_count
from adws._exceptions import DefinitionError, DefinitionTypeError
from adws._frozen import freeze_mapping
from adws.contract._describe import example_of, field_lines
from adws.contract._schemas import schema_kind
from adws.contract._strict import parse_strict_json
from adws.contract._structure import structure
from adws.engine.errors import ErrorType, PipelineError

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


def _to_keys(keys: Iterable[str]) -> tuple[str, ...]:
    return tuple(keys)


def _check_expects(
    _instance: object, _attribute: attrs.Attribute[tuple[str, ...]], keys: tuple[str, ...]
) -> None:
    for key in keys:
        if _KEY.fullmatch(str(key)) is None or key == "STATUS":
            msg = f"output key {key!r} must be UPPER_SNAKE_CASE and not STATUS"
            raise DefinitionError(msg)


def _check_schemas(
    _instance: object, _attribute: attrs.Attribute[Mapping[str, type]], schemas: Mapping[str, type]
) -> None:
    for key, schema in schemas.items():
        if _KEY.fullmatch(key) is None or not key.endswith("_JSON"):
            msg = f"schema key {key!r} must be an UPPER_SNAKE_CASE key ending in _JSON"
            raise DefinitionError(msg)
        if schema_kind(schema) is None:
            msg = (
                f"schema for {key} must be an attrs class, a dataclass, a TypedDict or a"
                f" pydantic model (pip install 'adws[pydantic]'), got {schema!r}"
            )
            raise DefinitionTypeError(msg)


def _check_limit(_instance: object, _attribute: attrs.Attribute[int], value: int) -> None:
    require_count("OutputContract", "max_output_bytes", value)


@final
@attrs.frozen
class OutputContract:
    """Declare the report keys a step needs and the schemas of its JSON keys.

    A key in `schemas` is expected too, whether or not `expects` lists it.
    A schema is an attrs class, a dataclass, a `TypedDict` or (with
    `adws[pydantic]`) a pydantic model; the instructions list its fields
    with their types, choices and descriptions.
    Answers over `max_output_bytes` are refused unread; a `CommandAgent`
    stops its process as soon as it prints more than that.

    >>> OutputContract(expects=("FINAL_REPORT",)).keys
    ('FINAL_REPORT',)
    """

    expects: tuple[str, ...] = attrs.field(default=(), converter=_to_keys, validator=_check_expects)
    schemas: Mapping[str, type] = attrs.field(
        factory=dict, converter=freeze_mapping, validator=_check_schemas
    )
    max_output_bytes: int = attrs.field(
        default=MAX_OUTPUT_BYTES, kw_only=True, validator=_check_limit
    )

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
            lines += ["", *_schema_instructions(key, schema)]
        return "\n".join(lines)


@functools.lru_cache(maxsize=1024)
def _schema_instructions(key: str, schema: type) -> tuple[str, ...]:
    """Describe one schema to the agent (once per key and class: every agent call shows it)."""
    example = json.dumps(example_of(schema), indent=2, ensure_ascii=False)
    return (
        f"{key} is one JSON object ({schema.__name__}) with these fields and no others:",
        *field_lines(schema),
        "For example:",
        example,
    )


def _describe(key: str) -> str:
    return "strict JSON" if key.endswith("_JSON") else "text"


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


# -- the report grammar --------------------------------------------------------


def _scan(text: str, declared: frozenset[str]) -> list[tuple[str, str]]:
    """Split `text` into (KEY, value) fields per the grammar in DESIGN.md."""
    fields: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    # Only \n (or \r\n) ends a line: splitlines() would also break on U+2028 and
    # friends, which may sit raw inside a JSON string and must survive.
    for raw_line in text.split("\n"):
        line = raw_line.removesuffix("\r")
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
    return structure(key, parsed.unwrap(), schema)


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
