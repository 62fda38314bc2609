"""Stats: one record per refactor, used everywhere (CLI JSON, notifications, history, bench).

Honesty rules: rejected prediction tokens are billed but are not output, so they do not count
toward tokens/s; acceptance is shown only when the backend reported it, never guessed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Bounds a record read back must keep (history.py): far beyond any real refactor, so that only damage
# is refused.
MAX_COUNT = 2**53  # tokens, characters, lines
MAX_FIGURE = 1e15  # milliseconds, tokens per second, dollars
MAX_TEXT = 8192  # characters of one string (a file URI, a note)
MAX_NOTES = 100


@dataclass
class RefactorStats:
    backend: str = ""
    model: str = ""
    prediction: bool = False  # the prediction was sent (as a field, or in the prompt for local speculation)
    prediction_via: str = "off"  # "field" | "prompt" | "off"
    server_speculation: bool | None = None  # "prompt": the server drafted from it (None: it did not say)
    speculation_always_on: bool = False  # asked to run without prediction on a server that speculates by itself
    scope: str = ""
    region_lines: int = 0
    edit_format: str = ""  # "region" | "hunks" (edit_format.py)
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
    # Cost, when the backend's prices are set: billed tokens × prices. OpenAI bills rejected
    # prediction tokens as output, so a prediction can make a refactor faster and dearer at once.
    cost: float | None = None
    prediction_extra_cost: float | None = None  # what the rejected prediction tokens added to `cost`
    notes: list[str] = field(default_factory=list)
    applied: bool | None = None
    uri: str = ""

    def finish(self) -> RefactorStats:
        """Derive the rates from the raw figures."""
        accepted, rejected = self.accepted_prediction_tokens, self.rejected_prediction_tokens
        if accepted is not None and rejected is not None and accepted + rejected > 0:
            self.acceptance_rate = accepted / (accepted + rejected)
        if self.completion_tokens:
            useful = self.useful_tokens() or 0
            generation_ms = self.latency_ms - (self.ttft_ms or 0.0)
            if generation_ms <= 0 or self.completion_tokens <= 1:
                generation_ms = self.latency_ms
            if generation_ms > 0:
                self.tokens_per_s = max(useful, 0) / (generation_ms / 1000.0)
        return self

    def useful_tokens(self) -> int | None:
        """Output tokens the user got. OpenAI bills rejected prediction tokens as completion tokens, so
        they are taken off; a local server's rejected drafts were never counted as output."""
        if self.completion_tokens is None:
            return None
        local = (self.acceptance_source or "").startswith(("vllm", "llamacpp"))
        billed_rejected = 0 if local else (self.rejected_prediction_tokens or 0)
        return max(self.completion_tokens - billed_rejected, 0)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RefactorStats:
        """A record read back. Unknown keys (a newer version's) are ignored; a value of the wrong type or
        out of range raises ValueError, so that damage is never taken for a measurement (a latency of
        "slow" would break every median taken with it)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a record is a JSON object, not {type(data).__name__}")
        return cls(**{f.name: _checked(f.name, str(f.type), data[f.name]) for f in fields(cls) if f.name in data})

    def summary(self) -> str:
        """One line for people: `refactor 2.1 s · 412 tok · 196 tok/s · prediction 88% accepted (...)`."""
        parts = [f"refactor {self.latency_ms / 1000:.1f} s"]
        if self.completion_tokens is not None:
            parts.append(f"{self.completion_tokens} tok")
        if self.tokens_per_s is not None:
            parts.append(f"{self.tokens_per_s:.0f} tok/s")
        parts.append(self.prediction_label())
        if self.edit_format:
            parts.append(self.format_label())
        if self.cost is not None:
            parts.append(self.cost_label())
        if self.served_by and self.served_by != self.backend:
            parts.append(f"served by {self.served_by}")
        return " · ".join(parts)

    def format_label(self) -> str:
        """`hunks (auto, 412 lines ≥ hunks_min_lines 300)`: which format ran, and why."""
        why = self.format_reason
        if self.retried_from:
            why = f"the {self.retried_from} answer did not apply; retried, {self.first_attempt_ms or 0:.0f} ms lost"
        return f"{self.edit_format} ({why})" if why else self.edit_format

    def waited_ms(self) -> float:
        """What the user waited for the answer: a retried attempt included."""
        return self.latency_ms + (self.first_attempt_ms or 0.0)

    def price(self, input_per_mtok: float, output_per_mtok: float) -> RefactorStats:
        """Set the cost from the billed tokens (prompt, and completion as billed) and the prices."""
        if not (input_per_mtok or output_per_mtok) or self.completion_tokens is None:
            return self
        self.cost = ((self.prompt_tokens or 0) * input_per_mtok + self.completion_tokens * output_per_mtok) / 1e6
        billed_rejected = self.completion_tokens - (self.useful_tokens() or 0)
        if self.prediction_via == "field" and self.rejected_prediction_tokens is not None:
            self.prediction_extra_cost = billed_rejected * output_per_mtok / 1e6
        return self

    def cost_label(self) -> str:
        """`$0.0031, +18 % for the prediction`: the cost, and the share the rejected prediction added."""
        text = f"${self.cost:.4f}" if self.cost is not None else ""
        extra = self.prediction_extra_cost
        if self.cost and extra is not None and self.cost > extra:
            text += f", +{extra / (self.cost - extra) * 100:.0f} % for the prediction"
        return text

    def prediction_label(self) -> str:
        """Exactly what happened to the prediction: the field sent, the text in the prompt of a server
        that speculates, or nothing."""
        accepted = (
            f"{self.acceptance_rate:.0%} accepted ({self.accepted_prediction_tokens} accepted, "
            f"{self.rejected_prediction_tokens} rejected)"
            if self.acceptance_rate is not None
            else None
        )
        if not self.prediction:
            if self.prediction_via == "prompt" and self.server_speculation is False:
                return "no prediction (the server does not speculate)"
            return "no prediction"
        if self.prediction_via == "prompt":
            lead = "server-side speculation"
            if self.speculation_always_on:
                lead += ", cannot be turned off per request"
            return f"{lead}: {accepted}" if accepted else f"{lead} (acceptance not reported by the server)"
        if accepted:
            return f"prediction {accepted}"
        return "prediction field sent (acceptance not reported by the backend)"

    def detail(self) -> str:
        """Every field, for the log."""
        return json.dumps(self.to_dict(), sort_keys=True)


def _checked(name: str, annotation: str, value: Any) -> Any:
    """`value` as field `name` (annotated `annotation`, a string under postponed annotations) holds it."""
    kind, _, rest = annotation.partition(" | ")
    if value is None and rest == "None":
        return None
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = type(value) is int and 0 <= value <= MAX_COUNT  # `type`: JSON's true is no count
    elif kind == "float":
        top = 1.0 if name == "acceptance_rate" else MAX_FIGURE
        ok = type(value) in (int, float) and math.isfinite(value) and 0 <= value <= top
        value = float(value) if ok else value
    elif kind == "str":
        ok = isinstance(value, str) and len(value) <= MAX_TEXT
    elif kind == "list[str]":
        ok = isinstance(value, list) and len(value) <= MAX_NOTES
        ok = ok and all(isinstance(v, str) and len(v) <= MAX_TEXT for v in value)
    else:  # a new field's type: give it a check here (the round-trip test reaches every field)
        raise TypeError(f"RefactorStats.{name}: no check for {annotation}")
    if not ok:
        raise ValueError(f"{name}: {value!r:.80} is not a valid {annotation}")
    return list(value) if isinstance(value, list) else value


def median(values: Iterable[float | int | None]) -> float | None:
    """The median of the values given (None where there are none); a missing value (None) is
    left out, never counted as zero. The package's one median, for every summary (history, bench)."""
    import statistics  # not at start-up: it pulls in fractions and decimal

    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


