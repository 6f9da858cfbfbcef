"""Encode contexts and errors as JSON for the journal, and decode them for resume.

Plain JSON values are stored as they are. Values JSON cannot hold are stored
with a marker so they come back as what they were: instances of schema
classes (attrs, dataclass or pydantic: a verified packet, say) as
`{"__adws_attrs__": "module:Class", "value": ...}`,
sets as `{"__adws_set__": [...]}`, errors as `{"__adws_error__": {...}}`.
Anything else is stored as `{"__adws_repr__": "..."}` and comes back as that
text: recording a value never fails a run.

Data cannot forge a marker: an object with any key starting `__adws_` (an
agent's JSON, say) is stored as `{"__adws_dict__": [[key, value], ...]}` and
comes back exactly as it was. Decoding never imports a module: a schema
class is looked up only among modules already loaded (resume loads the
workflow module first), and comes back as plain data otherwise. Decoding
never raises on a value it cannot rebuild; it keeps the plain data. Text is
kept exactly, lone surrogates included (SQLite stores UTF-8, so text that
holds one is written with JSON's ASCII escapes).

With transcripts off (`--no-transcripts`), an error keeps no text an agent
or a command produced: its rejected answer (`raw_output`), its output
tails (`stdout_tail`, `stderr_tail`) and what a message quotes of a
command's output (after `exited with N:`) are each written as their size
and hash, `<not kept (--no-transcripts): 1234 bytes, sha256 abcd…>`, at any
depth (a branch's error inside its step's, the feedback history). Only the
journal's copy is cut: the retry's feedback was made from the whole error.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from collections.abc import Mapping
from enum import Enum
from typing import Any, Final

import cattrs

from adws._exceptions import MalformedError
from adws.contract._schemas import instance_fields, is_pydantic_model, schema_kind
from adws.engine.context import WorkflowContext
from adws.engine.errors import PipelineError
from adws.journal.identity._homes import first_home, home_now

__all__ = [
    "decode_context",
    "decode_error",
    "decode_many_outputs",
    "decode_outputs",
    "encode_context",
    "encode_error",
    "encode_outputs",
    "to_json",
    "withheld",
    "without_transcripts",
]

_PREFIX: Final = "__adws_"
_ATTRS: Final = "__adws_attrs__"
_SET: Final = "__adws_set__"
_ERROR: Final = "__adws_error__"
_REPR: Final = "__adws_repr__"
_DICT: Final = "__adws_dict__"

_converter: Final = cattrs.Converter()


def _encode_mapping(value: Mapping[Any, object]) -> object:
    encoded = {str(key): _encode(item) for key, item in value.items()}
    if any(key.startswith(_PREFIX) for key in encoded):
        return {_DICT: [[key, item] for key, item in encoded.items()]}
    return encoded


def _encode(value: object) -> object:  # noqa: PLR0911 - one return per kind of value
    if isinstance(value, Enum):
        return _encode(value.value)  # a schema field: structuring turns it into the member again
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {_REPR: repr(value)}
    if isinstance(value, PipelineError):
        return {_ERROR: _error_dict(value)}
    if isinstance(value, Mapping):
        return _encode_mapping(value)
    if isinstance(value, list | tuple):
        return [_encode(item) for item in value]
    if isinstance(value, set | frozenset):
        return {_SET: [_encode(item) for item in value]}
    if instance_fields(value) is not None:
        cls = type(value)
        home = first_home(cls.__module__)
        return {_ATTRS: f"{home}:{cls.__qualname__}", "value": _encode(_plain(value))}
    return {_REPR: repr(value)}


def _plain(value: object) -> object:
    """Turn a schema instance into plain data, nested instances too (its class rebuilds them)."""
    if isinstance(value, Enum):
        return _plain(value.value)
    fields = instance_fields(value)
    if fields is not None:
        return {name: _plain(getattr(value, name, None)) for name in fields}
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


def _find_class(path: str) -> type | None:
    """Find a schema class in an already loaded module; never import one.

    adws's own classes are stored under their first home (see `adws.journal.identity._homes`):
    the class is looked for where that module lives now, then under the name itself.
    """
    module_name, _, qualname = path.partition(":")
    for name in dict.fromkeys((home_now(module_name), module_name)):
        found: object = sys.modules.get(name)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        if isinstance(found, type) and schema_kind(found) is not None:
            return found
    return None


def _rebuild(cls: type, data: object) -> object:
    """Build an instance of a schema class again from its stored fields."""
    if is_pydantic_model(cls):
        return cls.model_validate(data)  # type: ignore[attr-defined] # a pydantic model class
    return _converter.structure(data, cls)


def _decode_marker(marker: str, value: dict[str, object]) -> object:
    if marker == _DICT:
        pairs = value[_DICT]
        return {str(key): _decode(item) for key, item in pairs}  # type: ignore[attr-defined] # a list of pairs; a bad one raises and is kept as data
    if marker == _SET:
        return frozenset(_decode(item) for item in value[_SET])  # type: ignore[attr-defined] # a list; a bad one raises and is kept as data
    if marker == _ERROR:
        return decode_error(value[_ERROR])  # type: ignore[arg-type] # a mapping; a bad one raises and is kept as data
    if marker == _REPR:
        return str(value[_REPR])
    cls = _find_class(str(value[_ATTRS]))
    data = _decode(value["value"])
    try:
        return data if cls is None else _rebuild(cls, data)
    except Exception:  # noqa: BLE001 - the class changed since the run: keep its data
        return data


def _decode(value: object) -> object:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    shape = tuple(value)
    marker = shape[0] if shape in {(_DICT,), (_SET,), (_ERROR,), (_REPR,)} else None
    if shape == (_ATTRS, "value"):
        marker = _ATTRS
    if marker is not None:
        try:
            return _decode_marker(marker, value)
        except Exception:  # noqa: BLE001, S110 - a row written before markers were escaped: keep the data
            pass
    return {key: _decode(item) for key, item in value.items()}


def _dumps(value: object) -> str:
    """Write compact JSON that is valid UTF-8: lone surrogates become escapes."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = json.dumps(value, separators=(",", ":"))
    return text


