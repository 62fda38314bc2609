"""A bench's results as typed summaries: per mode, per task and overall, per concurrency level, with
the header's facts; the edit-format section's are in `formats_report`, and `summarize` computes
these from the runs.

The JSON report is built from them at the edge (`Report.to_dict`); its keys are the contract that
readers of saved reports rely on, so they do not change when these types do.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..backend.metrics import SOURCE_APPROXIMATE
from ..config.schema import HunksForm
from .probes import DraftsCounted, Machine, ServerInfo
from .runs import Batch, Mode, Pair, attributes
from .spread import Spread

if TYPE_CHECKING:
    from .formats_report import FormatsReport


@dataclass(frozen=True)
class ModeSummary:
    """One mode's runs (with or without the prediction): medians of the timings, sums of the tokens."""

    runs: int
    measured: int
    errors: int
    refused: int
    latency_ms: Spread | None  # what each run waited: request sent → answer ready, a repair included
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
    # Runs whose answer brought a syntax error: applied once repaired, or refused after the repair. Their
    # time and cost count above, so a mode that needs repairs is not flattered by them.
    repaired: int = 0
    repair_failed: int = 0

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
        ratios = ("speedup", "speedup_min", "speedup_max", "total_time_ratio", "cost_ratio")
        return {
            **attributes(self, "pairs", *ratios, "same_text_pairs", "different_text_pairs"),
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
        head = attributes(self, "name", "kind", "language", "lines", "region_chars")
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
    hunks_form: HunksForm | None = None  # refactor.hunks_form: the form hunks answers were asked in, with --edit-format
    interrupted: str | None = None  # Ctrl-C ended the bench: how far it got (bench/interrupt.py)

    @property
    def profiles(self) -> dict[str, str]:
        """The loopback backend's profile each simulated server runs, by "with prediction" and "without"."""
        found = {}
        for label, server in (("with prediction", self.backend), ("without", self.baseline)):
            profile = (server.model_info or {}).get("profile") if server is not None else None
            if profile:
                found[label] = str(profile)
        return found

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
            del data["edit_formats"], data["hunks_min_lines"], data["hunks_form"]  # likewise without --edit-format
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
        counts the others' drafts too, so their sum overstates; the level's /metrics difference does not.
        A reading that counted more accepted than its answer's tokens is not kept at all
        (backend/acceptance.plausible): at a level of several, none kept says the same."""
        sources = self.summary.prediction.acceptance_sources
        return SOURCE_APPROXIMATE in sources or (self.concurrency > 1 and not sources)

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
