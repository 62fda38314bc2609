"""A bench of batch tasks: each task's definitions refactored as one batch, through the same
`runner.Runner` the server and `refactor --each definition` use, with and without the prediction,
one at a time and N at once (`--jobs`, default `refactor.concurrency`).

The backends are checked as the bench checks them (`plan.make_plan`: a vLLM or llama.cpp server
needs a baseline backend serving the same model without speculation). Each batch run gets its own
prompt-cache salt, which its targets share (they share the file, as a real batch's do), so no run
reads a prompt another run left on the server. Every run's answers count as the bench counts a
single task's: an answer that came but could not be applied is timed and kept, one that never came
is an error, and neither stops the bench.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..config.schema import Config
from ..formats.edits import apply_replacements
from ..pipeline.engine import Engine
from ..pipeline.request import Source, definition_items
from ..pipeline.runner import MAX_CONCURRENCY, Runner, TargetOutcome
from ..pipeline.totals import batch_totals
from ..regions import ScopeCache
from ..regions.targets import Target
from .batch_report import MODES, BatchReport, BatchTaskRun, summarize_task
from .batch_tasks import BatchTask
from .display import ProgressDisplay
from .interrupt import Interrupt, keeps, note_of
from .runs import Mode, Run
from .schedule import around, check_prediction_ran, record, similarity
from .setup import MODE_REQUESTS, BenchPlan, make_plan, max_concurrency
from .tasks import BenchError

BATCH_ORDER = (
    "each task's four batch runs (with and without prediction, one at a time and N at once) run in one order, "
    "then in the reverse order, task by task and repetition by repetition (ABCD, DCBA, ...); untimed warm-up "
    "requests first, N at once per backend"
)

Cell = tuple[Mode, int]  # a mode and a concurrency


@dataclass(frozen=True)
class BatchBenchPlan:
    bench: BenchPlan  # the backends, the config (temperature 0, --max-tokens), the repetitions
    tasks: tuple[BatchTask, ...]
    jobs: int  # N: refactors in flight at most in the concurrent runs

    @property
    def cells(self) -> tuple[Cell, ...]:
        """The four runs of a task, in the first repetition's order."""
        return tuple((mode, level) for level in (1, self.jobs) for mode in MODES)

    @property
    def targets(self) -> int:
        """Target refactors in all, for the progress."""
        return sum(len(task.targets) for task in self.tasks) * self.bench.repeat * len(self.cells)


def make_batch_plan(
    config: Config,
    backend_name: str | None,
    baseline_name: str | None,
    tasks: Sequence[BatchTask],
    repeat: int,
    max_tokens: int = 0,
    jobs: int | None = None,
) -> BatchBenchPlan:
    """Check the comparison before anything is sent. Raises BenchError."""
    if not tasks:
        raise BenchError("no batch task to run")
    bench = make_plan(config, backend_name, baseline_name, (), repeat, max_tokens)
    n = config.refactor.concurrency if jobs is None else jobs
    source = "--jobs" if jobs is not None else "refactor.concurrency"
    if n < 2:
        raise BenchError(
            f"{source} is {n}: a batch task runs one at a time and N at once, so N must be 2 or more (--jobs N)"
        )
    most = min(MAX_CONCURRENCY, max_concurrency())
    if n > most:
        raise BenchError(f"{source} {n} is more than the {most} refactors a batch runs at once")
    return BatchBenchPlan(bench, tuple(tasks), n)


def batch_schedule(plan: BatchBenchPlan) -> list[tuple[int, BatchTask, tuple[Cell, ...]]]:
    """(repetition, task, the order of its four runs): reversed every other time, so that each run is
    first as often as last and drift favours none."""
    order = []
    for repetition in range(plan.bench.repeat):
        for index, task in enumerate(plan.tasks):
            cells = plan.cells if (repetition + index) % 2 == 0 else plan.cells[::-1]
            order.append((repetition, task, cells))
    return order


