"""RunSummary folds events into what --json prints."""

from __future__ import annotations

from adws.engine.events import ObserverFailed
from adws.runs.summary import RunSummary


def test_an_empty_summary_is_still_valid_json_data() -> None:
    summary = RunSummary()
    summary(ObserverFailed("r", "journal", "boom"))
    assert summary.to_dict() == {
        "run_id": "",
        "workflow": "",
        "status": "running",
        "seconds": 0.0,
        "steps": [],
        "inputs": {},
        "error": None,
        "usage": None,
        "budget": None,
        "warnings": ["observer journal failed: boom"],
        "wake_at": None,
    }
