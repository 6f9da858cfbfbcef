"""Research a topic, verify every claim, and only then write the report.

    research ──► verify ──► check_verdict ──► write ──► save_report (always)

The writer never sees an unverified packet: the verifier's answer must parse
into `VerifiedPacket` (each claim with a source), and a `fail` verdict stops
the run before `write`. A verifier that answers `STATUS: blocked` ends the
run blocked. `save_report` always writes a markdown file, including the
failure when there was one.

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
    OutputContract,
    PipelineError,
    RetryPolicy,
    Step,
    Workflow,
    WorkflowContext,
    agent_step,
)

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


RESEARCH_PROMPT = """You are a careful researcher.
Research this topic: {topic}

Collect the main claims a reader needs, each with the URL or reference it comes from.
Return them as RESEARCH_PACKET_JSON."""

VERIFY_PROMPT = """You are a strict fact checker. Check every claim in this research packet
against its source. Mark a claim supported only if the source says so.
Give verdict "pass" only if every claim you keep is supported.

Research packet:
{research_packet_json}"""

WRITE_PROMPT = """Write a short markdown report on: {topic}
Use only these verified claims, and cite each claim's source:
{verified_packet_json}"""


def check_verdict(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Stop the run unless the verifier passed the packet with supported claims."""
    packet: VerifiedPacket = ctx.inputs["verified_packet_json"]
    unsupported = [claim.text for claim in packet.claims if not claim.supported]
    if packet.verdict != "pass" or unsupported or not packet.claims:
        detail = "; ".join(unsupported) or "no supported claims"
        message = f"verifier verdict is {packet.verdict!r}: {detail}"
        return IOFailure(PipelineError("check_verdict", UNVERIFIED, message))
    return IOSuccess(ctx.merge_outputs({"verified_claims": len(packet.claims)}))


def save_report(ctx: WorkflowContext) -> IOResult[WorkflowContext, PipelineError]:
    """Write the report, or what is known of the failure, under `output_dir`."""
    topic = str(ctx.inputs["topic"])
    folder = Path(str(ctx.inputs.get("output_dir", "reports")))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"deep_research-{slug(topic)}.md"
    if ctx.failure is None:
        body = str(ctx.inputs["final_report"])
    else:
        body = (
            f"# {topic}\n\nThe run did not finish: **{ctx.failure.error_type}** at "
            f"`{ctx.failure.step_name}`.\n\n{ctx.failure.message}\n"
        )
    path.write_text(body.rstrip() + "\n", encoding="utf-8")
    return IOSuccess(ctx.merge_outputs({"report_path": str(path)}))


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
        agent_step(
            "verify",
            prompt=VERIFY_PROMPT,
            agent=DEMO_AGENT,
            contract=OutputContract(schemas={"VERIFIED_PACKET_JSON": VerifiedPacket}),
            retry=RetryPolicy(max_attempts=3),
            timeout=600,
        ),
        Step("check_verdict", check_verdict),
        agent_step(
            "write",
            prompt=WRITE_PROMPT,
            agent=DEMO_AGENT,
            contract=OutputContract(("FINAL_REPORT",)),
            timeout=600,
        ),
        Step("save_report", save_report, always_run=True),
    ),
    description="Research a topic, verify each claim against its source, write a report.",
    inputs=("topic",),
)
