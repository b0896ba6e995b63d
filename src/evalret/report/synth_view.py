"""Terminal view of `evalret golden synth`: the writer and its prompt, the documents and clusters,
the requests (made and cached) and their cost, the counts at each filter, and what was written.
Untrusted text (paths, model names) is escaped."""

from __future__ import annotations

from typing import Any

from evalret.report.escape import markup_safe


def _money(x: float | None) -> str:
    return (
        "n/a (no price_per_million_input_tokens and _output_tokens)" if x is None else f"${x:.4f}"
    )


def _requests(what: str, r: dict[str, Any], dry_run: bool) -> str:
    if not r:
        return f"{what}: none"
    if dry_run:
        most = "at most " if r.get("at_most") else ""
        line = f"{what}: {most}{r['requests']} request(s) to send"
        if "cached" in r:
            line += f", {r['cached']} answer(s) cached"
        return (
            f"{line}; input tokens {r['input_tokens']}, output tokens {r['output_tokens']}; "
            f"cost {_money(r['cost'])}"
        )
    line = f"{what}: {r['requests']} request(s) made, {r['cached']} answer(s) cached"
    if r.get("failed"):
        line += f", {r['failed']} failed"
    return f"{line}; cost {_money(r['cost'])}"


def render_synth(o: dict[str, Any]) -> str:
    """`evalret golden synth`'s outcome (a SynthOutcome as a dict) as terminal lines."""
    c = o["counts"]
    lines = [
        f"query writer {markup_safe(o['model'])} at {markup_safe(o['endpoint'])}, prompt "
        f"{markup_safe(o['prompt'])} ({o['prompt_hash']})",
        f"{o['documents']} documents in {o['clusters']} clusters: {c['asked']} queries asked "
        f"for ({c['two_document']} from two documents)",
    ]
    if o["examples_dropped_pii"]:
        lines.append(
            f"{o['examples_dropped_pii']} log quer(ies) holding personal data left out of the "
            "examples"
        )
    lines.append(_requests("generation", o["generation"], o["dry_run"]))
    lines.append(_requests("judge checks", o["judge"], o["dry_run"]))
    if o["estimated"]:
        lines.append(
            "estimated: the corpus is not in the embedding cache and the model is an API, so "
            "no document was drawn (nothing is sent to embed it in a dry run): the figures are "
            f"those of {c['asked']} documents in the seeded order, without clusters or pairs"
        )
    if o["dry_run"]:
        lines.append("dry run: nothing was sent, nothing written")
        return "\n".join(lines)
    easy = f"{c['too_easy']} too easy" + (
        " (dropped)" if c["too_easy_dropped"] else " (tagged too-easy)"
    )
    lines.append(
        f"filters: {c['unreadable']} unreadable, {c['duplicates']} duplicates dropped, {easy}, "
        f"{c['unanswerable']} unanswerable dropped"
    )
    kept = f" after the {o['kept']} queries kept from the corpus's draft" if o["kept"] else ""
    lines.append(f"wrote {c['written']} synthetic queries{kept} to {markup_safe(str(o['out']))}")
    return "\n".join(lines)
