"""The report for people: a table with a header and notes, on the terminal or in Markdown; under
load (--concurrency) a second table, one row per level (`render_load`); with --edit-format a table
of every mode against the ideal time, per task, per group and for all tasks (`render_formats`)."""

from __future__ import annotations

from collections.abc import Sequence

from .render_cells import KIND_LABELS, acceptance, both, seconds, speedup
from .render_formats import formats_columns, formats_footer_lines, formats_header_lines, formats_rows, formats_title
from .render_load import LOAD_COLUMNS, load_footer_lines, load_rows, load_title
from .render_terminal import dropped_note, fit_table, wrap
from .report import Meta, PairsSummary, Report

EXPECTED_COLUMN = "matches expected (with · without)"
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
    EXPECTED_COLUMN,
    "cost (with / without, ratio)",
)


def _differ_after(row: PairsSummary) -> str:
    after = row.differ_after_chars
    return f"{after[0]}" if after[0] == after[-1] else f"{after[0]}–{after[-1]}"


def _same(row: PairsSummary, compact: bool = False) -> str:
    """Whether both modes wrote the same text; on a terminal, where the texts part is in the warning below."""
    differ, same = row.different_text_pairs, row.same_text_pairs
    if differ:
        return f"DIFFERENT {differ}/{row.pairs}" + ("" if compact else f" (after {_differ_after(row)} chars)")
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


def _rate_digits(row: PairsSummary, compact: bool) -> int:
    """A tenth of a token a second matters to a slow backend; on a terminal, not past 100."""
    rates = [r for r in (row.prediction.effective_tokens_per_s, row.baseline.effective_tokens_per_s) if r is not None]
    return 0 if compact and rates and min(rates) >= 100 else 1


def _cells(name: str, kind: str, row: PairsSummary, compact: bool = False) -> list[str]:
    p, b = row.prediction, row.baseline
    return [
        name,
        KIND_LABELS.get(kind, kind),
        seconds(p.latency_ms),
        seconds(b.latency_ms),
        speedup(row),
        both(p.ttft_ms, b.ttft_ms),
        both(p.output_tokens, b.output_tokens),
        both(p.effective_tokens_per_s, b.effective_tokens_per_s, _rate_digits(row, compact)),
        acceptance(p),
        _same(row, compact),
        _expected(row),
        _cost(row),
    ]


def table_rows(report: Report, compact: bool = False) -> list[list[str]]:
    """One row per task, then the total; `compact`: a terminal's cells."""
    return [
        *(_cells(t.name, t.kind, t.summary, compact) for t in report.tasks),
        _cells("all tasks", "", report.total, compact),
    ]


def header_lines(report: Report) -> list[str]:
    meta = report.meta
    lines = [f"refactor-lsp bench · {meta.date} · refactor-lsp {meta.refactor_lsp}", *interrupted_lines(meta)]
    lines += server_lines(meta)
    lines.append(profile_text(meta))
    if meta.note:
        lines.append(f"note: {meta.note}")
    lines.append(
        f"tasks: {len(report.tasks)} ({', '.join(t.name for t in report.tasks)}) · repetitions: "
        f"{meta.repetitions} · temperature 0 · max tokens: {meta.max_tokens or 'from the region size'}"
    )
    lines.append(machine_line(meta))
    if meta.concurrency != (1,):
        levels = ", ".join(str(n) for n in meta.concurrency)
        lines.append(
            f"concurrency: {levels} requests at once; the per-task table is at {meta.concurrency[0]}, "
            "the load table has every level"
        )
    if report.formats is not None:
        lines += formats_header_lines(report)
    return [*lines, f"order: {meta.order}", *metrics_lines(meta)]


def machine_line(meta: Meta) -> str:
    m = meta.machine
    return f"machine: {m.cpu}, {m.cores} cores, {m.memory_gib} GiB · {m.os} · Python {m.python}"


def interrupted_lines(meta: Meta) -> list[str]:
    """The header's first word on a bench Ctrl-C ended: how far it got."""
    return [meta.interrupted] if meta.interrupted else []


def metrics_lines(meta: Meta) -> list[str]:
    """What the server under test's /metrics counted during the whole bench, when it has counters; a
    count of nothing drafted says it was not reported, never "0 accepted (0%)"."""
    counted = meta.metrics_during_bench
    if not counted:
        return []
    if not counted.drafted:
        return [f"/metrics during the bench ({counted.url}): draft tokens not reported (none counted)"]
    return [
        f"/metrics during the bench ({counted.url}): {counted.drafted:.0f} draft tokens, "
        f"{counted.accepted:.0f} accepted ({counted.rate:.0%})"
    ]


def server_lines(meta: Meta) -> list[str]:
    """The header's lines on the servers: each backend, what its server told, and what "without" is."""
    lines = []
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
        if server.proposer:
            extras.append(f"drafts from the prediction: {server.proposer}")
        cache = server.metrics_info or {}
        if cache.get("enable_prefix_caching"):
            extras.append(f"prefix caching {'on' if cache['enable_prefix_caching'] == 'True' else 'off'}")
        lines.append(text + (f" — {'; '.join(extras)}" if extras else ""))
    if meta.baseline is None:
        lines.append("without: the same backend, without the `prediction` field")
    return lines


