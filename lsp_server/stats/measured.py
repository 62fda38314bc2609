"""Stats: what one refactor measured, frozen once the engine has it (`measured`); the caller adds the
outcome (`with_outcome`). Its text is made in `words`, its wire form in `wire`, its history
record in `history`.

Honesty rules: rejected prediction tokens are billed but are not output, so they do not count
toward tokens/s; acceptance is shown only when the backend reported it, never guessed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any, TypeVar

from ..config.schema import PredictionVia

T = TypeVar("T", int, float)


@dataclass(frozen=True)
class RefactorStats:
    backend: str = ""
    model: str = ""
    prediction: bool = False  # the prediction was sent (as a field, or in the prompt for local speculation)
    prediction_via: PredictionVia = "off"
    # Why the prediction was or was not sent, when `prediction = "auto"` decided it by this backend's recent
    # refactors (prediction_guard): "prediction off: 12% accepted over the last 8 refactors with it".
    prediction_reason: str = ""
    server_speculation: bool | None = None  # "prompt": the server drafted from it (None: it did not say)
    speculation_always_on: bool = False  # asked to run without prediction on a server that speculates by itself
    scope: str = ""
    region_lines: int = 0
    concurrency: int = 1  # refactors in flight with this one (a batch's): its speed was measured under load
    edit_format: str = ""  # "region" | "hunks" (formats/choice.py)
    format_reason: str = ""  # why that format, in words
    edit_format_failed: bool = False  # the hunks answer did not apply to the region
    retried_from: str | None = None  # "hunks": that answer did not apply, and this is the retry in region
    first_attempt_ms: float | None = None  # the retried attempt's latency, not in latency_ms
    latency_ms: float = 0.0  # request sent → stream ended
    ttft_ms: float | None = None  # request sent → first content token
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    accepted_prediction_tokens: int | None = None
    rejected_prediction_tokens: int | None = None
    acceptance_rate: float | None = None  # accepted ÷ (accepted + rejected)
    acceptance_source: str | None = None  # where the acceptance figures came from
    tokens_per_s: float | None = None  # output tokens ÷ generation time (OpenAI: completion − rejected)
    output_chars: int = 0
    predicted_chars: int = 0
    action: str = ""
    served_by: str = ""  # the backend that answered, when a fallback took over
    # Who wrote the region's new text: "model", or "splice" (an apply's complete snippet, placed as written:
    # no request, 0 tokens; its latency is the splice's and the check's, no model's speed).
    merged_by: str = "model"
    # Cost, when the backend's prices are set: billed tokens × prices. OpenAI bills rejected
    # prediction tokens as output, so a prediction can make a refactor faster and dearer at once.
    cost: float | None = None
    prediction_extra_cost: float | None = None  # what the rejected prediction tokens added to `cost`
    notes: tuple[str, ...] = ()
    # The check before the edit (check/verify.py): what read the answer ("python", "brackets", "blocks",
    # your checker's name after them; "not checked"; "off").
    checked: str = ""
    # A repair: what the check found in the answer ("'(' was never closed at line 12"), whether the repaired
    # answer applied (None: no repair was asked), and what the repairs took on top of the figures above
    # (their latency is not in latency_ms; their cost is in `cost`).
    repair_problem: str = ""
    repaired: bool | None = None
    repair_ms: float | None = None
    repair_completion_tokens: int | None = None
    repair_prompt_tokens: int | None = None
    repair_cost: float | None = None
    # A review (pipeline/review.py): the answer's changes, and how many of them the user kept (None: the
    # answer was applied whole, unreviewed).
    changes: int | None = None
    changes_kept: int | None = None
    # The outcome, added by the caller (server, CLI, bench) once it knows it.
    applied: bool | None = None
    uri: str = ""

    def useful_tokens(self) -> int | None:
        """Output tokens the user got. OpenAI bills rejected prediction tokens as completion tokens, so
        they are taken off; a local server's rejected drafts were never counted as output."""
        if self.completion_tokens is None:
            return None
        local = (self.acceptance_source or "").startswith(("vllm", "llamacpp"))
        billed_rejected = 0 if local else (self.rejected_prediction_tokens or 0)
        return max(self.completion_tokens - billed_rejected, 0)

    def waited_ms(self) -> float:
        """What the user waited for the answer: a retried attempt and a repair included."""
        return self.latency_ms + (self.first_attempt_ms or 0.0) + (self.repair_ms or 0.0)

    def with_repair(self, repair: RefactorStats, problem: str) -> RefactorStats:
        """These figures, of the answer a repair mends, with the repair's added (`repair`: its own
        stats). The refactor's speed and acceptance stay the first answer's: a repair's prediction is
        an answer already written, whose acceptance says nothing of the region's."""
        return replace(
            self,
            repair_problem=self.repair_problem or problem,
            repaired=False,  # until its answer applies
            repair_ms=(self.repair_ms or 0.0) + repair.latency_ms,
            repair_completion_tokens=_sum(self.repair_completion_tokens, repair.completion_tokens),
            repair_prompt_tokens=_sum(self.repair_prompt_tokens, repair.prompt_tokens),
            repair_cost=_sum(self.repair_cost, repair.cost),
            cost=_sum(self.cost, repair.cost),
            notes=(*self.notes, *(note for note in repair.notes if note not in self.notes)),
        )

    def with_outcome(self, uri: str = "", applied: bool | None = None) -> RefactorStats:
        return replace(self, uri=uri, applied=applied)

    def with_notes(self, *notes: str, first: bool = False) -> RefactorStats:
        return replace(self, notes=(*notes, *self.notes) if first else (*self.notes, *notes))

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["notes"] = list(self.notes)
        return data


def _sum(a: T | None, b: T | None) -> T | None:
    """Two figures added; None only when neither is known."""
    if a is None:
        return b
    return a if b is None else a + b


def measured(stats: RefactorStats, input_per_mtok: float = 0.0, output_per_mtok: float = 0.0) -> RefactorStats:
    """The raw figures with the rates derived from them, and the cost when prices are set."""
    derived: dict[str, Any] = {}
    accepted, rejected = stats.accepted_prediction_tokens, stats.rejected_prediction_tokens
    if accepted is not None and rejected is not None and accepted + rejected > 0:
        derived["acceptance_rate"] = accepted / (accepted + rejected)
    if stats.completion_tokens:
        useful = stats.useful_tokens() or 0
        generation_ms = stats.latency_ms - (stats.ttft_ms or 0.0)
        if generation_ms <= 0 or stats.completion_tokens <= 1:
            generation_ms = stats.latency_ms
        if generation_ms > 0:
            derived["tokens_per_s"] = max(useful, 0) / (generation_ms / 1000.0)
    if (input_per_mtok or output_per_mtok) and stats.completion_tokens is not None:
        billed = (stats.prompt_tokens or 0) * input_per_mtok + stats.completion_tokens * output_per_mtok
        derived["cost"] = billed / 1e6
        if stats.prediction_via == "field" and stats.rejected_prediction_tokens is not None:
            billed_rejected = stats.completion_tokens - (stats.useful_tokens() or 0)
            derived["prediction_extra_cost"] = billed_rejected * output_per_mtok / 1e6
    return replace(stats, **derived)


def median(values: Iterable[float | int | None]) -> float | None:
    """The median of the values given (None where there are none); a missing value (None) is
    left out, never counted as zero. The package's one median, for every summary (history, bench)."""
    import statistics  # not at start-up: it pulls in fractions and decimal

    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None
