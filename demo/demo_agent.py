"""A DEMO agent: answers the shipped workflows' prompts offline, deterministically.

It is not intelligent. It reads the prompt on stdin, recognises which step of
`deep_research`, `implement_verify`, `plan_and_check`, `implement_best_of` or
`fix_issue`
is asking (from the output contract the prompt ends with), and prints a
canned answer. Its first answer to the verifier of the first claim is
deliberately malformed (a claim without its source), so the demo shows the
validator rejecting it and the retry fixing it while the other claim is
verified beside it.

Asked to implement, it really writes files, in its current directory (the
run's worktree): `ADWS_DEMO.md` describing the task. As one of the attempts
of `implement_best_of` (the prompt says `Attempt: N of 3`) it behaves
differently on purpose, so the demo shows what best-of-N is for: attempt 0
also writes `NOTES.md` (a bigger diff); attempt 1 forgets the task on its
first round, so the checks fail and their output is fed back; attempt 2
gives up (`STATUS: blocked`).

It prints what `claude -p --output-format json` prints, with a made-up usage,
so `adws cost` shows something offline. Replace it with a real agent:
`adws run deep_research --agent claude`.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

FEEDBACK = "## Feedback from earlier attempts"


def _topic(prompt: str) -> str:
    match = re.search(r"^Research this topic: (.+)$", prompt, re.MULTILINE)
    return match.group(1).strip() if match else "the topic"


def research(prompt: str) -> str:
    """Return a research packet with two sourced claims."""
    topic = _topic(prompt)
    packet = {
        "question": f"What should a newcomer know about {topic}?",
        "claims": [
            {
                "claim": f"{topic} models each step as a function returning success or failure.",
                "source": "https://fsharpforfunandprofit.com/rop/",
            },
            {
                "claim": "Failures travel as values, so the caller decides how to handle them.",
                "source": "https://returns.readthedocs.io/en/latest/pages/result.html",
            },
        ],
    }
    return (
        f"I looked into {topic} and found two well-sourced claims.\n\n"
        f"STATUS: done\nRESEARCH_PACKET_JSON:\n```json\n{json.dumps(packet, indent=2)}\n```\n"
    )


def _claim(prompt: str) -> dict[str, str]:
    start = prompt.index("Claim:\n") + len("Claim:\n")
    end = prompt.index("\n\n## Output contract", start)
    claim = json.loads(prompt[start:end])
    return {"text": claim["claim"], "source": claim["source"]}


def verify(prompt: str) -> str:
    """Verify one claim; the first attempt at the first claim forgets its source on purpose."""
    claim = _claim(prompt)
    first_claim = "models each step as a function" in claim["text"]
    if FEEDBACK not in prompt and first_claim:
        sloppy = {"text": claim["text"], "supported": True}
        return (
            "Checked the claim; it holds up.\n\n"
            f"STATUS: done\nVERIFIED_CLAIM_JSON: {json.dumps(sloppy)}\n"
        )
    checked = {**claim, "supported": True}
    return (
        "Checked the claim against its source.\n\n"
        f"STATUS: done\nVERIFIED_CLAIM_JSON:\n{json.dumps(checked, indent=2)}\n"
    )


def write(prompt: str) -> str:
    """Write a markdown report citing the verified claims."""
    marker = "cite each claim's source:\n"
    start = prompt.index(marker) + len(marker)
    end = prompt.index("\n\n## Output contract", start)
    packet = json.loads(prompt[start:end])
    topic = re.search(r"^Write a short markdown report on: (.+)$", prompt, re.MULTILINE)
    title = topic.group(1).strip() if topic else "Report"
    lines = [f"# {title}", "", "Verified findings:", ""]
    lines += [f"- {claim['text']} ([source]({claim['source']}))" for claim in packet["claims"]]
    return "STATUS: done\nFINAL_REPORT:\n" + "\n".join(lines) + "\n"


def implement(prompt: str) -> str:
    """Record the task in ADWS_DEMO.md in the working directory (see the module docstring)."""
    task = re.search(r"^Task: (.+)$", prompt, re.MULTILINE)
    text = task.group(1).strip() if task else "the task"
    attempt = re.search(r"^Attempt: (\d+) of \d+", prompt, re.MULTILINE)
    number = int(attempt.group(1)) if attempt else None
    if number == 2:  # noqa: PLR2004 - the third attempt of implement_best_of
        return "STATUS: blocked\nREASON: the demo agent gives up on its third attempt, on purpose\n"
    if number == 1 and FEEDBACK not in prompt:
        Path("ADWS_DEMO.md").write_text("# Demo change\n\n(to be written)\n", encoding="utf-8")
        return "STATUS: done\nSUMMARY: started ADWS_DEMO.md\n"
    Path("ADWS_DEMO.md").write_text(f"# Demo change\n\n{text}\n", encoding="utf-8")
    if number == 0:
        notes = f"# Notes\n\nWhy: {text}\nHow: one new file, ADWS_DEMO.md.\n"
        Path("NOTES.md").write_text(notes, encoding="utf-8")
        return f"STATUS: done\nSUMMARY: wrote ADWS_DEMO.md and NOTES.md describing: {text}\n"
    return f"STATUS: done\nSUMMARY: wrote ADWS_DEMO.md describing: {text}\n"


def plan(prompt: str) -> str:
    """Plan to write ADWS_DEMO.md, which is all the demo's implement step ever does."""
    task = re.search(r"^Task: (.+)$", prompt, re.MULTILINE)
    text = task.group(1).strip() if task else "the task"
    return f"STATUS: done\nPLAN: describe {text!r} in ADWS_DEMO.md\n"


def triage(prompt: str) -> str:
    """Say what to fix: the report's title (and, in a review round, what the reviewer asked)."""
    title = re.search(r'^<<<REPORT \S+ "(.*)" by ', prompt, re.MULTILINE)
    task = f"Fix: {title.group(1) if title else 'the reported problem'}"
    review = re.search(r"^<<<REVIEW\n(.*?)\nREVIEW>>>", prompt, re.MULTILINE | re.DOTALL)
    if review:
        task += f"; the reviewer asked: {' '.join(review.group(1).split())}"
    return f"STATUS: done\nTASK: {task}\n"


def answer(prompt: str) -> str:
    """Pick the answer for the step whose contract the prompt carries."""
    contract = prompt[prompt.find("## Output contract") :]
    answers = (
        ("TASK", triage),
        ("PLAN", plan),
        ("RESEARCH_PACKET_JSON", research),
        ("VERIFIED_CLAIM_JSON", verify),
        ("FINAL_REPORT", write),
        ("SUMMARY", implement),
    )
    for key, answering in answers:
        if f"\n{key}: <" in contract:
            return answering(prompt)
    return "STATUS: blocked\nREASON: the demo agent only knows the shipped workflows' prompts\n"


def envelope(prompt: str, text: str) -> str:
    """Wrap the answer as `claude -p --output-format json` does, with a MADE-UP usage.

    The tokens are a quarter of the characters and the cost is priced at $3
    and $15 per million input and output tokens: invented, so `adws cost`
    has something to show offline. Nothing here was billed.
    """
    input_tokens, output_tokens = len(prompt) // 4, len(text) // 4
    result = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": text,
        "num_turns": 1,
        "total_cost_usd": round((input_tokens * 3 + output_tokens * 15) / 1_000_000, 6),
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
        "modelUsage": {"demo-model": {}},
        "session_id": "demo",
    }
    return json.dumps(result)


if __name__ == "__main__":
    prompt = sys.stdin.read()
    print(envelope(prompt, answer(prompt)))
