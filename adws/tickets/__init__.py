"""Work that arrives as tickets: a labelled issue becomes one run, the run one draft pull request.

```python
from adws.tickets import publish_pull_request

workflow = Workflow("fix", (worktree(fix, name="workspace"),
                            publish_pull_request("publish", worktree="workspace")), ...)
```

`values` reads a ticket from what a source sends (GitHub's issues and
webhooks, a command's JSON), refusing anything GitHub would not send with
the field named, and names its branch from its number and a safe slug.
`github` is the REST client (its base URL `ADWS_GITHUB_API_URL`, its token
`GITHUB_TOKEN`, `GH_TOKEN` or `gh auth token`); `gate` decides who may
start work; `intake` turns a ticket into one run per round through
`adws.runs.Runs`, unique in the journal (which counts how often);
`watcher` and `events` are the GitHub sources (polled, or one webhook),
`status` what a run's comment says, `loop` a watcher's loop, and `publish`
the one step that holds the write token.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.tickets.publish import publish_pull_request
    from adws.tickets.values import (
        Ticket,
        TicketError,
        branch_name,
        command_ticket,
        issue_ticket,
        slug,
    )

__all__ = [
    "Ticket",
    "TicketError",
    "branch_name",
    "command_ticket",
    "issue_ticket",
    "publish_pull_request",
    "slug",
]

_HOMES = {
    "Ticket": "adws.tickets.values",
    "TicketError": "adws.tickets.values",
    "branch_name": "adws.tickets.values",
    "command_ticket": "adws.tickets.values",
    "issue_ticket": "adws.tickets.values",
    "publish_pull_request": "adws.tickets.publish",
    "slug": "adws.tickets.values",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
