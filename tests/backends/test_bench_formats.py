"""`refactor-lsp bench --edit-format`: the edit formats side by side against each task's ideal time,
over real HTTP on 127.0.0.1, against the loopback backend playing a perfect model for the corpus.

The ideal is checked against the run's own figures in the JSON, and the tokens that differ against a
count made by hand; nothing here depends on the machine's speed alone (counts, and the arithmetic of
the figures the run reported).
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

import pytest

from lsp_server.bench import (
    BenchError,
    changed_chars,
    changed_lines,
    load_tasks,
    make_plan,
    parse_edit_formats,
    schedule,
)
from lsp_server.cli.main import main
from lsp_server.config.load import build_config
from lsp_server.formats.hunks import SEARCH_MARKER
from lsp_server.languages.identify import language_of
from lsp_server.regions import choose_region, line_span
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import corpus_responder, region_of
from tests.conftest import write_config

TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
SMALL_EDIT = "js-fetch-add-timeout-option"  # 34 lines: `auto` stays in region
LARGE = "go-sync-add-context-param"  # 204 lines, 7 changed: `auto` answers in hunks
STEP_S = 0.001
RESPONDER = corpus_responder(TASKS_DIR)
MODES = ["prediction", "baseline", "hunks", "auto"]
LABELS = ["region + prediction", "region, no prediction", "hunks", "auto"]


def run_bench(tmp_path: Path, config: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    md, js = tmp_path / "report.md", tmp_path / "report.json"
    for stale in (md, js):
        stale.unlink(missing_ok=True)
    code = main(
        ["bench", "--config", str(config), "--tasks", str(TASKS_DIR), "--markdown", str(md), "--json", str(js), *args]
    )
    report = json.loads(js.read_text(encoding="utf-8")) if js.exists() else {}
    return code, report, md.read_text(encoding="utf-8") if md.exists() else ""


def formats_table(text: str) -> list[str]:
    """The terminal's edit-format table: its header lines, then its rows (rules left out)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Edit formats:")) + 1
    while lines[start].startswith("  "):  # the title, wrapped
        start += 1
    rows = []
    for line in lines[start:]:
        if not line.strip():
            break
        if not set(line) <= {"-", " "}:
            rows.append(line)
    return rows


