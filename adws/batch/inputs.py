"""Read a batch's inputs: one JSON object per line, every problem named by its line."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from adws._checks import is_input_name

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["BatchInputError", "read_lines"]


class BatchInputError(ValueError):
    """A batch's inputs file cannot be used; the message names the file and the line."""


def _line_inputs(path: Path, number: int, text: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        msg = f"{path}, line {number}: not JSON ({exc})"
        raise BatchInputError(msg) from exc
    if not isinstance(value, dict):
        msg = f"{path}, line {number}: expected a JSON object of inputs, got {type(value).__name__}"
        raise BatchInputError(msg)
    for key in value:
        if not is_input_name(key):
            msg = f"{path}, line {number}: key {key!r} is not an input name (use lower_snake_case)"
            raise BatchInputError(msg)
    return value


def read_lines(path: Path) -> list[tuple[int, dict[str, object]]]:
    """Return `(line number, inputs)` for every non-blank line, or raise naming the bad one.

    Blank lines are skipped (a trailing newline is not a run); a file with no
    runs at all is an error too, before anything starts.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        msg = f"cannot read {path}: {exc}"
        raise BatchInputError(msg) from exc
    runs = [
        (number, _line_inputs(path, number, line))
        for number, line in enumerate(text.splitlines(), 1)
        if line.strip()
    ]
    if not runs:
        msg = f"{path} holds no runs: write one JSON object of inputs per line"
        raise BatchInputError(msg)
    return runs
