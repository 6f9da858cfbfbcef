"""Fill `{key}`, `{key.field}` and `{key[0]}` placeholders from a run's inputs.

The grammar, the same in agent prompts, shell commands and `cwd`s:

- `{{` and `}}` are literal braces.
- A brace group that looks like a placeholder (`{`, then a letter or `_`,
  then letters, digits, `_`, `.`, `[` and `]` up to `}`) is one and must be
  valid: `{key}` reads an input (lower_snake_case); `.field` reads a JSON key
  or an attribute of a structured value (letters, digits and `_`, camelCase
  included: `{issue_json.createdAt}`); `[0]` reads an element (a
  non-negative integer). `{Nope}`, `{a..b}` or `{x[}` are mistakes, and
  `check_template` refuses them when a step is defined.
- Anything else is text: `{"a": 1}`, `{ x }`, `{}`, `{x[-1]}`.

A missing key, field or element is reported with the path that named it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Final, NoReturn, final, overload

import attrs
from returns.result import Failure, Result, Success

from adws._exceptions import DefinitionError
from adws.contract._schemas import instance_fields
from adws.engine.errors import ErrorType, PipelineError, json_safe

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "Placeholder",
    "Unresolved",
    "check_template",
    "missing_input_error",
    "parse_placeholder",
    "placeholders",
    "refuse_brace",
    "render",
    "render_for_step",
    "resolve",
    "template_paths",
    "to_text",
]

TOKEN: Final = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_.\[\]]*)\}")
"""A literal brace pair, or a brace group that looks like a placeholder (group 1)."""
_PATH: Final = re.compile(r"([a-z][a-z0-9_]*)((?:\.[A-Za-z0-9_]+|\[[0-9]+\])*)")
_PART: Final = re.compile(r"\.([A-Za-z0-9_]+)|\[([0-9]+)\]")
_SHOWN_FIELDS: Final = 12


@final
@attrs.frozen
class Placeholder:
    """One placeholder: its text as written, the input key it reads, and the path into it."""

    text: str
    key: str
    path: tuple[str | int, ...] = ()


@final
@attrs.frozen
class Unresolved:
    """A placeholder a run could not fill: `reason` is None when its input key is missing."""

    placeholder: Placeholder
    reason: str | None = None


def parse_placeholder(text: str) -> Placeholder | None:
    """Parse the inside of a brace group; None when it is not a valid placeholder.

    >>> parse_placeholder("triage_json.labels[0].name")
    Placeholder(text='triage_json.labels[0].name', key='triage_json', path=('labels', 0, 'name'))
    >>> parse_placeholder("Nope") is None, parse_placeholder("a..b") is None
    (True, True)
    """
    match = _PATH.fullmatch(text)
    if match is None:
        return None
    path = tuple(name or int(index) for name, index in _PART.findall(match.group(2)))
    return Placeholder(text, match.group(1), path)


def template_paths(template: str) -> tuple[Placeholder, ...]:
    """List the valid placeholders of `template`, once each, in order.

    >>> [p.text for p in template_paths("{a.b} {c[0]} {a.b} {{d}} {Bad}")]
    ['a.b', 'c[0]']
    """
    found: dict[str, Placeholder] = {}
    for match in TOKEN.finditer(template):
        inside = match.group(1)
        parsed = None if inside is None else parse_placeholder(inside)
        if parsed is not None:
            found.setdefault(parsed.text, parsed)
    return tuple(found.values())


def placeholders(template: str) -> tuple[str, ...]:
    """List the input keys `template` reads, once each, in order.

    >>> placeholders("{a} and {b.x} and {a}, not {{c}} nor {Upper}")
    ('a', 'b')
    """
    return tuple(dict.fromkeys(placeholder.key for placeholder in template_paths(template)))


def check_template(template: str, *, owner: str, what: str) -> None:
    """Refuse a brace group that looks like a placeholder but is not a valid one.

    Called when a step is defined, so a typo stops the module from loading.

    >>> check_template("echo {Name}", owner="step 'greet'", what="the command")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: step 'greet': the command has {Name}, which looks like a placeholder but is not one: write {key}, {key.field} or {key[0]} with key in lower_snake_case, or {{ and }} for literal braces
    """  # noqa: E501
    for match in TOKEN.finditer(template):
        inside = match.group(1)
        if inside is not None and parse_placeholder(inside) is None:
            refuse_brace(inside, owner=owner, what=what)


def refuse_brace(inside: str, *, owner: str, what: str) -> NoReturn:
    """Raise the `ValueError` for a brace group `{inside}` that is not a valid placeholder."""
    msg = (
        f"{owner}: {what} has {{{inside}}}, which looks like a placeholder but is not"
        " one: write {key}, {key.field} or {key[0]} with key in lower_snake_case,"
        " or {{ and }} for literal braces"
    )
    raise DefinitionError(msg)


def to_text(value: object) -> str:
    r"""Render an input as text: strings as they are, anything else as JSON.

    >>> to_text("plain"), to_text({"a": [1, 2]})
    ('plain', '{\n  "a": [\n    1,\n    2\n  ]\n}')
    """
    if isinstance(value, str):
        return value
    return json.dumps(json_safe(value), indent=2, ensure_ascii=False)


def _kind(value: object) -> str:
    """Name what a value is, in JSON's words where it is JSON.

    >>> _kind("x"), _kind((1,)), _kind(True), _kind(3), _kind(2.5), _kind(None), _kind(b"")
    ('text', 'a list', 'a boolean', 'an integer', 'a number', 'null', 'a bytes')
    """
    if isinstance(value, str):
        return "text"
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        return "a list"
    names = {bool: "a boolean", int: "an integer", float: "a number", type(None): "null"}
    return names.get(type(value), f"a {type(value).__name__}")


def _fields_note(names: Sequence[object]) -> str:
    shown = ", ".join(str(name) for name in list(names)[:_SHOWN_FIELDS])
    more = ", ..." if len(names) > _SHOWN_FIELDS else ""
    return f" (it has: {shown}{more})" if shown else " (it has none)"


def _step_into(value: object, part: str | int, walked: str) -> Result[object, str]:  # noqa: PLR0911 - one return per way a path can end
    """Read one field or element of `value`; `walked` names `value` in messages."""
    if isinstance(part, int):
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            return Failure(f"{walked} is {_kind(value)}, not a list")
        if part >= len(value):
            return Failure(f"{walked} has {len(value)} elements, so no [{part}]")
        return Success(value[part])
    if isinstance(value, Mapping):
        if part in value:
            return Success(value[part])
        return Failure(f"{walked} has no field {part!r}{_fields_note(list(value))}")
    fields = instance_fields(value)
    if fields is None:
        return Failure(f"{walked} is {_kind(value)}, which has no fields")
    if part not in fields:
        return Failure(f"{walked} has no field {part!r}{_fields_note(fields)}")
    return Success(getattr(value, part))


def resolve(values: Mapping[str, object], placeholder: Placeholder) -> Result[object, Unresolved]:
    """Read a placeholder's value from `values`, or say why it cannot be read.

    >>> resolve({"t": {"labels": ["bug"]}}, parse_placeholder("t.labels[0]"))
    <Success: bug>
    >>> resolve({"t": {"label": "bug"}}, parse_placeholder("t.lable")).failure().reason
    "t has no field 'lable' (it has: label)"
    """
    if placeholder.key not in values:
        return Failure(Unresolved(placeholder))
    value = values[placeholder.key]
    walked = placeholder.key
    for part in placeholder.path:
        stepped = _step_into(value, part, walked)
        if isinstance(stepped, Failure):
            return Failure(Unresolved(placeholder, stepped.failure()))
        value = stepped.unwrap()
        walked += f"[{part}]" if isinstance(part, int) else f".{part}"
    return Success(value)


def render(
    template: str,
    values: Mapping[str, object],
    *,
    quote: Callable[[str], str] = str,
) -> Result[str, tuple[Unresolved, ...]]:
    """Replace each placeholder with `quote(to_text(its value))`.

    `{{` and `}}` stand for literal braces; text that is not a placeholder
    (a JSON example, say) is kept as it is. The failure lists every
    placeholder that could not be filled.

    >>> render("hi {name} {{x}} {} {p.age}", {"name": "Ada", "p": {"age": 36}})
    <Success: hi Ada {x} {} 36>
    >>> [u.placeholder.text for u in render("{a}{b.c}", {}).failure()]
    ['a', 'b.c']
    """
    resolved: dict[str, object] = {}
    unresolved: list[Unresolved] = []
    for placeholder in template_paths(template):
        found = resolve(values, placeholder)
        if isinstance(found, Failure):
            unresolved.append(found.failure())
        else:
            resolved[placeholder.text] = found.unwrap()
    if unresolved:
        return Failure(tuple(unresolved))

    def replace(match: re.Match[str]) -> str:
        inside = match.group(1)
        if inside is None:
            return match.group(0)[0]
        if inside not in resolved:
            return match.group(0)  # looks like a placeholder but is not: checked at definition
        return quote(to_text(resolved[inside]))

    return Success(TOKEN.sub(replace, template))


def missing_input_error(
    step_name: str, what: str, missing: Sequence[Unresolved], inputs: Mapping[str, object]
) -> PipelineError:
    """Name the inputs (or the fields of inputs) a step's template needs but the run lacks."""
    keys = [item.placeholder.key for item in missing if item.reason is None]
    parts = [f"needs input {', '.join(repr(key) for key in dict.fromkeys(keys))}"] if keys else []
    parts.extend(
        f"needs {{{item.placeholder.text}}}: {item.reason}"
        for item in missing
        if item.reason is not None
    )
    known = ", ".join(sorted(inputs)) or "none"
    return PipelineError(
        step_name,
        ErrorType.MISSING_INPUT,
        f"{what} of step {step_name!r} {'; '.join(parts)}; inputs available: {known}",
        {"missing": [item.placeholder.text for item in missing]},
    )


