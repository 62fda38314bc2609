"""A bench run from its plan (`plan`): the order of the runs, each run through the engine, batches of
runs at once for --concurrency, and the frame every bench runs in (`around`: warm-up, what the servers
say before and after, the progress display, the report's header)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import difflib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from .. import __version__
from ..backend.errors import BackendError
from ..backend.stream import StreamRequest
from ..formats.choice import hunks_min_lines
from ..pipeline.engine import Engine
from ..pipeline.plan import Progress, RefactorError
from .display import ProgressDisplay
from .formats_report import summarize_formats
from .interrupt import Interrupt, keeps, note_of
from .probes import DraftsCounted, ServerInfo, describe_server, drafts_between, machine, read_counters
from .report import LoadLevel, Meta, Report
from .runs import Batch, Mode, Pair, Run
from .setup import MODE_REQUESTS, BenchPlan, SizeRuleOnly
from .summarize import build_report, summarize_level
from .tasks import BenchError, Task

T = TypeVar("T")

ORDER = (
    "pairs alternate which mode runs first, task by task and repetition by repetition "
    "(ABAB..., then BABA...); one untimed warm-up request per backend first"
)
FORMATS_ORDER = (
    "the modes rotate which runs first, task by task and repetition by repetition (ABCD, BCDA, ...); one "
    "untimed warm-up request per backend first"
)
LOAD_ORDER = (
    "; under load (--concurrency N), each task runs as a batch of N identical requests sent at once in one "
    "mode, then N in the other, the first mode alternating as above; levels run lowest first, each after N "
    "untimed warm-up requests at once per backend"
)


def schedule(plan: BenchPlan) -> list[tuple[int, Task, tuple[Mode, ...]]]:
    """(repetition, task, mode order) in running order. The modes rotate task by task and repetition
    by repetition, so each runs first (and last) equally often: with two modes, ABAB... then BABA..."""
    order: list[tuple[int, Task, tuple[Mode, ...]]] = []
    modes = plan.modes
    for repetition in range(plan.repeat):
        for index, task in enumerate(plan.tasks):
            shift = (repetition + index) % len(modes)
            order.append((repetition, task, modes[shift:] + modes[:shift]))
    return order


def similarity(a: str, b: str) -> float:
    """How alike two texts are, line by line, from 0 to 1: an answer against its expected text."""
    return round(difflib.SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False).ratio(), 3)


async def run_one(
    engine: Engine,
    plan: BenchPlan,
    task: Task,
    mode: Mode,
    repetition: int,
    first: bool,
    on_progress: Callable[[Progress], None] | None,
) -> Run:
    backend = plan.baseline if mode == "baseline" else plan.backend
    prediction, edit_format = MODE_REQUESTS[mode]
    # The region format by name, also without --edit-format: a config's `auto` or `hunks` would
    # otherwise turn the comparison of prediction with and without into one of formats.
    # A salt of its own: on vLLM no run reads a prompt another run cached (the modes that share a
    # server would otherwise favour whichever sends a prompt second).
    request = dataclasses.replace(
        task.request(backend.name, prediction, edit_format),
        cache_salt=uuid.uuid4().hex,
        max_tokens_setting="bench --max-tokens" if plan.max_tokens else "refactor.max_tokens",
    )
    labels = (task.name, mode, repetition, first, backend.name)
    try:
        result = await engine.refactor(request, plan.config, on_progress)
    except RefactorError as exc:
        if exc.stats is None:
            return Run(*labels, "error", str(exc))
        # Measured, but not applicable (cut off, or not code): the timing counts, the raw answer is kept.
        return Run(*labels, "refused", str(exc), stats=exc.stats, output=exc.output)
    return Run(
        *labels,
        "edit" if result.edits else "unchanged",
        stats=result.stats,
        output=result.new_region,
        matches_expected=result.new_text == task.expected,
        expected_similarity=similarity(result.new_region, task.expected_region()),
    )


async def warm_up(engine: Engine, plan: BenchPlan, at_once: int = 1) -> None:
    """Tiny untimed requests per backend, `at_once` of them together: connections open (as many as a
    batch will use, so no measured request pays for a new one), lazy initialisation done, and a
    backend that is down is reported before the first measurement."""
    seen = []
    for backend in (plan.backend, plan.baseline):
        if backend.name in seen:
            continue
        seen.append(backend.name)
        request = StreamRequest([{"role": "user", "content": "Reply with the word: ok"}], None, 1, 0.0)
        try:
            if at_once == 1:
                await engine.stream(backend, plan.config.refactor, request)
            else:
                async with asyncio.TaskGroup() as group:
                    for _ in range(at_once):
                        group.create_task(engine.stream(backend, plan.config.refactor, request))
            # Whether the server drafts from the prediction is known before the first measured run, so that
            # every run is sent alike (the probe's own drafts fall before the bench reads /metrics).
            await engine.proposer_found(backend, plan.config.refactor)
        except BackendError as exc:
            raise BenchError(str(exc)) from None
        except ExceptionGroup as group_error:
            first = group_error.exceptions[0]
            if isinstance(first, BackendError):
                raise BenchError(str(first)) from None
            raise


def check_prediction_ran(plan: BenchPlan, runs: Sequence[Run]) -> None:
    """Raise BenchError when the runs of a mode with prediction that got an answer all ran without it:
    there is nothing to compare."""
    answered = [run.stats for run in runs if run.stats is not None and run.mode in ("prediction", "hunks-prediction")]
    if answered and all(stats.prediction_via == "off" for stats in answered):
        notes = "; ".join(dict.fromkeys(note for stats in answered for note in stats.notes))
        raise BenchError(
            f"the backend '{plan.backend.name}' ran without the prediction ({notes or 'prediction is off'}), "
            "so there is nothing to compare"
        )


def record(plan: BenchPlan, run: Run) -> None:
    """With --record-history, a measured run joins the refactor history as the CLI records a diff it
    shows: an edit nobody applied yet is not known to apply (None)."""
    if plan.record_to is not None and run.stats is not None:
        plan.record_to.append(run.stats.with_outcome(applied=None if run.outcome == "edit" else False))


async def run_batch(
    engine: Engine,
    plan: BenchPlan,
    task: Task,
    mode: Mode,
    repetition: int,
    first: bool,
    at_once: int,
    progress: ProgressDisplay | None = None,
) -> Batch:
    """The same task in one mode, `at_once` times together through the one engine (its clients and
    connections shared, as a server's editors would share a backend)."""
    started = time.perf_counter()
    offsets = [0.0] * at_once
    on_chars = progress.on_chars if progress is not None else None

    async def one(slot: int) -> Run:
        offsets[slot] = time.perf_counter() - started
        run = await run_one(engine, plan, task, mode, repetition, first, on_chars)
        record(plan, run)
        if progress is not None:
            progress.done(run)
        return run

    if at_once == 1:
        runs = [await one(0)]
    else:
        # run_one turns every refactor failure into a Run; anything else is a bug, and ends the batch.
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(slot)) for slot in range(at_once)]
        runs = [t.result() for t in tasks]
    return Batch(task.name, mode, repetition, tuple(offsets), time.perf_counter() - started, tuple(runs))


