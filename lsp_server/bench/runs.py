"""What one bench run measured, a pair of runs (the same task with and without the prediction), and a
batch: the same task in one mode, several times at once (`--concurrency`).

Modes: "prediction" and "baseline" are the region format with and without the prediction (without:
the baseline backend for vLLM and llama.cpp); with `--edit-format`, "hunks" and "auto" are those
edit formats on the backend under test, its prediction as configured, and "hunks-prediction" is
hunks with the region sent as the `prediction` field all the same (what the default leaves out)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal

from ..stats.measured import RefactorStats

Mode = Literal["prediction", "baseline", "hunks", "hunks-prediction", "auto"]
# The edit-format report's names for the modes.
MODE_LABELS: dict[Mode, str] = {
    "prediction": "region + prediction",
    "baseline": "region, no prediction",
    "hunks": "hunks",
    "hunks-prediction": "hunks + prediction",
    "auto": "auto",
}
Outcome = Literal["edit", "unchanged", "refused", "error"]


def attributes(record: object, *names: str) -> dict[str, Any]:
    """The named attributes of a record (fields or properties), in order: its plain values in the JSON report."""
    return {name: getattr(record, name) for name in names}


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
    def waited_ms(self) -> float | None:
        """What the user waited: a hunks attempt that did not apply and its retry together, an answer
        and its repair together (a mode that needed repairs is not the faster for them)."""
        return self.stats.waited_ms() if self.stats is not None else None

    @property
    def useful_tokens(self) -> int | None:
        """Output tokens, as the server's stats count them (rejected prediction tokens billed by OpenAI left out)."""
        return self.stats.useful_tokens() if self.stats is not None else None

    @property
    def effective_tokens_per_s(self) -> float | None:
        """Output tokens the user got ÷ the whole wait (first token and a repair included)."""
        tokens, latency = self.useful_tokens, self.waited_ms
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
        """What the user waited without ÷ with the prediction (a repair's time is in what they waited)."""
        a, b = self.prediction.waited_ms, self.baseline.waited_ms
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
        return attributes(self, "task", "repetition", "speedup", "same_text", "common_prefix_chars")


@dataclass(frozen=True)
class Batch:
    """The same task in one mode, sent `len(runs)` times at once: what a bench measures under load."""

    task: str
    mode: Mode
    repetition: int
    started_s: tuple[float, ...]  # when each run was sent, in seconds after the batch began
    wall_s: float  # the batch began → its last answer ended
    runs: tuple[Run, ...]

    @property
    def concurrency(self) -> int:
        return len(self.runs)

    @property
    def output_tokens(self) -> int:
        """Output tokens of all the batch's answers, counted as `Run.useful_tokens` counts them."""
        return sum(run.useful_tokens or 0 for run in self.runs)

    @property
    def streaming_at_once(self) -> int:
        """The most answers that were streaming at one instant (first token → end, by our clock).

        Counted from the answers' own timings rather than from how many requests we started: a client
        whose connection pool queued requests would start N but stream them one after another.
        """
        events: list[tuple[float, int]] = []
        for started, run in zip(self.started_s, self.runs, strict=True):
            if run.stats is None:
                continue
            events.append((started + (run.stats.ttft_ms or 0.0) / 1000, 1))
            events.append((started + run.stats.latency_ms / 1000, -1))
        peak = now = 0
        for _, step in sorted(events):  # at the same instant an end (-1) sorts first: touching is not overlapping
            now += step
            peak = max(peak, now)
        return peak

    def to_dict(self) -> dict[str, Any]:
        return {
            **attributes(self, "task", "mode", "repetition", "concurrency"),
            "started_s": list(self.started_s),
            **attributes(self, "wall_s", "output_tokens", "streaming_at_once"),
            "runs": [run.to_dict() for run in self.runs],
        }
