"""`refactor-lsp bench --concurrency`: N refactors at once through the one engine, over real HTTP on
127.0.0.1, against the loopback backend with its load model on.

The load model: with `batch_tokens` = draft length + 1 and no load factor, one request's pass (1
token + 8 drafts) is free, but N requests' passes cost N times as much when they carry drafts, and
nothing more when they do not. So the speedup at concurrency N is the speedup of one request divided
by about N, and the fake's own count of streams in flight says whether N really streamed at once.
No assertion depends on the machine's speed: the bench's figures are compared with the answer times
the fake itself measured for the same requests (a busy machine slows both alike), or counted.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from lsp_server.bench import BenchError, load_tasks, make_plan, max_concurrency, parse_concurrency
from lsp_server.cli.main import main
from lsp_server.config.load import build_config
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.speculation import simulate, tokenize
from tests.backends.test_bench import SMALL_EDIT, TASKS_DIR, corpus_responder
from tests.conftest import without_probes, write_config

STEP_S = 0.004  # one simulated forward pass: large against the per-request overhead
DRAFT_LEN = 8
BATCH_TOKENS = DRAFT_LEN + 1  # one request's pass with a full draft costs one step; N requests' cost N


def run_bench(tmp_path: Path, config: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    md, js = tmp_path / "report.md", tmp_path / "report.json"
    code = main(
        ["bench", "--config", str(config), "--tasks", str(TASKS_DIR), "--markdown", str(md), "--json", str(js), *args]
    )
    report = json.loads(js.read_text(encoding="utf-8")) if js.exists() else {}
    return code, report, md.read_text(encoding="utf-8") if md.exists() else ""


def small_edit() -> tuple[str, str]:
    """The task's (region, expected region)."""
    task = load_tasks(TASKS_DIR, [SMALL_EDIT])[0]
    start, end = task.span()
    return task.source[start:end], task.expected_region()


def backend_speedups(fake: FakeBackend, levels: list[int]) -> dict[int, float]:
    """By level: the median time the fake took to answer a measured request without the prediction field
    ÷ with it, by its own clock (levels run lowest first, each mode's N requests together)."""
    answered = [
        ("prediction" in request, end - start)
        for index, request in enumerate(fake.requests)
        if request["max_tokens"] > 1  # the warm-ups ask for one token
        for start, end in [fake.answer_spans[index]]
    ]
    out = {}
    for n in levels:
        level, answered = answered[: 2 * n], answered[2 * n :]
        with_ = statistics.median(s for predicted, s in level if predicted)
        out[n] = statistics.median(s for predicted, s in level if not predicted) / with_
    return out