@dataclass(frozen=True)
class LevelRuns:
    """What one concurrency level ran: the pairs (slot i of a task's batch with slot i of the other
    mode's), the batches in running order, and the level's wall time."""

    concurrency: int
    pairs: tuple[Pair, ...]
    batches: tuple[Batch, ...]
    wall_s: float


class LevelCollector:
    """A level's pairs and batches as they complete: what an interrupted level still has."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.started = time.perf_counter()
        self.pairs: list[Pair] = []
        self.batches: list[Batch] = []

    def level(self) -> LevelRuns:
        return LevelRuns(self.concurrency, tuple(self.pairs), tuple(self.batches), time.perf_counter() - self.started)


async def run_level(
    engine: Engine,
    plan: BenchPlan,
    at_once: int,
    progress: ProgressDisplay | None = None,
    collected: LevelCollector | None = None,
) -> LevelRuns:
    """The whole schedule with `at_once` requests in flight: each (repetition, task, mode) a batch, each
    pair and batch added to `collected` as it completes."""
    collected = collected or LevelCollector(at_once)
    for repetition, task, modes in schedule(plan):
        by_mode: dict[Mode, Batch] = {}
        for position, mode in enumerate(modes):
            if progress is not None:
                progress.begin(task.name, mode, repetition, at_once)
            batch = await run_batch(engine, plan, task, mode, repetition, position == 0, at_once, progress)
            by_mode[mode] = batch
            collected.batches.append(batch)
            for run in batch.runs:
                check_prediction_ran(plan, [run])
        if "prediction" in by_mode and "baseline" in by_mode:
            with_, without = by_mode["prediction"].runs, by_mode["baseline"].runs
            collected.pairs += [Pair(task.name, repetition, p, b) for p, b in zip(with_, without, strict=True)]
    return collected.level()


async def run_bench(engine: Engine, plan: BenchPlan, progress: ProgressDisplay | None = None) -> list[Pair]:
    """The pairs of one request at a time, in schedule order."""
    return list((await run_level(engine, plan, 1, progress)).pairs)


@dataclass(frozen=True)
class Around:
    """What a bench learns around its runs: the servers as they describe themselves, its wall time, and
    the drafts the backend's /metrics counted meanwhile."""

    backend: ServerInfo
    baseline: ServerInfo | None
    wall_s: float
    drafts: DraftsCounted | None

    def meta(self, plan: BenchPlan, *, command: str, tasks_dir: Path, note: str, order: str, **more: Any) -> Meta:
        """The report's header; `more`: what only some benches say (levels, edit formats)."""
        return Meta(
            date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            refactor_lsp=__version__,
            command=command,
            backend=self.backend,
            baseline=self.baseline,
            tasks_dir=str(tasks_dir),
            repetitions=plan.repeat,
            max_tokens=plan.max_tokens,
            temperature=0.0,
            order=order,
            note=note,
            machine=machine(),
            wall_s=self.wall_s,
            metrics_during_bench=self.drafts,
            **more,
        )


