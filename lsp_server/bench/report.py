"""A bench's results as typed summaries: per mode, per task and overall, per concurrency level, per
edit format with the distance to the ideal time (--edit-format), with the header's facts.

The JSON report is built from them at the edge (`Report.to_dict`); its keys are the contract that
readers of saved reports rely on, so they do not change when these types do.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..metrics import SOURCE_APPROXIMATE
from ..stats import median
from .ideal import Ideal, changed_chars, changed_lines
from .probes import DraftsCounted, Machine, ServerInfo
from .runs import MODE_LABELS, Batch, Mode, Pair, Run
from .tasks import Task

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
class Spread:
    median: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Iterable[float | int | None]) -> Spread | None:
        present = [float(v) for v in values if v is not None]
        if not present:
            return None
        return cls(statistics.median(present), min(present), max(present))


@dataclass(frozen=True)
class ModeSummary:
    """One mode's runs (with or without the prediction): medians of the timings, sums of the tokens."""

    runs: int
    measured: int
    errors: int
    refused: int
    latency_ms: Spread | None
    ttft_ms: float | None
    completion_tokens: float | None  # as billed
    output_tokens: float | None  # OpenAI's rejected tokens left out
    effective_tokens_per_s: float | None
    generation_tokens_per_s: float | None
    accepted_prediction_tokens: int | None  # summed over the runs that reported acceptance
    rejected_prediction_tokens: int | None
    acceptance_rate: float | None
    acceptance_reported_runs: int
    acceptance_sources: tuple[str, ...]
    matches_expected: int
    expected_similarity: float | None
    cost: float | None = None  # summed over the measured runs, when the backend's prices are set

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["acceptance_sources"] = list(self.acceptance_sources)
        return data


@dataclass(frozen=True)
class PairsSummary:
    """A set of pairs (one task's, or all): the speedup and whether both modes wrote the same text."""

    pairs: int
    speedup: float | None  # median over pairs of latency without ÷ latency with prediction
    speedup_min: float | None
    speedup_max: float | None
    total_time_ratio: float | None
    same_text_pairs: int
    different_text_pairs: int
    differ_after_chars: tuple[int, ...]
    # The same mode's answers to the same task across repetitions: one, when the server is deterministic.
    distinct_outputs: dict[Mode, int]
    prediction: ModeSummary
    baseline: ModeSummary

    @property
    def cost_ratio(self) -> float | None:
        """Cost with ÷ cost without the prediction (OpenAI bills the rejected prediction tokens)."""
        with_, without = self.prediction.cost, self.baseline.cost
        return with_ / without if with_ is not None and without else None

    @property
    def errors(self) -> int:
        return self.prediction.errors + self.baseline.errors

    @property
    def refused(self) -> int:
        return self.prediction.refused + self.baseline.refused

    def to_dict(self) -> dict[str, Any]:
        return {
            "pairs": self.pairs,
            "speedup": self.speedup,
            "speedup_min": self.speedup_min,
            "speedup_max": self.speedup_max,
            "total_time_ratio": self.total_time_ratio,
            "cost_ratio": self.cost_ratio,
            "same_text_pairs": self.same_text_pairs,
            "different_text_pairs": self.different_text_pairs,
            "differ_after_chars": list(self.differ_after_chars),
            "distinct_outputs": dict(self.distinct_outputs),
            "prediction": self.prediction.to_dict(),
            "baseline": self.baseline.to_dict(),
        }


@dataclass(frozen=True)
class TaskSummary:
    name: str
    kind: str
    language: str
    lines: str | None  # "START:END" as the task gives it (or its scope chose); None: the whole file
    region_chars: int
    summary: PairsSummary
    at: int | None = None  # the task's cursor line, when it names one instead of lines

    def to_dict(self) -> dict[str, Any]:
        head = {k: getattr(self, k) for k in ("name", "kind", "language", "lines", "region_chars")}
        if self.at is not None:
            head["at"] = self.at
        return head | self.summary.to_dict()


@dataclass(frozen=True)
class Meta:
    """The report's header: what ran, against what, where."""

    date: str
    refactor_lsp: str
    command: str
    backend: ServerInfo
    baseline: ServerInfo | None  # None: the same backend, without the `prediction` field
    tasks_dir: str
    repetitions: int
    max_tokens: int
    temperature: float
    order: str
    note: str
    machine: Machine
    wall_s: float
    metrics_during_bench: DraftsCounted | None = None
    concurrency: tuple[int, ...] = (1,)  # the levels run, lowest first; the per-task table is at the first
    edit_formats: tuple[str, ...] = ()  # --edit-format; empty: not asked
    hunks_min_lines: int | None = None  # what `auto` decided by, with --edit-format

    @property
    def simulated(self) -> bool:
        """A server said its figures are simulated (the loopback test backend does, in /models)."""
        servers = [s for s in (self.backend, self.baseline) if s is not None]
        return any("simulated" in str((s.model_info or {}).get("owned_by", "")).lower() for s in servers)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        data["backend"] = self.backend.to_dict()
        data["baseline"] = self.baseline.to_dict() if self.baseline is not None else None
        data["machine"] = self.machine.to_dict()
        if self.metrics_during_bench is None:
            del data["metrics_during_bench"]
        else:
            data["metrics_during_bench"] = self.metrics_during_bench.to_dict()
        if self.concurrency == (1,):
            del data["concurrency"]  # a report without --concurrency reads as it always did
        else:
            data["concurrency"] = list(self.concurrency)
        if not self.edit_formats:
            del data["edit_formats"], data["hunks_min_lines"]  # likewise without --edit-format
        else:
            data["edit_formats"] = list(self.edit_formats)
        return data