def load_table_lines(text: str) -> list[str]:
    """The rows of the terminal's load table: after its title and column rule, up to the blank line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Speed under load"))
    start = next(i for i in range(start, len(lines)) if lines[i] and set(lines[i]) <= {"-", " "})
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line)
    return rows


def test_bench_under_load_runs_n_at_once_and_reports_each_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBackend(
        "openai", step_s=STEP_S, draft_len=DRAFT_LEN, responder=corpus_responder, batch_tokens=BATCH_TOKENS
    ) as fake:
        config = write_config(tmp_path, fake=fake)
        code, report, markdown = run_bench(
            tmp_path, config, "--task", SMALL_EDIT, "--repeat", "1", "--concurrency", "4,1,2"
        )
        peak = fake.peak_active_streams
        measured = [r for r in without_probes(fake.requests) if r["max_tokens"] > 1]  # the warm-ups: one token
        backend = backend_speedups(fake, [1, 2, 4])
    out = capsys.readouterr()
    assert code == 0, out.err
    levels = report["load"]
    assert [level["concurrency"] for level in levels] == [1, 2, 4]  # lowest first, whatever the order given
    assert report["meta"]["concurrency"] == [1, 2, 4]

    # Real concurrency: the server saw 4 answers streaming at once, and never more; every batch of every
    # level had all of its N answers streaming at one instant, by the bench's own clock.
    assert peak == 4
    for level in levels:
        n = level["concurrency"]
        for mode in ("prediction", "baseline"):
            throughput = level["throughput"][mode]
            assert throughput["requests"] == n and throughput["streaming_at_once"] == n
        assert level["pairs"] == n
        assert [b["concurrency"] for b in level["batches"]] == [n, n]
    # Every request went through the pipeline: 1 + 2 + 4 with the prediction field, as many without.
    assert sum("prediction" in r for r in measured) == sum("prediction" not in r for r in measured) == 7
    # The first mode alternates as without --concurrency (one task, one repetition: with prediction first).
    assert [b["mode"] for b in levels[0]["batches"]] == ["prediction", "baseline"]

    region, answer = small_edit()
    tokens = len(tokenize(answer))
    for level in levels:
        n = level["concurrency"]
        for mode in ("prediction", "baseline"):
            throughput, summary = level["throughput"][mode], level[mode]
            # Aggregate: every output token of the level's batches ÷ their wall time, as sent.
            assert throughput["output_tokens"] == n * tokens
            busy = sum(b["wall_s"] for b in level["batches"] if b["mode"] == mode)
            assert throughput["aggregate_tokens_per_s"] == pytest.approx(n * tokens / busy)
            # A batch lasts at least as long as each of its requests, so N requests deliver at most N times
            # one request's end-to-end rate; in step, not much less.
            per_request = summary["effective_tokens_per_s"]
            assert 0.5 * n * per_request <= throughput["aggregate_tokens_per_s"] <= n * per_request * 1.001
        # The bench's speedup is the one the backend gave these requests, as the fake timed its answers,
        # less the fixed cost per request that both modes pay.
        assert 0.6 * backend[n] <= level["speedup"] <= 1.25 * backend[n], (n, level["speedup"], backend)
        assert level["aggregate_ratio"] == pytest.approx(
            level["throughput"]["prediction"]["aggregate_tokens_per_s"]
            / level["throughput"]["baseline"]["aggregate_tokens_per_s"]
        )
        # Acceptance as the bench already reports it: the backend's own figures, summed over the level.
        sim = simulate(answer, region, DRAFT_LEN, aligned=True)
        assert level["prediction"]["accepted_prediction_tokens"] == n * sim.accepted
        assert level["prediction"]["rejected_prediction_tokens"] == n * sim.rejected
    # Under the load model the drafts' verification competes with the other requests: at 4 at once the
    # backend's speed-up is about a quarter of one request's (its own clock: a busy machine slows both).
    assert backend[4] < 0.6 * backend[1], backend
    speedups = {level["concurrency"]: level["speedup"] for level in levels}

    # The per-task table is at the first level, and the JSON's pairs and runs are that level's.
    assert len(report["pairs"]) == 1 and report["total"]["speedup"] == pytest.approx(speedups[1])

    # What a reader sees: a labelled, simulated load table with one row per level, in both renderings.
    rows = load_table_lines(out.out)
    assert [row.split()[0] for row in rows] == ["1", "2", "4"]
    for row, level in zip(rows, levels, strict=True):
        assert f"{level['speedup']:.2f}×" in row and f"{level['aggregate_ratio']:.2f}×" in row
        n = level["concurrency"]
        assert row.rstrip().endswith(f"{n} / {n}")  # streaming at once, with / without
    assert "aggregate tok/s (with / without)" in markdown and "end-to-end tok/s per request" in markdown
    for text in (out.out.replace("\n  ", " "), markdown):  # the terminal's lines wrap at 120 columns
        assert "Speed under load (SIMULATED" in text and "SIMULATED: simulated by refactor-lsp's fake backend" in text
        assert "concurrency: 1, 2, 4 requests at once" in text
        assert "batch of N identical requests sent at once" in text
        assert "WARNING" not in text
    md_rows = [line for line in markdown.splitlines() if line.startswith(("| 1 |", "| 2 |", "| 4 |"))]
    assert len(md_rows) == 3 and "| concurrency | pairs |" in markdown
    assert "--concurrency 4,1,2" in report["meta"]["command"]
    # Progress: one line per run, naming the batch.
    assert out.err.count("bench: ") == 14 and "(with prediction, #1, 4 at once)" in out.err


def test_without_the_option_the_report_is_as_before(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeBackend("openai", step_s=0.001, responder=corpus_responder) as fake:
        config = write_config(tmp_path, fake=fake)
        reports = []
        for extra in ([], ["--concurrency", "1"]):
            code, report, markdown = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--repeat", "1", *extra)
            out = capsys.readouterr().out
            assert code == 0
            assert "Speed under load" not in out + markdown and "concurrency" not in out + markdown
            reports.append(report)
        assert fake.peak_active_streams == 1
    for report in reports:
        assert "load" not in report and "concurrency" not in report["meta"]
        assert set(report) == {"meta", "tasks", "total", "pairs", "runs"}
    assert "--concurrency" not in reports[1]["meta"]["command"]  # 1 is the default: nothing to repeat


@pytest.mark.parametrize(
    ("value", "problem"),
    [("0", "'0' is not one"), ("2,x", "'x' is not one"), ("-2", "'-2' is not one"), ("1,,4", "'' is not one")],
)
def test_a_bad_concurrency_is_refused_before_anything_is_sent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_fake: Any, value: str, problem: str
) -> None:
    fake = make_fake(responder=corpus_responder)
    config = write_config(tmp_path, fake=fake)
    code, report, _ = run_bench(tmp_path, config, "--task", SMALL_EDIT, f"--concurrency={value}")
    err = capsys.readouterr().err
    assert code == 2 and report == {}
    assert "--concurrency takes whole numbers of 1 or more" in err and problem in err
    assert fake.requests == []


def test_concurrency_levels_and_their_limit() -> None:
    assert parse_concurrency("1") == (1,)
    assert parse_concurrency(" 4, 1,2,2 ") == (1, 2, 4)
    for bad in ("", "1.5", "+2", "²", "1e3"):
        with pytest.raises(BenchError, match="--concurrency"):
            parse_concurrency(bad)
    tasks = load_tasks(TASKS_DIR, [SMALL_EDIT])
    config = build_config([])
    plan = make_plan(config, "openai", None, tasks, repeat=2, concurrency=(4, 1))
    assert plan.concurrency == (1, 4) and plan.under_load and plan.runs == 2 * 2 * (1 + 4)
    assert not make_plan(config, "openai", None, tasks, repeat=1).under_load
    # More than the HTTP client's connection limit would queue in the client instead of loading the server.
    limit = max_concurrency()
    assert limit >= 64
    with pytest.raises(BenchError, match=rf"--concurrency {limit + 1} is more than the {limit} connections"):
        make_plan(config, "openai", None, tasks, repeat=1, concurrency=(1, limit + 1))


def test_vllm_pair_under_load_counts_acceptance_over_the_level(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without per-request metrics, each request's /metrics reading also counts its batch-mates' drafts;
    the load table takes the server's counters over the whole level instead, and says so."""
    with (
        FakeBackend("vllm", step_s=0.002, responder=corpus_responder, spec_decode_metrics=False) as spec,
        FakeBackend("vllm", step_s=0.002, responder=corpus_responder, speculation=False) as plain,
    ):
        config = write_config(tmp_path, spec=spec, plain=plain)
        code, report, _ = run_bench(
            tmp_path,
            config,
            *("--backend", "spec", "--baseline-backend", "plain", "--task", SMALL_EDIT, "--repeat", "1"),
            *("--concurrency", "1,3"),
        )
        measured = [r for r in without_probes(spec.requests) if r["max_tokens"] > 1]
        peaks = spec.peak_active_streams, plain.peak_active_streams
    out = capsys.readouterr().out
    assert code == 0
    assert peaks == (3, 3)
    source = "\n".join(str(m.get("content", "")) for m in measured[0]["messages"])
    _, answer = small_edit()
    sim = simulate(answer, source, spec.draft_len, aligned=False, from_output=True)
    one, three = report["load"]
    assert one["metrics_during_level"]["accepted"] == sim.accepted
    assert three["metrics_during_level"]["accepted"] == 3 * sim.accepted
    assert three["metrics_during_level"]["drafted"] == 3 * sim.drafted
    row = next(line for line in load_table_lines(out) if line.startswith("3 "))
    rate = sim.accepted / sim.drafted
    assert f"{3 * sim.accepted} / {3 * sim.rejected} ({rate:.0%}, /metrics)" in row
    assert "the server's counters over the level" in out