def to_json(value: object) -> str:
    """Encode any value as compact JSON with markers (see the module docstring)."""
    return _dumps(_encode(value))


def _error_dict(error: PipelineError) -> dict[str, object]:
    return {
        "step_name": error.step_name,
        "error_type": str(error.error_type),
        "message": error.message,
        "context": _encode(error.context),
    }


def encode_error(error: PipelineError | None, *, transcripts: bool = True) -> str | None:
    """Encode an error for the journal (None stays None).

    `transcripts=False` keeps only the size and hash of each text an agent
    or a command produced (see the module docstring).
    """
    if error is None:
        return None
    return _dumps(_error_dict(error if transcripts else _withhold_error(error)))


_PRODUCED: Final = frozenset({"raw_output", "stdout_tail", "stderr_tail"})
"""Context keys whose text an agent or a command produced."""
_OUTPUT_FOLLOWS: Final = re.compile(r" exited with -?\d+:[ \n]")
"""What precedes a command's output quoted in a message (a shell step's, an agent CLI's)."""
_HASH_CHARS: Final = 32


def withheld(text: str) -> str:
    """Say what a text was without keeping it: its size in bytes and its hash.

    >>> withheld("hello")
    '<not kept (--no-transcripts): 5 bytes, sha256 2cf24dba5fb0a30e26e83b2ac5b9e29e…>'
    """
    data = text.encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(data).hexdigest()[:_HASH_CHARS]
    return f"<not kept (--no-transcripts): {len(data)} bytes, sha256 {digest}…>"


def without_transcripts(message: str) -> str:
    """Cut what a message quotes of a command's output, keeping its size and hash.

    >>> without_transcripts("`make` exited with 2: no rule for secret")
    '`make` exited with 2: <not kept (--no-transcripts): 18 bytes, sha256 a37efee6776002e6a29dd45adc3d15ab…>'
    """  # noqa: E501
    found = _OUTPUT_FOLLOWS.search(message)
    if found is None:
        return message
    return message[: found.end()] + withheld(message[found.end() :])


def _withhold_error(error: PipelineError) -> PipelineError:
    message = without_transcripts(error.message)
    return PipelineError(error.step_name, error.error_type, message, _withhold_map(error.context))


def _withhold_map(value: Mapping[Any, object]) -> dict[Any, object]:
    return {
        key: withheld(item) if key in _PRODUCED and isinstance(item, str) else _withhold(item)
        for key, item in value.items()
    }


