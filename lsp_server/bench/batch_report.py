"""A bench of batch tasks: what each batch run measured, its summaries per task, and the JSON report.

A batch run is one task's targets through `runner.Runner` in one mode (with or without the
prediction) at one concurrency (1: one after another; N: `--jobs`). Its figures are the batch's
(totals.BatchTotals: the wall time, output tokens ÷ wall time "together", the exact acceptance)
and each target's own, as a `Run` of the bench (stats, answer, whether it matches the target's
expected definition, and how closely).

The speed-ups are ratios of wall times of the same task in the same repetition, then the median over
repetitions, as the bench's pairs are: from concurrency, one at a time ÷ N at once (each mode); from
prediction, without ÷ with (each concurrency); combined, without one at a time ÷ with N at once.
A repetition in which a target of either run got no answer at all gives no ratio: its wall time
would not be the same work.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..pipeline.totals import BatchTotals
from ..stats.measured import median
from .report import Meta
from .runs import Mode, Run, attributes
from .spread import Spread

MODES: tuple[Mode, ...] = ("prediction", "baseline")


@dataclass(frozen=True)
class BatchTaskRun:
    """One batch task in one mode at one concurrency, once."""

    task: str
    mode: Mode
    concurrency: int  # refactors in flight at most (1: one after another)
    repetition: int
    position: int  # where it ran among the task's four runs of this repetition (0: first)
    backend: str
    wall_ms: float  # the first target planned → the last answer in
    in_flight: int  # the most targets streaming at once, by the bench's count (Runner.running)
    totals: BatchTotals
    targets: tuple[Run, ...]  # each target's, in the file's order
    definitions: tuple[str, ...]  # their names, in the same order
    file_matches_expected: bool  # every target's edit applied together gives the expected file

    @property
    def complete(self) -> bool:
        """Every target got an answer (applicable or not): the wall time covers the whole batch's work."""
        return all(run.stats is not None for run in self.targets)

    def to_dict(self) -> dict[str, Any]:
        plain = ("task", "mode", "concurrency", "repetition", "position", "backend", "wall_ms", "in_flight")
        return {
            **attributes(self, *plain, "file_matches_expected"),
            "totals": self.totals.to_dict(),
            "targets": [
                {"definition": name} | run.to_dict() for name, run in zip(self.definitions, self.targets, strict=True)
            ],
        }


@dataclass(frozen=True)
class BatchCell:
    """A task's runs in one mode at one concurrency, over the repetitions."""

    mode: Mode
    concurrency: int
    runs: int
    wall_ms: Spread | None
    tokens_per_s: float | None  # median over runs of the batch's output tokens ÷ its wall time
    accepted_prediction_tokens: int | None  # summed over the runs' targets that reported it exactly
    rejected_prediction_tokens: int | None
    target_latency_ms: Spread | None  # every target's own latency, over every run
    in_flight: int  # the fewest, over the runs, of each run's most targets streaming at once
    targets_run: int
    targets_matched: int  # answers equal to the target's expected definition
    expected_similarity: float | None  # median over the targets that got an applicable answer
    files_matched: int  # runs whose edits together gave the expected file
    refused: int  # targets whose answer came but could not be applied
    errors: int  # targets without an answer

    @property
    def acceptance_rate(self) -> float | None:
        a, r = self.accepted_prediction_tokens, self.rejected_prediction_tokens
        return a / (a + r) if a is not None and r is not None and a + r > 0 else None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"acceptance_rate": self.acceptance_rate}


def summarize_cell(mode: Mode, concurrency: int, runs: Sequence[BatchTaskRun]) -> BatchCell:
    targets = [target for run in runs for target in run.targets]
    exact = [run.totals for run in runs if run.totals.accepted_prediction_tokens is not None]
    return BatchCell(
        mode=mode,
        concurrency=concurrency,
        runs=len(runs),
        wall_ms=Spread.of(run.wall_ms for run in runs),
        tokens_per_s=median(run.totals.tokens_per_s for run in runs),
        accepted_prediction_tokens=sum(t.accepted_prediction_tokens or 0 for t in exact) if exact else None,
        rejected_prediction_tokens=sum(t.rejected_prediction_tokens or 0 for t in exact) if exact else None,
        target_latency_ms=Spread.of(target.latency_ms for target in targets),
        in_flight=min((run.in_flight for run in runs), default=0),
        targets_run=len(targets),
        targets_matched=sum(1 for target in targets if target.matches_expected),
        expected_similarity=median(target.expected_similarity for target in targets),
        files_matched=sum(1 for run in runs if run.file_matches_expected),
        refused=sum(1 for target in targets if target.outcome == "refused"),
        errors=sum(1 for target in targets if target.outcome == "error"),
    )


