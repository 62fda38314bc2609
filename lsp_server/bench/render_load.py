"""The bench report's table under load (--concurrency): one row per level, its title and its notes."""

from __future__ import annotations

from .render_cells import acceptance, both, seconds, speedup
from .report import LoadLevel, Report

LOAD_COLUMNS = (
    "concurrency",
    "pairs",
    "with prediction, s",
    "without, s",
    "speedup",
    "end-to-end tok/s per request (with / without)",
    "aggregate tok/s (with / without)",
    "aggregate ratio",
    "accepted / rejected",
    "streaming at once (with / without)",
)


def _level_acceptance(level: LoadLevel) -> str:
    counted = level.metrics_during_level
    if level.acceptance_approximate and counted is not None:
        # Each request's /metrics reading also counted its batch-mates' drafts: the level's difference does not.
        return f"{counted.accepted:.0f} / {counted.drafted - counted.accepted:.0f} ({counted.rate:.0%}, /metrics)"
    return acceptance(level.summary.prediction)


def _at_once(a: int | None, b: int | None) -> str:
    return f"{'–' if a is None else a} / {'–' if b is None else b}"


def load_rows(report: Report) -> list[list[str]]:
    """One row per concurrency level, lowest first."""
    rows = []
    for level in report.load:
        row, p, b = level.summary, level.prediction, level.baseline
        ratio = level.aggregate_ratio
        rows.append(
            [
                str(level.concurrency),
                str(row.pairs),
                seconds(row.prediction.latency_ms),
                seconds(row.baseline.latency_ms),
                speedup(row),
                both(row.prediction.effective_tokens_per_s, row.baseline.effective_tokens_per_s, 1),
                both(p.aggregate_tokens_per_s, b.aggregate_tokens_per_s, 1),
                "–" if ratio is None else f"{ratio:.2f}×",
                _level_acceptance(level),
                _at_once(p.streaming_at_once, b.streaming_at_once),
            ]
        )
    return rows


def load_title(report: Report) -> str:
    if report.meta.simulated:
        return "Speed under load (SIMULATED: measured against the loopback test backend, not a real server)"
    return "Speed under load"


def load_footer_lines(report: Report) -> list[str]:
    lines = [
        "speed under load: at concurrency N each task runs as a batch of N identical requests sent at once in one "
        "mode, then N in the other (the first mode alternating as in the per-task table); a pair is a request and "
        "the one in the same place of the other mode's batch. Latency (median, min–max) and speedup (median over "
        "pairs) as above; end-to-end tok/s per request: the median over requests of output tokens ÷ latency (the "
        "JSON also has the generation rate, output tokens ÷ (latency − TTFT)); aggregate tok/s: all output tokens of "
        "a mode's batches ÷ those batches' wall time (first request sent → last answer ended), what the server "
        "delivered to everyone at once; aggregate ratio: with ÷ without; streaming at once: the fewest, over a "
        "mode's batches, of the most answers streaming (first token → end) at one instant, by the bench's clock."
    ]
    if any(level.acceptance_approximate and level.metrics_during_level for level in report.load):
        lines.append(
            "accepted / rejected marked /metrics: the server's counters over the level (read per request they "
            "would count each batch-mate's drafts too)."
        )
    for level in report.load:
        seen = [n for n in (level.prediction.streaming_at_once, level.baseline.streaming_at_once) if n is not None]
        if seen and min(seen) < level.concurrency:
            lines.append(
                f"WARNING: at concurrency {level.concurrency} some batch had only {min(seen)} answers streaming at "
                "once: the load was lighter than asked (answers too short to overlap, or requests queued on the way)."
            )
    return lines
