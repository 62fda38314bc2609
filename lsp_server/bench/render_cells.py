"""Cells shared by the bench report's tables: timings, pairs of figures, acceptance, speedup."""

from __future__ import annotations

from .report import ModeSummary, PairsSummary
from .spread import Spread

KIND_LABELS = {"mostly-unchanged": "small edit", "heavy-rewrite": "rewrite"}


def seconds(spread: Spread | None) -> str:
    if spread is None:
        return "–"
    median, low, high = (v / 1000 for v in (spread.median, spread.min, spread.max))
    return f"{median:.2f} ({low:.2f}–{high:.2f})"


def num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def both(a: float | None, b: float | None, digits: int = 0) -> str:
    return f"{num(a, digits)} / {num(b, digits)}"


def acceptance(mode: ModeSummary) -> str:
    if mode.accepted_prediction_tokens is None:
        return "not reported"
    rate = mode.acceptance_rate
    rate_text = f" ({rate:.0%})" if rate is not None else ""
    return f"{mode.accepted_prediction_tokens} / {mode.rejected_prediction_tokens}{rate_text}"


def speedup(row: PairsSummary) -> str:
    return "–" if row.speedup is None else f"{row.speedup:.2f}×"