def _target_run(outcome: TargetOutcome, expected: str, task: str, mode: Mode, repetition: int, first: bool) -> Run:
    """One target's outcome as a bench run, compared with its expected definition."""
    stats, result = outcome.stats, outcome.result
    labels = (task, mode, repetition, first, outcome.item.request.backend or "")
    if outcome.outcome in ("edit", "unchanged") and result is not None:
        return Run(
            *labels,
            outcome.outcome,
            stats=stats,
            output=result.new_region,
            matches_expected=result.new_region == expected,
            expected_similarity=similarity(result.new_region, expected),
        )
    return Run(*labels, "refused" if outcome.outcome == "refused" else "error", outcome.reason or "", stats=stats)


async def run_batch_task(
    engine: Engine,
    plan: BatchBenchPlan,
    task: BatchTask,
    cell: Cell,
    repetition: int,
    position: int,
    progress: ProgressDisplay | None = None,
) -> BatchTaskRun:
    """Every target of `task` through one Runner, in one mode, at most `at_once` in flight."""
    mode, at_once = cell
    backend = plan.bench.baseline if mode == "baseline" else plan.bench.backend
    prediction, _ = MODE_REQUESTS[mode]
    setting = "bench --max-tokens" if plan.bench.max_tokens else "refactor.max_tokens"
    request = task.request(backend.name, prediction, uuid.uuid4().hex, setting)
    items = definition_items(Source(task.file, request, plan.bench.config, ScopeCache()), task.targets)
    # By target: the Runner makes its own items (each request saying how many run beside it).
    expected = dict(zip(task.targets, task.expected_regions, strict=True))
    runs: dict[Target, Run] = {}
    peak = 0

    def changed() -> None:
        nonlocal peak
        peak = max(peak, len(batch.running))

    def done(outcome: TargetOutcome) -> None:
        run = _target_run(outcome, expected[outcome.item.target], task.name, mode, repetition, position == 0)
        runs[outcome.item.target] = run
        record(plan.bench, run)
        if progress is not None:
            progress.done(run)

    batch = Runner(engine, items, at_once, on_change=changed, on_done=done)
    outcomes = await batch.run()
    targets = tuple(runs[outcome.item.target] for outcome in outcomes)
    check_prediction_ran(plan.bench, targets)
    edits = [e for o in outcomes if o.outcome == "edit" and o.result is not None for e in o.result.edits]
    return BatchTaskRun(
        task=task.name,
        mode=mode,
        concurrency=batch.concurrency,
        repetition=repetition,
        position=position,
        backend=backend.name,
        wall_ms=batch.wall_ms,
        in_flight=peak,
        totals=batch_totals(outcomes, batch.wall_ms, batch.concurrency),
        targets=targets,
        definitions=tuple(t.name for t in task.targets),
        file_matches_expected=apply_replacements(task.source, edits) == task.expected,
    )


async def measure_batches(
    engine: Engine,
    plan: BatchBenchPlan,
    *,
    tasks_dir: Path,
    command: str,
    note: str = "",
    progress_stream: TextIO | None = None,
    interrupt: Interrupt | None = None,
) -> BatchReport:
    """The whole bench of batch tasks: every task's four batch runs per repetition, in `schedule.around`'s
    frame (warm-up N at once). Ctrl-C (`interrupt`) ends it with the batch runs measured. Raises BenchError."""

    async def run_all(progress: ProgressDisplay) -> list[BatchTaskRun]:
        runs: list[BatchTaskRun] = []
        async with keeps(interrupt):
            for repetition, task, cells in batch_schedule(plan):
                for position, cell in enumerate(cells):
                    progress.begin(task.name, cell[0], repetition, cell[1])
                    runs.append(await run_batch_task(engine, plan, task, cell, repetition, position, progress))
        return runs

    runs, frame = await around(
        engine, plan.bench, run_all, runs=plan.targets, at_once=plan.jobs, progress_stream=progress_stream
    )
    meta = frame.meta(
        plan.bench,
        command=command,
        tasks_dir=tasks_dir,
        note=note,
        order=BATCH_ORDER,
        concurrency=(1, plan.jobs),
        interrupted=note_of(interrupt, len(runs), len(batch_schedule(plan)) * 4),
    )
    tasks = tuple(
        summarize_task(task.name, task.language, len(task.targets), plan.jobs, [r for r in runs if r.task == task.name])
        for task in plan.tasks
    )
    return BatchReport(meta, plan.jobs, tasks, tuple(runs))
