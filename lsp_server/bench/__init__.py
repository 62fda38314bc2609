"""`refactor-lsp bench`: the same edits with and without prediction, side by side.

Every task of a corpus (benchmarks/tasks/, format in its README) runs through the engine's own
`refactor` in each mode, in an order that favours none, at temperature 0; the report gives medians
and ratios from one run. benchmarks/README.md says what each mode, figure and table means.

One module per job, each importing only those listed before it:
- `tasks`: the corpus (Task, load_tasks) and BenchError;
- `runs`: one measured Run, a Pair of them, a Batch of them at once;
- `ideal`: a task's ideal time, and the diff that counts the tokens that differ;
- `probes`: what the servers and the machine say about themselves, /metrics counters;
- `report`: typed summaries per mode, task, level and overall, and the JSON report;
- `formats_report`: the edit-format section's summaries, and how they are computed;
- `summarize`: how the runs become the report;
- `render_cells`, `render_load`, `render_formats`, `render_terminal`, `render`: the tables for the terminal
  and Markdown;
- `options`: --concurrency and --edit-format, parsed and checked;
- `spread`: a figure over several runs, its median and range;
- `display`: the progress display on stderr;
- `interrupt`: Ctrl-C during a bench, what was measured kept and marked;
- `invocation`: how a bench was started (its command, tasks, note, progress stream, Ctrl-C), as each kind reports it;
- `setup`: the backends, modes, levels and repetitions, checked before anything is sent (`make_plan`);
- `schedule`: the schedule, each run and batch through the engine, the frame every bench runs in
  (`around`), the whole bench (`measure`);
- `batch_tasks`, `batch_report`, `render_batch`, `batch_runner`: batch tasks (`kind = "batch"`: every
  top-level definition of a file, one instruction), their runs and summaries, their table, and their
  bench (`measure_batches`, through `pipeline.runner.Runner`, one at a time and `--jobs N` at once);
- `apply_tasks`, `apply_report`, `apply_render`, `apply_bench`: `--kind apply`, each task's change as a
  snippet merged scoped with and without the prediction and into the whole file, its figures, its table.
The command line's glue (flags, config files, exit codes) lives in `lsp_server.cli`.
"""

from .display import ProgressDisplay
from .formats_report import FormatRuns, FormatsReport, GroupFormats, TaskFormats, summarize_formats
from .ideal import Ideal, changed_chars, changed_lines
from .options import EDIT_FORMATS, parse_concurrency, parse_edit_formats
from .probes import Machine, ServerInfo, describe_server, machine
from .render import render_markdown, render_terminal
from .report import (
    LoadLevel,
    Meta,
    ModeSummary,
    PairsSummary,
    Report,
    Spread,
    TaskSummary,
    Throughput,
)
from .runs import MODE_LABELS, Batch, Mode, Pair, Run
from .schedule import (
    LevelRuns,
    measure,
    run_batch,
    run_bench,
    run_level,
    schedule,
    warm_up,
)
from .setup import BenchPlan, SizeRuleOnly, make_plan, max_concurrency
from .summarize import build_report, summarize_level
from .tasks import BenchError, Task, default_tasks_dir, load_tasks

__all__ = [
    "EDIT_FORMATS",
    "MODE_LABELS",
    "Batch",
    "BenchError",
    "BenchPlan",
    "FormatRuns",
    "FormatsReport",
    "GroupFormats",
    "Ideal",
    "LevelRuns",
    "LoadLevel",
    "Machine",
    "Meta",
    "Mode",
    "ModeSummary",
    "Pair",
    "PairsSummary",
    "ProgressDisplay",
    "Report",
    "Run",
    "ServerInfo",
    "SizeRuleOnly",
    "Spread",
    "Task",
    "TaskFormats",
    "TaskSummary",
    "Throughput",
    "build_report",
    "changed_chars",
    "changed_lines",
    "default_tasks_dir",
    "describe_server",
    "load_tasks",
    "machine",
    "make_plan",
    "max_concurrency",
    "measure",
    "parse_concurrency",
    "parse_edit_formats",
    "render_markdown",
    "render_terminal",
    "run_batch",
    "run_bench",
    "run_level",
    "schedule",
    "summarize_formats",
    "summarize_level",
    "warm_up",
]
