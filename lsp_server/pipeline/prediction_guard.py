"""The cost guard on the prediction (`prediction = "auto"`): send it while this backend's recent
refactors show it pays, stop when they show it does not, and try it again now and then.

Where it decides: a backend that gets the prediction as the request's `prediction` field (OpenAI's
Predicted Outputs, and the servers that take that field). There the field can be left out of any
request, and OpenAI bills every rejected prediction token at completion rates. A vLLM or llama.cpp
server drafts from the prompt, which holds the region whatever we ask: its speculation cannot be
switched off per request, so there `auto` stays what it was (the guard is not asked).

What it judges, per backend (its name and model), from refactors in the region format (a hunks
answer gets no prediction field, and its speed is another format's): the last WINDOW with the field,
acceptance (accepted ÷ (accepted + rejected) prediction tokens, summed) and tokens/s; the last WINDOW
without it (after the guard stopped it, `--no-prediction`, `prediction = "never"`), tokens/s.

The thresholds, from the figures we have:
- MIN_ACCEPTANCE 50 %: every rejected token is billed as output (OpenAI's Predicted Outputs docs),
  so at acceptance `a` each token the prediction drafted costs (1 − a) ÷ a tokens billed for
  nothing: under one half, more is billed for nothing than was drafted. The one published test
  (Simon Willison, Nov 2024: 49 accepted, 107 rejected, 31 %) was 1.6× faster (5.2 s → 3.3 s) and
  1.7× dearer (0.1555 → 0.2675 cents): that is the trade this guard exists to stop; whoever wants the
  speed at that price sets `prediction = "always"`. A region rewrite that changes a few lines
  accepts most of it (the demo's vLLM pair: 59-72 %), so the line keeps the prediction where it
  is meant to pay.
- MIN_SPEEDUP 1.0: where both are measured, a prediction whose median tokens/s is below the
  median without it is slower and dearer at once: it never pays. Above 1.0 acceptance decides.
- WINDOW 8: one heavy rewrite (a refactor that accepts nothing) among seven good ones still reads
  as paying (tokens summed), and the window follows a change of model or of habit within a day.
- MIN_SAMPLES 3 before judging, as `auto` needs of each edit format (edit_format.MIN_SAMPLES).
- RETRY_EVERY 10: while off, every tenth region refactor sends it again, so a backend that got
  better is noticed, at the price of one prediction in ten. A try that pays starts the judgement
  afresh from it: the older refactors that stopped the prediction no longer count.

It learns from the history (the server when it starts, the CLI once per run) and from each refactor
the engine finishes (`record`, in memory): nothing here reads a file per refactor.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..stats.history import HistoryRecord
from ..stats.measured import median
from ..text import count_of

WINDOW = 8
MIN_SAMPLES = 3
MIN_ACCEPTANCE = 0.5
MIN_SPEEDUP = 1.0
RETRY_EVERY = 10


@dataclass(frozen=True)
class GuardVerdict:
    send: bool
    reason: str  # for the stats, in words; empty while there are too few refactors to judge


@dataclass(frozen=True)
class _Run:
    accepted: int | None
    rejected: int | None
    tokens_per_s: float | None

    @property
    def acceptance_reported(self) -> bool:
        return self.accepted is not None and self.rejected is not None and self.accepted + self.rejected > 0


@dataclass
class _Backend:
    with_prediction: deque[_Run] = field(default_factory=lambda: deque(maxlen=WINDOW))
    without: deque[_Run] = field(default_factory=lambda: deque(maxlen=WINDOW))
    since_sent: int = 0  # region refactors without the prediction since the last one with it


class PredictionGuard:
    """Per backend and model: how the prediction went lately, and whether to send it now."""

    def __init__(self) -> None:
        self._backends: dict[tuple[str, str], _Backend] = {}

    def learn(self, records: Iterable[HistoryRecord]) -> PredictionGuard:
        """Learn from the refactor history, oldest first."""
        for record in records:
            self.record(record)
        return self

    def record(self, record: HistoryRecord) -> None:
        """One finished refactor (a history record, or `HistoryRecord.of` the engine's stats)."""
        if record.edit_format != "region" or record.prediction_via not in ("field", "off") or not record.served_by:
            return  # a hunks answer, a server that drafts from the prompt, or a record naming no backend
        state = self._backends.setdefault((record.served_by, record.model), _Backend())
        # A batch's refactor ran beside others: its speed was measured under load; its acceptance was not.
        tokens_per_s = record.tokens_per_s if record.concurrency == 1 else None
        if record.prediction_via == "off":
            state.without.append(_Run(None, None, tokens_per_s))
            state.since_sent += 1
            return
        run = _Run(record.accepted_prediction_tokens, record.rejected_prediction_tokens, tokens_per_s)
        # A try (the field after refactors without it, while the verdict was off) that paid: the backend
        # changed, judge it afresh. Asked in this order, the verdict is worked out only for a try.
        if state.since_sent and _pays(run, state) and not _judge(state).send:
            state.with_prediction.clear()
        state.with_prediction.append(run)
        state.since_sent = 0

    def decide(self, backend: str, model: str) -> GuardVerdict:
        """Whether this refactor sends the prediction field to `backend` serving `model`, and why."""
        state = self._backends.get((backend, model))
        if state is None:
            return GuardVerdict(True, "")
        verdict = _judge(state)
        if not verdict.send and state.since_sent >= RETRY_EVERY - 1:
            return GuardVerdict(True, f"prediction on: trying it again (1 in {RETRY_EVERY})")
        return verdict


def _rate_without(state: _Backend) -> tuple[float, int] | None:
    """(median tokens/s of the recent refactors without the prediction, how many) once MIN_SAMPLES have one."""
    rates = [r.tokens_per_s for r in state.without if r.tokens_per_s is not None]
    rate = median(rates) if len(rates) >= MIN_SAMPLES else None
    return (rate, len(rates)) if rate else None


def _speedup(state: _Backend) -> tuple[float, int, int] | None:
    """(median tokens/s with ÷ median without, refactors with, refactors without) when both have MIN_SAMPLES."""
    with_ = [r.tokens_per_s for r in state.with_prediction if r.tokens_per_s is not None]
    without = _rate_without(state)
    rate_with = median(with_) if len(with_) >= MIN_SAMPLES else None
    if rate_with is None or without is None:
        return None
    return rate_with / without[0], len(with_), without[1]


def _judge(state: _Backend) -> GuardVerdict:
    """The verdict of the recent refactors alone (the retry comes on top, in `decide`)."""
    reported = [r for r in state.with_prediction if r.acceptance_reported]
    figures: list[str] = []
    if len(reported) >= MIN_SAMPLES:
        accepted = sum(r.accepted or 0 for r in reported)
        rate = accepted / sum((r.accepted or 0) + (r.rejected or 0) for r in reported)
        figures.append(f"{rate:.0%} accepted over the last {count_of(len(reported), 'refactor')} with it")
        if rate < MIN_ACCEPTANCE:
            return GuardVerdict(False, f"prediction off: {figures[0]}")
    speed = _speedup(state)
    if speed is not None:
        ratio, runs_with, runs_without = speed
        if ratio < MIN_SPEEDUP:
            return GuardVerdict(
                False,
                f"prediction off: no faster than without it ({ratio:.2f}× the tokens/s, medians of the last "
                f"{count_of(runs_with, 'refactor')} with it and {runs_without} without)",
            )
        figures.append(f"{ratio:.1f}× the tokens/s without it")
    return GuardVerdict(True, f"prediction on: {', '.join(figures)}" if figures else "")


def _pays(run: _Run, state: _Backend) -> bool:
    """Whether one refactor with the prediction, on its own, met every threshold it can be held to (a
    try, while the prediction was off); False when it can be held to none."""
    held = False
    if run.acceptance_reported:
        accepted, rejected = run.accepted or 0, run.rejected or 0
        if accepted / (accepted + rejected) < MIN_ACCEPTANCE:
            return False
        held = True
    without = _rate_without(state)
    if run.tokens_per_s is not None and without is not None:
        if run.tokens_per_s / without[0] < MIN_SPEEDUP:
            return False
        held = True
    return held
