"""Edit format: whether the model re-emits the whole region or answers only the changed parts.

`region`: the model writes the region again; with a prediction most of it is accepted, cheap but
not free (every token still costs a share of a forward pass, and OpenAI bills it). `hunks`: the
model writes SEARCH/REPLACE blocks (`hunks.py`): only the changes, plus a few lines to find them.

`auto` chooses by measurement: from this backend's own history (median latency and success rate per
format, per region size) once it has some, else from the region's size against
`refactor.hunks_min_lines`. Unset, that threshold is a default per way the prediction reaches the
backend (`prediction_via`): a server that drafts from the prompt (vLLM or llama.cpp prompt lookup,
which drafts a hunks answer's SEARCH lines from the region in the prompt and its REPLACE lines from
the SEARCH just written), a `prediction` field (OpenAI, which a hunks answer does not get), or none.
Each default is the crossover of the two formats on the loopback backend calibrated to real backends
(`lsp_server/testing/profiles.py`: this machine's vLLM pair and vLLM with n-gram speculation on a GPU
for "prompt", OpenAI's Predicted Outputs for "field" and, without its field, for "off"), never on
its perfect model, the upper bound, which said 150 and 600. On every calibrated profile, every small
edit of the bench's corpus in a region of 99 lines or more was faster in hunks, and every rewrite (up
to 97 lines) faster in region, whichever way the prediction went: 100 lines for all three. The table
per profile is in `benchmarks/README.md`, "Backend profiles"; the figures in
`benchmarks/recorded/2026-12-01-profiles.md`.

Run by size alone, `auto` would measure only one format per size, and its history would never
compare. So in the size bucket that holds the threshold, where the bench found the formats closest,
it tries the other format after every MIN_SAMPLES runs of the usual one, until the other has
MIN_SAMPLES runs too: three refactors, said in their reason, buy a choice measured on this backend.
Elsewhere the measured gap is wide, and the size rule stands. Only the server tries; the CLI's
refactors teach `auto` through the history as the server's do, but a one-off command runs the
format its user can predict, and the bench decides by size alone.
"""

from __future__ import annotations

import statistics
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass

from ..config.schema import EditFormat
from ..stats.history import HistoryRecord
from ..text import count_of

FORMATS = ("region", "hunks")
# Region sizes (lines) whose refactors are compared with each other: up to 50, 200, 800, more.
SIZE_BUCKETS = (50, 200, 800)
MIN_SAMPLES = 3  # per format and bucket, before the history outweighs the size rule
MIN_SUCCESS = 0.8  # a format that applied less often than this is not chosen from history
_KEPT = 40  # samples per (backend, format, bucket): the recent ones say most about the backend now
# `hunks_min_lines` when the config leaves it unset (0), by how the backend gets the prediction: the
# crossovers on the calibrated profiles (the module docstring), which came out alike for all three.
DEFAULT_HUNKS_MIN_LINES = {"prompt": 100, "field": 100, "off": 100}
_DRAFTED_BY = {
    "prompt": "a server that drafts from the prompt",
    "field": "a prediction field",
    "off": "no prediction",
}


def hunks_min_lines(configured: int, prediction_via: str) -> tuple[int, str]:
    """The threshold `auto` uses without history, and how to name it in a reason."""
    if configured:
        return configured, f"hunks_min_lines {configured}"
    lines = DEFAULT_HUNKS_MIN_LINES.get(prediction_via, DEFAULT_HUNKS_MIN_LINES["off"])
    return lines, f"{lines} (hunks_min_lines with {_DRAFTED_BY.get(prediction_via, 'no prediction')})"


@dataclass(frozen=True)
class FormatChoice:
    format: str  # "region" | "hunks"
    reason: str  # for the stats and the one-line summary
    # `auto` chose it, and may choose again (pipeline/attempt.py: a region answer that cannot fit the
    # context window is asked as hunks; a hunks answer that does not apply, in the region format);
    # False: set by the user, or already a second choice.
    automatic: bool = True

    @property
    def retry_in_region(self) -> bool:
        """`auto` chose hunks: an answer whose blocks do not apply is asked again in the region format."""
        return self.automatic and self.format == "hunks"


def size_bucket(lines: int) -> str:
    low = 0
    for high in SIZE_BUCKETS:
        if lines <= high:
            return f"{low + 1}-{high} lines"
        low = high
    return f"over {SIZE_BUCKETS[-1]} lines"


@dataclass(frozen=True)
class _Sample:
    applied: bool
    latency_ms: float


