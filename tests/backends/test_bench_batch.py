"""`refactor-lsp bench --task BATCH_TASK`: a batch task (every top-level definition of a file, one
instruction) through the batch runner, with and without prediction, one at a time and N at once,
over real HTTP against two loopback backends shaped as the local vLLM pair (one speculating, one
plain), each answering every definition with its expected rewrite.

The loopback backends say what they saw: each request's prompt-cache salt (one per batch run) and how
many other answers were streaming when it arrived. Every figure of the table is checked against the
runs in the JSON report, never against a number written here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lsp_server.bench.batch_tasks import load_batch_task, load_batch_tasks
from lsp_server.bench.tasks import BenchError, load_tasks
from lsp_server.cli.io import Exit
from lsp_server.cli.main import main
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import corpus_responder
from lsp_server.testing.speculation import tokenize
from tests.conftest import write_config

TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
TASK = "py-calendar-batch-type-hints"
JOBS = 3  # refactor.concurrency in the test's config: the default the bench takes
STEP_S = 0.003
# The prompt read at this many of the fake's tokens a pass: every answer waits tens of milliseconds for its
# prompt before it streams, so N requests sent together are in flight together even on a busy machine.
PREFILL = 120.0


class Witness:
    """A responder that notes, for each completion the backend receives, its cache salt and how many
    other answers that backend was streaming at that moment, then answers as the corpus's perfect model."""

    def __init__(self) -> None:
        self.answer = corpus_responder(TASKS_DIR)
        self.fake: FakeBackend | None = None
        self.seen: list[tuple[str | None, int]] = []

    def __call__(self, request: dict[str, Any]) -> str:
        assert self.fake is not None
        self.seen.append((request.get("cache_salt"), self.fake.active_streams))
        return self.answer(request)

    def in_flight_by_salt(self) -> dict[str, tuple[int, int]]:
        """Each batch run's (requests, the most in flight at once as this backend counted them)."""
        runs: dict[str, tuple[int, int]] = {}
        for salt, others in self.seen:
            if salt is None:  # the warm-up's
                continue
            count, most = runs.get(salt, (0, 0))
            runs[salt] = (count + 1, max(most, others + 1))
        return runs


def _fake(witness: Witness, speculation: bool) -> FakeBackend:
    fake = FakeBackend(
        "vllm", step_s=STEP_S, responder=witness, speculation=speculation, prefill_tokens_per_pass=PREFILL
    )
    witness.fake = fake
    return fake


def _markdown_row(markdown: str, task: str) -> dict[str, str]:
    lines = markdown.splitlines()
    header = next(line for line in lines if line.startswith("| batch task"))
    row = next(line for line in lines if line.startswith(f"| {task} "))
    names = [cell.strip() for cell in header.strip("|").split(" | ")]
    cells = [cell.strip() for cell in row.strip("|").split(" | ")]
    return dict(zip(names, cells, strict=True))


def test_a_batch_task_runs_both_modes_one_at_a_time_and_n_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = load_batch_task(TASKS_DIR / TASK)
    with_witness, without_witness = Witness(), Witness()
    with _fake(with_witness, True) as spec, _fake(without_witness, False) as plain:
        config = write_config(tmp_path, refactor={"concurrency": JOBS}, fake=spec, plain=plain)
        md, js = tmp_path / "batch.md", tmp_path / "batch.json"
        argv = ["bench", "--config", str(config), "--tasks", str(TASKS_DIR), "--baseline-backend", "plain"]
        code = main([*argv, "--task", TASK, "--repeat", "1", "--markdown", str(md), "--json", str(js)])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(js.read_text(encoding="utf-8"))
    runs = report["runs"]
    assert sorted((r["mode"], r["concurrency"]) for r in runs) == sorted(
        (mode, level) for mode in ("prediction", "baseline") for level in (1, JOBS)
    )
    assert [r["position"] for r in runs] == [0, 1, 2, 3]
    for run in runs:
        assert [t["definition"] for t in run["targets"]] == [t.name for t in task.targets]
        # The perfect model's answers are each definition's expected rewrite, so the file comes out expected.
        assert all(t["matches_expected"] for t in run["targets"]) and run["file_matches_expected"]

    # What the loopback backends saw: one salt per batch run, every target of it, and N in flight at
    # once only in the concurrent runs. Each backend serves one mode.
    for witness in (with_witness, without_witness):
        seen = sorted(witness.in_flight_by_salt().values(), key=lambda run: run[1])
        assert seen == [(len(task.targets), 1), (len(task.targets), JOBS)]
    # The bench's own count agrees.
    assert {(r["concurrency"], r["in_flight"]) for r in runs} == {(1, 1), (JOBS, JOBS)}

    # The table's figures are the runs' own.
    wall = {(r["mode"], r["concurrency"]): r["wall_ms"] for r in runs}
    tokens = {(r["mode"], r["concurrency"]): r["totals"]["tokens_per_s"] for r in runs}
    row = _markdown_row(md.read_text(encoding="utf-8"), TASK)
    at = f"1 / {JOBS} at once"
    assert row["targets"] == str(len(task.targets))
    assert (
        row[f"with prediction, s ({at})"]
        == f"{wall['prediction', 1] / 1000:.1f} / {wall['prediction', JOBS] / 1000:.1f}"
    )
    assert row[f"without, s ({at})"] == f"{wall['baseline', 1] / 1000:.1f} / {wall['baseline', JOBS] / 1000:.1f}"
    concurrency = [wall[mode, 1] / wall[mode, JOBS] for mode in ("prediction", "baseline")]
    prediction = [wall["baseline", level] / wall["prediction", level] for level in (1, JOBS)]
    assert row["speed-up from concurrency (with / without)"] == " / ".join(f"{v:.2f}×" for v in concurrency)
    assert row[f"speed-up from prediction ({at})"] == " / ".join(f"{v:.2f}×" for v in prediction)
    assert row["combined"] == f"{wall['baseline', 1] / wall['prediction', JOBS]:.2f}×"
    assert row[f"tok/s together, with ({at})"] == f"{tokens['prediction', 1]:.0f} / {tokens['prediction', JOBS]:.0f}"
    assert row[f"in flight at most ({at})"] == f"1 / {JOBS}"
    targets = 2 * len(task.targets)
    assert row["matches expected (with · without)"] == f"{targets}/{targets} · {targets}/{targets}"
    summary = report["batch"]["tasks"][0]
    assert summary["concurrency_speedup"] == pytest.approx(
        dict(zip(("prediction", "baseline"), concurrency, strict=True))
    )
    # Output tokens together ÷ wall time, as the fake counted them.
    answers = task.answers()
    output = sum(len(tokenize(answers[task.source[t.start : t.end]])) for t in task.targets)
    assert tokens["baseline", 1] == pytest.approx(output / (wall["baseline", 1] / 1000))

    # On the terminal: the header names the backends, the profile and N; every line fits 120 columns.
    assert "profile: perfect" in out and f"one at a time and {JOBS} at once" in out
    assert row["combined"] in out and all(len(line) <= 120 for line in out.splitlines())


