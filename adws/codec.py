"""Encode contexts and errors as JSON for the journal, and decode them for resume.

Plain JSON values are stored as they are. Values JSON cannot hold are stored
with a marker so they come back as what they were: attrs instances (a
verified packet, say) as `{"__adws_attrs__": "module:Class", "value": ...}`,
sets as `{"__adws_set__": [...]}`, errors as `{"__adws_error__": {...}}`.
Anything else is stored as `{"__adws_repr__": "..."}` and comes back as that
text: recording a value never fails a run.
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from collections.abc import Mapping
from typing import Any, Final

import attrs
import cattrs

from adws.context import WorkflowContext
from adws.errors import PipelineError

__all__ = ["decode_context", "decode_error", "encode_context", "encode_error", "to_json"]

_ATTRS: Final = "__adws_attrs__"
_SET: Final = "__adws_set__"
_ERROR: Final = "__adws_error__"
_REPR: Final = "__adws_repr__"
_MARKERS: Final = frozenset({_ATTRS, _SET, _ERROR, _REPR})

_converter: Final = cattrs.Converter()


def _encode(value: object) -> object:  # noqa: PLR0911 - one return per kind of value
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {_REPR: repr(value)}
    if isinstance(value, PipelineError):
        return {_ERROR: _error_dict(value)}
    if isinstance(value, Mapping):
        return {str(key): _encode(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(item) for item in value]
    if isinstance(value, set | frozenset):
        return {_SET: [_encode(item) for item in value]}
    if attrs.has(type(value)):
        cls = type(value)
        try:
            data = _converter.unstructure(value)
        except Exception:  # noqa: BLE001 - an odd attrs class is stored as its repr instead
            return {_REPR: repr(value)}
        return {_ATTRS: f"{cls.__module__}:{cls.__qualname__}", "value": _encode(data)}
    return {_REPR: repr(value)}


def _find_class(path: str) -> type | None:
    module_name, _, qualname = path.partition(":")
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # noqa: BLE001 - a class that cannot be found is reported by the caller
            return None
    found: object = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found if isinstance(found, type) and attrs.has(found) else None


def _decode(value: object) -> object:  # noqa: PLR0911 - one return per marker
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    marker = next((key for key in value if key in _MARKERS), None)
    if marker == _SET:
        return frozenset(_decode(item) for item in value[_SET])
    if marker == _ERROR:
        return decode_error(value[_ERROR])
    if marker == _REPR:
        return value[_REPR]
    if marker == _ATTRS:
        cls = _find_class(str(value[_ATTRS]))
        data = _decode(value.get("value"))
        if cls is None:
            return data
        try:
            return _converter.structure(data, cls)
        except Exception:  # noqa: BLE001 - fall back to the plain data rather than lose it
            return data
    return {key: _decode(item) for key, item in value.items()}


def to_json(value: object) -> str:
    """Encode any value as compact JSON with markers (see the module docstring)."""
    return json.dumps(_encode(value), ensure_ascii=False, separators=(",", ":"))


def _error_dict(error: PipelineError) -> dict[str, object]:
    return {
        "step_name": error.step_name,
        "error_type": str(error.error_type),
        "message": error.message,
        "context": _encode(error.context),
    }


def encode_error(error: PipelineError | None) -> str | None:
    """Encode an error for the journal (None stays None)."""
    return None if error is None else json.dumps(_error_dict(error), ensure_ascii=False)


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


def decode_context(text: str) -> WorkflowContext:
    """Rebuild a context from `encode_context`'s output; attrs values come back typed."""
    raw = json.loads(text)
    inputs = _decode(raw.get("inputs", {}))
    outputs = _decode(raw.get("outputs", {}))
    return WorkflowContext(
        inputs if isinstance(inputs, dict) else {},
        outputs if isinstance(outputs, dict) else {},
        tuple(str(line) for line in raw.get("feedback", ())),
    )
