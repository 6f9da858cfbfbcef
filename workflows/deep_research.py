"""Research a topic, verify every claim in its own branch, and only then write the report.

    research ──► verify_claims ──► assemble ──► check_verdict ──► write ──► save_report (always)
                 (one branch per claim, side by side)

The writer never sees an unverified claim: each verifier's answer must parse
into `VerifiedClaim` (with its source); the claims whose verification fails
(a blocked verifier, retries used up) are dropped and listed in
`verify_claims_failures`, as long as at least one claim is verified; and an
unsupported claim stops the run before `write`. If no claim can be verified
the run ends with the first branch's error (blocked, if its verifier said
so). `save_report` always writes a markdown file, including the failure.
A resumed run re-verifies only the claims that were not verified.

Run it offline with `adws run deep_research -i topic="..."`; add
`--agent 'claude -p'` to use a real agent.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import attrs
from _common import DEMO_AGENT, slug
from returns.io import IOFailure, IOResult, IOSuccess

from adws import (
    Key,
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
    fan_out,
)
from adws.io_ops.terminal import escape_controls

UNVERIFIED = "Unverified"
"""The error kind of a packet the verifier did not pass."""


@attrs.frozen
class Source:
    """A claim as research found it."""

    claim: str
    source: str


@attrs.frozen
class ResearchPacket:
    """What `research` hands to `verify`."""

    question: str
    claims: tuple[Source, ...]


@attrs.frozen
class VerifiedClaim:
    """A claim the verifier checked against its source."""

    text: str
    source: str
    supported: bool


@attrs.frozen
class VerifiedPacket:
    """What `verify` hands to `write`: the verdict and every checked claim."""

    verdict: Literal["pass", "fail"]
    claims: tuple[VerifiedClaim, ...]


TOPIC = Key("topic", str)
RESEARCH_PACKET = Key("research_packet_json", ResearchPacket)
CLAIMS = Key("claims", tuple)
VERIFIED = Key("verify_claims", tuple)
VERIFIED_PACKET = Key("verified_packet_json", VerifiedPacket)
FINAL_REPORT = Key("final_report", str)
REPORT_PATH = Key("report_path", str)
"""The values the plain Python steps read and write, typed for mypy and `adws check`."""

RESEARCH_PROMPT = """You are a careful researcher.
Research this topic: {topic}

Collect the main claims a reader needs, each with the URL or reference it comes from.
Return them as RESEARCH_PACKET_JSON."""

VERIFY_PROMPT = """You are a strict fact checker. Check this one claim against its source.
Mark it supported only if the source says so.

Claim:
{claim}"""

WRITE_PROMPT = """Write a short markdown report on: {topic}
Use only these verified claims, and cite each claim's source:
{verified_packet_json}"""


def split_claims(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """List the research packet's claims, one element per verifier branch."""
    packet = ctx.get(RESEARCH_PACKET)
    claims = [{"claim": claim.claim, "source": claim.source} for claim in packet.claims]
    return IOSuccess(ctx.merge_outputs({CLAIMS: claims}))


def assemble(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Gather the verified claims into the packet the writer gets; the verdict is theirs."""
    verified = [branch["verified_claim_json"] for branch in ctx.get(VERIFIED) if branch is not None]
    verdict: Literal["pass", "fail"] = (
        "pass" if all(claim.supported for claim in verified) else "fail"
    )
    packet = VerifiedPacket(verdict, tuple(verified))
    return IOSuccess(ctx.merge_outputs({VERIFIED_PACKET: packet}))


def check_verdict(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Stop the run unless the verifier passed the packet with supported claims."""
    packet = ctx.get(VERIFIED_PACKET)
    unsupported = [claim.text for claim in packet.claims if not claim.supported]
    if packet.verdict != "pass" or unsupported or not packet.claims:
        detail = "; ".join(unsupported) or "no supported claims"
        message = f"verifier verdict is {packet.verdict!r}: {detail}"
        return IOFailure(PipelineError("check_verdict", UNVERIFIED, message))
    return IOSuccess(ctx.merge_outputs({"verified_claims": len(packet.claims)}))


def save_report(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write the report, or what is known of the failure, under `output_dir`."""
    topic = ctx.get(TOPIC)
    folder = Path(str(ctx.inputs.get("output_dir", "reports")))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"deep_research-{slug(topic)}.md"
    if ctx.failure is None:
        body = ctx.get(FINAL_REPORT)
    else:
        body = (
            f"# {topic}\n\nThe run did not finish: **{ctx.failure.error_type}** at "
            f"`{ctx.failure.step_name}`.\n\n{ctx.failure.message}\n"
        )
    # What an agent wrote is written with its control characters escaped: `cat` obeys none.
    path.write_text(escape_controls(body.rstrip() + "\n"), encoding="utf-8")
    return IOSuccess(ctx.merge_outputs({REPORT_PATH: str(path)}))


workflow = Workflow(
    "deep_research",
    (
        agent_step(
            "research",
            prompt=RESEARCH_PROMPT,
            agent=DEMO_AGENT,
            contract=OutputContract(schemas={"RESEARCH_PACKET_JSON": ResearchPacket}),
            timeout=600,
        ),
        Step("split_claims", split_claims, reads=(RESEARCH_PACKET,), writes=(CLAIMS,)),
        fan_out(
            "verify_claims",
            agent_step(
                "verify",
                prompt=VERIFY_PROMPT,
                agent=DEMO_AGENT,
                contract=OutputContract(schemas={"VERIFIED_CLAIM_JSON": VerifiedClaim}),
                retry=RetryPolicy(max_attempts=3),
                timeout=600,
            ),
            over="claims",
            item="claim",
            min_successes=1,
        ),
        Step("assemble", assemble, reads=(VERIFIED,), writes=(VERIFIED_PACKET,)),
        Step("check_verdict", check_verdict, reads=(VERIFIED_PACKET,), writes=("verified_claims",)),
        agent_step(
            "write",
            prompt=WRITE_PROMPT,
            agent=DEMO_AGENT,
            contract=OutputContract(("FINAL_REPORT",)),
            timeout=600,
        ),
        # It reads final_report only when nothing failed, and output_dir if it was given.
        Step(
            "save_report",
            save_report,
            always_run=True,
            reads=(TOPIC, FINAL_REPORT, "output_dir"),
            writes=(REPORT_PATH,),
        ),
    ),
    description="Research a topic, verify each claim in its own branch, write a report.",
    inputs=("topic",),
    optional_inputs=("output_dir",),
)
