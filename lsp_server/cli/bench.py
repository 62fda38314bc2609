"""`refactor-lsp bench`: the task corpus with and without prediction (lsp_server.bench), its table on
stdout, and --markdown and --json written; batch tasks named with --task run one at a time and --jobs N
at once (bench/batch_runner.py); `--kind apply` merges each task's change as a snippet, scoped and into
the whole file (bench/apply_bench.py)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..config.schema import ConfigError
from .io import Exit, error, load_cli_config

if TYPE_CHECKING:
    from ..bench.apply_report import ApplyReport
    from ..bench.batch_report import BatchReport
    from ..bench.interrupt import Interrupt
    from ..bench.report import Meta, Report


def _bench_command(args: argparse.Namespace) -> str:
    """The command line as the report's header shows it (the flags that change what is measured)."""
    import shlex

    parts = ["refactor-lsp", "bench"]
    if args.kind != "refactor":
        parts += ["--kind", args.kind]
    for flag in ("backend", "baseline_backend", "tasks"):
        if getattr(args, flag, None):
            parts += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    for name in args.task or []:
        parts += ["--task", name]
    parts += ["--repeat", str(args.repeat)]
    if args.max_tokens:
        parts += ["--max-tokens", str(args.max_tokens)]
    if args.concurrency != "1":
        parts += ["--concurrency", args.concurrency]
    if args.edit_format:
        parts += ["--edit-format", args.edit_format]
    if args.jobs is not None:
        parts += ["--jobs", str(args.jobs)]
    if args.note:
        parts += ["--note", args.note]
    if args.record_history:
        parts.append("--record-history")
    for flag in ("markdown", "json"):
        if getattr(args, flag, None):
            parts += [f"--{flag}", str(getattr(args, flag))]
    return shlex.join(parts)


def report_path_problem(path: str) -> str | None:
    """Why a --markdown or --json file could not be written, asked before the bench runs (a measurement of
    an hour is not to end in a traceback); None: it can, as far as can be told before."""
    target = Path(path)
    if target.is_dir():
        return f"cannot write {path}: it is a folder"
    folder = target.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the nearest folder that is there: the rest is made when writing
    if not folder.is_dir():
        return f"cannot write {path}: {folder} is not a folder"
    if not os.access(folder, os.W_OK):
        return f"cannot write {path}: {folder} is not writable"
    return None


