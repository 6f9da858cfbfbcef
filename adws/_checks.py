"""Definition-time checks shared by every public constructor.

A workflow module that declares something impossible (a retry count of
`nan`, a timeout of `"5"`, an agent given as a string) fails when it is
imported, with a message naming the owner, the field and the value, never
later as an exception out of a run. The checks take `object` on purpose:
they exist for callers the type checker did not see.
"""

from __future__ import annotations

import math
import re
from typing import Final

from adws._exceptions import DefinitionError, DefinitionTypeError

__all__ = [
    "is_input_name",
    "require_callable",
    "require_count",
    "require_input_name",
    "require_seconds",
    "require_type",
]

_INPUT_NAME: Final = re.compile(r"[a-z][a-z0-9_]*")


def require_input_name(owner: str, field: str, value: object) -> None:
    """Raise unless `value` is an input name: a placeholder could not name anything else.

    >>> require_input_name("fan_out 'f'", "item", "An Item")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: fan_out 'f': item 'An Item' is not an input name (lower_snake_case), so no placeholder could name it
    """  # noqa: E501
    require_type(owner, field, value, str, "an input name")
    if not is_input_name(value):
        msg = (
            f"{owner}: {field} {value!r} is not an input name (lower_snake_case), so no "
            "placeholder could name it"
        )
        raise DefinitionError(msg)


def is_input_name(key: object) -> bool:
    """Tell whether `key` can name an input (lower_snake_case, as `-i` takes).

    >>> is_input_name("topic"), is_input_name("Bad Key"), is_input_name(3)
    (True, False, False)
    """
    return isinstance(key, str) and _INPUT_NAME.fullmatch(key) is not None


def require_type(
    owner: str, field: str, value: object, kind: type | tuple[type, ...], what: str
) -> None:
    """Raise `TypeError` unless `value` is an instance of `kind` (bools are not numbers).

    >>> require_type("Step 's'", "always_run", "yes", bool, "a bool")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionTypeError: Step 's': always_run must be a bool, got 'yes'
    """
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        msg = f"{owner}: {field} must be {what}, got {value!r}"
        raise DefinitionTypeError(msg)


def require_callable(owner: str, field: str, value: object, *, optional: bool = False) -> None:
    """Raise `TypeError` unless `value` is callable (or None, when `optional`).

    >>> require_callable("agent_step 'a'", "agent", "claude -p")
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionTypeError: agent_step 'a': agent must be callable, got 'claude -p'
    """
    if optional and value is None:
        return
    if not callable(value):
        what = "callable or None" if optional else "callable"
        msg = f"{owner}: {field} must be {what}, got {value!r}"
        raise DefinitionTypeError(msg)


def require_count(owner: str, field: str, value: object, minimum: int = 1) -> None:
    """Raise unless `value` is an int (not a bool) of at least `minimum`.

    >>> require_count("RetryPolicy", "max_attempts", float("nan"))
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionTypeError: RetryPolicy: max_attempts must be an int >= 1, got nan
    """
    require_type(owner, field, value, int, f"an int >= {minimum}")
    if value < minimum:  # type: ignore[operator] # an int, checked above
        msg = f"{owner}: {field} must be an int >= {minimum}, got {value!r}"
        raise DefinitionError(msg)


def require_seconds(
    owner: str, field: str, value: object, *, minimum: float = 0.0, optional: bool = False
) -> None:
    """Raise unless `value` is a finite number of at least `minimum` (or None, when `optional`).

    >>> require_seconds("RetryPolicy", "jitter", float("inf"))
    Traceback (most recent call last):
    ...
    adws._exceptions.DefinitionError: RetryPolicy: jitter must be a finite number >= 0.0, got inf
    """
    if optional and value is None:
        return
    what = f"a finite number >= {minimum}" + (" or None" if optional else "")
    require_type(owner, field, value, (int, float), what)
    if not math.isfinite(value) or value < minimum:  # type: ignore[arg-type,operator] # a number, checked above
        msg = f"{owner}: {field} must be {what}, got {value!r}"
        raise DefinitionError(msg)
