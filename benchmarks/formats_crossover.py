"""Where hunks overtakes the region format, per backend profile, in simulated time: for `refactor.hunks_min_lines`.

    python benchmarks/formats_crossover.py [--profile NAME ...] [--hunks-form {search-replace,diff}]

Real code of growing size: the first top-level class or function without decorators, in the sorted
files of this Python's standard library, within 12 % of each size. Each gets the same small edit,
`  # checked` appended to 1 line, 3 lines, or 2 % of the lines (at least one), spread evenly over
its code lines. Each is made a bench task (the region: the whole definition) and run through
`lsp_server.testing.calibration.Simulator`: the prompts and prediction the engine sends, the answer
a perfect model gives in each format, paced as the loopback backend paces it with the profile (its
time to first token included), summed instead of slept. Per profile, the ratio of hunks' wait to
the region format's (with the prediction; for "no prediction", both without it; under 1: hunks is
faster), and the crossover: the smallest size from which hunks is faster for every edit at that size
and every larger one. Then, on the regions of 300 lines or more, hunks against region + prediction
and against the ideal time (the bench's definition, `lsp_server.bench.ideal`): the targets of
docs/edit-formats.md. `--hunks-form` is `refactor.hunks_form`, the form hunks answers are asked and
written in (default `search-replace`; `diff`: unified-diff hunks). About 10 seconds a profile; no server.
"""

from __future__ import annotations

import ast
import statistics
import sysconfig
from pathlib import Path

from lsp_server.bench.ideal import Ideal, changed_chars
from lsp_server.bench.runs import Mode
from lsp_server.bench.tasks import Task
from lsp_server.config.schema import HunksForm
from lsp_server.testing.calibration import Simulator, simulation_arguments
from lsp_server.testing.profiles import PROFILES, BackendProfile

SIZES = (25, 50, 75, 100, 125, 150, 175, 200, 250, 300, 400, 600, 800)
EDITS = ("1 line", "3 lines", "2 % of lines")
LARGE = 300  # the targets' large regions: this many lines or more, at most 2 % of them changed
# (profile, kind of fake, what the region format gets): every calibrated profile on its own kind;
# "no prediction" is OpenAI's without the field (the engine's "off"); the perfect model on both kinds.
RUNS = (
    ("local-vllm-cpu", "vllm", "prediction"),
    ("gpu-vllm-ngram", "vllm", "prediction"),
    ("openai-predicted", "openai", "prediction"),
    ("openai-predicted", "openai", "baseline"),
    ("perfect", "vllm", "prediction"),
    ("perfect", "openai", "prediction"),
)


def definitions() -> list[str]:
    """Top-level undecorated classes and functions of the stdlib, sorted by file."""
    found = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = text.splitlines(keepends=True)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.decorator_list and node.end_lineno:
                found.append("".join(lines[node.lineno - 1 : node.end_lineno]))
    return found


def edited(region: str, edit: str) -> str:
    lines = region.splitlines(keepends=True)
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    count = {"1 line": 1, "3 lines": 3}.get(edit) or max(1, round(len(lines) * 0.02))
    for k in range(count):
        i = code[(k * 2 + 1) * len(code) // (count * 2)]
        lines[i] = lines[i].rstrip("\n") + "  # checked\n"
    return "".join(lines)


def sweep_tasks() -> list[Task]:
    """One task per size and edit: the whole region is the file, the instruction asks for the marks."""
    pool = definitions()
    used: set[str] = set()
    tasks = []
    for size in SIZES:
        region = next((d for d in pool if abs(d.count("\n") - size) <= size * 0.12 and d not in used), None)
        if region is None:
            continue
        used.add(region)
        for edit in EDITS:
            tasks.append(
                Task(
                    name=f"{size}/{edit}",
                    folder=Path("sweep"),
                    file="m.py",
                    instruction=f"Append `  # checked` to {edit} of the code.",
                    lines=None,
                    kind="mostly-unchanged",
                    language="python",
                    source=region,
                    expected=edited(region, edit),
                )
            )
    return tasks


def crossover(ratios: dict[int, list[float]]) -> int | None:
    """The smallest size from which hunks is faster (ratio under 1) for every edit, there and above."""
    found = None
    for lines in sorted(ratios, reverse=True):
        if all(r < 1 for r in ratios[lines]):
            found = lines
        else:
            break
    return found


def report(
    profile: BackendProfile,
    kind: str,
    against: Mode,
    tasks: list[Task],
    changed: dict[str, int],
    hunks_form: HunksForm = "search-replace",
) -> None:
    """The table for one profile; `changed`: each task's changed characters (`changed_chars`, slow: once)."""
    modes: tuple[Mode, ...] = ("prediction", "baseline", "hunks")
    runs = {(r.task, r.mode): r for r in Simulator(profile, kind, tasks, hunks_form=hunks_form).runs(modes)}
    label = "region + prediction" if against == "prediction" else "region, no prediction"
    print(f"\n{profile.name} ({kind}): hunks' wait ÷ {label}'s, time to first token included (under 1: hunks)")
    print("| region lines | " + " | ".join(EDITS) + " |")
    print("|---:|" + "---:|" * len(EDITS))
    ratios: dict[int, list[float]] = {}
    large: list[tuple[float, float]] = []
    for task in tasks:
        region, hunks, reference = (runs[(task.name, m)] for m in (against, "hunks", "baseline"))
        if region.waited_ms is None or hunks.waited_ms is None or reference.stats is None:
            continue
        ratio = hunks.waited_ms / region.waited_ms
        ratios.setdefault(task.region_lines, []).append(ratio)
        ideal = Ideal.of([reference.stats], changed[task.name])
        if task.region_lines >= LARGE and ideal is not None:
            large.append((1 / ratio, hunks.waited_ms / ideal.ideal_ms))
    for lines, row in ratios.items():
        print(f"| {lines} | " + " | ".join(f"{r:.2f}" for r in row) + " |")
    found = crossover(ratios)
    print(f"crossover: {'from ' + str(found) + ' lines' if found else 'none in the sweep'}")
    if large and against == "prediction":
        speedups, ideals = [s for s, _ in large], [i for _, i in large]
        print(
            f"regions of {LARGE}+ lines (≤ 2 % changed), hunks: {statistics.median(speedups):.2f}× faster than "
            f"{label} (median; {min(speedups):.2f}-{max(speedups):.2f}), {statistics.median(ideals):.1f}× the ideal "
            f"({min(ideals):.1f}-{max(ideals):.1f})"
        )


def main() -> None:
    parser = simulation_arguments(__doc__.splitlines()[0])
    args = parser.parse_args()
    print(f"hunks answers as {args.hunks_form} (refactor.hunks_form)")
    tasks = sweep_tasks()
    changed = {t.name: changed_chars(t.source, t.expected) for t in tasks}
    for name, kind, against in RUNS:
        if args.profile and name not in args.profile:
            continue
        report(PROFILES[name], kind, against, tasks, changed, args.hunks_form)


if __name__ == "__main__":
    main()