def test_every_mode_runs_against_its_ideal_per_task_and_overall(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBackend("openai", step_s=STEP_S, responder=RESPONDER) as fake:
        # A threshold between the two tasks' regions, so that auto runs each format once.
        config = write_config(tmp_path, fake=fake, refactor={"hunks_min_lines": 80})
        code, report, markdown = run_bench(
            tmp_path,
            config,
            "--task",
            SMALL_EDIT,
            "--task",
            LARGE,
            "--repeat",
            "1",
            "--edit-format",
            "auto,hunks,region",
        )
        requests = [r for r in fake.requests if region_of(r["messages"])]
    out = capsys.readouterr()
    assert code == 0, out.err

    # Four modes per task, each once per repetition; hunks answers carry no whole-region prediction.
    assert len(requests) == 2 * 4
    hunks_requests = [r for r in requests if SEARCH_MARKER in r["messages"][0]["content"]]
    assert len(hunks_requests) == 3  # hunks on both tasks, auto on the large one
    assert all("prediction" not in r for r in hunks_requests)
    assert sum("prediction" in r for r in requests) == 3  # region + prediction twice, auto in region once

    formats = report["formats"]
    assert formats["modes"] == MODES
    assert report["meta"]["edit_formats"] == ["region", "hunks", "auto"]
    assert report["meta"]["hunks_min_lines"] == 80
    assert report["meta"]["hunks_form"] == "search-replace"
    tasks = {t["name"]: t for t in formats["tasks"]}
    assert list(tasks) == [SMALL_EDIT, LARGE]
    assert [g["name"] for g in formats["groups"]] == [
        "small edits, regions under 200 lines",
        "small edits, regions of 200+ lines",
        "all tasks",
    ]

    runs = report["runs"]
    assert sorted(r["mode"] for r in runs) == sorted(MODES * 2)
    for name, task in tasks.items():
        assert list(task["modes"]) == MODES
        # The ideal comes from this run's own reference runs of this task: TTFT, plain rate, chars per token.
        reference = [r["stats"] for r in runs if r["task"] == name and r["mode"] == "baseline"]
        ideal = task["ideal"]
        assert ideal["ttft_ms"] == pytest.approx(statistics.median(s["ttft_ms"] for s in reference))
        assert ideal["plain_tokens_per_s"] == pytest.approx(statistics.median(s["tokens_per_s"] for s in reference))
        chars_per_token = sum(s["output_chars"] for s in reference) / sum(s["completion_tokens"] for s in reference)
        assert ideal["chars_per_token"] == pytest.approx(chars_per_token)
        assert ideal["changed_tokens"] == pytest.approx(ideal["changed_chars"] / chars_per_token)
        assert ideal["ideal_ms"] == pytest.approx(
            ideal["ttft_ms"] + ideal["changed_tokens"] / ideal["plain_tokens_per_s"] * 1000
        )
        for mode in MODES:
            mine = [r for r in runs if r["task"] == name and r["mode"] == mode]
            waited = [r["stats"]["latency_ms"] + (r["stats"]["first_attempt_ms"] or 0) for r in mine]
            summary = task["modes"][mode]
            assert summary["waited_ms"]["median"] == pytest.approx(statistics.median(waited))
            assert summary["ideal_ratio"]["median"] == pytest.approx(statistics.median(waited) / ideal["ideal_ms"])
            # A perfect model: every mode writes the expected file, hunks on a 204-line region included.
            assert summary["matches_expected"] == 1, (name, mode)
    # Changed text, counted by hand: `ctx context.Context, ` in the signature and six `ctx` for context.TODO().
    assert tasks[LARGE]["ideal"]["changed_chars"] == len("ctx context.Context, ") + 6 * len("ctx")
    assert (tasks[LARGE]["region_lines"], tasks[LARGE]["changed_lines"]) == (204, 7)
    # auto decides by size: hunks from 80 lines.
    assert tasks[LARGE]["modes"]["auto"]["formats"] == {"hunks": 1}
    assert tasks[SMALL_EDIT]["modes"]["auto"]["formats"] == {"region": 1}
    overall = formats["groups"][-1]
    for mode in MODES:
        ratios = [
            (r["stats"]["latency_ms"] + (r["stats"]["first_attempt_ms"] or 0)) / tasks[r["task"]]["ideal"]["ideal_ms"]
            for r in runs
            if r["mode"] == mode
        ]
        assert overall["modes"][mode]["ideal_ratio"]["median"] == pytest.approx(statistics.median(ratios))

    # What a reader sees. In Markdown: the ideal and every mode, per task, per group and overall.
    rows = [line for line in markdown.splitlines() if line.startswith("| ")]
    rows = rows[next(i for i, line in enumerate(rows) if "ideal, s" in line) :]
    assert all(f"{label}, s (× ideal)" in rows[0] for label in LABELS)
    for name in (SMALL_EDIT, LARGE, "**all tasks**", "**small edits, regions of 200+ lines**"):
        row = next(line for line in rows if line.startswith(f"| {name} |"))
        assert len(re.findall(r"\d+\.\d+ \(\d+\.\d×\)", row)) == 4, row
    # On the terminal, within 120 columns: the ideal, and auto with the formats it is weighed against.
    table = formats_table(out.out)
    assert max(len(line) for line in out.out.splitlines()) <= 120
    for name in (SMALL_EDIT, LARGE, "all tasks", "small edits, regions of 200+ lines"):
        row = next(line for line in table if line.startswith(name))
        assert len(re.findall(r"\d+\.\d+ \(\d+\.\d×\)", row)) >= 3, row
    said = out.out.replace("\n  ", " ")  # the terminal's lines wrap at 120 columns
    assert "auto decides by the region's size alone in the bench: hunks from 80 lines" in said
    assert 'hunks answers are asked for as SEARCH/REPLACE blocks (refactor.hunks_form = "search-replace")' in said
    assert "Ideal = TTFT + tokens that differ ÷ plain decode rate" in said
    assert "| **all tasks** |" in markdown and "ideal, s" in markdown and "hunks, s (× ideal)" in markdown
    # region was asked for: the table of prediction with and without is there as before.
    pairs = next(line for line in out.out.splitlines() if line.startswith(SMALL_EDIT))
    assert "speedup" in out.out and pairs.split()[-1] == "yes" and "with prediction, s" in markdown  # same text


def test_a_retried_hunks_answer_counts_both_attempts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """auto's hunks answer that does not apply is retried in region: the user waited for both."""
    broken = f"{SEARCH_MARKER}\nno such line\n=======\nstill none\n>>>>>>> REPLACE\n"
    with FakeBackend("openai", step_s=STEP_S, responder=RESPONDER) as fake:
        # The warm-up, then the task's modes in order (hunks, auto: --edit-format hunks,auto runs the
        # reference first); auto's first attempt gets the broken answer.
        fake.enqueue(Reply(), Reply(), Reply(), Reply(text=broken))
        config = write_config(tmp_path, fake=fake, refactor={"hunks_min_lines": 10})
        code, report, markdown = run_bench(
            tmp_path, config, "--task", SMALL_EDIT, "--repeat", "1", "--edit-format", "hunks,auto"
        )
    out = capsys.readouterr()
    assert code == 0, out.err
    (auto,) = [r for r in report["runs"] if r["mode"] == "auto"]
    stats = auto["stats"]
    assert stats["retried_from"] == "hunks" and stats["edit_format"] == "region" and auto["matches_expected"]
    summary = report["formats"]["tasks"][0]["modes"]["auto"]
    assert summary["formats"] == {"hunks → region": 1}
    assert summary["waited_ms"]["median"] == pytest.approx(stats["latency_ms"] + stats["first_attempt_ms"])
    assert "h → r 1" in out.out and "hunks → region 1" in markdown


def test_without_region_the_reference_still_runs_and_the_pairs_table_is_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBackend("openai", step_s=STEP_S, responder=RESPONDER) as fake:
        config = write_config(tmp_path, fake=fake)
        args = ("--task", SMALL_EDIT, "--repeat", "1", "--edit-format", "hunks")
        code, report, markdown = run_bench(tmp_path, config, *args)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert report["formats"]["modes"] == ["baseline", "hunks"]
    assert report["pairs"] == [] and {r["mode"] for r in report["runs"]} == {"baseline", "hunks"}
    assert "not asked for: it runs as the reference for the ideal" in out.out.replace("\n  ", " ")
    assert "with prediction, s" not in markdown and "speedup" not in out.out
    assert report["formats"]["tasks"][0]["modes"]["hunks"]["matches_expected"] == 1


def test_auto_decides_by_size_however_many_runs_the_bench_makes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Three repetitions of both formats would teach an engine's history enough to decide by it."""
    with FakeBackend("openai", step_s=STEP_S, responder=RESPONDER) as fake:
        config = write_config(tmp_path, fake=fake, refactor={"hunks_min_lines": 10})
        code, report, _ = run_bench(
            tmp_path, config, "--task", SMALL_EDIT, "--repeat", "3", "--edit-format", "region,hunks,auto"
        )
    assert code == 0, capsys.readouterr().err
    reasons = [r["stats"]["format_reason"] for r in report["runs"] if r["mode"] == "auto"]
    assert reasons == ["auto, 34 lines ≥ hunks_min_lines 10"] * 3


@pytest.mark.parametrize(
    ("value", "bad"),
    [("diff", "'diff'"), ("region,", "''"), ("region,Hunks", "'Hunks'"), ("", "''")],
    ids=["unknown", "empty-part", "case", "empty"],
)
def test_edit_format_is_checked_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_fake: Any, value: str, bad: str
) -> None:
    fake = make_fake()
    config = write_config(tmp_path, fake=fake)
    code, report, _ = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--edit-format", value)
    err = capsys.readouterr().err
    assert code == 2 and report == {}
    assert "--edit-format takes region, hunks, hunks+prediction, auto" in err and bad in err
    assert fake.requests == []


