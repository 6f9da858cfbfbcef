"""The run journal: SQLite storage of every run, and what resume needs from it.

`store` writes and reads the database (`Journal`); `schema` holds its
migrations; `statements` turns events into rows and `observer` records a
run as it happens; `records` are the rows as values; `codec` turns contexts and errors into
JSON and back; `fingerprint` hashes each step's definition; `plan` decides
where a resume starts and what it keeps; `holders` says which process holds
a run or a batch; `_homes` keeps the names older journals gave adws's own
modules. `from adws.journal import Journal` and the other names below are
the public way in; `prune(journal, keep=N)` is what `Journal.prune` was.
"""

from adws.journal.observer import JournalObserver
from adws.journal.plan import StepPlan, plan_resume, resume_point, stored_branches
from adws.journal.prune import prune
from adws.journal.records import AttemptRecord, RunRecord
from adws.journal.schema import MIGRATIONS
from adws.journal.store import DEFAULT_PATH, ENV_VAR, Journal, JournalError

__all__ = [
    "DEFAULT_PATH",
    "ENV_VAR",
    "MIGRATIONS",
    "AttemptRecord",
    "Journal",
    "JournalError",
    "JournalObserver",
    "RunRecord",
    "StepPlan",
    "plan_resume",
    "prune",
    "resume_point",
    "stored_branches",
]
