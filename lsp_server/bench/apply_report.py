"""The apply bench's report (`bench --kind apply`, bench/apply_bench.py) and its figures: per task, each
mode's median wall time; the prediction's speed-up (scoped without ÷ with it) and the scope's (a
whole-file merge ÷ the scoped one, both with the prediction), each the median over repetitions of the
ratio within one repetition; and over the tasks, the median of those. A ratio needs both merges correct
(their edits gave the expected file): a merge that failed did other work.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ..pipeline.totals import BatchTotals
from ..stats.measured import median
from .apply_tasks import ApplyTask, Skipped
from .report import Meta
from .spread import Spread

ApplyMode = Literal["prediction", "baseline", "whole-file"]
APPLY_MODES: tuple[ApplyMode, ...] = ("prediction", "baseline", "whole-file")
MODE_NAMES: dict[ApplyMode, str] = {
    "prediction": "scoped + prediction",
    "baseline": "scoped, no prediction",
    "whole-file": "whole file + prediction",
}


@dataclass(frozen=True)
class ApplyRun:
    """One merge of one task's snippet, in one mode."""

    task: str
    mode: ApplyMode
    repetition: int
    position: int  # where it ran among the task's three merges of this repetition (0: first)
    backend: str
    parts: int  # the regions merged (1 for a whole-file merge)
    predicted_chars: int  # what the prediction (or the region, without it) held, over the parts
    wall_ms: float
    totals: BatchTotals
    ok: bool  # every part merged
    matches_expected: bool
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["totals"] = self.totals.to_dict()
        return data


@dataclass(frozen=True)
class ApplyReport:
    meta: Meta
    tasks: tuple[ApplyTask, ...]
    skipped: tuple[Skipped, ...]
    runs: tuple[ApplyRun, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "apply",
            "meta": dataclasses.asdict(self.meta),
            "summary": summarize_apply(self).to_dict(),
            "skipped": [dataclasses.asdict(s) for s in self.skipped],
            "runs": [run.to_dict() for run in self.runs],
        }

    def to_json(self) -> str:
        import json

        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


def runs_of(report: ApplyReport, task: str, mode: ApplyMode) -> Sequence[ApplyRun]:
    return [run for run in report.runs if run.task == task and run.mode == mode]


@dataclass(frozen=True)
class ApplyTaskSummary:
    task: str
    lines: int
    parts: int
    predicted_chars: dict[str, int]  # per mode: scoped (the definitions) and whole-file (the file)
    wall_ms: dict[str, Spread | None]  # per mode
    correct: dict[str, str]  # per mode: "3/3"
    prediction_speedup: float | None  # scoped: without ÷ with the prediction
    scope_speedup: float | None  # with the prediction: whole file ÷ scoped


@dataclass(frozen=True)
class ApplySummary:
    tasks: tuple[ApplyTaskSummary, ...]
    prediction_speedup: float | None  # the median over tasks
    scope_speedup: float | None
    largest: ApplyTaskSummary | None  # the task of the longest file: the figure the issue names

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ratio(report: ApplyReport, task: str, over: ApplyMode, under: ApplyMode) -> float | None:
    """The median, over repetitions, of over's wall time ÷ under's, where both merged as expected."""
    slow = {r.repetition: r for r in runs_of(report, task, over) if r.matches_expected}
    fast = {r.repetition: r for r in runs_of(report, task, under) if r.matches_expected}
    return median(slow[k].wall_ms / fast[k].wall_ms for k in slow.keys() & fast.keys() if fast[k].wall_ms > 0)


def summarize_apply(report: ApplyReport) -> ApplySummary:
    summaries = []
    for task in report.tasks:
        runs: dict[str, list[ApplyRun]] = {mode: list(runs_of(report, task.name, mode)) for mode in APPLY_MODES}
        summaries.append(
            ApplyTaskSummary(
                task=task.name,
                lines=task.lines,
                parts=len(task.parts),
                predicted_chars={m: r[0].predicted_chars for m, r in runs.items() if r and m != "baseline"},
                wall_ms={m: Spread.of(run.wall_ms for run in r if run.matches_expected) for m, r in runs.items()},
                correct={m: f"{sum(run.matches_expected for run in r)}/{len(r)}" for m, r in runs.items()},
                prediction_speedup=_ratio(report, task.name, "baseline", "prediction"),
                scope_speedup=_ratio(report, task.name, "whole-file", "prediction"),
            )
        )
    largest = max(summaries, key=lambda s: s.lines, default=None)
    return ApplySummary(
        tasks=tuple(summaries),
        prediction_speedup=median(s.prediction_speedup for s in summaries),
        scope_speedup=median(s.scope_speedup for s in summaries),
        largest=largest,
    )