def profile_text(meta: Meta) -> str:
    """The run's one backend profile (the loopback backend's, lsp_server/testing/profiles.py), or none."""
    profiles = meta.profiles
    if not profiles:
        return "profile: none (real servers, measured as they run)"
    names = set(profiles.values())
    if len(names) > 1:
        which = ", ".join(f"{name} {label}" for label, name in profiles.items())
        return f"profile: WARNING, the servers run different profiles ({which}): their figures do not compare"
    (name,) = names
    bound = " (the UPPER BOUND, not a real backend)" if name == "perfect" else ", calibrated to measured figures"
    return f"profile: {name}{bound}: SIMULATED by the loopback backend (lsp_server/testing/profiles.py)"


def footer_lines(report: Report, left_out: Sequence[str] = ()) -> list[str]:
    """The notes under the tables; none on a column a terminal `left_out`."""
    lines = pairs_footer_lines(report, left_out) if _pairs_table(report) else []
    if report.load:
        lines += load_footer_lines(report)
    return lines + formats_footer_lines(report)


def _pairs_table(report: Report) -> bool:
    """The table of prediction with and without: always, but with --edit-format only when region ran."""
    return report.formats is None or bool(report.pairs)


def pairs_footer_lines(report: Report, left_out: Sequence[str] = ()) -> list[str]:
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
    differ = [t for t in report.tasks if t.summary.different_text_pairs]
    if differ:
        where = (
            f"{t.name} ({t.summary.different_text_pairs}/{t.summary.pairs} pairs, after {_differ_after(t.summary)} "
            "characters)"
            for t in differ
        )
        lines.append(
            "WARNING: the two modes produced different text for: " + ", ".join(where) + " (they should not at "
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
        lines.append(f"{total.errors} runs failed and are left out; each one's message is in its line above.")
    repairs = [
        (label, m.repaired, m.repair_failed) for label, m in (("with", total.prediction), ("without", total.baseline))
    ]
    if any(repaired or failed for _, repaired, failed in repairs):
        counts = "; ".join(
            f"{label} prediction {repaired} repaired, {failed} still broken" for label, repaired, failed in repairs
        )
        lines.append(
            f"answers that brought a syntax error were sent back once ({counts}): the repair's time is in the "
            "latency and the speedup, its cost in the cost."
        )
    if EXPECTED_COLUMN not in left_out:
        lines.append(
            "matches expected: answers equal to the task's expected file, a note on the model, not a quality "
            "measure of refactor-lsp."
        )
    return lines


# The columns a narrow terminal leaves out, first to go first (--markdown and --json keep them all): never
# what a reader needs to trust the speed-up (the latencies, TTFT, end-to-end tok/s, acceptance, and
# whether both modes wrote the same text); first the note on the model, which is no measure of speed.
PAIRS_DROP = (
    EXPECTED_COLUMN,
    "kind",
    "output tok (with / without)",
    "cost (with / without, ratio)",
)
LOAD_DROP = ("end-to-end tok/s per request (with / without)", "pairs", "streaming at once (with / without)")


# The edit-format table's headers on a terminal, shortened (the note under the table says so).
TERMINAL_HEADERS = {
    "region + prediction": "r+pred",
    "region, no prediction": "no pred",
    "hunks + prediction": "h+pred",
    "auto ÷ better of r+pred, hunks": "auto ÷ better",
    ", s (× ideal)": " s (×ideal)",
    "region lines": "lines",
    "changed lines": "changed",
}


def _short(column: str) -> str:
    for long, short in TERMINAL_HEADERS.items():
        column = column.replace(long, short)
    return column


def _formats_drop(columns: list[str]) -> list[str]:
    """The edit-format table's columns a terminal may leave out, first to go first: the matches (the footer
    names what did not apply), the task's kind and changed lines, the modes other than region + prediction,
    hunks and auto, the region's lines, auto's choice; never the ideal (task names are shortened first)."""
    matches = [c for c in columns if c.startswith("matches expected")]
    others = [c for c in columns if c.endswith("(×ideal)") and not c.startswith(("auto", "hunks", "r+pred"))]
    return [*matches, "kind", "changed", *others, "lines", "auto ran as"]


def render_terminal(report: Report) -> str:
    out = [*wrap(header_lines(report)), ""]
    dropped: list[str] = []
    if _pairs_table(report):
        table, left_out = fit_table(COLUMNS, table_rows(report, compact=True), left=2, tail=1, drop=PAIRS_DROP)
        out += table
        dropped += left_out
    if report.load:
        table, left_out = fit_table(LOAD_COLUMNS, load_rows(report), left=1, tail=0, drop=LOAD_DROP)
        out += ["", *wrap([load_title(report)]), *table]
        dropped += left_out
    if report.formats is not None:
        formats = report.formats
        columns = [_short(c) for c in formats_columns(formats)]
        rows = formats_rows(formats, compact=True)
        table, left_out = fit_table(columns, rows, left=2, tail=len(formats.groups), drop=_formats_drop(columns))
        legend = (
            "r+pred: region + prediction; no pred: region, no prediction; h 3, r 3: auto ran hunks or region; "
            "✗1/3: not applied in 1 of 3 runs"
        )
        out += ["", *wrap([formats_title(report)]), *table, *wrap([f"({legend}; ≤: the group's worst task)"])]
        dropped += left_out
    out += ["", *wrap([*dropped_note(list(dict.fromkeys(dropped))), *footer_lines(report, dropped)])]
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
