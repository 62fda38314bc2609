"""`refactor-lsp bench`: the same edits with and without prediction, side by side.

Every task of a corpus (benchmarks/tasks/, format in its README) runs through the server's own
pipeline (the engine's `refactor`) twice per repetition: once with the prediction and once without,
with the same prompt at temperature 0. "Without" is the same backend without the `prediction` field
for OpenAI-type backends; for vLLM and llama.cpp, whose speculation is a server setting, it is a
baseline backend: the same model served without speculative decoding.

Pairs alternate which mode runs first, task by task and repetition by repetition (ABAB... then
BABA...), so that warm caches and drift favour neither mode. Speedup is the median, over pairs, of
the baseline's latency divided by the prediction's latency.

With `--edit-format region,hunks,auto` the modes are those edit formats (`region` gives two: with and
without the prediction; the region format without prediction always runs, as the reference), and
the report adds each mode's wait against the task's ideal time: the backend's TTFT plus the tokens
that differ, written at its plain decode rate, all measured in the same run (`ideal`).

Under load (`--concurrency 1,2,4`), each level runs the same schedule with every run replaced by a
batch: N identical requests sent at once through the one engine, then N in the other mode. The
report adds a row per level: latency, speedup, per-request and aggregate tokens/s, acceptance, and
how many answers really streamed at once.

One module per job, each importing only those listed before it:
- `tasks`: the corpus (Task, load_tasks) and BenchError;
- `runs`: one measured Run, a Pair of them, a Batch of them at once;
- `ideal`: a task's ideal time, and the diff that counts the tokens that differ;
- `probes`: what the servers and the machine say about themselves, /metrics counters;
- `report`: typed summaries per mode, task, level and overall, and the JSON report;
- `formats_report`: the edit-format section's summaries, and how they are computed;
- `summarize`: how the runs become the report;
- `render_cells`, `render_load`, `render_formats`, `render`: the tables for the terminal and Markdown;
- `options`: --concurrency and --edit-format, parsed and checked;
- `progress`: the progress display on stderr;
- `runner`: the plan, the schedule, each run and batch through the engine, the whole bench (`measure`);
- `batch_tasks`, `batch_report`, `render_batch`, `batch_runner`: batch tasks (`kind = "batch"`: every
  top-level definition of a file, one instruction), loaded and checked, their runs and summaries, their
  table, and their bench (`measure_batches`: each through `lsp_server.pipeline.batch.BatchRun`, with and without
  the prediction, one at a time and `--jobs N` at once).
The command line's glue (flags, config files, exit codes) lives in `lsp_server.cli`.
"""

from .formats_report import FormatRuns, FormatsReport, GroupFormats, TaskFormats, summarize_formats
from .ideal import Ideal, changed_chars, changed_lines
from .options import EDIT_FORMATS, parse_concurrency, parse_edit_formats
from .probes import Machine, ServerInfo, describe_server, machine
from .progress import ProgressDisplay
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
from .runner import (
    BenchPlan,
    LevelRuns,
    SizeRuleOnly,
    make_plan,
    max_concurrency,
    measure,
    run_batch,
    run_bench,
    run_level,
    schedule,
    warm_up,
)
from .runs import MODE_LABELS, Batch, Mode, Pair, Run
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
