"""The edit-format section of a bench's report (--edit-format): every task in every mode against its
ideal time, then the groups (small edits by region size, rewrites) and all tasks.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..stats.measured import median
from .ideal import Ideal, changed_chars, changed_lines
from .runs import MODE_LABELS, Mode, Run, attributes
from .spread import Spread
from .tasks import Task, task_lines

# A region this long or longer is "large" in the edit-format report's groups: where re-emitting the
# region costs most and answering only the changes should pay.
LARGE_REGION_LINES = 200
# The edit-format report's groups, in its order.
GROUPS = (
    f"small edits, regions under {LARGE_REGION_LINES} lines",
    f"small edits, regions of {LARGE_REGION_LINES}+ lines",
    "rewrites",
)


@dataclass(frozen=True)
class FormatRuns:
    """One mode's runs, of one task or of several: what the user waited, and how far that is from ideal."""

    mode: Mode
    runs: int
    measured: int
    errors: int
    refused: int
    waited_ms: Spread | None  # request sent → answer ready, a hunks attempt that did not apply included
    ideal_ratio: Spread | None  # over runs: waited ÷ the run's task's ideal time
    output_tokens: float | None  # median; OpenAI's rejected prediction tokens left out
    completion_tokens: float | None  # median, as billed
    accepted_prediction_tokens: int | None  # summed over the runs that reported acceptance
    rejected_prediction_tokens: int | None
    matches_expected: int
    # The format each measured run ended in: "region", "hunks", or "hunks → region" (retried).
    formats: dict[str, int]

    @property
    def label(self) -> str:
        return MODE_LABELS[self.mode]

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["label"] = self.label
        return data


@dataclass(frozen=True)
class TaskFormats:
    """One task in every mode, against its ideal time."""

    name: str
    kind: str
    language: str
    group: str
    lines: str | None
    at: int | None
    region_lines: int
    changed_lines: int  # lines the expected edit touches (ideal.changed_lines)
    ideal: Ideal | None  # None: the reference mode measured nothing usable
    modes: tuple[FormatRuns, ...]  # in the plan's order

    def mode(self, name: Mode) -> FormatRuns | None:
        return next((m for m in self.modes if m.mode == name), None)

    @property
    def auto_speedup(self) -> float | None:
        """Region + prediction's median wait ÷ auto's: how much sooner auto answers."""
        return _wait_ratio(self.mode("prediction"), self.mode("auto"))

    @property
    def auto_vs_best(self) -> float | None:
        """Auto's median wait ÷ the shorter of region + prediction's and hunks': 1.0 is as good as the better."""
        auto, best = self.mode("auto"), _faster(self.mode("prediction"), self.mode("hunks"))
        return _wait_ratio(auto, best)

    def to_dict(self) -> dict[str, Any]:
        return {
            **attributes(self, "name", "kind", "language", "group", "lines", "at", "region_lines", "changed_lines"),
            "ideal": dataclasses.asdict(self.ideal) if self.ideal is not None else None,
            **attributes(self, "auto_speedup", "auto_vs_best"),
            "modes": {m.mode: m.to_dict() for m in self.modes},
        }


def _wait_ratio(a: FormatRuns | None, b: FormatRuns | None) -> float | None:
    if a is None or b is None or a.waited_ms is None or b.waited_ms is None or not b.waited_ms.median:
        return None
    return a.waited_ms.median / b.waited_ms.median


def _faster(a: FormatRuns | None, b: FormatRuns | None) -> FormatRuns | None:
    timed = [m for m in (a, b) if m is not None and m.waited_ms is not None]
    if len(timed) < 2:
        return None  # "the better of region and hunks" needs both
    return min(timed, key=lambda m: m.waited_ms.median if m.waited_ms is not None else float("inf"))


@dataclass(frozen=True)
class GroupFormats:
    """Several tasks together (a group, or all): every mode over their runs, and the medians over tasks."""

    name: str
    tasks: tuple[str, ...]
    modes: tuple[FormatRuns, ...]
    auto_speedup: float | None  # median over the tasks of TaskFormats.auto_speedup
    auto_vs_best: float | None  # median over the tasks of TaskFormats.auto_vs_best
    auto_vs_best_worst: float | None  # the largest, over the tasks

    def mode(self, name: Mode) -> FormatRuns | None:
        return next((m for m in self.modes if m.mode == name), None)

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["tasks"] = list(self.tasks)
        data["modes"] = {m.mode: m.to_dict() for m in self.modes}
        return data


