"""The run journal: SQLite storage of every run, and what resume needs from it.

`store` writes and reads the database (`Journal`, `JournalObserver`);
`records` are the rows as values; `codec` turns contexts and errors into
JSON and back; `fingerprint` hashes each step's definition; `plan` decides
where a resume starts and what it keeps. `from adws.journal import Journal`
and the other names below are the public way in.
"""

from adws.journal.plan import StepPlan, plan_resume, resume_point, stored_branches
from adws.journal.records import AttemptRecord, RunRecord
from adws.journal.store import (
    DEFAULT_PATH,
    ENV_VAR,
    MIGRATIONS,
    Journal,
    JournalError,
    JournalObserver,
)

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
    "resume_point",
    "stored_branches",
]
