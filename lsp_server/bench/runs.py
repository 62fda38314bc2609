"""What one bench run measured, and a pair of runs: the same task with and without the prediction."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from ..stats import RefactorStats

Mode = Literal["prediction", "baseline"]
Outcome = Literal["edit", "unchanged", "refused", "error"]


@dataclass(frozen=True)
class Run:
    task: str
    mode: Mode
    repetition: int
    first: bool  # ran first in its pair
    backend: str
    outcome: Outcome
    message: str = ""
    stats: RefactorStats | None = None  # None: nothing was measured (an error before the answer)
    output: str | None = None  # the new region, or the raw answer when it was refused
    matches_expected: bool | None = None
    expected_similarity: float | None = None

    @property
    def latency_ms(self) -> float | None:
        return self.stats.latency_ms if self.stats is not None else None

    @property
    def useful_tokens(self) -> int | None:
        """Output tokens, as the server's stats count them (rejected prediction tokens billed by OpenAI left out)."""
        return self.stats.useful_tokens() if self.stats is not None else None

    @property
    def effective_tokens_per_s(self) -> float | None:
        """Output tokens the user got ÷ the whole latency (first token included)."""
        tokens, latency = self.useful_tokens, self.latency_ms
        if tokens is None or not latency:
            return None
        return tokens / (latency / 1000)

    def to_dict(self) -> dict[str, Any]:
        """The run in the JSON report (`stats` as RefactorStats.to_dict has it)."""
        data = dataclasses.asdict(self)
        data["effective_tokens_per_s"] = self.effective_tokens_per_s
        return data


@dataclass(frozen=True)
class Pair:
    task: str
    repetition: int
    prediction: Run
    baseline: Run

    @property
    def speedup(self) -> float | None:
        a, b = self.prediction.latency_ms, self.baseline.latency_ms
        return b / a if a and b else None

    @property
    def same_text(self) -> bool | None:
        p, b = self.prediction, self.baseline
        if p.output is None or b.output is None:
            return None
        return (p.outcome == "refused") == (b.outcome == "refused") and p.output == b.output

    @property
    def common_prefix_chars(self) -> int | None:
        """How far the two answers agree, in characters (they should agree all the way)."""
        if self.prediction.output is None or self.baseline.output is None:
            return None
        a, b = self.prediction.output, self.baseline.output
        return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))

    def to_dict(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "repetition": self.repetition,
            "speedup": self.speedup,
            "same_text": self.same_text,
            "common_prefix_chars": self.common_prefix_chars,
        }