@dataclass(frozen=True)
class FormatsReport:
    """--edit-format: every task in every mode, against its ideal time; the groups and all tasks."""

    modes: tuple[Mode, ...]
    tasks: tuple[TaskFormats, ...]
    groups: tuple[GroupFormats, ...]  # the groups that have tasks, then all tasks
    runs: tuple[Run, ...]  # every run, in running order

    def to_dict(self) -> dict[str, Any]:
        return {
            "modes": list(self.modes),
            "tasks": [t.to_dict() for t in self.tasks],
            "groups": [g.to_dict() for g in self.groups],
        }

    @property
    def measured(self) -> bool:
        """Some run of some mode has a distance to its ideal."""
        return any(m.ideal_ratio is not None for g in self.groups for m in g.modes)


def task_group(task: Task) -> str:
    """The edit-format report's group: rewrites, and small edits by region size."""
    if task.kind == "heavy-rewrite":
        return GROUPS[2]
    return GROUPS[1] if task.region_lines >= LARGE_REGION_LINES else GROUPS[0]


def _format_of(run: Run) -> str | None:
    stats = run.stats
    if stats is None or not stats.edit_format:
        return None
    return f"{stats.retried_from} → {stats.edit_format}" if stats.retried_from else stats.edit_format


def summarize_format_runs(mode: Mode, runs: Sequence[Run], ideals: dict[str, Ideal | None]) -> FormatRuns:
    """One mode's runs; `ideals` maps each run's task to its ideal time."""
    measured = [r.stats for r in runs if r.stats is not None]
    reported = [
        (s.accepted_prediction_tokens, s.rejected_prediction_tokens)
        for s in measured
        if s.accepted_prediction_tokens is not None and s.rejected_prediction_tokens is not None
    ]
    ratios = []
    for run in runs:
        ideal = ideals.get(run.task)
        if run.waited_ms is not None and ideal is not None and ideal.ideal_ms > 0:
            ratios.append(run.waited_ms / ideal.ideal_ms)
    formats: dict[str, int] = {}
    for run in runs:
        if (name := _format_of(run)) is not None:
            formats[name] = formats.get(name, 0) + 1
    return FormatRuns(
        mode=mode,
        runs=len(runs),
        measured=len(measured),
        errors=sum(1 for r in runs if r.outcome == "error"),
        refused=sum(1 for r in runs if r.outcome == "refused"),
        waited_ms=Spread.of(r.waited_ms for r in runs),
        ideal_ratio=Spread.of(ratios),
        output_tokens=median(s.useful_tokens() for s in measured),
        completion_tokens=median(s.completion_tokens for s in measured),
        accepted_prediction_tokens=sum(a for a, _ in reported) if reported else None,
        rejected_prediction_tokens=sum(b for _, b in reported) if reported else None,
        matches_expected=sum(1 for r in runs if r.matches_expected),
        formats=dict(sorted(formats.items())),
    )


def _group(name: str, tasks: Sequence[TaskFormats], runs: Sequence[Run], modes: Sequence[Mode]) -> GroupFormats:
    names = {t.name for t in tasks}
    ideals = {t.name: t.ideal for t in tasks}
    speedups = [t.auto_speedup for t in tasks if t.auto_speedup is not None]
    versus = [t.auto_vs_best for t in tasks if t.auto_vs_best is not None]
    return GroupFormats(
        name=name,
        tasks=tuple(t.name for t in tasks),
        modes=tuple(
            summarize_format_runs(mode, [r for r in runs if r.mode == mode and r.task in names], ideals)
            for mode in modes
        ),
        auto_speedup=statistics.median(speedups) if speedups else None,
        auto_vs_best=statistics.median(versus) if versus else None,
        auto_vs_best_worst=max(versus) if versus else None,
    )


def summarize_formats(tasks: Sequence[Task], runs: Sequence[Run], modes: Sequence[Mode]) -> FormatsReport:
    """Every task in every mode against its ideal time, measured from the reference mode's runs (the
    region format without prediction) of the same task; then the groups, then all tasks."""
    summaries = []
    for task in tasks:
        start, end = task.span()
        region, expected = task.source[start:end], task.expected_region()
        mine = [r for r in runs if r.task == task.name]
        reference = [r.stats for r in mine if r.mode == "baseline" and r.stats is not None]
        ideal = Ideal.of(reference, changed_chars(region, expected))
        summaries.append(
            TaskFormats(
                name=task.name,
                kind=task.kind,
                language=task.language,
                group=task_group(task),
                lines=task_lines(task),
                at=task.at,
                region_lines=task.region_lines,
                changed_lines=changed_lines(region, expected),
                ideal=ideal,
                modes=tuple(
                    summarize_format_runs(mode, [r for r in mine if r.mode == mode], {task.name: ideal})
                    for mode in modes
                ),
            )
        )
    groups = []
    for name in GROUPS:
        if members := [t for t in summaries if t.group == name]:
            groups.append(_group(name, members, runs, modes))
    groups.append(_group("all tasks", summaries, runs, modes))
    return FormatsReport(tuple(modes), tuple(summaries), tuple(groups), tuple(runs))
