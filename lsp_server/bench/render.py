"""The report for people: a table with a header and notes, on the terminal or in Markdown; under
load (--concurrency) a second table, one row per level; with --edit-format a table of every mode
against the ideal time, per task, per group and for all tasks."""

from __future__ import annotations

from .report import FormatRuns, FormatsReport, GroupFormats, LoadLevel, ModeSummary, PairsSummary, Report, Spread
from .runs import MODE_LABELS

KIND_LABELS = {"mostly-unchanged": "small edit", "heavy-rewrite": "rewrite"}

COLUMNS = (
    "task",
    "kind",
    "with prediction, s",
    "without, s",
    "speedup",
    "TTFT ms (with / without)",
    "output tok (with / without)",
    "end-to-end tok/s (with / without)",
    "accepted / rejected",
    "same text",
    "matches expected (with · without)",
    "cost (with / without, ratio)",
)

LOAD_COLUMNS = (
    "concurrency",
    "pairs",
    "with prediction, s",
    "without, s",
    "speedup",
    "end-to-end tok/s per request (with / without)",
    "aggregate tok/s (with / without)",
    "aggregate ratio",
    "accepted / rejected",
    "streaming at once (with / without)",
)


def _seconds(spread: Spread | None) -> str:
    if spread is None:
        return "–"
    median, low, high = (v / 1000 for v in (spread.median, spread.min, spread.max))
    return f"{median:.2f} ({low:.2f}–{high:.2f})"


def _num(value: float | None, digits: int = 0) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _both(a: float | None, b: float | None, digits: int = 0) -> str:
    return f"{_num(a, digits)} / {_num(b, digits)}"


def _acceptance(mode: ModeSummary) -> str:
    if mode.accepted_prediction_tokens is None:
        return "not reported"
    rate = mode.acceptance_rate
    rate_text = f" ({rate:.0%})" if rate is not None else ""
    return f"{mode.accepted_prediction_tokens} / {mode.rejected_prediction_tokens}{rate_text}"


def _same(row: PairsSummary) -> str:
    differ, same = row.different_text_pairs, row.same_text_pairs
    if differ:
        after = row.differ_after_chars
        where = f"{after[0]}" if after[0] == after[-1] else f"{after[0]}–{after[-1]}"
        return f"DIFFERENT {differ}/{row.pairs} (after {where} chars)"
    if same == row.pairs:
        return "yes"
    return f"yes {same}/{row.pairs}" if same else "–"


def _expected(row: PairsSummary) -> str:
    pairs = row.pairs
    return f"{row.prediction.matches_expected}/{pairs} · {row.baseline.matches_expected}/{pairs}"


def _cost(row: PairsSummary) -> str:
    p, b = row.prediction.cost, row.baseline.cost
    if p is None and b is None:
        return "–"
    ratio = f" ({row.cost_ratio:.2f}×)" if row.cost_ratio is not None else ""
    return f"{'–' if p is None else f'${p:.4f}'} / {'–' if b is None else f'${b:.4f}'}{ratio}"


def _speedup(row: PairsSummary) -> str:
    return "–" if row.speedup is None else f"{row.speedup:.2f}×"


def _cells(name: str, kind: str, row: PairsSummary) -> list[str]:
    p, b = row.prediction, row.baseline
    return [
        name,
        KIND_LABELS.get(kind, kind),
        _seconds(p.latency_ms),
        _seconds(b.latency_ms),
        _speedup(row),
        _both(p.ttft_ms, b.ttft_ms),
        _both(p.output_tokens, b.output_tokens),
        _both(p.effective_tokens_per_s, b.effective_tokens_per_s, 1),
        _acceptance(p),
        _same(row),
        _expected(row),
        _cost(row),
    ]


def _level_acceptance(level: LoadLevel) -> str:
    counted = level.metrics_during_level
    if level.acceptance_approximate and counted is not None:
        # Each request's /metrics reading also counted its batch-mates' drafts: the level's difference does not.
        return f"{counted.accepted:.0f} / {counted.drafted - counted.accepted:.0f} ({counted.rate:.0%}, /metrics)"
    return _acceptance(level.summary.prediction)


