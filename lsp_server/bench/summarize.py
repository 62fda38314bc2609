"""How a bench's runs become its report: each mode's runs, a set of pairs, a concurrency level, and
the whole report (`build_report`); the types are in `report`.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from ..stats.measured import median
from .formats_report import FormatsReport
from .probes import DraftsCounted
from .report import LoadLevel, Meta, ModeSummary, PairsSummary, Report, TaskSummary, Throughput
from .runs import Batch, Mode, Pair, Run
from .spread import Spread
from .tasks import Task, task_lines


def summarize_mode(runs: Sequence[Run]) -> ModeSummary:
    measured = [r.stats for r in runs if r.stats is not None]
    reported = [
        (s.accepted_prediction_tokens, s.rejected_prediction_tokens)
        for s in measured
        if s.accepted_prediction_tokens is not None and s.rejected_prediction_tokens is not None
    ]
    total_accepted = sum(a for a, _ in reported) if reported else None
    total_rejected = sum(b for _, b in reported) if reported else None
    rate = None
    if total_accepted is not None and total_rejected is not None and total_accepted + total_rejected > 0:
        rate = total_accepted / (total_accepted + total_rejected)
    return ModeSummary(
        runs=len(runs),
        measured=len(measured),
        errors=sum(1 for r in runs if r.outcome == "error"),
        refused=sum(1 for r in runs if r.outcome == "refused"),
        latency_ms=Spread.of(s.waited_ms() for s in measured),  # a repair's time included
        ttft_ms=median(s.ttft_ms for s in measured),
        completion_tokens=median(s.completion_tokens for s in measured),
        output_tokens=median(s.useful_tokens() for s in measured),
        effective_tokens_per_s=median(r.effective_tokens_per_s for r in runs),  # None where not measured
        generation_tokens_per_s=median(s.tokens_per_s for s in measured),
        accepted_prediction_tokens=total_accepted,
        rejected_prediction_tokens=total_rejected,
        acceptance_rate=rate,
        acceptance_reported_runs=len(reported),
        acceptance_sources=tuple(sorted({s.acceptance_source for s in measured if s.acceptance_source})),
        matches_expected=sum(1 for r in runs if r.matches_expected),
        expected_similarity=median(r.expected_similarity for r in runs),
        cost=sum(s.cost for s in measured if s.cost is not None) if any(s.cost is not None for s in measured) else None,
        repaired=sum(1 for s in measured if s.repaired),
        repair_failed=sum(1 for s in measured if s.repaired is False),
    )


def _distinct(runs: list[Run], task: str) -> int:
    return len({r.output for r in runs if r.task == task and r.output is not None})


def summarize_pairs(pairs: Sequence[Pair]) -> PairsSummary:
    ratios = [p.speedup for p in pairs if p.speedup is not None]
    same = [p.same_text for p in pairs]
    measured = [p for p in pairs if p.speedup is not None]
    total_with = sum(p.prediction.waited_ms or 0 for p in measured)
    total_without = sum(p.baseline.waited_ms or 0 for p in measured)
    by_mode: dict[Mode, list[Run]] = {
        "prediction": [p.prediction for p in pairs],
        "baseline": [p.baseline for p in pairs],
    }
    return PairsSummary(
        pairs=len(pairs),
        speedup=statistics.median(ratios) if ratios else None,
        speedup_min=min(ratios) if ratios else None,
        speedup_max=max(ratios) if ratios else None,
        total_time_ratio=total_without / total_with if total_with else None,
        same_text_pairs=sum(1 for s in same if s),
        different_text_pairs=sum(1 for s in same if s is False),
        differ_after_chars=tuple(sorted(p.common_prefix_chars or 0 for p in pairs if p.same_text is False)),
        distinct_outputs={
            mode: max((_distinct(runs, task) for task in {r.task for r in runs}), default=0)
            for mode, runs in by_mode.items()
        },
        prediction=summarize_mode(by_mode["prediction"]),
        baseline=summarize_mode(by_mode["baseline"]),
    )


def summarize_level(
    concurrency: int,
    pairs: Sequence[Pair],
    batches: Sequence[Batch],
    wall_s: float,
    metrics_during_level: DraftsCounted | None = None,
) -> LoadLevel:
    return LoadLevel(
        concurrency=concurrency,
        wall_s=wall_s,
        summary=summarize_pairs(pairs),
        prediction=Throughput.of([b for b in batches if b.mode == "prediction"]),
        baseline=Throughput.of([b for b in batches if b.mode == "baseline"]),
        batches=tuple(batches),
        metrics_during_level=metrics_during_level,
    )


def build_report(
    tasks: Sequence[Task],
    pairs: Sequence[Pair],
    meta: Meta,
    load: Sequence[LoadLevel] = (),
    formats: FormatsReport | None = None,
) -> Report:
    summaries = []
    for task in tasks:
        start, end = task.span()
        summaries.append(
            TaskSummary(
                name=task.name,
                kind=task.kind,
                language=task.language,
                lines=task_lines(task),
                region_chars=end - start,
                summary=summarize_pairs([p for p in pairs if p.task == task.name]),
                at=task.at,
            )
        )
    return Report(meta, tuple(summaries), summarize_pairs(pairs), tuple(pairs), tuple(load), formats)
