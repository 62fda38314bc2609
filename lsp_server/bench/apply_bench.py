"""`refactor-lsp bench --kind apply`: each task's snippet merged three ways, through the product's own
apply (pipeline/merge.py, one `runner.Runner` per merge):

- "prediction": into the definitions it names, each with its current text as the prediction;
- "baseline": the same without the prediction (for vLLM and llama.cpp, the baseline backend);
- "whole-file": into the whole file, the file as the prediction, as an editor that rewrites the whole
  file to apply a snippet does (Cursor's apply).

All in the region format (the model writes what it merges), so that the three differ in scope and
prediction alone. The modes rotate which runs first, task by task and repetition by repetition. A
merge's time is its wall time (its first part planned → its last answer in); it counts as correct
when its edits give the task's expected file.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from .. import __version__
from ..formats.edits import apply_replacements
from ..pipeline.engine import Engine
from ..pipeline.outcome import settle
from ..pipeline.plan import RefactorRequest
from ..pipeline.request import NoTargets, Request, Source, snippet_parts, whole_file_item
from ..pipeline.runner import Runner
from ..pipeline.totals import batch_totals
from ..regions import ScopeCache
from .apply_report import APPLY_MODES, MODE_NAMES, ApplyMode, ApplyReport, ApplyRun
from .apply_tasks import ApplyTask, Skipped
from .interrupt import Interrupt, keeps, note_of
from .probes import describe_server, drafts_between, machine, read_counters
from .report import Meta
from .schedule import BenchPlan, SizeRuleOnly, warm_up
from .tasks import BenchError

APPLY_ORDER = (
    "each task's three merges rotate which runs first, task by task and repetition by repetition (ABC, BCA, "
    "CAB, ...); untimed warm-up requests first; every merge in the region format"
)


@dataclass(frozen=True)
class ApplyBenchPlan:
    bench: BenchPlan  # the backends, the config (temperature 0, --max-tokens), the repetitions
    tasks: tuple[ApplyTask, ...]
    skipped: tuple[Skipped, ...]

    @property
    def runs(self) -> int:
        return len(self.tasks) * self.bench.repeat * len(APPLY_MODES)


def apply_schedule(plan: ApplyBenchPlan) -> list[tuple[int, ApplyTask, tuple[ApplyMode, ...]]]:
    """(repetition, task, the order of its merges): rotated, so that each mode runs first as often."""
    order = []
    for repetition in range(plan.bench.repeat):
        for index, task in enumerate(plan.tasks):
            shift = (repetition + index) % len(APPLY_MODES)
            order.append((repetition, task, APPLY_MODES[shift:] + APPLY_MODES[:shift]))
    return order


async def run_apply(
    engine: Engine, plan: ApplyBenchPlan, task: ApplyTask, mode: ApplyMode, repetition: int, position: int
) -> ApplyRun:
    """One merge of `task`'s snippet in `mode`, through the product's apply."""
    bench = plan.bench
    backend = bench.baseline if mode == "baseline" else bench.backend
    request = RefactorRequest(
        path=str(task.folder / task.file),
        text=task.source,
        start=0,
        end=0,
        backend=backend.name,
        prediction=False if mode == "baseline" else None,
        language_id=task.language,
        edit_format="region",
        cache_salt=uuid.uuid4().hex,  # no run reads a prompt another run left on a vLLM server
        max_tokens_setting="bench --max-tokens" if bench.max_tokens else "refactor.max_tokens",
    )
    # The model's merge is what is measured, even of a snippet complete enough to splice.
    merging = replace(request, snippet=task.snippet, merge_with_model=True)
    source = Source(task.file, merging, bench.config, ScopeCache())
    if mode == "whole-file":
        merge = Request("apply", (whole_file_item(source),), "", whole=True)
    else:
        try:
            merge = snippet_parts(engine, [source])
        except NoTargets as exc:
            raise BenchError(f"{task.name}: {exc}") from None
    items = merge.items
    run = Runner(engine, items, bench.config.refactor.concurrency)
    settled = settle(merge, await run.run())
    ready = settled.failure is None
    edits = [e for o in settled.outcomes if o.outcome == "edit" and o.result is not None for e in o.result.edits]
    merged = apply_replacements(task.source, edits) if ready else task.source
    if (
        mode != "baseline"
        and settled.outcomes
        and all(o.stats is not None and o.stats.prediction_via == "off" for o in settled.outcomes)
    ):
        raise BenchError(f"the backend '{backend.name}' ran without the prediction, so there is nothing to compare")
    return ApplyRun(
        task=task.name,
        mode=mode,
        repetition=repetition,
        position=position,
        backend=backend.name,
        parts=len(items),
        predicted_chars=sum(item.target.end - item.target.start for item in items),
        wall_ms=run.wall_ms,
        totals=batch_totals(settled.outcomes, run.wall_ms, run.concurrency),
        ok=ready,
        matches_expected=ready and merged == task.expected,
        reason=settled.failure,
    )


async def measure_apply(
    engine: Engine,
    plan: ApplyBenchPlan,
    *,
    tasks_dir: Path,
    command: str,
    note: str = "",
    progress_stream: TextIO | None = None,
    interrupt: Interrupt | None = None,
) -> ApplyReport:
    """The whole apply bench: warm up, describe the servers, every task's three merges per repetition (a
    line each on stderr), /metrics read before and after. Raises BenchError."""
    if not isinstance(engine.formats, SizeRuleOnly):
        raise BenchError("the bench's engine decides `auto` by size alone: make it with Engine(SizeRuleOnly())")
    stream = progress_stream or sys.stderr
    await warm_up(engine, plan.bench)
    backend_info = await describe_server(plan.bench.backend)
    baseline_info = await describe_server(plan.bench.baseline) if plan.bench.baseline_is_other_backend else None
    before = await read_counters(plan.bench.backend)
    started = time.monotonic()
    runs: list[ApplyRun] = []
    async with keeps(interrupt):
        for repetition, task, modes in apply_schedule(plan):
            for position, mode in enumerate(modes):
                run = await run_apply(engine, plan, task, mode, repetition, position)
                runs.append(run)
                verdict = "as expected" if run.matches_expected else f"NOT as expected ({run.reason or 'another text'})"
                stream.write(
                    f"bench: {len(runs)}/{plan.runs} {task.name} ({MODE_NAMES[mode]}, #{repetition + 1}): "
                    f"{run.wall_ms / 1000:.2f} s, {run.parts} part(s), {verdict}\n"
                )
                stream.flush()
    after = await read_counters(plan.bench.backend)
    meta = Meta(
        date=dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        refactor_lsp=__version__,
        command=command,
        backend=backend_info,
        baseline=baseline_info,
        tasks_dir=str(tasks_dir),
        repetitions=plan.bench.repeat,
        max_tokens=plan.bench.max_tokens,
        temperature=0.0,
        order=APPLY_ORDER,
        note=note,
        machine=machine(),
        wall_s=round(time.monotonic() - started, 1),
        metrics_during_bench=drafts_between(before, after),
        interrupted=note_of(interrupt, len(runs), plan.runs),
    )
    return ApplyReport(meta, plan.tasks, plan.skipped, tuple(runs))