def _withhold(value: object) -> object:
    """Replace every produced text in an error's context (nested errors too) by `withheld`."""
    if isinstance(value, PipelineError):
        return _withhold_error(value)
    if isinstance(value, str):
        return without_transcripts(value)  # a feedback line quotes an error's message
    if isinstance(value, Mapping):
        return _withhold_map(value)
    if isinstance(value, list | tuple):
        return [_withhold(item) for item in value]
    return value


def decode_error(data: str | Mapping[str, Any]) -> PipelineError:
    """Rebuild an error from `encode_error`'s output."""
    raw = json.loads(data) if isinstance(data, str) else data
    context = _decode(raw.get("context", {}))
    return PipelineError(
        str(raw["step_name"]),
        str(raw["error_type"]),
        str(raw["message"]),
        context if isinstance(context, dict) else {},
    )


def encode_context(ctx: WorkflowContext) -> str:
    """Encode a context's inputs, outputs and feedback (not its failure).

    >>> decode_context(encode_context(WorkflowContext(inputs={"a": {1, 2}})))
    WorkflowContext(inputs=FrozenMap({'a': frozenset({1, 2})}), outputs=FrozenMap({}), feedback=(), failure=None)
    """  # noqa: E501
    return to_json({"inputs": ctx.inputs, "outputs": ctx.outputs, "feedback": list(ctx.feedback)})


def _loads(text: str, what: str) -> Any:  # noqa: ANN401 - any JSON value
    """Parse journal text, or raise a `ValueError` naming what could not be read.

    >>> _loads("[1", "the inputs")
    Traceback (most recent call last):
    ...
    adws._exceptions.MalformedError: the inputs in the journal are not JSON: '[1'
    """
    try:
        return json.loads(text)
    except (ValueError, RecursionError, TypeError) as exc:
        msg = f"{what} in the journal are not JSON: {str(text)[:80]!r}"
        raise MalformedError(msg) from exc


def decode_context(text: str) -> WorkflowContext:
    """Rebuild a context from `encode_context`'s output; attrs values come back typed.

    Text that is not such an object raises `ValueError` (a corrupt row).
    """
    raw = _loads(text, "the inputs")
    if not isinstance(raw, dict):
        msg = f"the inputs in the journal are not a JSON object: {str(text)[:80]!r}"
        raise MalformedError(msg)
    inputs = _decode(raw.get("inputs", {}))
    outputs = _decode(raw.get("outputs", {}))
    return WorkflowContext(
        inputs if isinstance(inputs, dict) else {},
        outputs if isinstance(outputs, dict) else {},
        tuple(str(line) for line in raw.get("feedback", ()) or ()),
    )


def encode_outputs(outputs: Mapping[str, object]) -> str:
    """Encode the outputs one step promoted (what the journal stores per step).

    >>> decode_outputs(encode_outputs({"packet": {1, 2}, "n": 3}))
    {'packet': frozenset({1, 2}), 'n': 3}
    """
    return to_json(outputs)


def decode_outputs(text: str) -> dict[str, object]:
    """Rebuild one step's outputs from `encode_outputs`'s text; attrs values come back typed.

    Text that is not JSON raises `ValueError` (a corrupt row).
    """
    decoded = _decode(_loads(text, "a step's outputs"))
    return decoded if isinstance(decoded, dict) else {}


def decode_many_outputs(texts: list[str]) -> list[dict[str, object]]:
    """Decode many steps' outputs at once (a resume of a long run reads thousands).

    One `json.loads` reads them all; text that holds no marker is plain JSON
    and needs no further decoding.

    >>> decode_many_outputs(['{"a":1}', '{"b":{"__adws_set__":[2]}}'])
    [{'a': 1}, {'b': frozenset({2})}]
    """
    joined = "[" + ",".join(texts) + "]"
    try:
        raw = json.loads(joined)
    except (ValueError, RecursionError):
        raw = None
    if not isinstance(raw, list) or len(raw) != len(texts):  # a corrupt row: find it, one by one
        return [decode_outputs(text) for text in texts]
    decoded: list[object] = raw if _PREFIX not in joined else _decode(raw)  # type: ignore[assignment] # a list decodes to a list
    return [item if isinstance(item, dict) else {} for item in decoded]