def _at_once(a: int | None, b: int | None) -> str:
    return f"{'–' if a is None else a} / {'–' if b is None else b}"


def load_rows(report: Report) -> list[list[str]]:
    """One row per concurrency level, lowest first."""
    rows = []
    for level in report.load:
        row, p, b = level.summary, level.prediction, level.baseline
        ratio = level.aggregate_ratio
        rows.append(
            [
                str(level.concurrency),
                str(row.pairs),
                _seconds(row.prediction.latency_ms),
                _seconds(row.baseline.latency_ms),
                _speedup(row),
                _both(row.prediction.effective_tokens_per_s, row.baseline.effective_tokens_per_s, 1),
                _both(p.aggregate_tokens_per_s, b.aggregate_tokens_per_s, 1),
                "–" if ratio is None else f"{ratio:.2f}×",
                _level_acceptance(level),
                _at_once(p.streaming_at_once, b.streaming_at_once),
            ]
        )
    return rows


def _wait(ms: float | None) -> str:
    """Seconds, with a third decimal under one second: the loopback backend's ideal is a few tens of ms."""
    if ms is None:
        return "–"
    return f"{ms / 1000:.2f}" if ms >= 1000 else f"{ms / 1000:.3f}"


def _ratio(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}×"


def _mode_cell(mode: FormatRuns | None) -> str:
    if mode is None:
        return "–"
    waited = mode.waited_ms.median if mode.waited_ms is not None else None
    ratio = mode.ideal_ratio.median if mode.ideal_ratio is not None else None
    text = f"{_wait(waited)} ({_ratio(ratio, 1)})"
    failed = mode.errors + mode.refused
    return text + (f", {failed}/{mode.runs} not applied" if failed else "")


def _ran_as(mode: FormatRuns | None) -> str:
    if mode is None or not mode.formats:
        return "–"
    return ", ".join(f"{name} {count}" for name, count in mode.formats.items())


def formats_columns(formats: FormatsReport) -> list[str]:
    modes = formats.modes
    columns = ["task", "kind", "region lines", "changed lines", "ideal, s"]
    columns += [f"{MODE_LABELS[m]}, s (× ideal)" for m in modes]
    if "auto" in modes:
        columns.append("auto ran as")
        if "prediction" in modes:
            columns.append("auto vs region + prediction")
        if "prediction" in modes and "hunks" in modes:
            columns.append("auto ÷ better of region + prediction, hunks")
    columns.append("matches expected (" + " · ".join(MODE_LABELS[m] for m in modes) + ")")
    return columns


def formats_rows(formats: FormatsReport) -> list[list[str]]:
    """One row per task, then one per group (all tasks last)."""
    modes = formats.modes
    tail = []
    if "auto" in modes:
        tail.append("auto")
        if "prediction" in modes:
            tail.append("speedup")
        if "prediction" in modes and "hunks" in modes:
            tail.append("versus")

    def extra(auto: FormatRuns | None, speedup: float | None, versus: str) -> list[str]:
        cells = {"auto": _ran_as(auto), "speedup": _ratio(speedup), "versus": versus}
        return [cells[name] for name in tail]

    def matches(runs: tuple[FormatRuns, ...]) -> str:
        return " · ".join(f"{m.matches_expected}/{m.runs}" for m in runs)

    rows = []
    for task in formats.tasks:
        ideal = task.ideal.ideal_ms if task.ideal is not None else None
        rows.append(
            [
                task.name,
                KIND_LABELS.get(task.kind, task.kind),
                str(task.region_lines),
                str(task.changed_lines),
                _wait(ideal),
                *(_mode_cell(task.mode(m)) for m in modes),
                *extra(task.mode("auto"), task.auto_speedup, _ratio(task.auto_vs_best)),
                matches(task.modes),
            ]
        )
    for group in formats.groups:
        rows.append(
            [
                group.name,
                "",
                "",
                "",
                "",
                *(_mode_cell(group.mode(m)) for m in modes),
                *extra(group.mode("auto"), group.auto_speedup, _group_versus(group)),
                matches(group.modes),
            ]
        )
    return rows


