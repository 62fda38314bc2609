"""`refactor-lsp bench`: the task corpus with and without prediction (lsp_server.bench), its table on
stdout, and --markdown and --json written; batch tasks named with --task run one at a time and --jobs N
at once (bench/batch_runner.py)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar

from ..config.schema import ConfigError
from .io import EXIT_FAILED, EXIT_OK, EXIT_USAGE, error, load_cli_config

if TYPE_CHECKING:
    from ..pipeline.engine import Engine


def _bench_command(args: argparse.Namespace) -> str:
    """The command line as the report's header shows it (the flags that change what is measured)."""
    import shlex

    parts = ["refactor-lsp", "bench"]
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


def _write_report(path: str, text: str) -> None:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    print(f"wrote {path}", file=sys.stderr)


class _Report(Protocol):
    def to_json(self) -> str: ...


ReportT = TypeVar("ReportT", bound=_Report)


async def _measure_and_show(
    args: argparse.Namespace,
    measuring: Callable[[Engine], Awaitable[ReportT]],
    terminal: Callable[[ReportT], str],
    markdown: Callable[[ReportT], str],
) -> ReportT | None:
    """Run a bench on an engine of its own, print its table, write --markdown and --json; None when it
    could not run (said). The user's history must not steer `auto` in a measurement: the size rule decides."""
    from ..bench import BenchError, SizeRuleOnly
    from ..pipeline.engine import Engine

    engine = Engine(SizeRuleOnly())
    try:
        report = await measuring(engine)
    except BenchError as exc:
        error(str(exc))
        return None
    finally:
        await engine.close()
    sys.stdout.write(terminal(report))
    if args.markdown:
        _write_report(args.markdown, markdown(report))
    if args.json:
        _write_report(args.json, report.to_json())
    return report


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
        return EXIT_USAGE
    command, note = _bench_command(args), args.note or ""
    report = await _measure_and_show(
        args,
        lambda engine: measure(engine, plan, tasks_dir=tasks_dir, command=command, note=note),
        render_terminal,
        render_markdown,
    )
    if report is None:
        return EXIT_FAILED
    if report.formats is not None and not report.formats.measured:
        error("no run could be compared with its ideal time; see the messages above")
        return EXIT_FAILED
    if report.formats is None and report.total.speedup is None:
        error("no pair of runs was measured in both modes; see the messages above")
        return EXIT_FAILED
    return EXIT_FAILED if report.errors else EXIT_OK


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
        return EXIT_USAGE
    command, note = _bench_command(args), args.note or ""
    report = await _measure_and_show(
        args,
        lambda engine: measure_batches(engine, plan, tasks_dir=tasks_dir, command=command, note=note),
        render_batch_terminal,
        render_batch_markdown,
    )
    if report is None:
        return EXIT_FAILED
    if not report.measured:
        error("no batch ran whole in both modes or at both concurrencies; see the messages above")
        return EXIT_FAILED
    return EXIT_FAILED if report.errors else EXIT_OK