@dataclass(frozen=True)
class BatchTaskSummary:
    name: str
    language: str
    targets: int
    jobs: int  # N: the concurrent runs' refactors in flight at most
    cells: tuple[BatchCell, ...]  # each mode at 1, then at N
    # The speed-ups, each the median over repetitions (None: no repetition measured both runs whole).
    concurrency_speedup: dict[Mode, float | None]  # one at a time ÷ N at once, in each mode
    prediction_speedup: dict[int, float | None]  # without ÷ with, at 1 and at N
    combined_speedup: float | None  # without, one at a time ÷ with, N at once

    def cell(self, mode: Mode, concurrency: int) -> BatchCell:
        return next(c for c in self.cells if c.mode == mode and c.concurrency == concurrency)

    def to_dict(self) -> dict[str, Any]:
        return {
            **attributes(self, "name", "language", "targets", "jobs"),
            "concurrency_speedup": dict(self.concurrency_speedup),
            "prediction_speedup": {str(level): value for level, value in self.prediction_speedup.items()},
            "combined_speedup": self.combined_speedup,
            "cells": [cell.to_dict() for cell in self.cells],
        }


def _ratio(runs: Sequence[BatchTaskRun], slow: tuple[Mode, int], fast: tuple[Mode, int]) -> float | None:
    """The median over repetitions of the wall time of `slow` ÷ that of `fast` (each a mode and a
    concurrency), counting only the repetitions in which both runs got every target's answer."""
    by_key = {(r.mode, r.concurrency, r.repetition): r for r in runs}
    ratios = []
    for repetition in sorted({r.repetition for r in runs}):
        a, b = by_key.get((*slow, repetition)), by_key.get((*fast, repetition))
        if a is not None and b is not None and a.complete and b.complete and b.wall_ms > 0:
            ratios.append(a.wall_ms / b.wall_ms)
    return median(ratios)


def summarize_task(name: str, language: str, targets: int, jobs: int, runs: Sequence[BatchTaskRun]) -> BatchTaskSummary:
    levels = (1, jobs)
    cells = tuple(
        summarize_cell(mode, level, [r for r in runs if r.mode == mode and r.concurrency == level])
        for level in levels
        for mode in MODES
    )
    return BatchTaskSummary(
        name=name,
        language=language,
        targets=targets,
        jobs=jobs,
        cells=cells,
        concurrency_speedup={mode: _ratio(runs, (mode, 1), (mode, jobs)) for mode in MODES},
        prediction_speedup={level: _ratio(runs, ("baseline", level), ("prediction", level)) for level in levels},
        combined_speedup=_ratio(runs, ("baseline", 1), ("prediction", jobs)),
    )


@dataclass(frozen=True)
class BatchReport:
    meta: Meta  # its `concurrency`: (1, N)
    jobs: int
    tasks: tuple[BatchTaskSummary, ...]
    runs: tuple[BatchTaskRun, ...]  # in running order

    @property
    def errors(self) -> int:
        """Targets that got no answer, over every run."""
        return sum(cell.errors for task in self.tasks for cell in task.cells)

    @property
    def measured(self) -> bool:
        """Some task has a speed-up: both modes or both concurrencies ran whole at least once."""
        return any(
            value is not None
            for task in self.tasks
            for value in (*task.concurrency_speedup.values(), *task.prediction_speedup.values())
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: meta, `batch` (jobs and the tasks' summaries) and every batch run with its targets."""
        return {
            "meta": self.meta.to_dict(),
            "batch": {"jobs": self.jobs, "tasks": [task.to_dict() for task in self.tasks]},
            "runs": [run.to_dict() for run in self.runs],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"