def test_fake_backend_load_model() -> None:
    """Off by default (every pass costs step_s); on, a pass costs step_s × crowding × saturation."""
    plain = FakeBackend(step_s=0.01)
    assert not plain.load_model and plain.pass_s(8, 200) == 0.01
    loaded = FakeBackend(step_s=0.01, load_factor=0.5, batch_tokens=10)
    assert loaded.pass_s(1, 5) == pytest.approx(0.01)  # alone, under capacity: one step
    assert loaded.pass_s(3, 10) == pytest.approx(0.01 * 2)  # two others streaming: 1 + 0.5 × 2
    assert loaded.pass_s(3, 25) == pytest.approx(0.01 * 2 * 2.5)  # and 2.5 times the tokens a pass handles
    with pytest.raises(ValueError, match="load_factor"):
        FakeBackend(load_factor=-1)
    sim = simulate("a b c d", "a b c d", draft_len=8)
    assert len(sim.drafts) == len(sim.steps) and sum(sim.drafts) == sim.drafted


def test_fake_backend_command_line_turns_the_load_model_on_and_says_it_is_simulated() -> None:
    command = [sys.executable, "-m", "lsp_server.testing.fake_backend", "--kind", "vllm", "--port", "0"]
    process = subprocess.Popen(
        [*command, "--load-factor", "0.25", "--batch-tokens", "12", "--draft-len", "6"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        with urllib.request.urlopen(url + "/models", timeout=10) as response:
            entry = json.loads(response.read())["data"][0]
    finally:
        process.terminate()
        process.wait(10)
    assert entry["owned_by"] == (
        "simulated by refactor-lsp's fake backend (vllm, 2 ms a pass; profile perfect (UPPER BOUND): no real backend: "
        "every draft token that matches is accepted, the prompt is free; drafts of 6; load factor 0.25, 12 tokens a "
        "pass)"
    )
    assert entry["profile"] == "perfect"
    refused = subprocess.run([*command, "--batch-tokens", "-1"], capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2
    assert "--batch-tokens and --prefill-tokens-per-pass must be 0 (off) or more" in refused.stderr
    # A calibrated profile is calibrated as a whole, and for its own kind of backend.
    retuned = [*command, "--profile", "gpu-vllm-ngram", "--draft-len", "3"]
    refused = subprocess.run(retuned, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--profile gpu-vllm-ngram is calibrated as a whole" in refused.stderr
    wrong_kind = [*command[:-4], "--kind", "openai", "--port", "0", "--profile", "local-vllm-cpu"]
    refused = subprocess.run(wrong_kind, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 2 and "--profile local-vllm-cpu is for --kind vllm or llamacpp" in refused.stderr