def _group_versus(group: GroupFormats) -> str:
    if group.auto_vs_best is None:
        return "–"
    return f"{_ratio(group.auto_vs_best)} (worst {_ratio(group.auto_vs_best_worst)})"


def formats_title(report: Report) -> str:
    title = "Edit formats: what the user waited, median, and its distance to the ideal time"
    if report.meta.simulated:
        return title + " (SIMULATED: measured against the loopback test backend, not a real server)"
    return title


def formats_header_lines(report: Report) -> list[str]:
    meta = report.meta
    modes = report.formats.modes if report.formats is not None else ()
    reference = "" if "prediction" in modes else " (not asked for: it runs as the reference for the ideal)"
    lines = [
        f"edit formats: {', '.join(MODE_LABELS[m] for m in modes)} (--edit-format {','.join(meta.edit_formats)}); "
        f"{MODE_LABELS['baseline']}{reference} is what the ideal time is measured from"
    ]
    if "auto" in modes:
        lines.append(
            f"auto decides by the region's size alone in the bench: hunks from {meta.hunks_min_lines} lines "
            "(refactor.hunks_min_lines, or its default for this backend), region below; neither the history file "
            "nor the bench's own runs steer it"
        )
    return lines


def formats_footer_lines(report: Report) -> list[str]:
    formats = report.formats
    if formats is None:
        return []
    lines = [
        "edit formats: each mode's time is what the user waited, request sent → answer ready (a hunks answer that "
        "did not apply and its retry in region count together), the median over repetitions; × ideal: the median "
        "over runs of that wait ÷ the task's ideal time. Ideal = TTFT + tokens that differ ÷ plain decode rate, all "
        f"measured in this run, on the same task, in the {MODE_LABELS['baseline']} mode: TTFT, its median time to "
        "first token; plain decode rate, its median output tokens ÷ (latency − TTFT); tokens that differ, the "
        "characters the expected region inserts or replaces (a diff over words, punctuation and whitespace) ÷ the "
        "characters per output token the backend wrote there. Under 1× is possible: a prediction or a speculating "
        "server writes copied tokens faster than the plain rate. changed lines: lines the expected edit touches.",
    ]
    if "auto" in formats.modes and "prediction" in formats.modes:
        lines.append(
            "auto vs region + prediction: region + prediction's median wait ÷ auto's; auto ÷ better: auto's median "
            "wait ÷ the shorter of region + prediction's and hunks' (1.00×: as fast as the better of the two); for "
            "groups, the median over their tasks (and the worst). Group rows: every run of their tasks."
        )
    not_applied = [
        f"{task.name} ({MODE_LABELS[m.mode]}: {m.errors + m.refused}/{m.runs})"
        for task in formats.tasks
        for m in task.modes
        if m.errors + m.refused
    ]
    if not_applied:
        lines.append(
            "not applied (refused or failed; their wait still counts): " + ", ".join(not_applied) + "; see the JSON "
            "for the messages."
        )
    return lines


def load_title(report: Report) -> str:
    if report.meta.simulated:
        return "Speed under load (SIMULATED: measured against the loopback test backend, not a real server)"
    return "Speed under load"


def table_rows(report: Report) -> list[list[str]]:
    """One row per task, then the total."""
    return [*(_cells(t.name, t.kind, t.summary) for t in report.tasks), _cells("all tasks", "", report.total)]


