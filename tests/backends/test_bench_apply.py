"""`refactor-lsp bench --kind apply` (issue 32): each corpus task's change made a lazy snippet, merged
scoped with and without the prediction and into the whole file, over real HTTP against the loopback
backend answering as the corpus' perfect model. The snippets are checked as a chat model writes
them; the report's figures against its own runs, and the requests against what the backend saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_server.bench.apply_tasks import ApplyTask, Skipped, apply_task, load_apply_tasks
from lsp_server.bench.tasks import BenchError, load_task, load_tasks
from lsp_server.cli.io import Exit
from lsp_server.cli.main import main
from lsp_server.placement.lazy import marker_lines
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import corpus_responder
from lsp_server.text import split_lines
from tests.conftest import write_config

TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
BIG = "py-difflib-apply-one-method"


def test_a_task_becomes_the_changed_method_in_its_class_with_lazy_markers() -> None:
    made = apply_task(load_task(TASKS_DIR / BIG, allow=("apply",)))
    assert isinstance(made, ApplyTask)
    lines = split_lines(made.snippet)
    markers = marker_lines(lines, "python")
    assert [lines[i].strip() for i in markers] == ["# ... existing code ..."] * 3
    assert "class SequenceMatcher:\n" in lines and "    def get_grouped_opcodes(self, n=3):\n" in lines
    assert "def get_opcodes" not in made.snippet and len(lines) < 70  # the one method, not the 2,059-line file
    assert made.parts == ("method `SequenceMatcher.get_grouped_opcodes` (lines 550-598)",)
    assert made.lines == 2059
    ((region, answer),) = made.answers
    assert made.source.replace(region, answer) == made.expected


def test_every_corpus_task_is_a_snippet_or_says_why_not() -> None:
    tasks, skipped = load_apply_tasks(TASKS_DIR)
    names = {t.name for t in tasks} | {s.name for s in skipped}
    assert names == {t.name for t in load_tasks(TASKS_DIR)} | {BIG}  # batch tasks aside
    for task in tasks:  # each part's answer in place gives the expected file
        merged = task.source
        for region, answer in task.answers:
            assert merged.count(region) >= 1
            merged = merged.replace(region, answer, 1)
        assert merged == task.expected, task.name
    assert all(isinstance(s, Skipped) and s.reason for s in skipped)
    js = next(t for t in tasks if t.name == "js-fetch-add-timeout-option")
    assert "// ... existing code ..." in js.snippet  # the file's own comment syntax


def test_apply_tasks_stay_out_of_the_other_benches() -> None:
    assert BIG not in {t.name for t in load_tasks(TASKS_DIR)}
    with pytest.raises(BenchError, match="bench --kind apply"):
        load_tasks(TASKS_DIR, [BIG])


def test_the_bench_merges_scoped_and_whole_file_and_the_figures_are_its_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBackend("openai", step_s=0.0005, responder=corpus_responder(TASKS_DIR)) as fake:
        config = write_config(tmp_path, fake=fake)
        js = tmp_path / "apply.json"
        argv = ["bench", "--kind", "apply", "--config", str(config), "--tasks", str(TASKS_DIR), "--repeat", "1"]
        code = main([*argv, "--task", BIG, "--task", "js-fetch-add-timeout-option", "--json", str(js)])
        requests = list(fake.requests)
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads(js.read_text(encoding="utf-8"))
    assert report["kind"] == "apply" and report["meta"]["command"].startswith("refactor-lsp bench --kind apply")
    runs = report["runs"]
    assert sorted((r["task"], r["mode"]) for r in runs) == sorted(
        (task, mode)
        for task in (BIG, "js-fetch-add-timeout-option")
        for mode in ("prediction", "baseline", "whole-file")
    )
    assert all(r["matches_expected"] for r in runs), [r["reason"] for r in runs]
    # What the backend was sent: the method as the prediction when scoped, the whole file when not, none without.
    source = (TASKS_DIR / BIG / "source.py").read_text(encoding="utf-8")
    big = [r for r in requests if "def get_grouped_opcodes(self, n=3):" in r["messages"][-1]["content"]]
    predictions = sorted(len(r["prediction"]["content"]) if "prediction" in r else 0 for r in big)
    assert predictions[0] == 0 and predictions[-1] == len(source)
    scoped = [r["prediction"]["content"] for r in big if "prediction" in r and len(r["prediction"]["content"]) < 5000]
    assert len(scoped) == 1 and scoped[0].startswith("    def get_grouped_opcodes(self, n=3):")
    # The summary's ratios are the runs' own.
    wall = {(r["task"], r["mode"]): r["wall_ms"] for r in runs}
    (largest,) = [t for t in report["summary"]["tasks"] if t["task"] == BIG]
    assert report["summary"]["largest"]["task"] == BIG
    assert largest["scope_speedup"] == pytest.approx(wall[(BIG, "whole-file")] / wall[(BIG, "prediction")])
    assert largest["prediction_speedup"] == pytest.approx(wall[(BIG, "baseline")] / wall[(BIG, "prediction")])
    assert f"largest file ({BIG}, 2059 lines, 1 part(s))" in out


def test_options_of_the_other_benches_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, fake={"type": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"})
    code = main(["bench", "--kind", "apply", "--config", str(config), "--edit-format", "hunks"])
    assert code == Exit.USAGE
    assert "are not for --kind apply" in capsys.readouterr().err
