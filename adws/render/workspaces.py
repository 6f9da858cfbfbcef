"""A run's worktrees and approvals: lines for `adws status`, a section for `adws report`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws.render._page import capped
from adws.render._page import escape as _e

if TYPE_CHECKING:
    from collections.abc import Sequence

    from adws.journal.records.workspaces import ApprovalRecord, WorktreeRecord

__all__ = ["approval_said", "workspaces_html", "workspaces_text", "worktree_said"]


def worktree_said(tree: WorktreeRecord) -> str:
    """Say where a worktree is now: kept (at its folder), removed, or a loser's, discarded."""
    return {
        "removed": "removed (the branch stays)",
        "discarded": "not chosen: removed with its branch",
    }.get(tree.state, f"kept at {tree.path}")


def approval_said(asked: ApprovalRecord) -> str:
    """Say what became of a question: still waiting, or who decided what, when and why."""
    decision = asked.decision
    if decision is None:
        return "waiting" + ("" if asked.timeout is None else f" (timeout {asked.timeout:g}s)")
    note = f": {decision.note}" if decision.note else ""
    raised = "" if asked.raised is None else f"; budget raised to {asked.raised.describe()}"
    return f"{decision.verdict} by {decision.by} at {decision.at}{note}{raised}"


def workspaces_text(
    worktrees: Sequence[WorktreeRecord], approvals: Sequence[ApprovalRecord]
) -> list[str]:
    r"""Describe a run's worktrees and approvals for `adws status` (nothing when it has none).

    >>> from adws.journal.store.workspaces import ApprovalRecord, WorktreeRecord
    >>> from adws.engine.scope import Decision
    >>> tree = WorktreeRecord("impl", "impl", "/r", "/w/r1/impl", "adws/r1/impl", "1a2b3c4d5e", "", "removed", "")
    >>> asked = ApprovalRecord("ok", "Merge?", "2026-01-01T00:00:00+00:00", None, Decision("approved", "ann", "2026-01-01T00:05:00+00:00", "fine"))
    >>> print("\n".join(workspaces_text([tree], [asked])))
    worktrees:
      impl: branch adws/r1/impl from 1a2b3c4d5e · removed (the branch stays)
    approvals:
      ok: asked 2026-01-01T00:00:00+00:00 · approved by ann at 2026-01-01T00:05:00+00:00: fine
    """  # noqa: E501
    lines: list[str] = []
    if worktrees:
        lines.append("worktrees:")
    lines.extend(
        f"  {tree.label}: branch {tree.branch} from {tree.base[:10]} · {worktree_said(tree)}"
        for tree in worktrees
    )
    if approvals:
        lines.append("approvals:")
    lines.extend(
        f"  {asked.step}: asked {asked.asked} · {approval_said(asked)}" for asked in approvals
    )
    return lines


def workspaces_html(
    worktrees: Sequence[WorktreeRecord], approvals: Sequence[ApprovalRecord], shows: str
) -> str:
    """Draw a run's worktrees and approvals for its report page ("" when it has none).

    Every value is escaped: a message is rendered from a run's inputs, and a
    note is whatever a person typed. A long message is capped (`shows`
    names the command that shows it whole).
    """
    parts: list[str] = []
    if worktrees:
        rows = "".join(
            f"<tr><td>{_e(tree.label)}</td><td><code>{_e(tree.branch)}</code></td>"
            f"<td><code>{_e(tree.base[:12])}</code></td><td>{_e(worktree_said(tree))}</td></tr>"
            for tree in worktrees
        )
        parts.append(
            "<h2>worktrees</h2><table><tr><th>worktree</th><th>branch</th><th>base</th>"
            f"<th>now</th></tr>{rows}</table>"
        )
    if approvals:
        items = "".join(
            f'<div class="approval"><p><b>{_e(asked.step)}</b> · asked {_e(asked.asked)} · '
            f"{_e(approval_said(asked))}</p>{capped(asked.message, shows)}</div>"
            for asked in approvals
        )
        parts.append(f"<h2>approvals</h2>{items}")
    return "".join(parts)