@dataclass(frozen=True)
class Throughput:
    """One mode's batches at one concurrency: what the server delivered to all of their requests together."""

    batches: int
    requests: int
    output_tokens: int  # summed over every answer, as `Run.useful_tokens` counts them
    busy_s: float  # the batches' wall times (first request sent → last answer ended), summed
    streaming_at_once: int | None  # the fewest, over the batches, of each batch's peak; None: no batch

    @property
    def aggregate_tokens_per_s(self) -> float | None:
        return self.output_tokens / self.busy_s if self.busy_s > 0 else None

    @classmethod
    def of(cls, batches: Sequence[Batch]) -> Throughput:
        return cls(
            batches=len(batches),
            requests=sum(b.concurrency for b in batches),
            output_tokens=sum(b.output_tokens for b in batches),
            busy_s=sum(b.wall_s for b in batches),
            streaming_at_once=min((b.streaming_at_once for b in batches), default=None),
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"aggregate_tokens_per_s": self.aggregate_tokens_per_s}


@dataclass(frozen=True)
class LoadLevel:
    """Every task at one concurrency: the pairs' summary, and what the server delivered to all at once."""

    concurrency: int
    wall_s: float  # the whole level, both modes
    summary: PairsSummary  # over the level's pairs: a request of one batch and its place-mate in the other
    prediction: Throughput
    baseline: Throughput
    batches: tuple[Batch, ...]
    metrics_during_level: DraftsCounted | None = None

    @property
    def aggregate_ratio(self) -> float | None:
        """Aggregate tok/s with ÷ without the prediction: how much more the busy server delivered in all."""
        with_, without = self.prediction.aggregate_tokens_per_s, self.baseline.aggregate_tokens_per_s
        return with_ / without if with_ is not None and without else None

    @property
    def acceptance_approximate(self) -> bool:
        """Acceptance read per request from /metrics while the batch's other requests ran: each reading
        counts the others' drafts too, so their sum overstates; the level's /metrics difference does not."""
        return SOURCE_APPROXIMATE in self.summary.prediction.acceptance_sources

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "concurrency": self.concurrency,
            "wall_s": self.wall_s,
            "aggregate_ratio": self.aggregate_ratio,
            "throughput": {"prediction": self.prediction.to_dict(), "baseline": self.baseline.to_dict()},
        }
        data |= self.summary.to_dict()
        if self.metrics_during_level is not None:
            data["metrics_during_level"] = self.metrics_during_level.to_dict()
        data["batches"] = [batch.to_dict() for batch in self.batches]
        return data


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
            "name": self.name,
            "kind": self.kind,
            "language": self.language,
            "group": self.group,
            "lines": self.lines,
            "at": self.at,
            "region_lines": self.region_lines,
            "changed_lines": self.changed_lines,
            "ideal": dataclasses.asdict(self.ideal) if self.ideal is not None else None,
            "auto_speedup": self.auto_speedup,
            "auto_vs_best": self.auto_vs_best,
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


@dataclass(frozen=True)
class Report:
    meta: Meta
    tasks: tuple[TaskSummary, ...]
    total: PairsSummary
    pairs: tuple[Pair, ...]
    load: tuple[LoadLevel, ...] = ()  # one per --concurrency level; empty without the option
    formats: FormatsReport | None = None  # --edit-format

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: meta, tasks, total, pairs and every run (at the first concurrency level);
        with --concurrency also `load`, each level whole, its batches holding their runs; with
        --edit-format also `formats`, and `runs` holds the runs of every mode."""
        data = {
            "meta": self.meta.to_dict(),
            "tasks": [task.to_dict() for task in self.tasks],
            "total": self.total.to_dict(),
            "pairs": [pair.to_dict() for pair in self.pairs],
            "runs": [run.to_dict() for pair in self.pairs for run in (pair.prediction, pair.baseline)],
        }
        if self.load:
            data["load"] = [level.to_dict() for level in self.load]
        if self.formats is not None:
            data["formats"] = self.formats.to_dict()
            data["runs"] = [run.to_dict() for run in self.formats.runs]
        return data

    @property
    def errors(self) -> int:
        """Failed runs, at every level (with --edit-format, in every mode)."""
        if self.formats is not None:
            return sum(1 for run in self.formats.runs if run.outcome == "error")
        if not self.load:
            return self.total.errors
        return sum(level.summary.errors for level in self.load)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"


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
        latency_ms=Spread.of(s.latency_ms for s in measured),
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
    )


def _distinct(runs: list[Run], task: str) -> int:
    return len({r.output for r in runs if r.task == task and r.output is not None})


def summarize_pairs(pairs: Sequence[Pair]) -> PairsSummary:
    ratios = [p.speedup for p in pairs if p.speedup is not None]
    same = [p.same_text for p in pairs]
    measured = [p for p in pairs if p.speedup is not None]
    total_with = sum(p.prediction.latency_ms or 0 for p in measured)
    total_without = sum(p.baseline.latency_ms or 0 for p in measured)
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


def _lines(task: Task) -> str | None:
    return f"{task.lines[0]}:{task.lines[1]}" if task.lines else None


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
                lines=_lines(task),
                region_chars=end - start,
                summary=summarize_pairs([p for p in pairs if p.task == task.name]),
                at=task.at,
            )
        )
    return Report(meta, tuple(summaries), summarize_pairs(pairs), tuple(pairs), tuple(load), formats)


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
                lines=_lines(task),
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