async def around(
    engine: Engine,
    plan: BenchPlan,
    body: Callable[[ProgressDisplay], Awaitable[T]],
    *,
    runs: int,
    at_once: int = 1,
    progress_stream: TextIO | None = None,
) -> tuple[T, Around]:
    """Every bench's frame around `body`: the engine checked (`auto` by size alone), warm-up requests
    (`at_once` together), the servers described, /metrics read before and after, and a progress display
    of `runs` runs (on `progress_stream`, default stderr) for `body` to report to. Raises BenchError."""
    if not isinstance(engine.formats, SizeRuleOnly):
        raise BenchError("the bench's engine decides `auto` by size alone: make it with Engine(SizeRuleOnly())")
    await warm_up(engine, plan, at_once)
    backend_info = await describe_server(plan.backend)
    found = await engine.proposer_found(plan.backend, plan.config.refactor)
    if found is not None and found.present:
        backend_info = dataclasses.replace(backend_info, proposer=found.detail)
    baseline_info = await describe_server(plan.baseline) if plan.baseline_is_other_backend else None
    before = await read_counters(plan.backend)
    progress = ProgressDisplay(runs, progress_stream)
    started = time.monotonic()
    try:
        result = await body(progress)
    finally:
        progress.close()
    drafts = drafts_between(before, await read_counters(plan.backend))
    return result, Around(backend_info, baseline_info, round(time.monotonic() - started, 1), drafts)


async def measure(
    engine: Engine,
    plan: BenchPlan,
    *,
    tasks_dir: Path,
    command: str,
    note: str = "",
    progress_stream: TextIO | None = None,
    interrupt: Interrupt | None = None,
) -> Report:
    """The whole bench: every pair at each concurrency level (reading /metrics around each level under
    load), in `around`'s frame. The engine is made with `SizeRuleOnly()`, so that `auto` decides by the
    region's size alone. Ctrl-C (`interrupt`) ends it with the pairs measured. Raises BenchError."""
    done = 0

    async def levels(progress: ProgressDisplay) -> tuple[list[LevelRuns], list[LoadLevel]]:
        nonlocal done
        ran: list[LevelRuns] = []
        loads: list[LoadLevel] = []
        for at_once in plan.concurrency:
            if at_once > 1:
                await warm_up(engine, plan, at_once)
            level_before = await read_counters(plan.backend) if plan.under_load else None
            collected = LevelCollector(at_once)
            async with keeps(interrupt):
                await run_level(engine, plan, at_once, progress, collected)
            ran.append(collected.level())
            done = progress.done_count
            if interrupt is not None and interrupt.happened:
                break
            if plan.under_load:
                level = ran[-1]
                counted = drafts_between(level_before, await read_counters(plan.backend))
                loads.append(summarize_level(at_once, level.pairs, level.batches, level.wall_s, counted))
        return ran, loads

    (ran, loads), frame = await around(engine, plan, levels, runs=plan.runs, progress_stream=progress_stream)
    meta = frame.meta(
        plan,
        command=command,
        tasks_dir=tasks_dir,
        note=note,
        order=(FORMATS_ORDER if plan.edit_formats else ORDER) + (LOAD_ORDER if plan.under_load else ""),
        concurrency=plan.concurrency,
        edit_formats=plan.edit_formats,
        hunks_min_lines=hunks_min_lines(plan.config.refactor.hunks_min_lines, engine.prediction_mode(plan.backend))[0]
        if plan.edit_formats
        else None,
        hunks_form=plan.config.refactor.hunks_form if plan.edit_formats else None,
        interrupted=note_of(interrupt, done, plan.runs),
    )
    formats = None
    if plan.edit_formats:
        runs = [run for batch in ran[0].batches for run in batch.runs]
        formats = summarize_formats(plan.tasks, runs, plan.modes)
    return build_report(plan.tasks, ran[0].pairs, meta, loads, formats)  # the per-task table: the lowest level
