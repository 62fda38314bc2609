"""The bench report's edit-format table (--edit-format): every mode against the ideal time, per task,
per group and for all tasks; its title, its header lines and its notes."""

from __future__ import annotations

from ..formats.hunks_diff import FORM_NAMES
from .formats_report import FormatRuns, FormatsReport, GroupFormats
from .render_cells import KIND_LABELS
from .report import Report
from .runs import MODE_LABELS


def _wait(ms: float | None) -> str:
    """Seconds, with a third decimal under one second: the loopback backend's ideal is a few tens of ms."""
    if ms is None:
        return "–"
    return f"{ms / 1000:.2f}" if ms >= 1000 else f"{ms / 1000:.3f}"


def _ratio(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}×"


def _mode_cell(mode: FormatRuns | None, compact: bool = False) -> str:
    if mode is None:
        return "–"
    waited = mode.waited_ms.median if mode.waited_ms is not None else None
    ratio = mode.ideal_ratio.median if mode.ideal_ratio is not None else None
    text = f"{_wait(waited)} ({_ratio(ratio, 1)})"
    failed = mode.errors + mode.refused
    if not failed:
        return text
    return text + (f" ✗{failed}/{mode.runs}" if compact else f", {failed}/{mode.runs} not applied")


def _ran_as(mode: FormatRuns | None, compact: bool = False) -> str:
    if mode is None or not mode.formats:
        return "–"
    if compact:  # "h 20, r 34": the terminal's narrow column
        return ", ".join(f"{name.replace('hunks', 'h').replace('region', 'r')} {n}" for name, n in mode.formats.items())
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


def formats_rows(formats: FormatsReport, compact: bool = False) -> list[list[str]]:
    """One row per task, then one per group (all tasks last); `compact`: runs not applied, auto's formats and
    a group's worst task in fewer characters (the terminal's table)."""
    modes = formats.modes
    tail = []
    if "auto" in modes:
        tail.append("auto")
        if "prediction" in modes:
            tail.append("speedup")
        if "prediction" in modes and "hunks" in modes:
            tail.append("versus")

    def extra(auto: FormatRuns | None, speedup: float | None, versus: str) -> list[str]:
        cells = {"auto": _ran_as(auto, compact), "speedup": _ratio(speedup), "versus": versus}
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
                *(_mode_cell(task.mode(m), compact) for m in modes),
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
                *(_mode_cell(group.mode(m), compact) for m in modes),
                *extra(group.mode("auto"), group.auto_speedup, _group_versus(group, compact)),
                matches(group.modes),
            ]
        )
    return rows


def _group_versus(group: GroupFormats, compact: bool = False) -> str:
    if group.auto_vs_best is None:
        return "–"
    return f"{_ratio(group.auto_vs_best)} ({'≤' if compact else 'worst '}{_ratio(group.auto_vs_best_worst)})"


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
    if meta.hunks_form and any(m in ("hunks", "hunks-prediction", "auto") for m in modes):
        form = FORM_NAMES[meta.hunks_form]
        lines.append(f'hunks answers are asked for as {form} (refactor.hunks_form = "{meta.hunks_form}")')
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
            "not applied (refused or failed; their wait still counts): " + ", ".join(not_applied) + "; each one's "
            "message is in its line above."
        )
    return lines