@dataclass
class ModeSummary:
    backend: str
    prediction: bool
    count: int
    latency_ms: float | None
    tokens_per_s: float | None
    acceptance_rate: float | None
    cost: float | None = None  # median, when prices are set


@dataclass
class BackendSummary:
    backend: str
    modes: list[ModeSummary]
    speedup: float | None  # median latency without ÷ median latency with prediction

    def line(self) -> str:
        parts = []
        for mode in self.modes:
            label = "with prediction" if mode.prediction else "without"
            text = f"{label}: {mode.count} refactors, median {(mode.latency_ms or 0) / 1000:.2f} s"
            if mode.tokens_per_s is not None:
                text += f", {mode.tokens_per_s:.0f} tok/s"
            if mode.acceptance_rate is not None:
                text += f", {mode.acceptance_rate:.0%} accepted"
            if mode.cost is not None:
                text += f", ${mode.cost:.4f}"
            parts.append(text)
        speed = f" · speedup {self.speedup:.2f}×" if self.speedup else ""
        return f"{self.backend}: " + "; ".join(parts) + speed


def summarize_history(records: list[RefactorStats]) -> list[BackendSummary]:
    """Medians per backend and mode; the speedup when both modes exist.

    Latency depends on how much was rewritten, so this compares like with like only roughly;
    `refactor-lsp bench` measures the same edits both ways.
    """
    summaries = []
    for backend in sorted({r.backend for r in records}):
        modes = []
        for prediction in (True, False):
            group = [r for r in records if r.backend == backend and r.prediction == prediction]
            if group:
                modes.append(
                    ModeSummary(
                        backend,
                        prediction,
                        len(group),
                        median(r.latency_ms for r in group),
                        median(r.tokens_per_s for r in group),
                        median(r.acceptance_rate for r in group),
                        median(r.cost for r in group),
                    )
                )
        speedup = None
        if len(modes) == 2 and modes[0].latency_ms and modes[1].latency_ms:
            speedup = modes[1].latency_ms / modes[0].latency_ms
        summaries.append(BackendSummary(backend, modes, speedup))
    return summaries
