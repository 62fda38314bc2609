"""A bench run: the plan (checked before anything is sent), the order of the runs, each run through
the engine, batches of runs at once for --concurrency, and the whole bench with what the servers say
around it.

With --edit-format the modes are the formats asked for (`region` gives two: with and without the
prediction), plus the region format without prediction in every case: the reference the ideal time
is measured from (`ideal`). `auto` decides by the region's size alone here (`SizeRuleOnly`)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import difflib
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .. import __version__
from ..backend.chat import LOCAL_SPECULATION_TYPES, prediction_mode
from ..backend.errors import BackendError
from ..backend.stream import StreamRequest
from ..config.schema import BackendConfig, Config, ConfigError, EditFormat
from ..formats.choice import FormatHistory, hunks_min_lines
from ..pipeline.engine import Engine
from ..pipeline.plan import Progress, RefactorError
from ..stats.history import History
from .formats_report import summarize_formats
from .options import EDIT_FORMATS
from .probes import describe_server, drafts_between, machine, read_counters
from .progress import ProgressDisplay
from .report import LoadLevel, Meta, Report
from .runs import Batch, Mode, Pair, Run
from .summarize import build_report, summarize_level
from .tasks import BenchError, Task

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


# How each mode's request is made: (the prediction override, the edit format).
MODE_REQUESTS: dict[Mode, tuple[bool | None, EditFormat]] = {
    "prediction": (None, "region"),
    "baseline": (False, "region"),
    "hunks": (None, "hunks"),
    "hunks-prediction": (True, "hunks"),  # True: the field even with hunks, where the plan leaves it out
    "auto": (None, "auto"),
}


class SizeRuleOnly(FormatHistory):
    """An engine's format history that never has an opinion, so `auto` decides by the region's size.

    The bench measures `auto` as a new user meets it: by `refactor.hunks_min_lines`. Its own runs
    would otherwise teach the engine (after three of each format per region size), and `auto` would
    change its mind halfway through the run, in an order that depends on the schedule.
    """

    def __init__(self) -> None:
        super().__init__(tries=False)

    def medians(self, backend: str, region_lines: int) -> dict[str, tuple[float, float, int]] | None:
        return None


def max_concurrency() -> int:
    """The most requests the engine's HTTP clients can have open at once: ClientPool passes no limits of
    its own, so the OpenAI SDK's defaults hold. Above it, requests would queue in the client, unseen."""
    from openai import DEFAULT_CONNECTION_LIMITS

    return DEFAULT_CONNECTION_LIMITS.max_connections or 1


@dataclass(frozen=True)
class BenchPlan:
    config: Config  # the user's, at temperature 0 and with the bench's max tokens
    backend: BackendConfig
    baseline: BackendConfig  # the same as `backend` for OpenAI-type backends
    tasks: tuple[Task, ...]
    repeat: int
    max_tokens: int  # 0: from the region size
    concurrency: tuple[int, ...] = (1,)  # requests at once, per level, lowest first
    edit_formats: tuple[str, ...] = ()  # --edit-format; empty: the region format with and without prediction
    # --record-history: every measured run is added to the refactor history, as a refactor of yours would
    # be, and `auto` learns from it; None (the default): a measurement leaves your history alone.
    record_to: History | None = None

    @property
    def under_load(self) -> bool:
        """--concurrency asked for something else than one request at a time: the report gets its load table."""
        return self.concurrency != (1,)

    @property
    def modes(self) -> tuple[Mode, ...]:
        """The modes each task runs in, in the report's order."""
        if not self.edit_formats:
            return ("prediction", "baseline")
        modes: list[Mode] = ["prediction"] if "region" in self.edit_formats else []
        modes.append("baseline")  # always: the reference the ideal time is measured from
        if "hunks" in self.edit_formats:
            modes.append("hunks")
        if "hunks+prediction" in self.edit_formats:
            modes.append("hunks-prediction")
        if "auto" in self.edit_formats:
            modes.append("auto")
        return tuple(modes)

    @property
    def runs(self) -> int:
        """Measured runs in all: every task, repetition and mode, at every level, N at a time."""
        return len(self.tasks) * self.repeat * len(self.modes) * sum(self.concurrency)

    @property
    def baseline_is_other_backend(self) -> bool:
        return self.baseline.name != self.backend.name


