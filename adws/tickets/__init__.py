"""Work that arrives as tickets: a labelled issue becomes one run, the run one draft pull request.

```python
from adws.tickets import Ticket, issue_ticket, branch_name
```

`values` reads a ticket from what a source sends (GitHub's issues and
webhooks, a command's JSON), refusing anything GitHub would not send with
the field named, and names its branch from its number and a safe slug.
`github` is the REST client (its base URL `ADWS_GITHUB_API_URL`, its token
`GITHUB_TOKEN`, `GH_TOKEN` or `gh auth token`); `gate` decides who may
start work and how often; `intake` turns a ticket into one run per round
through `adws.runs.Runs`, unique in the journal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.tickets.values import (
        Ticket,
        TicketError,
        branch_name,
        command_ticket,
        issue_ticket,
        slug,
    )

__all__ = ["Ticket", "TicketError", "branch_name", "command_ticket", "issue_ticket", "slug"]

_HOMES = {
    "Ticket": "adws.tickets.values",
    "TicketError": "adws.tickets.values",
    "branch_name": "adws.tickets.values",
    "command_ticket": "adws.tickets.values",
    "issue_ticket": "adws.tickets.values",
    "slug": "adws.tickets.values",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