def header_lines(report: Report) -> list[str]:
    meta = report.meta
    lines = [f"refactor-lsp bench · {meta.date} · refactor-lsp {meta.refactor_lsp}"]
    for label, server in (("with prediction", meta.backend), ("without", meta.baseline)):
        if server is None:
            continue
        text = f"{label}: {server.name} ({server.type}) {server.base_url} model {server.model}"
        extras = []
        if server.server_version:
            extras.append(server.server_version)
        owned_by = str((server.model_info or {}).get("owned_by", ""))
        if "simulated" in owned_by.lower():
            extras.insert(0, f"SIMULATED: {owned_by}")  # the loopback test backend says so in /models
        max_model_len = (server.model_info or {}).get("max_model_len")
        if max_model_len:
            extras.append(f"max_model_len {max_model_len}")
        if server.speculative_decoding:
            extras.append(f"speculative decoding {server.speculative_decoding}")
        cache = server.metrics_info or {}
        if cache.get("enable_prefix_caching"):
            extras.append(f"prefix caching {'on' if cache['enable_prefix_caching'] == 'True' else 'off'}")
        lines.append(text + (f" — {'; '.join(extras)}" if extras else ""))
    if meta.baseline is None:
        lines.append("without: the same backend, without the `prediction` field")
    if meta.note:
        lines.append(f"note: {meta.note}")
    lines.append(
        f"tasks: {len(report.tasks)} ({', '.join(t.name for t in report.tasks)}) · repetitions: "
        f"{meta.repetitions} · temperature 0 · max tokens: {meta.max_tokens or 'from the region size'}"
    )
    m = meta.machine
    lines.append(f"machine: {m.cpu}, {m.cores} cores, {m.memory_gib} GiB · {m.os} · Python {m.python}")
    if meta.concurrency != (1,):
        levels = ", ".join(str(n) for n in meta.concurrency)
        lines.append(
            f"concurrency: {levels} requests at once; the per-task table is at {meta.concurrency[0]}, "
            "the load table has every level"
        )
    if report.formats is not None:
        lines += formats_header_lines(report)
    lines.append(f"order: {meta.order}")
    counted = meta.metrics_during_bench
    if counted:
        lines.append(
            f"/metrics during the bench ({counted.url}): {counted.drafted:.0f} draft tokens, "
            f"{counted.accepted:.0f} accepted ({counted.rate:.0%})"
        )
    return lines


def footer_lines(report: Report) -> list[str]:
    lines = pairs_footer_lines(report) if _pairs_table(report) else []
    if report.load:
        lines += load_footer_lines(report)
    return lines + formats_footer_lines(report)


def _pairs_table(report: Report) -> bool:
    """The table of prediction with and without: always, but with --edit-format only when region ran."""
    return report.formats is None or bool(report.pairs)


def pairs_footer_lines(report: Report) -> list[str]:
    total = report.total
    lines = [
        "speedup: latency without ÷ latency with prediction, median over pairs"
        + (
            f" (range {total.speedup_min:.2f}–{total.speedup_max:.2f}; total time ratio {total.total_time_ratio:.2f})"
            if total.speedup is not None
            else ""
        )
        + ". Latency: median (min–max) over repetitions; TTFT: time to first token; output tokens: as the "
        "server counts them, less the rejected prediction tokens OpenAI bills as output; end-to-end tok/s: output "
        "tokens ÷ latency (the editor's and the CLI's tok/s is the generation rate: output tokens ÷ (latency − "
        "TTFT)); accepted / rejected: prediction (or draft) tokens, summed.",
    ]
    sources = sorted(set(total.prediction.acceptance_sources))
    if sources:
        lines.append(f"acceptance read from: {', '.join(sources)}.")
    differ = [t.name for t in report.tasks if t.summary.different_text_pairs]
    if differ:
        lines.append(
            "WARNING: the two modes produced different text for: " + ", ".join(differ) + " (they should not at "
            "temperature 0; the speedup compares unlike outputs there)."
        )
        unsteady = [mode for mode, n in total.distinct_outputs.items() if n > 1]
        if unsteady:
            lines.append(
                "The same mode also answered the same task differently across repetitions ("
                + " and ".join("with prediction" if m == "prediction" else "without" for m in unsteady)
                + "): the server is not deterministic at temperature 0 (likely rounding: different batch shapes, "
                "from speculative verification or prefix-cache hits, give slightly different logits, and a tiny "
                "model's close calls flip), so not all of the difference comes from the prediction."
            )
    if total.refused:
        lines.append(
            f"{total.refused} answers were measured but not applicable (cut off at max tokens, or not code); their "
            "timing counts, their text is compared raw."
        )
    if total.errors:
        lines.append(f"{total.errors} runs failed and are left out; see the JSON for the messages.")
    lines.append(
        "matches expected: answers equal to the task's expected file, a note on the model, not a quality "
        "measure of refactor-lsp."
    )
    return lines


