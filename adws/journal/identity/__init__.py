"""Which workflow a run ran: per-step fingerprints, the canonical form, and first homes.

`fingerprint` hashes each step's definition (so a resume tells a finished
step that changed), `_canonical` describes code and values the same in
every process, `_homes` names adws's own modules as journals first named
them. Not storage: nothing here reads or writes the journal.
"""
