"""One path for a run: start, resume, decide, cancel and read runs, for every front end.

```python
from adws.runs import Refused, RunRequest, Runs

runs = Runs.open()               # $ADWS_JOURNAL or .adws/runs.db; Runs.open("postgresql://...")
outcome = runs.run(RunRequest("triage", inputs={"test_path": "tests"}))
if isinstance(outcome, Refused):
    raise outcome.error()
print(outcome.run_id, outcome.status)
```

`Runs` (`run`, `submit`, `resume`, `approve`, `reject`, `cancel`,
`status`) is the only code outside the engine that calls `run_workflow`,
and the only code outside the journal that claims a run; the command
line, the author's kit (`adws.testing`), `adws worker` and `adws batch`
are doors over it, differing only in the observers they watch a run with.
Each method returns its value (`RunOutcome`, a run id, `HandedOver`,
`CancelOutcome`, `RunState`) or a `Refused`: why not, the exit code a
command ends with, and what to do next.

Inside: `_loading` finds a workflow and gives it its agents (`recording`
records or replays them), `_execute` is the one call of `run_workflow`
(signals by `interrupts`, the summary by `summary`), `resume` plans
where a recorded run goes on, `_continue` continues one (a resume, a
decision, a worker's held run), `_cancel` ends one on a person's word,
`batches` starts and resumes a batch's runs, `_settings` reads the
environment.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from adws._lazy import lazy_names

if TYPE_CHECKING:
    from adws.runs._execute import Plan, Setting, execute
    from adws.runs._loading import absolute_options, find_workflow
    from adws.runs._service import Runs
    from adws.runs._values import (
        CancelOutcome,
        HandedOver,
        Refused,
        RunOutcome,
        RunRequest,
        RunState,
        Starting,
    )

__all__ = [
    "CancelOutcome",
    "HandedOver",
    "Plan",
    "Refused",
    "RunOutcome",
    "RunRequest",
    "RunState",
    "Runs",
    "Setting",
    "Starting",
    "absolute_options",
    "execute",
    "find_workflow",
]

_HOMES = {
    "CancelOutcome": "adws.runs._values",
    "HandedOver": "adws.runs._values",
    "Plan": "adws.runs._execute",
    "Refused": "adws.runs._values",
    "RunOutcome": "adws.runs._values",
    "RunRequest": "adws.runs._values",
    "RunState": "adws.runs._values",
    "Runs": "adws.runs._service",
    "Setting": "adws.runs._execute",
    "Starting": "adws.runs._values",
    "absolute_options": "adws.runs._loading",
    "execute": "adws.runs._execute",
    "find_workflow": "adws.runs._loading",
}

__getattr__, __dir__ = lazy_names(__name__, _HOMES)