def _batch_task(folder: Path, **changes: str) -> Path:
    """A copy of the corpus's Python batch task, with changes: a task.toml text, or a new expected file."""
    task = folder / "py-batch"
    shutil.copytree(TASKS_DIR / TASK, task)
    if "toml" in changes:
        (task / "task.toml").write_text(changes["toml"], encoding="utf-8")
    if "expected" in changes:
        (task / "expected.py").write_text(changes["expected"], encoding="utf-8")
    return task


TOML = (TASKS_DIR / TASK / "task.toml").read_text(encoding="utf-8")
EXPECTED = (TASKS_DIR / TASK / "expected.py").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"toml": TOML + 'lines = "1:20"\n'}, "every top-level definition of its file: leave out `lines`"),
        ({"toml": TOML.replace('kind = "batch"', 'kind = "bulk"')}, "`kind` must be one of"),
        ({"toml": TOML.replace('expected = "expected.py"\n', "")}, "`expected` is required"),
        (
            {
                "expected": EXPECTED.replace(
                    "def _monthlen(year: int, month: int) -> int:", "def month_length(year, month):"
                )
            },
            "must have the definitions of source.py, in the same order",
        ),
        (
            {"expected": EXPECTED.replace("January = 1", "JANUARY = 1")},
            "differs from source.py between `IllegalWeekdayError` and `isleap`",
        ),
        ({"expected": EXPECTED + "\nTRAILER = 1\n"}, "differs from source.py after `timegm`"),
    ],
)
def test_a_bad_batch_task_gives_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, str], problem: str
) -> None:
    task = _batch_task(tmp_path / "tasks", **changes)
    with pytest.raises(BenchError, match=r"task\.toml") as raised:
        load_batch_task(task)
    assert problem in str(raised.value)
    # The bench says the same, naming the file, before anything is sent.
    code = main(["bench", "--tasks", str(task.parent), "--task", "py-batch", "--backend", "openai"])
    assert code == Exit.USAGE
    err = capsys.readouterr().err
    assert str(task / "task.toml") in err and problem in err


def test_a_file_with_one_definition_is_no_batch_task(tmp_path: Path) -> None:
    one = "def isleap(year):\n    return year % 4 == 0\n"
    task = _batch_task(tmp_path, expected=one.replace("(year)", "(year: int) -> bool"))
    (task / "source.py").write_text(one, encoding="utf-8")
    with pytest.raises(BenchError, match="has 1 top-level definition"):
        load_batch_task(task)


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--task", TASK, "--jobs", "1"], "--jobs is 1: a batch task runs one at a time and N at once"),
        (["--task", TASK, "--task", "js-fetch-add-timeout-option"], "run them as two benches"),
        (["--task", TASK, "--concurrency", "1,2"], "--concurrency and --edit-format are for single-region tasks"),
        (["--task", "js-fetch-add-timeout-option", "--jobs", "4"], "--jobs is for batch tasks"),
    ],
)
def test_batch_options_are_checked_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], problem: str
) -> None:
    config = write_config(tmp_path, fake={"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert main(["bench", "--config", str(config), "--tasks", str(TASKS_DIR), *args]) == Exit.USAGE
    assert problem in capsys.readouterr().err


def test_the_corpus_keeps_batch_tasks_apart_from_the_single_tasks() -> None:
    batches = load_batch_tasks(TASKS_DIR)
    assert {t.language for t in batches} >= {"python", "javascript"}
    assert all(len(t.targets) >= 10 for t in batches)
    for text in (text for t in batches for text in (t.source, t.expected)):  # the corpus's file rules
        assert text.endswith("\n") and not text.endswith("\n\n") and "\r" not in text and "\t" not in text
    names = {t.name for t in load_tasks(TASKS_DIR)}
    assert names and not names & {t.name for t in batches}  # calibrations and the default bench see no batch task
    with pytest.raises(BenchError, match="batch tasks, which run on their own"):
        load_tasks(TASKS_DIR, [TASK])
