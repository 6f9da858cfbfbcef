"""What a run's checks proved, where a person decides: `adws status`, `--json`, the report page.

A `with_verification` step with a baseline leaves `<name>_proved` (see
`adws.engine.proof.Proof`): the targets fixed, the new failures, the
pre-existing failures left and the flaky ones, in that order, as `text`.
A failed round carries the same under its error's `context["proved"]`.
`proofs_of` finds them in a run's journal rows; `proved_lines` and
`proved_html` show them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from adws.engine.errors import json_safe
from adws.render._page import escape

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.engine.errors import PipelineError
    from adws.journal import AttemptRecord

__all__ = ["proofs_of", "proved_html", "proved_lines"]

_SUFFIX = "_proved"


def _proof(value: object) -> dict[str, object] | None:
    """Keep a value that is a proof (a mapping with its `text`), as a dict; None otherwise."""
    if isinstance(value, Mapping) and isinstance(value.get("text"), str):
        return {str(key): json_safe(item) for key, item in value.items()}
    return None


def proofs_of(
    attempts: Sequence[AttemptRecord], error: PipelineError | None = None
) -> dict[str, dict[str, object]]:
    """Find what a run's verification steps proved: by output (`implement_verified_proved`).

    The last success's outputs of each step count (a resumed step's last);
    a run that failed in a round adds its error's proof under the error's
    step (`checks`), unless a success already said it. Rows whose outputs
    cannot be read are passed over.

    >>> from adws.engine.errors import PipelineError
    >>> proofs_of([], PipelineError("checks", "NotFixed", "x", {"proved": {"text": "t"}}))
    {'checks': {'text': 't'}}
    """
    found: dict[str, dict[str, object]] = {}
    for row in attempts:
        if row.status != "succeeded":
            continue
        outputs = row.checked().outputs() or {}
        for key, value in outputs.items():
            proof = _proof(value)
            if key.endswith(_SUFFIX) and proof is not None:
                found[key] = proof
    proof = _proof(error.context.get("proved")) if error is not None else None
    if error is not None and proof is not None and not found:
        found[error.step_name] = proof
    return found


def proved_lines(proofs: Mapping[str, Mapping[str, object]]) -> list[str]:
    r"""Show each proof under its name, its lines indented, for `adws status`.

    >>> print("\n".join(proved_lines({"v_proved": {"text": "new failures: none"}})))
    what the checks proved (v_proved):
      new failures: none
    """
    lines: list[str] = []
    for key, proof in proofs.items():
        lines.append(f"what the checks proved ({key}):")
        lines.extend(f"  {line}" for line in str(proof["text"]).splitlines())
    return lines


def proved_html(proofs: Mapping[str, Mapping[str, object]]) -> str:
    """Draw each proof as a section of the report page (every text escaped)."""
    parts = []
    for key, proof in proofs.items():
        items = "".join(f"<li>{escape(line)}</li>" for line in str(proof["text"]).splitlines())
        parts.append(
            f'<div class="proved"><h2>what the checks proved · {escape(key)}</h2>'
            f"<ul>{items}</ul></div>"
        )
    return "".join(parts)
