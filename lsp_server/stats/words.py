"""A refactor's stats in words: the one-line summary every refactor ends with, the short status-bar
form, and the labels in them. Made here only, so that no client formats them itself."""

from __future__ import annotations

import json

from ..config.schema import APPLY_ID
from .measured import RefactorStats

SPLICED = "spliced as written, no model asked (0 tokens)"


def summary(stats: RefactorStats) -> str:
    """One line for people: `refactor 2.1 s · 412 tok · 196 tok/s · prediction 88% accepted (...)`; for a
    complete snippet spliced as written: `apply 0.02 s · spliced as written, no model asked (0 tokens) ·
    checked python`."""
    if stats.merged_by == "splice":
        checked = f"checked {stats.checked}" if stats.checked else "no change"
        return f"apply {stats.latency_ms / 1000:.2f} s · {SPLICED} · {checked}"
    parts = [f"{'apply' if stats.action == APPLY_ID else 'refactor'} {stats.latency_ms / 1000:.1f} s"]
    if waited_for_first_token(stats):
        parts[0] += f" (first token after {(stats.ttft_ms or 0.0) / 1000:.1f} s)"
    if stats.completion_tokens is not None:
        parts.append(f"{stats.completion_tokens} tok")
    if stats.tokens_per_s is not None:
        parts.append(f"{stats.tokens_per_s:.0f} tok/s")
    parts += prediction_parts(stats)
    parts += repair_parts(stats)
    if stats.changes_kept is not None and stats.changes is not None:
        parts.append(f"kept {stats.changes_kept} of {stats.changes} change{'' if stats.changes == 1 else 's'}")
    if stats.edit_format:
        parts.append(format_label(stats))
    if stats.cost is not None:
        parts.append(cost_label(stats))
    if stats.served_by and stats.served_by != stats.backend:
        parts.append(f"served by {stats.served_by}")
    return " · ".join(parts)


# The wait for the first token is named when it is most of the time and long enough to notice: a
# prompt read slowly (a loaded CPU server, a long file) is a different fix from slow generation.
FIRST_TOKEN_SHOWN_MS = 1000.0


def waited_for_first_token(stats: RefactorStats) -> bool:
    ttft = stats.ttft_ms
    return ttft is not None and ttft >= FIRST_TOKEN_SHOWN_MS and ttft > stats.latency_ms / 2


def status_text(stats: RefactorStats) -> str:
    """The short form for a status bar: `196 tok/s · 88% accepted`, or the latency when there is no rate."""
    if stats.merged_by == "splice":
        return "spliced · 0 tokens"
    rate = stats.tokens_per_s
    parts = [f"{rate:.0f} tok/s" if rate is not None else f"{stats.latency_ms / 1000:.2f} s"]
    if not stats.prediction:
        parts.append("no prediction")
    elif stats.acceptance_rate is not None:
        parts.append(f"{stats.acceptance_rate:.0%} accepted")
    if stats.repaired:
        parts.append("repaired")
    return " · ".join(parts)


def repair_parts(stats: RefactorStats) -> list[str]:
    """`repaired: '(' was never closed at line 12`, `+0.4 s`: what the check found in the answer, and
    what its repair added to the wait."""
    if stats.repaired is None:
        return []
    lead = "repaired" if stats.repaired else "repair failed"
    ms = stats.repair_ms or 0.0
    return [f"{lead}: {stats.repair_problem}", f"+{ms / 1000:.1f} s" if ms >= 100 else f"+{ms:.0f} ms"]


def format_label(stats: RefactorStats) -> str:
    """`hunks (auto, 412 lines ≥ hunks_min_lines 300)`: which format ran, and why."""
    why = stats.format_reason
    if stats.retried_from:
        why = f"the {stats.retried_from} answer did not apply; retried, {stats.first_attempt_ms or 0:.0f} ms lost"
    return f"{stats.edit_format} ({why})" if why else stats.edit_format


def cost_label(stats: RefactorStats) -> str:
    """`$0.0031, +18 % for the prediction`: the cost, and the share the rejected prediction added."""
    text = f"${stats.cost:.4f}" if stats.cost is not None else ""
    extra = stats.prediction_extra_cost
    if stats.cost and extra is not None and stats.cost > extra:
        text += f", +{extra / (stats.cost - extra) * 100:.0f} % for the prediction"
    return text


def prediction_parts(stats: RefactorStats) -> list[str]:
    """What happened to the prediction, and why when `auto`'s cost guard decided it: `prediction off: 12%
    accepted over the last 8 refactors with it` in place of `no prediction`, or after the acceptance."""
    reason = stats.prediction_reason
    if reason and not stats.prediction:
        return [reason]
    return [prediction_label(stats), reason] if reason else [prediction_label(stats)]


def prediction_label(stats: RefactorStats) -> str:
    """Exactly what happened to the prediction: the field sent, the text in the prompt of a server
    that speculates, or nothing."""
    accepted = (
        f"{stats.acceptance_rate:.0%} accepted ({stats.accepted_prediction_tokens} accepted, "
        f"{stats.rejected_prediction_tokens} rejected)"
        if stats.acceptance_rate is not None
        else None
    )
    if not stats.prediction:
        if stats.prediction_via == "prompt" and stats.server_speculation is False:
            return "no prediction (the server does not speculate)"
        return "no prediction"
    if stats.prediction_via == "prompt":
        lead = "server-side speculation"
        if stats.speculation_always_on:
            lead += ", cannot be turned off per request"
        return f"{lead}: {accepted}" if accepted else f"{lead} (acceptance not reported by the server)"
    if accepted:
        return f"prediction {accepted}"
    return "prediction field sent (acceptance not reported by the backend)"


def detail(stats: RefactorStats) -> str:
    """Every field, for the log."""
    return json.dumps(stats.to_dict(), sort_keys=True)
