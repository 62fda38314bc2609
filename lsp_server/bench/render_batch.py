"""The report of a bench of batch tasks for people: a header, one row per task, notes; on a terminal
within 120 columns (columns left out in a set order, and named), in Markdown whole."""

from __future__ import annotations

from .batch_report import BatchCell, BatchReport, BatchTaskSummary
from .render import interrupted_lines, machine_line, metrics_lines, profile_text, server_lines
from .render_cells import both, num
from .render_terminal import dropped_note, fit_table, wrap


def columns(jobs: int) -> list[str]:
    at = f"1 / {jobs} at once"
    return [
        "batch task",
        "targets",
        f"with prediction, s ({at})",
        f"without, s ({at})",
        "speed-up from concurrency (with / without)",
        f"speed-up from prediction ({at})",
        "combined",
        f"tok/s together, with ({at})",
        f"tok/s together, without ({at})",
        "accepted / rejected (with)",
        f"in flight at most ({at})",
        "matches expected (with · without)",
        "similarity (with · without)",
    ]


# The columns a narrow terminal leaves out, first to go first (--markdown and --json keep them all): the
# notes on the model (no measure of speed) before any figure the speed-ups rest on.
def _drop(jobs: int) -> list[str]:
    at = f"1 / {jobs} at once"
    return [
        "similarity (with · without)",
        "matches expected (with · without)",
        f"in flight at most ({at})",
        f"tok/s together, without ({at})",
        "accepted / rejected (with)",
        f"tok/s together, with ({at})",
    ]


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


def _two(a: str, b: str) -> str:
    return f"{a} / {b}"


def _wall_s(cell: BatchCell) -> float | None:
    return cell.wall_ms.median / 1000 if cell.wall_ms is not None else None


def _acceptance(cells: tuple[BatchCell, ...]) -> str:
    exact = [c for c in cells if c.accepted_prediction_tokens is not None]
    if not exact:
        return "not reported"
    accepted = sum(c.accepted_prediction_tokens or 0 for c in exact)
    rejected = sum(c.rejected_prediction_tokens or 0 for c in exact)
    rate = f" ({accepted / (accepted + rejected):.0%})" if accepted + rejected else ""
    return f"{accepted} / {rejected}{rate}"


def _matched(cells: tuple[BatchCell, ...]) -> str:
    return f"{sum(c.targets_matched for c in cells)}/{sum(c.targets_run for c in cells)}"


def _similarity(cell_values: list[float | None]) -> str:
    present = [v for v in cell_values if v is not None]
    return num(min(present), 2) if present else "–"


def task_row(task: BatchTaskSummary) -> list[str]:
    n = task.jobs
    with1, withn = task.cell("prediction", 1), task.cell("prediction", n)
    without1, withoutn = task.cell("baseline", 1), task.cell("baseline", n)
    with_cells, without_cells = (with1, withn), (without1, withoutn)
    in_flight = f"{min(with1.in_flight, without1.in_flight)} / {min(withn.in_flight, withoutn.in_flight)}"
    return [
        task.name,
        str(task.targets),
        _two(num(_wall_s(with1), 1), num(_wall_s(withn), 1)),
        _two(num(_wall_s(without1), 1), num(_wall_s(withoutn), 1)),
        _two(_ratio(task.concurrency_speedup["prediction"]), _ratio(task.concurrency_speedup["baseline"])),
        _two(_ratio(task.prediction_speedup[1]), _ratio(task.prediction_speedup[n])),
        _ratio(task.combined_speedup),
        both(with1.tokens_per_s, withn.tokens_per_s),
        both(without1.tokens_per_s, withoutn.tokens_per_s),
        _acceptance(with_cells),
        in_flight,
        f"{_matched(with_cells)} · {_matched(without_cells)}",
        f"{_similarity([c.expected_similarity for c in with_cells])} · "
        f"{_similarity([c.expected_similarity for c in without_cells])}",
    ]