def test_edit_format_and_concurrency_are_not_combined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_fake: Any
) -> None:
    fake = make_fake()
    config = write_config(tmp_path, fake=fake)
    code, _, _ = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--edit-format", "hunks", "--concurrency", "1,2")
    err = capsys.readouterr().err
    assert code == 2 and "--edit-format and --concurrency cannot be combined" in err
    assert fake.requests == []


def test_the_default_bench_is_unchanged_and_compares_the_region_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --edit-format: prediction with and without, in the region format even where the
    config says hunks, and no new table, header line or JSON key."""
    with FakeBackend("openai", step_s=STEP_S, responder=RESPONDER) as fake:
        config = write_config(tmp_path, fake=fake, refactor={"edit_format": "hunks"})
        code, report, markdown = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--repeat", "1")
        requests = [r for r in fake.requests if region_of(r["messages"])]
    out = capsys.readouterr()
    assert code == 0, out.err
    assert len(requests) == 2 and all(SEARCH_MARKER not in r["messages"][0]["content"] for r in requests)
    assert ["prediction" in r for r in requests] == [True, False]
    assert set(report) == {"meta", "tasks", "total", "pairs", "runs"}
    assert "edit_formats" not in report["meta"] and "hunks_min_lines" not in report["meta"]
    assert "hunks_form" not in report["meta"]
    assert "at" not in report["tasks"][0]
    assert {r["mode"] for r in report["runs"]} == {"prediction", "baseline"}
    for text in (out.out, markdown):
        assert "Edit formats" not in text and "ideal" not in text and "edit formats" not in text
    assert "pairs alternate which mode runs first" in out.out
    assert out.err.count("bench: ") == 2


# -- the parts, without a backend ------------------------------------------------------------------


def test_hunks_with_the_prediction_field_runs_beside_hunks_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What the default leaves out, measured: the same hunks answer with the region as the prediction."""
    with FakeBackend("openai", step_s=STEP_S, responder=RESPONDER) as fake:
        config = write_config(tmp_path, fake=fake)
        code, report, markdown = run_bench(
            tmp_path, config, "--task", LARGE, "--repeat", "1", "--edit-format", "hunks+prediction,hunks"
        )
        requests = [r for r in fake.requests if region_of(r["messages"])]
    out = capsys.readouterr()
    assert code == 0, out.err
    assert report["formats"]["modes"] == ["baseline", "hunks", "hunks-prediction"]
    by_mode = {r["mode"]: r for r in report["runs"]}
    hunks_requests = [r for r in requests if SEARCH_MARKER in r["messages"][0]["content"]]
    assert len(hunks_requests) == 2
    with_field = [r for r in hunks_requests if "prediction" in r]
    assert len(with_field) == 1 and with_field[0]["prediction"]["content"] == region_of(with_field[0]["messages"])
    assert by_mode["hunks-prediction"]["stats"]["prediction_via"] == "field"
    assert by_mode["hunks"]["stats"]["prediction_via"] == "off"
    # The fake drafts the blocks' copied lines from the field, and counts what it refused.
    assert by_mode["hunks-prediction"]["stats"]["accepted_prediction_tokens"] > 0
    assert by_mode["hunks-prediction"]["stats"]["rejected_prediction_tokens"] > 0
    assert report["formats"]["tasks"][0]["modes"]["hunks-prediction"]["matches_expected"] == 1
    assert "hunks + prediction, s (× ideal)" in markdown


