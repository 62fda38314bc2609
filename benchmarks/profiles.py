"""The loopback backend's profiles on the bench's corpus, in simulated time: calibration, edit formats, targets.

    python benchmarks/profiles.py [--profile NAME ...] [--tasks DIR] [--hunks-form {search-replace,diff}]

For each backend profile (lsp_server/testing/profiles.py), every corpus task runs as `bench --edit-format
region,hunks,auto` would run it against the loopback backend with that profile, computed without a server
and without sleeping (`lsp_server.testing.calibration`; one pass = 1 ms, so the waits below are in
passes, and every ratio is independent of the pass's length), then summarized by the bench's own code.
Prints:

1. the calibration: the speed-up (median over tasks of the wait without ÷ with the prediction) and the
   acceptance (accepted ÷ drafted), against the figures the profile is calibrated to (within 20 %: the
   same check as tests/backends/test_profiles.py);
2. the edit formats per group, as the bench's table has them, `auto` with the defaults
   (`edit_format.DEFAULT_HUNKS_MIN_LINES`);
3. the targets of docs/edit-formats.md on each profile: on large regions (300+ lines, at most 2 % of the
   lines changed) `auto` at least 3× faster than region + prediction and within 1.5× of the ideal; on
   small regions and rewrites, `auto` within 10 % of the better of region + prediction and hunks.

`--hunks-form` is `refactor.hunks_form`: the form a hunks answer is asked, and answered, in (default
`search-replace`, SEARCH/REPLACE blocks; `diff`, unified-diff hunks). About 10 seconds a profile (most
of it the bench's diff for the ideal); no server. benchmarks/formats.sh measures the same over HTTP,
in real time.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from lsp_server.bench.formats_report import FormatsReport, TaskFormats, summarize_formats
from lsp_server.bench.runs import Mode
from lsp_server.formats.choice import hunks_min_lines
from lsp_server.testing.calibration import Simulator, calibrate, corpus_tasks, simulation_arguments
from lsp_server.testing.profiles import PROFILES, BackendProfile

# (profile, kind of fake): every profile on its own kind; the perfect model, the upper bound, on both.
RUNS = (
    ("local-vllm-cpu", "vllm"),
    ("gpu-vllm-ngram", "vllm"),
    ("openai-predicted", "openai"),
    ("perfect", "vllm"),
    ("perfect", "openai"),
)
MODES: tuple[Mode, ...] = ("prediction", "baseline", "hunks", "auto")
LARGE, LARGE_SHARE = 300, 0.02


def off_by(measured: float, figure: float) -> str:
    gap = measured / figure - 1
    return f"{gap:+.0%}" + ("" if abs(gap) <= 0.2 else " (OVER 20 %)")


def calibration_rows(runs: list[tuple[BackendProfile, str]], tasks_dir: Path) -> None:
    print("## Calibration: the bench's two figures on the corpus, region format with and without the prediction\n")
    print("| profile | kind | speed-up | its figure | off by | acceptance | its figure | off by |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for profile, kind in runs:
        got = calibrate(profile, kind, tasks_dir)
        speedup, acceptance = profile.speedup, profile.acceptance
        cells = [
            profile.name,
            kind,
            f"{got.speedup:.2f}×",
            f"{speedup.value:.2f}×" if speedup else "– (upper bound)",
            off_by(got.speedup, speedup.value) if speedup else "–",
            f"{got.acceptance:.0%}",
            f"{acceptance.value:.0%}" if acceptance else "–",
            off_by(got.acceptance, acceptance.value) if acceptance else "–",
        ]
        print("| " + " | ".join(cells) + " |")


def _wait(task: TaskFormats | None, mode: Mode) -> str:
    runs = task.mode(mode) if task is not None else None
    if runs is None or runs.waited_ms is None or runs.ideal_ratio is None:
        return "–"
    return f"{runs.waited_ms.median:.0f} ({runs.ideal_ratio.median:.1f}×)"


def formats_rows(profile: BackendProfile, kind: str, report: FormatsReport, threshold: int) -> None:
    label = f"{profile.name} ({kind}, auto: hunks from {threshold} lines)"
    for group in report.groups:
        cells = [label, group.name]
        for mode in ("prediction", "hunks", "auto"):
            runs = group.mode(mode)
            if runs is None or runs.waited_ms is None or runs.ideal_ratio is None:
                cells.append("–")
            else:
                cells.append(f"{runs.waited_ms.median:.0f} ({runs.ideal_ratio.median:.1f}×)")
        speedup = f"{group.auto_speedup:.2f}×" if group.auto_speedup is not None else "–"
        versus = f"{group.auto_vs_best:.2f}× ({group.auto_vs_best_worst:.2f}×)" if group.auto_vs_best else "–"
        print("| " + " | ".join([*cells, speedup, versus]) + " |")


def targets_row(profile: BackendProfile, kind: str, report: FormatsReport) -> None:
    large = [t for t in report.tasks if t.region_lines >= LARGE and t.changed_lines <= LARGE_SHARE * t.region_lines]
    over = [t for t in report.tasks if t.region_lines >= LARGE and t not in large]

    def large_cell(tasks: list[TaskFormats]) -> str:
        if not tasks:
            return "–"
        faster = [t.auto_speedup for t in tasks if t.auto_speedup is not None]
        auto = [t.mode("auto") for t in tasks]
        ideal = [a.ideal_ratio.median for a in auto if a is not None and a.ideal_ratio is not None]
        met = ("met" if min(faster) >= 3 else "no", "met" if max(ideal) <= 1.5 else "no")
        names = ", ".join(t.name for t in tasks)
        return (
            f"{statistics.median(faster):.2f}× faster ({met[0]}), {statistics.median(ideal):.1f}× ideal ({met[1]}): "
            f"{names}"
        )

    def group_cell(name: str) -> str:
        group = next((g for g in report.groups if g.name == name), None)
        if group is None or group.auto_vs_best is None or group.auto_vs_best_worst is None:
            return "–"
        members = [t for t in report.tasks if t.group == name and t.auto_vs_best is not None]
        within = sum(1 for t in members if t.auto_vs_best is not None and t.auto_vs_best <= 1.1)
        verdict = "met" if group.auto_vs_best <= 1.1 else "no"
        worst = group.auto_vs_best_worst
        return (
            f"median {group.auto_vs_best:.2f}× ({verdict}), worst {worst:.2f}×, {within} of {len(members)} within 10 %"
        )

    cells = [
        f"{profile.name} ({kind})",
        large_cell(large),
        large_cell(over),
        group_cell("small edits, regions under 200 lines"),
        group_cell("rewrites"),
    ]
    print("| " + " | ".join(cells) + " |")


def main() -> None:
    parser = simulation_arguments(__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=Path, default=None, help="the corpus (default: benchmarks/tasks)")
    args = parser.parse_args()
    print(f"hunks answers as {args.hunks_form} (refactor.hunks_form)\n")
    folder, tasks = corpus_tasks(args.tasks)
    runs = [(PROFILES[name], kind) for name, kind in RUNS if not args.profile or name in args.profile]
    calibration_rows(runs, folder)
    reports = []
    for profile, kind in runs:
        threshold = hunks_min_lines(0, "field" if kind == "openai" else "prompt")[0]
        runs = Simulator(profile, kind, tasks, hunks_form=args.hunks_form).runs(MODES)
        report = summarize_formats(tasks, runs, MODES)
        reports.append((profile, kind, report, threshold))
    print("\n## Edit formats on the corpus, per group: median wait in passes (× ideal)\n")
    print(
        "| profile | group | region + prediction | hunks | auto | auto vs region + prediction | auto ÷ better (worst) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for profile, kind, report, threshold in reports:
        formats_rows(profile, kind, report, threshold)
    print(f"\n## Targets: large regions ({LARGE}+ lines, ≤ 2 % changed; and those over 2 %), small regions, rewrites\n")
    print(
        "| profile | large, ≤ 2 % changed: auto vs region + prediction (≥ 3×), auto × ideal (≤ 1.5×) | large, over 2 % "
        "| small regions: auto ÷ better (≤ 1.10×) | rewrites: auto ÷ better (≤ 1.10×) |"
    )
    print("|---|---|---|---|---|")
    for profile, kind, report, _ in reports:
        targets_row(profile, kind, report)


if __name__ == "__main__":
    main()
