r"""Read a batch's inputs: one JSON object per line, every problem named by its line.

Lines are the file's `\n`-separated parts, read one at a time (a raw
U+2028 or U+0085 inside a JSON string is data, not a line break), and each
is strict JSON, as the validator reads an agent's: `NaN`, `Infinity` and
numbers that overflow (`1e999`) are refused, never turned into text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._checks import is_input_name
from adws._exceptions import MalformedError
from adws.contract._strict import loads_strict

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

__all__ = ["BatchInputError", "iter_lines", "read_lines"]


class BatchInputError(MalformedError):
    """A batch's inputs file cannot be used; the message names the file and the line."""


def _line_inputs(path: Path, number: int, raw: bytes) -> dict[str, object]:
    try:
        value = loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        msg = f"{path}, line {number}: not UTF-8 ({exc.reason} at byte {exc.start})"
        raise BatchInputError(msg) from exc
    except ValueError as exc:
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


def iter_lines(path: Path) -> Iterator[tuple[int, dict[str, object]]]:
    """Yield `(line number, inputs)` for every non-blank line, reading one line at a time.

    Raises `BatchInputError` naming the first bad line (or the file, when it
    cannot be read); blank lines are skipped (a trailing newline is not a run).
    """
    try:
        with path.open("rb") as lines:
            for number, raw in enumerate(lines, 1):
                if raw.strip():
                    yield number, _line_inputs(path, number, raw)
    except OSError as exc:
        msg = f"cannot read {path}: {exc}"
        raise BatchInputError(msg) from exc


def read_lines(path: Path) -> list[tuple[int, dict[str, object]]]:
    """Return `(line number, inputs)` for every non-blank line, or raise naming the bad one.

    A file with no runs at all is an error too, before anything starts.
    """
    runs = list(iter_lines(path))
    if not runs:
        msg = f"{path} holds no runs: write one JSON object of inputs per line"
        raise BatchInputError(msg)
    return runs