def test_hunks_with_the_prediction_field_needs_a_backend_that_takes_it(tmp_path: Path) -> None:
    config = build_config([])
    tasks = load_tasks(TASKS_DIR, [LARGE])
    with pytest.raises(BenchError, match="drafts a hunks answer from the prompt already"):
        make_plan(config, "local", "openai", tasks, repeat=1, edit_formats=("hunks+prediction",))


def test_parse_edit_formats_keeps_the_reports_order() -> None:
    assert parse_edit_formats("auto, hunks,region,auto") == ("region", "hunks", "auto")
    assert parse_edit_formats("hunks+prediction,region") == ("region", "hunks+prediction")
    with pytest.raises(BenchError, match="--edit-format"):
        parse_edit_formats("regions")


def test_modes_rotate_so_each_runs_first_equally_often() -> None:
    config = build_config([])
    tasks = load_tasks(TASKS_DIR, [SMALL_EDIT, LARGE])
    plan = make_plan(config, "openai", None, tasks, repeat=2, edit_formats=("region", "hunks", "auto"))
    firsts = [modes[0] for _, _, modes in schedule(plan)]
    assert firsts == ["prediction", "baseline", "baseline", "hunks"]
    assert all(sorted(modes) == sorted(MODES) for _, _, modes in schedule(plan))
    assert plan.runs == 2 * 2 * 4
    hunks_only = make_plan(config, "openai", None, tasks, repeat=1, edit_formats=("hunks",))
    assert hunks_only.modes == ("baseline", "hunks")


