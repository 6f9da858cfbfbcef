"""Many runs of one workflow: a local pool of worker processes, one journal writer.

`adws batch WORKFLOW INPUTS.jsonl` starts one run per line. The coordinator
(this process) is the journal's only writer: workers turn each event into
journal statements as it happens and send them over, so `adws status RUN`
in another terminal follows every run live. A worker that dies mid-run
costs only the step in flight: the coordinator resumes that run on another
worker from its last finished step.
"""

from adws.batch.coordinator import BatchReport, RunResult, run_batch
from adws.batch.inputs import BatchInputError, read_lines

__all__ = ["BatchInputError", "BatchReport", "RunResult", "read_lines", "run_batch"]