def make_plan(
    config: Config,
    backend_name: str | None,
    baseline_name: str | None,
    tasks: Sequence[Task],
    repeat: int,
    max_tokens: int = 0,
    concurrency: Sequence[int] = (1,),
    edit_formats: Sequence[str] = (),
) -> BenchPlan:
    """Check that the comparison makes sense before anything is sent."""
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    if max_tokens < 0:
        raise BenchError("--max-tokens must be 0 (from the region size) or more")
    levels = tuple(sorted(set(concurrency)))
    if not levels or levels[0] < 1:
        raise BenchError("--concurrency takes whole numbers of 1 or more, separated by commas (like 1,2,4)")
    if levels[-1] > max_concurrency():
        raise BenchError(
            f"--concurrency {levels[-1]} is more than the {max_concurrency()} connections the HTTP client opens "
            "at once; the rest would wait in its queue, not load the server"
        )
    formats = tuple(f for f in EDIT_FORMATS if f in edit_formats)
    if formats and levels != (1,):
        raise BenchError(
            "--edit-format and --concurrency cannot be combined: the edit formats are compared one request at a "
            "time; run them as two benches"
        )
    try:
        backend = config.backend(backend_name)
        baseline = config.backend(baseline_name) if baseline_name else backend
    except ConfigError as exc:
        raise BenchError(str(exc)) from None
    if backend.type in LOCAL_SPECULATION_TYPES and not baseline_name:
        raise BenchError(
            f"the backend '{backend.name}' is a {backend.type} server: its speculative decoding is a server setting, "
            "so 'without prediction' needs --baseline-backend NAME, a backend serving the same model without "
            "speculative decoding (for the local pair of benchmarks/local_vllm.sh: --baseline-backend local-plain)"
        )
    if baseline_name and baseline.name == backend.name and backend.type in LOCAL_SPECULATION_TYPES:
        raise BenchError(
            f"--baseline-backend must be another backend than '{backend.name}': the same {backend.type} server "
            "speculates in both modes"
        )
    if "hunks+prediction" in formats and prediction_mode(backend, True, refused=False) != "field":
        raise BenchError(
            f"--edit-format hunks+prediction sends the prediction field, which the backend '{backend.name}' "
            f'({backend.type}, prediction = "{backend.prediction}") does not get; a vLLM or llama.cpp server '
            "drafts a hunks answer from the prompt already (the hunks mode)"
        )
    if backend.prediction == "never" and (not formats or "region" in formats):
        raise BenchError(
            f"the backend '{backend.name}' has prediction = \"never\": there is nothing to compare; "
            'set it to "auto" or pick another backend'
        )
    refactor = dataclasses.replace(
        config.refactor, temperature=0.0, max_tokens=max_tokens or config.refactor.max_tokens
    )
    return BenchPlan(
        dataclasses.replace(config, refactor=refactor),
        backend,
        baseline,
        tuple(tasks),
        repeat,
        max_tokens,
        levels,
        formats,
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
        except BackendError as exc:
            raise BenchError(str(exc)) from None
        except ExceptionGroup as group_error:
            first = group_error.exceptions[0]
            if isinstance(first, BackendError):
                raise BenchError(str(first)) from None
            raise


def _check_prediction_ran(plan: BenchPlan, run: Run) -> None:
    if run.mode in ("prediction", "hunks-prediction") and run.stats is not None and run.stats.prediction_via == "off":
        notes = "; ".join(run.stats.notes)
        raise BenchError(
            f"the backend '{plan.backend.name}' ran without the prediction ({notes or 'prediction is off'}), "
            "so there is nothing to compare"
        )


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
        if plan.record_to is not None and run.stats is not None:
            # As the CLI records a diff it shows: an edit nobody applied yet is not known to apply (None).
            plan.record_to.append(run.stats.with_outcome(applied=None if run.outcome == "edit" else False))
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


async def run_level(
    engine: Engine, plan: BenchPlan, at_once: int, progress: ProgressDisplay | None = None
) -> LevelRuns:
    """The whole schedule with `at_once` requests in flight: each (repetition, task, mode) a batch."""
    started = time.perf_counter()
    pairs: list[Pair] = []
    batches: list[Batch] = []
    for repetition, task, modes in schedule(plan):
        by_mode: dict[Mode, Batch] = {}
        for position, mode in enumerate(modes):
            if progress is not None:
                progress.begin(task.name, mode, repetition, at_once)
            batch = await run_batch(engine, plan, task, mode, repetition, position == 0, at_once, progress)
            by_mode[mode] = batch
            batches.append(batch)
            for run in batch.runs:
                _check_prediction_ran(plan, run)
        if "prediction" in by_mode and "baseline" in by_mode:
            with_, without = by_mode["prediction"].runs, by_mode["baseline"].runs
            pairs += [Pair(task.name, repetition, p, b) for p, b in zip(with_, without, strict=True)]
    return LevelRuns(at_once, tuple(pairs), tuple(batches), time.perf_counter() - started)


async def run_bench(engine: Engine, plan: BenchPlan, progress: ProgressDisplay | None = None) -> list[Pair]:
    """The pairs of one request at a time, in schedule order."""
    return list((await run_level(engine, plan, 1, progress)).pairs)


async def measure(
    engine: Engine,
    plan: BenchPlan,
    *,
    tasks_dir: Path,
    command: str,
    note: str = "",
    progress_stream: TextIO | None = None,
) -> Report:
    """The whole bench: warm up, describe the servers, run every pair with a progress display (on
    `progress_stream`, default stderr), at each concurrency level, reading /metrics before and after
    (and around each level under load). The engine is made with `SizeRuleOnly()`, so that `auto`
    decides by the region's size alone. Raises BenchError."""
    if not isinstance(engine.formats, SizeRuleOnly):
        raise BenchError("the bench's engine decides `auto` by size alone: make it with Engine(SizeRuleOnly())")
    await warm_up(engine, plan)
    backend_info = await describe_server(plan.backend)
    baseline_info = await describe_server(plan.baseline) if plan.baseline_is_other_backend else None
    before = await read_counters(plan.backend)
    progress = ProgressDisplay(plan.runs, progress_stream)
    started = time.monotonic()
    ran: list[LevelRuns] = []
    levels: list[LoadLevel] = []
    try:
        for at_once in plan.concurrency:
            if at_once > 1:
                await warm_up(engine, plan, at_once)
            level_before = await read_counters(plan.backend) if plan.under_load else None
            ran.append(await run_level(engine, plan, at_once, progress))
            if plan.under_load:
                level = ran[-1]
                counted = drafts_between(level_before, await read_counters(plan.backend))
                levels.append(summarize_level(at_once, level.pairs, level.batches, level.wall_s, counted))
    finally:
        progress.close()
    after = await read_counters(plan.backend)
    meta = Meta(
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        refactor_lsp=__version__,
        command=command,
        backend=backend_info,
        baseline=baseline_info,
        tasks_dir=str(tasks_dir),
        repetitions=plan.repeat,
        max_tokens=plan.max_tokens,
        temperature=0.0,
        order=(FORMATS_ORDER if plan.edit_formats else ORDER) + (LOAD_ORDER if plan.under_load else ""),
        note=note,
        machine=machine(),
        wall_s=round(time.monotonic() - started, 1),
        metrics_during_bench=drafts_between(before, after),
        concurrency=plan.concurrency,
        edit_formats=plan.edit_formats,
        hunks_min_lines=hunks_min_lines(plan.config.refactor.hunks_min_lines, engine.prediction_mode(plan.backend))[0]
        if plan.edit_formats
        else None,
        hunks_form=plan.config.refactor.hunks_form if plan.edit_formats else None,
    )
    formats = None
    if plan.edit_formats:
        runs = [run for batch in ran[0].batches for run in batch.runs]
        formats = summarize_formats(plan.tasks, runs, plan.modes)
    return build_report(plan.tasks, ran[0].pairs, meta, levels, formats)  # the per-task table: the lowest level
