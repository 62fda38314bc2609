"""The report for people: a table with a header and notes, on the terminal or in Markdown; under
load (--concurrency) a second table, one row per level (`render_load`); with --edit-format a table
of every mode against the ideal time, per task, per group and for all tasks (`render_formats`)."""

from __future__ import annotations

from .render_cells import KIND_LABELS, acceptance, both, seconds, speedup
from .render_formats import formats_columns, formats_footer_lines, formats_header_lines, formats_rows, formats_title
from .render_load import LOAD_COLUMNS, load_footer_lines, load_rows, load_title
from .report import PairsSummary, Report

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


def _cells(name: str, kind: str, row: PairsSummary) -> list[str]:
    p, b = row.prediction, row.baseline
    return [
        name,
        KIND_LABELS.get(kind, kind),
        seconds(p.latency_ms),
        seconds(b.latency_ms),
        speedup(row),
        both(p.ttft_ms, b.ttft_ms),
        both(p.output_tokens, b.output_tokens),
        both(p.effective_tokens_per_s, b.effective_tokens_per_s, 1),
        acceptance(p),
        _same(row),
        _expected(row),
        _cost(row),
    ]


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
