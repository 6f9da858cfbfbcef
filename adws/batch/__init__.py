"""Many runs of one workflow: a local pool of worker processes, one journal writer.

`adws batch WORKFLOW INPUTS.jsonl` starts one run per line. The coordinator
(this process) is the journal's only writer: workers turn each event into
journal statements as it happens and send them over, so `adws status RUN`
in another terminal follows every run live. A worker that dies mid-run
costs only the step in flight: the coordinator stops what its run left
running and resumes the run on another worker from its last finished
step. `coordinator` schedules, `local` and `dask` are the pools, `tasks`
is what a worker runs, `ledger` the coordinator's journal writes, and
`report` how a batch went; where a run starts again is the journal's
(`adws.runs.batches`).
"""

from adws.batch.coordinator import run_batch
from adws.batch.inputs import BatchInputError, iter_lines, read_lines
from adws.batch.report import BatchReport, RunResult

__all__ = [
    "BatchInputError",
    "BatchReport",
    "RunResult",
    "iter_lines",
    "read_lines",
    "run_batch",
]
