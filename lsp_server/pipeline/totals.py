"""A batch's figures: its totals, the line that reports them, and its `refactorLsp/stats` record.

The same honesty rules as one refactor's (stats/measured.py), and three of the batch's own:
- its tokens/s is the output tokens of every target ÷ the batch's wall time, end to end ("together"):
  the waits for first tokens are in it;
- the targets' latencies added up are what each waited while the others ran. One after another each
  would likely have been quicker, so that sum against the wall time says how much the refactors
  overlapped, not how much faster the batch was than running them one by one (the bench measures
  that: the same batch sequential against concurrent);
- acceptance adds up the targets that reported it exactly. Figures read from vLLM's /metrics while
  other requests ran (approximate: concurrent targets count each other's drafts) are left out, and
  the line says from how many targets the figure comes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..backend.metrics import SOURCE_APPROXIMATE
from ..stats.measured import RefactorStats
from ..stats.words import SPLICED
from ..text import count_of
from .runner import OUTCOMES, TargetOutcome


@dataclass(frozen=True)
class BatchTotals:
    targets: int
    outcomes: dict[str, int]  # how many targets ended in each outcome (runner.Outcome), only those that occur
    concurrency: int  # refactors in flight at most
    wall_ms: float  # the batch's start → its last refactor's end (applying not included)
    latency_sum_ms: float  # the targets' latencies (a retried attempt's included), added up
    answered: int  # targets an answer came for
    completion_tokens: int | None  # as the backends counted them (OpenAI: rejected prediction tokens included)
    output_tokens: int | None  # what the user got (stats.RefactorStats.useful_tokens), added up
    prompt_tokens: int | None
    tokens_per_s: float | None  # output_tokens ÷ wall time
    accepted_prediction_tokens: int | None
    rejected_prediction_tokens: int | None
    acceptance_rate: float | None
    acceptance_targets: int  # targets whose exact acceptance figures are added up above
    prediction: bool  # a target sent its prediction (as a field, or in the prompt of a server that drafts)
    prediction_via: str  # the first answered target's ("field", "prompt", "off")
    repaired: int = 0  # targets whose answer brought an error and was applied once repaired
    # A review's: the changes of the reviewed answers, and how many were kept (None: none was reviewed).
    changes: int | None = None
    changes_kept: int | None = None
    spliced: int = 0  # an apply's parts spliced as written: no request, no tokens (pipeline/splice.py)

    @property
    def merged_by(self) -> str:
        """ "splice" when every answered target was spliced as written, "model" when none was, else both."""
        if not self.spliced:
            return "model"
        return "splice" if self.spliced == self.answered else "splice and model"

    @property
    def overlap(self) -> float | None:
        """The latencies added up ÷ the wall time: how many refactors ran at once, on average."""
        return self.latency_sum_ms / self.wall_ms if self.wall_ms > 0 and self.latency_sum_ms else None

    def count(self, *outcomes: str) -> int:
        return sum(self.outcomes.get(o, 0) for o in outcomes)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["overlap"] = self.overlap
        return data


def _sum(values: Sequence[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def batch_totals(outcomes: Sequence[TargetOutcome], wall_ms: float, concurrency: int) -> BatchTotals:
    answered = [o.stats for o in outcomes if o.stats is not None]
    counts: dict[str, int] = {}
    for outcome in outcomes:
        counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
    exact = [
        s
        for s in answered
        if s.accepted_prediction_tokens is not None
        and s.rejected_prediction_tokens is not None
        and s.acceptance_source != SOURCE_APPROXIMATE
    ]
    accepted = _sum([s.accepted_prediction_tokens for s in exact])
    rejected = _sum([s.rejected_prediction_tokens for s in exact])
    output = _sum([s.useful_tokens() for s in answered])
    return BatchTotals(
        targets=len(outcomes),
        outcomes={name: counts[name] for name in OUTCOMES if name in counts},
        concurrency=concurrency,
        wall_ms=wall_ms,
        latency_sum_ms=sum(s.waited_ms() for s in answered),
        answered=len(answered),
        completion_tokens=_sum([s.completion_tokens for s in answered]),
        output_tokens=output,
        prompt_tokens=_sum([s.prompt_tokens for s in answered]),
        tokens_per_s=output / (wall_ms / 1000) if output and wall_ms > 0 else None,
        accepted_prediction_tokens=accepted,
        rejected_prediction_tokens=rejected,
        acceptance_rate=accepted / (accepted + rejected)
        if accepted is not None and rejected is not None and accepted + rejected > 0
        else None,
        acceptance_targets=len(exact),
        prediction=any(s.prediction for s in answered),
        prediction_via=answered[0].prediction_via if answered else "off",
        repaired=sum(1 for s in answered if s.repaired),
        spliced=sum(1 for s in answered if s.merged_by == "splice"),
        changes=_sum([s.changes for s in answered]),
        changes_kept=_sum([s.changes_kept for s in answered]),
    )


def outcome_counts(totals: BatchTotals) -> str:
    """`11 applied, 1 refused`."""
    return ", ".join(f"{n} {name}" for name, n in totals.outcomes.items())


def prediction_text(totals: BatchTotals) -> str:
    """The batch's acceptance, and from how many targets it comes."""
    if not totals.prediction:
        return "no prediction"
    lead = "server-side speculation" if totals.prediction_via == "prompt" else "prediction"
    if totals.acceptance_rate is None:
        return f"{lead} (acceptance not reported)"
    text = (
        f"{lead} {totals.acceptance_rate:.0%} accepted ({totals.accepted_prediction_tokens:,} accepted, "
        f"{totals.rejected_prediction_tokens:,} rejected"
    )
    if totals.acceptance_targets < totals.answered:
        text += f"; from {totals.acceptance_targets} of the {totals.answered} answers"
    return text + ")"


