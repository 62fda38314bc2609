"""The apply bench's tables (`bench --kind apply`): the terminal's and the recorded Markdown's, from the
figures of bench/apply_report.py."""

from __future__ import annotations

from .apply_report import ApplyReport, ApplySummary, summarize_apply
from .spread import Spread


def _seconds(spread: Spread | None) -> str:
    return f"{spread.median / 1000:.2f} s" if spread is not None else "–"


def _times(value: float | None) -> str:
    return f"{value:.2f}×" if value is not None else "–"


def _rows(report: ApplyReport) -> tuple[list[str], list[list[str]], ApplySummary]:
    summary = summarize_apply(report)
    head = [
        "task",
        "lines",
        "parts",
        "scoped + prediction",
        "scoped, no prediction",
        "whole file + prediction",
        "prediction speed-up",
        "whole file ÷ scoped",
        "correct (scoped / no pred. / whole)",
    ]
    rows = [
        [
            s.task,
            str(s.lines),
            str(s.parts),
            _seconds(s.wall_ms["prediction"]),
            _seconds(s.wall_ms["baseline"]),
            _seconds(s.wall_ms["whole-file"]),
            _times(s.prediction_speedup),
            _times(s.scope_speedup),
            " / ".join(s.correct[m] for m in ("prediction", "baseline", "whole-file")),
        ]
        for s in summary.tasks
    ]
    return head, rows, summary


def _headline(summary: ApplySummary) -> list[str]:
    lines = [
        f"median over tasks: prediction speed-up {_times(summary.prediction_speedup)}, "
        f"whole-file merge ÷ scoped merge {_times(summary.scope_speedup)}"
    ]
    largest = summary.largest
    if largest is not None:
        lines.append(
            f"largest file ({largest.task}, {largest.lines} lines, {largest.parts} part(s)): the scoped merge with "
            f"prediction {_seconds(largest.wall_ms['prediction'])}, the whole file with prediction "
            f"{_seconds(largest.wall_ms['whole-file'])}: {_times(largest.scope_speedup)} faster"
        )
    return lines


def _header(report: ApplyReport) -> list[str]:
    from .render import interrupted_lines, machine_line, metrics_lines, profile_text, server_lines

    meta = report.meta
    note = [f"note: {meta.note}"] if meta.note else []
    return [
        *interrupted_lines(meta),
        *server_lines(meta),
        profile_text(meta),
        *note,
        machine_line(meta),
        *metrics_lines(meta),
    ]


def render_apply_terminal(report: ApplyReport) -> str:
    head, rows, summary = _rows(report)
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    out = [f"refactor-lsp bench --kind apply · {report.meta.date}", *_header(report)]
    out.append("  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)))
    out += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    out += _headline(summary)
    out += [f"not a snippet: {s.name} ({s.reason})" for s in report.skipped]
    return "\n".join(out) + "\n"


def render_apply_markdown(report: ApplyReport) -> str:
    head, rows, summary = _rows(report)
    meta = report.meta
    out = [
        f"# refactor-lsp bench --kind apply: {meta.date}",
        "",
        f"- command: `{meta.command}`",
        *(f"- {line}" for line in _header(report)),
        f"- repetitions: {meta.repetitions}; order: {meta.order}; wall time {meta.wall_s} s",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(head))) + "|",
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
        *(f"{line}." for line in _headline(summary)),
    ]
    if report.skipped:
        out += ["", "Tasks that make no snippet to apply:", *(f"- `{s.name}`: {s.reason}" for s in report.skipped)]
    return "\n".join(out) + "\n"