def title(report: BatchReport) -> str:
    simulated = " (SIMULATED: measured against the loopback test backend, not a real server)"
    return f"Batch tasks: one at a time and {report.jobs} at once" + (simulated if report.meta.simulated else "")


def header_lines(report: BatchReport) -> list[str]:
    meta = report.meta
    names = ", ".join(f"{t.name} ({t.targets} definitions)" for t in report.tasks)
    return [
        f"refactor-lsp bench, batch tasks · {meta.date} · refactor-lsp {meta.refactor_lsp}",
        *interrupted_lines(meta),
        *server_lines(meta),
        profile_text(meta),
        *([f"note: {meta.note}"] if meta.note else []),
        f"batch tasks: {names} · each one at a time and {report.jobs} at once (--jobs; default "
        f"refactor.concurrency) · repetitions: {meta.repetitions} · temperature 0 · max tokens: "
        f"{meta.max_tokens or 'from the region size'}",
        machine_line(meta),
        f"order: {meta.order}",
        *metrics_lines(meta),
    ]


def footer_lines(report: BatchReport) -> list[str]:
    n = report.jobs
    lines = [
        f"A batch: every top-level definition of the task's file refactored with the task's instruction through "
        f"the same batch runner as `refactor --each definition`, one after another (1) or at most {n} at once. "
        "Times: the batch's wall time, first target planned to last answer in, median over repetitions. Speed-up "
        f"from concurrency: wall time one at a time ÷ {n} at once, in each mode; from prediction: without ÷ with, "
        f"at the same concurrency; combined: without one at a time ÷ with {n} at once; each the median over "
        "repetitions of the ratio within a repetition. tok/s together: the batch's output tokens ÷ its wall time. "
        "accepted / rejected: draft or prediction tokens summed over the targets that reported them exactly. In "
        "flight at most: the most targets streaming at once, by the bench's count (the fewest over a cell's runs). "
        "Matches expected: answers equal to the target's definition in the expected file (a note on the model, "
        "not a measure of refactor-lsp); similarity: the lowest median line similarity.",
    ]
    for task in report.tasks:
        for cell in task.cells:
            if cell.in_flight < min(cell.concurrency, task.targets) and cell.runs:
                lines.append(
                    f"WARNING: {task.name} at {cell.concurrency} at once ({cell.mode}) had at most {cell.in_flight} "
                    "targets in flight in some run: the batch ran less concurrently than asked."
                )
        refused = sum(c.refused for c in task.cells)
        errors = sum(c.errors for c in task.cells)
        if refused or errors:
            lines.append(
                f"{task.name}: {refused} answers were measured but not applicable (cut off, or not code) and "
                f"{errors} targets got no answer; wall times include them, and a repetition with a target "
                "without an answer gives no speed-up (each one's message is in its line above)."
            )
    return lines


def render_batch_terminal(report: BatchReport) -> str:
    rows = [task_row(task) for task in report.tasks]
    table, dropped = fit_table(columns(report.jobs), rows, left=1, tail=0, drop=_drop(report.jobs))
    out = [*wrap(header_lines(report)), "", *wrap([title(report)]), *table, ""]
    out += wrap([*dropped_note(dropped), *footer_lines(report)])
    return "\n".join(out) + "\n"


def render_batch_markdown(report: BatchReport) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    names = columns(report.jobs)
    out = [f"- {esc(line)}" for line in header_lines(report)]
    if report.meta.command:
        out.insert(0, f"Command: `{report.meta.command}`\n")
    out += ["", f"**{esc(title(report))}**", ""]
    out += ["| " + " | ".join(esc(c) for c in names) + " |", "|---|" + "---:|" * (len(names) - 1)]
    out += ["| " + " | ".join(esc(c) for c in task_row(task)) + " |" for task in report.tasks]
    for line in footer_lines(report):
        out += ["", esc(line)]
    return "\n".join(out) + "\n"