def load_footer_lines(report: Report) -> list[str]:
    lines = [
        "speed under load: at concurrency N each task runs as a batch of N identical requests sent at once in one "
        "mode, then N in the other (the first mode alternating as in the per-task table); a pair is a request and "
        "the one in the same place of the other mode's batch. Latency (median, min–max) and speedup (median over "
        "pairs) as above; end-to-end tok/s per request: the median over requests of output tokens ÷ latency (the "
        "JSON also has the generation rate, output tokens ÷ (latency − TTFT)); aggregate tok/s: all output tokens of "
        "a mode's batches ÷ those batches' wall time (first request sent → last answer ended), what the server "
        "delivered to everyone at once; aggregate ratio: with ÷ without; streaming at once: the fewest, over a "
        "mode's batches, of the most answers streaming (first token → end) at one instant, by the bench's clock."
    ]
    if any(level.acceptance_approximate and level.metrics_during_level for level in report.load):
        lines.append(
            "accepted / rejected marked /metrics: the server's counters over the level (read per request they "
            "would count each batch-mate's drafts too)."
        )
    for level in report.load:
        seen = [n for n in (level.prediction.streaming_at_once, level.baseline.streaming_at_once) if n is not None]
        if seen and min(seen) < level.concurrency:
            lines.append(
                f"WARNING: at concurrency {level.concurrency} some batch had only {min(seen)} answers streaming at "
                "once: the load was lighter than asked (answers too short to overlap, or requests queued on the way)."
            )
    return lines


def _terminal_table(columns: tuple[str, ...] | list[str], rows: list[list[str]], left: int, tail: int) -> list[str]:
    """Columns padded to fit, the first `left` ones to the left; a rule above the last `tail` rows (the totals)."""
    table = [list(columns), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))]
    rule = "  ".join("-" * w for w in widths)

    def line(cells: list[str]) -> str:
        cells = [c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
        return "  ".join(cells)

    body = [line(r) for r in table[1:]]
    if tail:
        return [line(table[0]), rule, *body[:-tail], rule, *body[-tail:]]
    return [line(table[0]), rule, *body]


def render_terminal(report: Report) -> str:
    out = [*header_lines(report), ""]
    if _pairs_table(report):
        out += _terminal_table(COLUMNS, table_rows(report), 2, tail=1)
    if report.load:
        out += ["", load_title(report), *_terminal_table(LOAD_COLUMNS, load_rows(report), 1, tail=0)]
    if report.formats is not None:
        formats = report.formats
        table = _terminal_table(formats_columns(formats), formats_rows(formats), 2, tail=len(formats.groups))
        out += ["", formats_title(report), *table]
    out += ["", *footer_lines(report)]
    return "\n".join(out) + "\n"


def render_markdown(report: Report) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    def bold(row: list[str]) -> list[str]:
        return [f"**{c}**" if c and c != "–" else c for c in row]

    rows = table_rows(report)
    rows[-1] = bold(rows[-1])
    out = [f"- {esc(line)}" for line in header_lines(report)]
    if report.meta.command:
        out.insert(0, f"Command: `{report.meta.command}`\n")
    if _pairs_table(report):
        out += [
            "",
            "| " + " | ".join(COLUMNS) + " |",
            "|" + "|".join(["---"] * 2 + ["---:"] * (len(COLUMNS) - 2)) + "|",
        ]
        out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    if report.load:
        out += ["", f"**{esc(load_title(report))}**", ""]
        out += ["| " + " | ".join(LOAD_COLUMNS) + " |", "|" + "|".join(["---:"] * len(LOAD_COLUMNS)) + "|"]
        out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in load_rows(report)]
    if report.formats is not None:
        formats = report.formats
        columns = formats_columns(formats)
        rows = formats_rows(formats)
        groups = len(formats.groups)
        rows[-groups:] = [bold(row) for row in rows[-groups:]]
        out += ["", f"**{esc(formats_title(report))}**", ""]
        out += ["| " + " | ".join(esc(c) for c in columns) + " |"]
        out += ["|" + "|".join(["---"] * 2 + ["---:"] * (len(columns) - 2)) + "|"]
        out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    for line in footer_lines(report):
        out += ["", line]
    return "\n".join(out) + "\n"