def test_changed_text_counts_what_the_edit_writes() -> None:
    assert changed_chars("a = old_name + 1\n", "a = new_name + 1\n") == len("new_name")
    assert changed_chars("x\ny\n", "x\n@traced\ny\n") == len("@traced\n")
    assert changed_chars("keep\ndrop\n", "keep\n") == 0  # deleting costs nothing to write
    assert changed_lines("a\nb\nc\n", "a\nB\nc\nd\n") == 2


def test_at_tasks_resolve_to_the_region_the_scope_chooses() -> None:
    at_tasks = [t for t in load_tasks(TASKS_DIR) if t.at is not None]
    assert {t.language for t in at_tasks} >= {"python", "typescript", "go"}
    for task in at_tasks:
        cursor, _ = line_span(task.source, task.at - 1, task.at - 1)
        region = choose_region(task.source, cursor, cursor, "auto", language_of(task.file, task.language))
        assert region.kind == "block", task.name
        assert task.span() == (region.start, region.end), task.name
        assert task.region_lines >= 200, task.name
        start, end = task.span()
        assert task.expected.startswith(task.source[:start]) and task.expected.endswith(task.source[end:])
        # The bench selects that region: the prompt and the prediction are the cursor's.
        request = task.request("b", None, "hunks")
        assert (request.start, request.end, request.scope, request.edit_format) == (start, end, "selection", "hunks")


def test_large_region_tasks_change_one_to_five_percent_of_their_lines() -> None:
    large = [t for t in load_tasks(TASKS_DIR) if t.kind == "mostly-unchanged" and t.region_lines >= 200]
    assert len(large) >= 9 and {t.language for t in large} >= {"python", "typescript", "go", "java"}
    for task in large:
        start, end = task.span()
        share = changed_lines(task.source[start:end], task.expected_region()) / task.region_lines
        assert 0.01 <= share <= 0.0502, (task.name, share)


def test_at_is_checked(tmp_path: Path) -> None:
    folder = tmp_path / "py-task"
    folder.mkdir()
    source = "import os\n\n\ndef first():\n    return 1\n\n\nx = 1\n"
    (folder / "source.py").write_text(source)
    (folder / "expected.py").write_text(source.replace("return 1", "return 2"))
    head = (
        'file = "source.py"\ninstruction = "i"\nexpected = "expected.py"\n'
        'kind = "mostly-unchanged"\nlanguage = "python"\n'
    )
    for extra, problem in (
        ('at = 4\nlines = "4:5"\n', "give `lines` or `at`, not both"),
        ("at = 99\n", "`at` must be a line number of source.py (1 to 8)"),
        ('at = "4"\n', "`at` must be a line number"),
        ("at = true\n", "`at` must be a line number"),
    ):
        (folder / "task.toml").write_text(head + extra)
        with pytest.raises(BenchError, match=re.escape(problem)):
            load_tasks(tmp_path)
    (folder / "task.toml").write_text(head + "at = 5\n")
    (task,) = load_tasks(tmp_path)
    assert (task.at, task.lines, task.expected_region()) == (5, (4, 5), "def first():\n    return 2\n")
    (folder / "task.toml").write_text(head + "at = 8\n")  # no definition there: the whole file, as the editor
    assert load_tasks(tmp_path)[0].lines is None