@overload
def render_for_step(
    template: str,
    inputs: Mapping[str, object],
    *,
    step_name: str,
    what: str,
    quote: Callable[[str], str] = ...,
) -> str | PipelineError: ...


@overload
def render_for_step(
    template: None,
    inputs: Mapping[str, object],
    *,
    step_name: str,
    what: str,
    quote: Callable[[str], str] = ...,
) -> None: ...


@overload
def render_for_step(
    template: str | None,
    inputs: Mapping[str, object],
    *,
    step_name: str,
    what: str,
    quote: Callable[[str], str] = ...,
) -> str | PipelineError | None: ...


def render_for_step(
    template: str | None,
    inputs: Mapping[str, object],
    *,
    step_name: str,
    what: str,
    quote: Callable[[str], str] = str,
) -> str | PipelineError | None:
    """Render one of a step's templates (`None` stays `None`), or say what is missing.

    >>> render_for_step("cd {dir}", {}, step_name="s", what="the cwd")
    PipelineError(step_name='s', error_type=<ErrorType.MISSING_INPUT: 'MissingInput'>, message="the cwd of step 's' needs input 'dir'; inputs available: none", context=FrozenMap({'missing': ('dir',)}))
    """  # noqa: E501
    if template is None:
        return None
    rendered = render(template, inputs, quote=quote)
    if isinstance(rendered, Failure):
        return missing_input_error(step_name, what, rendered.failure(), inputs)
    return rendered.unwrap()