def _write_report(path: str, text: str) -> bool:
    """Write a report file; False, said on stderr, when it cannot be (the table on stdout has the figures)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        error(f"cannot write {path}: {exc.strerror or exc}; the table above has the figures")
        return False
    print(f"wrote {path}", file=sys.stderr)
    return True


class _Report(Protocol):
    @property
    def meta(self) -> Meta: ...

    def to_json(self) -> str: ...


ReportT = TypeVar("ReportT", bound=_Report)


async def _measure_and_show(
    args: argparse.Namespace,
    measuring: Callable[..., Awaitable[ReportT]],
    plan: object,
    tasks_dir: Path,
    show: tuple[Callable[[ReportT], str], Callable[[ReportT], str]],
    verdict: Callable[[ReportT], str | None],
) -> int:
    """Run a bench on an engine of its own (`measuring(engine, plan, invocation)`), print
    its table (`show`: the terminal's and the markdown's renderers), write --markdown and --json, and
    judge it: `verdict` says why nothing could be compared, else None. The user's history must not steer
    `auto` in a measurement: the size rule decides."""
    from ..bench import BenchError, SizeRuleOnly
    from ..bench.interrupt import Interrupt
    from ..bench.invocation import Invocation
    from ..pipeline.engine import Engine

    terminal, markdown = show
    for unwritable in filter(None, (report_path_problem(p) for p in (args.markdown, args.json) if p)):
        error(f"{unwritable}; nothing was measured")
        return Exit.USAGE
    engine = Engine(SizeRuleOnly())
    interrupt = Interrupt()
    interrupt.install()
    try:
        invocation = Invocation(tasks_dir, _bench_command(args), args.note or "", interrupt=interrupt)
        report = await measuring(engine, plan, invocation)
    except BenchError as exc:
        error(str(exc))
        return Exit.FAILED
    except asyncio.CancelledError:  # Ctrl-C before the first run (warming up, reading the servers)
        error(f"interrupted ({interrupt.by}) before any run was measured; nothing to report")
        return _interrupted_exit(interrupt)
    finally:
        interrupt.remove()
        await engine.close()
    # The files first: a reader of the table gone (`| head`) ends the command at the table (141), and
    # the files asked for hold the minutes measured.
    written = [_write_report(path, render()) for path, render in _files(args, report, markdown)]
    sys.stdout.write(terminal(report))
    if interrupt.happened:
        error(f"{report.meta.interrupted}; the table and the files written cover them")
        return _interrupted_exit(interrupt)
    problem = verdict(report)
    if problem is not None:
        error(problem)
        return Exit.FAILED
    return Exit.FAILED if getattr(report, "errors", None) or not all(written) else Exit.OK


def _files(
    args: argparse.Namespace, report: ReportT, markdown: Callable[[ReportT], str]
) -> list[tuple[str, Callable[[], str]]]:
    """The report files asked for, each with its text made only when it is written."""
    asked = [(args.markdown, lambda: markdown(report)), (args.json, report.to_json)]
    return [(path, render) for path, render in asked if path]


def _interrupted_exit(interrupt: Interrupt) -> int:
    """130 for Ctrl-C; 143 for SIGTERM, as a shell reports a process that signal ended."""
    return Exit.TERMINATED if interrupt.by == "SIGTERM" else Exit.INTERRUPTED


async def run_bench(args: argparse.Namespace) -> int:
    from ..bench import (
        BenchError,
        default_tasks_dir,
        load_tasks,
        make_plan,
        measure,
        parse_concurrency,
        parse_edit_formats,
        render_markdown,
        render_terminal,
    )

    if args.kind == "apply":
        return await _bench_apply(args)
    try:
        # First: a typo in these should not wait for the tasks to load.
        levels = parse_concurrency(args.concurrency)
        formats = parse_edit_formats(args.edit_format) if args.edit_format is not None else ()
        tasks_dir = Path(args.tasks) if args.tasks else default_tasks_dir()
        if tasks_dir is None:
            raise BenchError("no task folder found; give one with --tasks DIR (see benchmarks/tasks/README.md)")
        from ..bench.batch_tasks import split_tasks

        singles, batches = split_tasks(tasks_dir, args.task)
        if args.task and batches:
            return await _bench_batches(args, tasks_dir, singles, batches)
        if args.jobs is not None:
            raise BenchError('--jobs is for batch tasks (kind = "batch"): name them with --task')
        tasks = load_tasks(tasks_dir, args.task)
        loaded = load_cli_config(args.config, Path.cwd())
        plan = make_plan(
            loaded.config, args.backend, args.baseline_backend, tasks, args.repeat, args.max_tokens, levels, formats
        )
        if args.record_history:
            from ..stats.history import History

            plan = dataclasses.replace(plan, record_to=History())
    except (BenchError, ConfigError) as exc:
        error(str(exc))
        return Exit.USAGE
    return await _measure_and_show(args, measure, plan, tasks_dir, (render_terminal, render_markdown), _compared)


async def _bench_batches(args: argparse.Namespace, tasks_dir: Path, singles: list[str], batches: list[str]) -> int:
    """`bench --task NAME` with batch tasks: each one at a time and --jobs N at once (bench/batch_runner.py)."""
    from ..bench.batch_runner import make_batch_plan, measure_batches
    from ..bench.batch_tasks import load_batch_task
    from ..bench.render_batch import render_batch_markdown, render_batch_terminal
    from ..bench.tasks import BenchError

    try:
        if singles:
            raise BenchError(
                f"{', '.join(batches)}: batch tasks, {', '.join(singles)}: not; their reports differ, so run them as "
                "two benches"
            )
        if args.concurrency != "1" or args.edit_format is not None:
            raise BenchError(
                "--concurrency and --edit-format are for single-region tasks; a batch task runs one at a time and "
                "--jobs N at once"
            )
        tasks = [load_batch_task(tasks_dir / name) for name in batches]
        loaded = load_cli_config(args.config, Path.cwd())
        plan = make_batch_plan(
            loaded.config, args.backend, args.baseline_backend, tasks, args.repeat, args.max_tokens, args.jobs
        )
        if args.record_history:
            from ..stats.history import History

            plan = dataclasses.replace(plan, bench=dataclasses.replace(plan.bench, record_to=History()))
    except (BenchError, ConfigError) as exc:
        error(str(exc))
        return Exit.USAGE
    show = (render_batch_terminal, render_batch_markdown)
    return await _measure_and_show(args, measure_batches, plan, tasks_dir, show, _batches_compared)


async def _bench_apply(args: argparse.Namespace) -> int:
    """`bench --kind apply`: each task's snippet merged scoped with and without the prediction, and into
    the whole file."""
    from ..bench import BenchError, default_tasks_dir, make_plan
    from ..bench.apply_bench import ApplyBenchPlan, measure_apply
    from ..bench.apply_render import render_apply_markdown, render_apply_terminal
    from ..bench.apply_tasks import load_apply_tasks

    try:
        if args.concurrency != "1" or args.edit_format is not None or args.jobs is not None or args.record_history:
            raise BenchError(
                "--concurrency, --edit-format, --jobs and --record-history are not for --kind apply: each merge "
                "runs alone, in the region format"
            )
        tasks_dir = Path(args.tasks) if args.tasks else default_tasks_dir()
        if tasks_dir is None:
            raise BenchError("no task folder found; give one with --tasks DIR (see benchmarks/tasks/README.md)")
        tasks, skipped = load_apply_tasks(tasks_dir, args.task)
        config = load_cli_config(args.config, Path.cwd()).config
        bench = make_plan(config, args.backend, args.baseline_backend, (), args.repeat, args.max_tokens)
        plan = ApplyBenchPlan(bench, tuple(tasks), tuple(skipped))
    except (BenchError, ConfigError) as exc:
        error(str(exc))
        return Exit.USAGE
    show = (render_apply_terminal, render_apply_markdown)
    return await _measure_and_show(args, measure_apply, plan, tasks_dir, show, _merged_both_ways)


# Why a bench's report compares nothing (the run failed as a measurement), else None.
def _compared(report: Report) -> str | None:
    if report.formats is not None and not report.formats.measured:
        return "no run could be compared with its ideal time; see the messages above"
    if report.formats is None and report.total.speedup is None:
        return "no pair of runs was measured in both modes; see the messages above"
    return None


def _batches_compared(report: BatchReport) -> str | None:
    if not report.measured:
        return "no batch ran whole in both modes or at both concurrencies; see the messages above"
    return None


def _merged_both_ways(report: ApplyReport) -> str | None:
    from ..bench.apply_report import summarize_apply

    if summarize_apply(report).scope_speedup is None:
        return "no task merged as expected both scoped and whole-file; see the lines above"
    return None
