"""`refactor-lsp bench --kind apply`: each corpus task's change as a snippet to merge, scoped with and
without the prediction and as a whole-file merge (bench/apply_bench.py); the command line's glue."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config.schema import ConfigError
from .io import EXIT_FAILED, EXIT_OK, EXIT_USAGE, error, load_cli_config, measure_and_show


async def bench_apply(args: argparse.Namespace, command: str) -> int:
    from ..bench import BenchError, default_tasks_dir, make_plan
    from ..bench.apply_bench import ApplyBenchPlan, measure_apply
    from ..bench.apply_render import render_apply_markdown, render_apply_terminal
    from ..bench.apply_report import summarize_apply
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
        return EXIT_USAGE
    report = await measure_and_show(
        args,
        lambda engine: measure_apply(engine, plan, tasks_dir=str(tasks_dir), command=command, note=args.note or ""),
        render_apply_terminal,
        render_apply_markdown,
    )
    if report is None:
        return EXIT_FAILED
    if summarize_apply(report).scope_speedup is None:
        error("no task merged as expected both scoped and whole-file; see the lines above")
        return EXIT_FAILED
    return EXIT_OK
