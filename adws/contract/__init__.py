"""The fail-closed validator: what an agent's answer must prove before anything reads it.

`validator` parses the report block (`STATUS`, `*_JSON`) and checks it
against an `OutputContract`; `_strict` reads JSON that refuses duplicate
keys and non-finite numbers; `_structure` builds schema instances field by
field; `_schemas` knows attrs, dataclass, TypedDict and pydantic schemas,
and `_describe` tells an agent what a schema asks for; `template` fills
`{placeholders}` and `keys` names typed values. Pure: no clock, no files, no
processes. `from adws.contract import OutputContract`
and the other names below are loaded on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.contract.validator import (
        MAX_OUTPUT_BYTES,
        RAW_OUTPUT_LIMIT,
        STATUSES,
        AgentReport,
        OutputContract,
        validate_agent_output,
    )

__all__ = [
    "MAX_OUTPUT_BYTES",
    "RAW_OUTPUT_LIMIT",
    "STATUSES",
    "AgentReport",
    "OutputContract",
    "validate_agent_output",
]

# Loaded on first use: the engine's errors read `_schemas` from this folder, and the
# validator reads those errors, so this package must not import the validator itself.
__getattr__, __dir__ = lazy_names(__name__, dict.fromkeys(__all__, "adws.contract.validator"))