class FormatHistory:
    """Per backend, format and region size: how refactors went (applied or not, how long they took)."""

    def __init__(self, tries: bool = True) -> None:
        self._samples: dict[tuple[str, str, str], deque[_Sample]] = defaultdict(lambda: deque(maxlen=_KEPT))
        # Whether `auto` may try the other format (`turn_to_try`): only where the outcome will be
        # recorded, or every refactor would be the first try again.
        self.tries = tries

    def record(self, backend: str, edit_format: str, region_lines: int, applied: bool, latency_ms: float) -> None:
        self._samples[(backend, edit_format, size_bucket(region_lines))].append(_Sample(applied, latency_ms))

    def learn(self, records: Iterable[HistoryRecord]) -> FormatHistory:
        """Learn from the refactor history (one record per refactor)."""
        for stats in records:
            if stats.edit_format not in FORMATS or not stats.region_lines or not stats.served_by:
                continue
            if stats.concurrency > 1:  # one of a batch run at once: its latency was measured under load
                continue
            if stats.retried_from in FORMATS:
                self.record(stats.served_by, stats.retried_from, stats.region_lines, False, stats.first_attempt_ms or 0)
            # Applied, or shown and left to the user (`applied` None: the CLI's diff, an editor that never
            # confirmed): the format gave an edit. Other failures (refused, rejected) say nothing about it.
            if stats.edit_format_failed or stats.applied is not False:
                applied = not stats.edit_format_failed
                self.record(stats.served_by, stats.edit_format, stats.region_lines, applied, stats.latency_ms)
        return self

    def turn_to_try(self, backend: str, region_lines: int, usual: str, other: str) -> int | None:
        """The number (1-based) of the run of `other` due now, while `other` has too few runs of this
        size to compare; None when `usual` should run. One try after every MIN_SAMPLES runs of `usual`."""
        if not self.tries:
            return None
        bucket = size_bucket(region_lines)
        tried = len(self._samples.get((backend, other, bucket), ()))
        runs = len(self._samples.get((backend, usual, bucket), ()))
        return tried + 1 if tried < MIN_SAMPLES and runs >= MIN_SAMPLES * (tried + 1) else None

    def medians(self, backend: str, region_lines: int) -> dict[str, tuple[float, float, int]] | None:
        """format → (median latency of applied runs in ms, success rate, samples), when every format
        has enough samples for this size; None otherwise."""
        bucket = size_bucket(region_lines)
        found: dict[str, tuple[float, float, int]] = {}
        for edit_format in FORMATS:
            samples = self._samples.get((backend, edit_format, bucket))
            if not samples or len(samples) < MIN_SAMPLES:
                return None
            applied = [s.latency_ms for s in samples if s.applied]
            rate = len(applied) / len(samples)
            found[edit_format] = (statistics.median(applied) if applied else float("inf"), rate, len(samples))
        return found


def choose_format(
    requested: EditFormat,
    requested_by: str,
    region_lines: int,
    configured_min_lines: int,
    backend: str,
    history: FormatHistory | None,
    prediction_via: str = "field",
    marker: str | None = None,
) -> FormatChoice:
    """The format a refactor runs in, and why, in words. `configured_min_lines`: refactor.hunks_min_lines
    (0: the default for how the backend gets the prediction, `prediction_via`); `marker`: a line of the
    region that a SEARCH/REPLACE answer would read as one of its markers (`hunks.marker_line`)."""
    if requested != "auto":
        return FormatChoice(requested, f"set by {requested_by}", automatic=False)
    if marker is not None:
        # A block around such a line has several readings (hunks.py): the region format has none.
        return FormatChoice("region", f"auto, the region holds a `{marker}` line, which SEARCH/REPLACE blocks use")
    medians = history.medians(backend, region_lines) if history is not None else None
    if medians is not None:
        usable = {f: m for f, m in medians.items() if m[1] >= MIN_SUCCESS}
        if usable:
            chosen = min(usable, key=lambda f: usable[f][0])
            figures = " vs ".join(f"{f} {m[0] / 1000:.1f} s, {m[1]:.0%} applied" for f, m in sorted(medians.items()))
            return FormatChoice(chosen, f"auto, by {backend}'s history for {size_bucket(region_lines)}: {figures}")
    threshold, named = hunks_min_lines(configured_min_lines, prediction_via)
    usual, other = ("hunks", "region") if region_lines >= threshold else ("region", "hunks")
    if history is not None and size_bucket(region_lines) == size_bucket(threshold):
        turn = history.turn_to_try(backend, region_lines, usual, other)
        if turn is not None:
            return FormatChoice(
                other,
                f"auto, trying {other} ({turn} of {MIN_SAMPLES}) against {usual}, the size rule's choice "
                f"({count_of(region_lines, 'line')} {'≥' if usual == 'hunks' else '<'} {named}), "
                f"to choose by {backend}'s history for {size_bucket(region_lines)}",
            )
    if usual == "hunks":
        return FormatChoice("hunks", f"auto, {count_of(region_lines, 'line')} ≥ {named}")
    return FormatChoice("region", f"auto, {count_of(region_lines, 'line')} < {named}")
