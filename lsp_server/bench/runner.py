"""A bench run: the plan (checked before anything is sent), the order of the runs, each run through
the engine, and the whole bench with what the servers say around it."""

from __future__ import annotations

import dataclasses
import datetime as dt
import difflib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from .. import __version__
from ..backends import LOCAL_SPECULATION_TYPES, BackendError, StreamRequest
from ..config import BackendConfig, Config, ConfigError
from ..engine import Engine
from ..refactor import Progress, RefactorError
from .probes import describe_server, drafts_between, machine, read_counters
from .progress import ProgressDisplay
from .report import Meta, Report, build_report
from .runs import Mode, Pair, Run
from .tasks import BenchError, Task

ORDER = (
    "pairs alternate which mode runs first, task by task and repetition by repetition "
    "(ABAB..., then BABA...); one untimed warm-up request per backend first"
)


@dataclass(frozen=True)
class BenchPlan:
    config: Config  # the user's, at temperature 0 and with the bench's max tokens
    backend: BackendConfig
    baseline: BackendConfig  # the same as `backend` for OpenAI-type backends
    tasks: tuple[Task, ...]
    repeat: int
    max_tokens: int  # 0: from the region size

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
) -> BenchPlan:
    """Check that the comparison makes sense before anything is sent."""
    if repeat < 1:
        raise BenchError("--repeat must be at least 1")
    if max_tokens < 0:
        raise BenchError("--max-tokens must be 0 (from the region size) or more")
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
    if backend.prediction == "never":
        raise BenchError(
            f"the backend '{backend.name}' has prediction = \"never\": there is nothing to compare; "
            'set it to "auto" or pick another backend'
        )
    refactor = dataclasses.replace(
        config.refactor, temperature=0.0, max_tokens=max_tokens or config.refactor.max_tokens
    )
    return BenchPlan(
        dataclasses.replace(config, refactor=refactor), backend, baseline, tuple(tasks), repeat, max_tokens
    )


def schedule(plan: BenchPlan) -> list[tuple[int, Task, tuple[Mode, Mode]]]:
    """(repetition, task, mode order) in running order; the first mode alternates task by task and
    repetition by repetition."""
    order: list[tuple[int, Task, tuple[Mode, Mode]]] = []
    for repetition in range(plan.repeat):
        for index, task in enumerate(plan.tasks):
            modes: tuple[Mode, Mode] = (
                ("prediction", "baseline") if (repetition + index) % 2 == 0 else ("baseline", "prediction")
            )
            order.append((repetition, task, modes))
    return order


def _similarity(a: str, b: str) -> float:
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
    backend = plan.backend if mode == "prediction" else plan.baseline
    request = task.request(backend.name, None if mode == "prediction" else False)
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
        expected_similarity=_similarity(result.new_region, task.expected_region()),
    )


async def warm_up(engine: Engine, plan: BenchPlan) -> None:
    """One tiny untimed request per backend: connections open, lazy initialisation done, and a
    backend that is down is reported before the first measurement."""
    seen = []
    for backend in (plan.backend, plan.baseline):
        if backend.name in seen:
            continue
        seen.append(backend.name)
        request = StreamRequest([{"role": "user", "content": "Reply with the word: ok"}], None, 1, 0.0)
        try:
            await engine.stream(backend, plan.config.refactor, request)
        except BackendError as exc:
            raise BenchError(str(exc)) from None


async def run_bench(engine: Engine, plan: BenchPlan, progress: ProgressDisplay | None = None) -> list[Pair]:
    pairs: list[Pair] = []
    for repetition, task, modes in schedule(plan):
        runs: dict[Mode, Run] = {}
        for position, mode in enumerate(modes):
            if progress is not None:
                progress.begin(task.name, mode, repetition)
            run = await run_one(
                engine, plan, task, mode, repetition, position == 0, progress.on_chars if progress is not None else None
            )
            runs[mode] = run
            if progress is not None:
                progress.done(run)
            if mode == "prediction" and run.stats is not None and run.stats.prediction_via == "off":
                notes = "; ".join(run.stats.notes)
                raise BenchError(
                    f"the backend '{plan.backend.name}' ran without the prediction ({notes or 'prediction is off'}), "
                    "so there is nothing to compare"
                )
        pairs.append(Pair(task.name, repetition, runs["prediction"], runs["baseline"]))
    return pairs


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
    `progress_stream`, default stderr), read /metrics before and after. Raises BenchError."""
    await warm_up(engine, plan)
    backend_info = await describe_server(plan.backend)
    baseline_info = await describe_server(plan.baseline) if plan.baseline_is_other_backend else None
    before = await read_counters(plan.backend)
    progress = ProgressDisplay(len(plan.tasks) * plan.repeat * 2, progress_stream)
    started = time.monotonic()
    try:
        pairs = await run_bench(engine, plan, progress)
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
        order=ORDER,
        note=note,
        machine=machine(),
        wall_s=round(time.monotonic() - started, 1),
        metrics_during_bench=drafts_between(before, after),
    )
    return build_report(plan.tasks, pairs, meta)