def batch_summary(totals: BatchTotals) -> str:
    """`12 definitions: 11 applied, 1 refused (2 repaired) · 14.2 s, 4 at a time (their latencies add up to
    41.3 s) · 1,234 tok · 87 tok/s together · prediction 88% accepted (...)`."""
    repaired = f" ({totals.repaired} repaired)" if totals.repaired else ""
    head = f"{count_of(totals.targets, 'definition')}: {outcome_counts(totals)}{repaired}"
    if totals.merged_by == "splice":
        return f"{head} · {SPLICED} · {totals.wall_ms / 1000:.2f} s"
    if totals.spliced:
        head += f" ({totals.spliced} spliced as written, no model asked)"
    parts = [head]
    timing = f"{totals.wall_ms / 1000:.1f} s, {min(totals.concurrency, totals.targets)} at a time"
    if totals.latency_sum_ms:
        timing += f" (their latencies add up to {totals.latency_sum_ms / 1000:.1f} s)"
    parts.append(timing)
    if totals.completion_tokens is not None:
        parts.append(f"{totals.completion_tokens:,} tok")
    if totals.tokens_per_s is not None:
        parts.append(f"{totals.tokens_per_s:.0f} tok/s together")
    if totals.answered:
        parts.append(prediction_text(totals))
    if totals.changes is not None and totals.changes_kept is not None:
        parts.append(f"kept {totals.changes_kept} of {count_of(totals.changes, 'change')}")
    return " · ".join(parts)


def batch_status_text(totals: BatchTotals) -> str:
    """The short form for a status bar: `11/12 · 87 tok/s together · 88% accepted`."""
    done = totals.count("applied", "edit", "unchanged")
    parts = [f"{done}/{totals.targets}"]
    if totals.merged_by == "splice":
        return f"{parts[0]} · spliced · 0 tokens"
    if totals.tokens_per_s is not None:
        parts.append(f"{totals.tokens_per_s:.0f} tok/s together")
    if not totals.prediction:
        parts.append("no prediction")
    elif totals.acceptance_rate is not None:
        parts.append(f"{totals.acceptance_rate:.0%} accepted")
    return " · ".join(parts)


def batch_record(uri: str, outcomes: Sequence[TargetOutcome], totals: BatchTotals, summary: str) -> dict[str, Any]:
    """The batch's `refactorLsp/stats` record: the fields of one refactor's record with the batch's
    figures (latency: its wall time; tokens/s: together; `applied`: true when every target was, false
    when none was, null in between), its `summary` and `status_text`, and `batch`: the totals and
    every target's own record."""
    first = next((o.stats for o in outcomes if o.stats is not None), None)
    applied = totals.count("applied")
    record = RefactorStats(
        backend=first.backend if first else "",
        model=first.model if first else "",
        prediction=totals.prediction,
        prediction_via=first.prediction_via if first else "off",
        scope="each definition",
        region_lines=sum(o.item.target.last_line - o.item.target.first_line + 1 for o in outcomes),
        latency_ms=totals.wall_ms,
        completion_tokens=totals.completion_tokens,
        prompt_tokens=totals.prompt_tokens,
        accepted_prediction_tokens=totals.accepted_prediction_tokens,
        rejected_prediction_tokens=totals.rejected_prediction_tokens,
        acceptance_rate=totals.acceptance_rate,
        acceptance_source="the batch's targets" if totals.acceptance_targets else None,
        tokens_per_s=totals.tokens_per_s,
        output_chars=sum(o.stats.output_chars for o in outcomes if o.stats is not None),
        predicted_chars=sum(o.stats.predicted_chars for o in outcomes if o.stats is not None),
        action=first.action if first else "",
        served_by=first.served_by if first else "",
        merged_by=totals.merged_by,
        applied=True if applied == totals.targets else False if applied == 0 else None,
        uri=uri,
        changes=totals.changes,
        changes_kept=totals.changes_kept,
    )
    return {
        **record.to_dict(),
        "summary": summary,
        "status_text": batch_status_text(totals),
        "batch": {"totals": totals.to_dict(), "targets": [o.to_dict() for o in outcomes]},
    }
