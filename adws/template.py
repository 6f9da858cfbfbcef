"""Fill `{key}` placeholders from a run's inputs."""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Final, overload

from returns.result import Failure, Result, Success

from adws.errors import ErrorType, PipelineError, json_safe

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

__all__ = ["missing_input_error", "placeholders", "render", "render_for_step", "to_text"]

_TOKEN: Final = re.compile(r"\{\{|\}\}|\{([a-z][a-z0-9_]*)\}")


def to_text(value: object) -> str:
    r"""Render an input as text: strings as they are, anything else as JSON.

    >>> to_text("plain"), to_text({"a": [1, 2]})
    ('plain', '{\n  "a": [\n    1,\n    2\n  ]\n}')
    """
    if isinstance(value, str):
        return value
    return json.dumps(json_safe(value), indent=2, ensure_ascii=False)


def placeholders(template: str) -> tuple[str, ...]:
    """List the input names `template` refers to, once each, in order.

    >>> placeholders("{a} and {b} and {a}, not {{c}} nor {Upper}")
    ('a', 'b')
    """
    names = (match.group(1) for match in _TOKEN.finditer(template))
    return tuple(dict.fromkeys(name for name in names if name))


def render(
    template: str,
    values: Mapping[str, object],
    *,
    quote: Callable[[str], str] = str,
) -> Result[str, tuple[str, ...]]:
    """Replace each `{key}` with `quote(to_text(values[key]))`.

    Only `{lower_case_identifier}` is a placeholder; `{{` and `}}` stand for
    literal braces and any other brace (a JSON example, say) is kept as it
    is. The failure lists every missing key.

    >>> render("hi {name} {{x}} {}", {"name": "Ada"})
    <Success: hi Ada {x} {}>
    >>> render("{a}{b}", {})
    <Failure: ('a', 'b')>
    """
    missing = tuple(name for name in placeholders(template) if name not in values)
    if missing:
        return Failure(missing)

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name is None:
            return match.group(0)[0]
        return quote(to_text(values[name]))

    return Success(_TOKEN.sub(replace, template))


def missing_input_error(
    step_name: str, what: str, missing: tuple[str, ...], inputs: Mapping[str, object]
) -> PipelineError:
    """Name the inputs a step's template needs but the run does not have."""
    names = ", ".join(repr(key) for key in missing)
    known = ", ".join(sorted(inputs)) or "none"
    return PipelineError(
        step_name,
        ErrorType.MISSING_INPUT,
        f"{what} of step {step_name!r} needs input {names}; inputs available: {known}",
        {"missing": list(missing)},
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
