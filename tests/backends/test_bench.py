"""`refactor-lsp bench` end to end: the CLI, the real pipeline, and the loopback test backend.

The test backend simulates speculative decoding with a known cost per forward pass, so the speedup
a bench must measure is known in advance (`simulate()` counts the passes), and so is every
accepted and rejected token. The responder plays a perfect model: for a task's region it answers
the task's expected region.
"""

from __future__ import annotations

import io
import json
import statistics
from pathlib import Path
from typing import Any

import pytest

from lsp_server.backend import metrics
from lsp_server.bench import (
    BenchError,
    Machine,
    Meta,
    ModeSummary,
    PairsSummary,
    ProgressDisplay,
    Report,
    Run,
    ServerInfo,
    Spread,
    TaskSummary,
    load_tasks,
    make_plan,
    render_markdown,
    schedule,
)
from lsp_server.cli.main import main
from lsp_server.config.load import build_config
from lsp_server.proposer import PROBE_KEY
from lsp_server.stats.measured import RefactorStats
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import SlippingResponder, region_of
from lsp_server.testing.speculation import simulate, tokenize
from tests.cli_harness import run_cli
from tests.conftest import write_config

TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
# Small regions, so that a pass of 5 ms keeps each run short; one small edit and one heavy rewrite.
SMALL_EDIT = "js-fetch-add-timeout-option"
REWRITE = "py-deps-recursive-to-iterative"
STEP_S = 0.004  # one simulated forward pass: large against the per-request overhead
DRAFT_LEN = 8


def corpus_answers() -> dict[str, str]:
    """Each task's current region → its expected region."""
    answers = {}
    for task in load_tasks(TASKS_DIR):
        start, end = task.span()
        answers[task.source[start:end]] = task.expected_region()
    return answers


ANSWERS = corpus_answers()


def corpus_responder(request: dict[str, Any]) -> str:
    """A perfect model for the corpus: the expected region for a task's region; "ok" to anything else."""
    return ANSWERS.get(region_of(request.get("messages", [])), "ok")


def run_bench(tmp_path: Path, config: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    md, js = tmp_path / "report.md", tmp_path / "report.json"
    code = main(
        ["bench", "--config", str(config), "--tasks", str(TASKS_DIR), "--markdown", str(md), "--json", str(js), *args]
    )
    report = json.loads(js.read_text(encoding="utf-8")) if js.exists() else {}
    return code, report, md.read_text(encoding="utf-8") if md.exists() else ""


def chat_requests(fake: FakeBackend) -> list[dict[str, Any]]:
    """The measured requests (the warm-up asks for one token and has no region)."""
    return [r for r in fake.requests if region_of(r["messages"])]


def steps_without(answer: str) -> int:
    return len(tokenize(answer))


def answer_s(fake: FakeBackend, region: str, *, prediction: bool | None = None) -> float:
    """How long the fake took to answer the one measured request for `region` (with or without the
    prediction field, where one fake serves both), by its own clock."""
    (index,) = [
        i
        for i, r in enumerate(fake.requests)
        if region_of(r["messages"]) == region and prediction in (None, "prediction" in r)
    ]
    start, end = fake.answer_spans[index]
    return end - start


def assert_speedup_matches(measured: float, without_s: float, with_s: float, passes: tuple[int, int]) -> None:
    """The bench's speedup is the speed-up the backend gave: its answer without ÷ with the prediction,
    as it timed them, each at least its simulated passes (`passes`: without, with) of STEP_S.

    A busy machine slows both answers alike (every pass's sleep wakes late), so the backend's own times
    are the measure; both modes also pay the same fixed cost per request (HTTP, prompt, first chunk),
    which pulls the measured ratio a little below theirs."""
    assert without_s >= passes[0] * STEP_S and with_s >= passes[1] * STEP_S, (without_s, with_s, passes)
    expected = without_s / with_s
    assert 0.6 * expected <= measured <= 1.25 * expected, (measured, expected)


# -- OpenAI kind: with and without the prediction field ------------------------------------------


def test_bench_openai_measures_the_simulated_speedup_and_the_backends_own_acceptance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBackend("openai", step_s=STEP_S, draft_len=DRAFT_LEN, responder=corpus_responder) as fake:
        config = write_config(tmp_path, fake=fake)
        code, report, markdown = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--task", REWRITE, "--repeat", "1")
        requests = chat_requests(fake)
    out = capsys.readouterr()
    assert code == 0, out.err

    # Same prompt both ways, temperature 0; "without" simply has no prediction field.
    with_field = [r for r in requests if "prediction" in r]
    without = [r for r in requests if "prediction" not in r]
    assert len(with_field) == len(without) == 2
    assert {r["temperature"] for r in requests} == {0.0}
    assert not any("cache_salt" in r for r in requests)  # vLLM's field, not OpenAI's
    for a, b in zip(with_field, without, strict=True):
        if region_of(a["messages"]) == region_of(b["messages"]):
            assert a["messages"] == b["messages"]

    # Pairs alternate which mode runs first (task by task here; test_schedule_alternates_the_first_mode
    # shows repetition by repetition).
    firsts = ["prediction" in requests[i] for i in range(0, len(requests), 2)]
    assert firsts == [True, False]

    pair_speedups = []
    for task in report["tasks"]:
        region = next(t for t in load_tasks(TASKS_DIR, [task["name"]]))
        start, end = region.span()
        answer = region.expected_region()
        sim = simulate(answer, region.source[start:end], DRAFT_LEN, aligned=True)
        # Acceptance in the bench's JSON is what the backend itself reported, exactly.
        runs = [r for r in report["runs"] if r["task"] == task["name"]]
        for run in runs:
            stats = run["stats"]
            if run["mode"] == "prediction":
                assert (stats["accepted_prediction_tokens"], stats["rejected_prediction_tokens"]) == (
                    sim.accepted,
                    sim.rejected,
                )
                assert stats["acceptance_source"] == "usage"
                # OpenAI bills rejected prediction tokens as completion tokens; they are not output.
                assert stats["completion_tokens"] == steps_without(answer) + sim.rejected
            else:
                assert stats["accepted_prediction_tokens"] is None
                assert stats["completion_tokens"] == steps_without(answer)
            assert run["matches_expected"] is True
        assert task["prediction"]["accepted_prediction_tokens"] == sim.accepted
        assert task["prediction"]["rejected_prediction_tokens"] == sim.rejected
        assert task["same_text_pairs"] == 1 and task["different_text_pairs"] == 0
        assert task["prediction"]["output_tokens"] == task["baseline"]["output_tokens"] == steps_without(answer)
        region_text = region.source[start:end]
        times = answer_s(fake, region_text, prediction=False), answer_s(fake, region_text, prediction=True)
        assert_speedup_matches(task["speedup"], *times, (steps_without(answer), len(sim.steps)))
        pair_speedups.append(task["speedup"])
    # The total is the median over both pairs.
    assert report["total"]["speedup"] == pytest.approx(statistics.median(pair_speedups))

    # What a reader sees: the table in the terminal and in the Markdown, with the header.
    for text in (out.out, markdown):
        assert SMALL_EDIT in text and REWRITE in text and "all tasks" in text
        assert "speedup" in text
        assert "without: the same backend, without the `prediction` field" in text
        assert "repetitions: 1" in text and "cores" in text
    assert markdown.count("\n| ") >= 4 and "|---|" in markdown
    assert "DIFFERENT" not in out.out
    # Within a terminal's 120 columns, what the speed-up rests on stays: TTFT, end-to-end tok/s, acceptance,
    # and whether both modes wrote the same text; the note on the model goes first, and its footer with it.
    lines = out.out.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    rule = next(i for i, line in enumerate(lines) if line.startswith("-----"))
    top = max(i for i in range(rule) if not lines[i])  # the header's lines sit between a blank line and the rule
    header = lines[top + 1 : rule]
    for column in ("TTFT", "end-to-end", "accepted", "same", "speedup"):
        assert any(column in line for line in header), header
    assert "| same text |" in markdown
    assert "matches" not in header and "matches expected:" not in out.out
    assert "(left out to fit 120 columns: matches expected (with · without);" in " ".join(out.out.split())
    assert "matches expected: answers equal to the task's expected file" in markdown
    # No terminal here: plain progress lines on stderr, one per run.
    assert out.err.count("bench: ") == 4
    assert report["meta"]["backend"]["type"] == "openai" and report["meta"]["baseline"] is None


def test_bench_flags_pairs_whose_text_differs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def moody(request: dict[str, Any]) -> str:
        answer = corpus_responder(request)
        return answer if "prediction" in request or answer == "ok" else answer.replace("timeout", "deadline")

    with FakeBackend("openai", step_s=0.001, responder=moody) as fake:
        config = write_config(tmp_path, fake=fake)
        code, report, markdown = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--repeat", "1")
    out = capsys.readouterr().out
    assert code == 0
    assert report["tasks"][0]["different_text_pairs"] == 1
    # The terminal's table flags the task, and its warning says where the texts part (as the Markdown's column).
    assert "WARNING: the two modes produced different text for: js-fetch-add-timeout-option (1/1 pairs, after " in (
        " ".join(out.split())
    )
    (row,) = [line for line in out.splitlines() if line.startswith(SMALL_EDIT[:12])]  # the name may be shortened
    assert row.endswith("DIFFERENT 1/1")
    assert "DIFFERENT 1/1 (after " in markdown


def test_bench_stops_when_the_backend_refuses_the_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeBackend("openai", step_s=0.001, responder=corpus_responder, reject_prediction=True) as fake:
        config = write_config(tmp_path, fake=fake)
        code, report, _ = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--repeat", "1")
    err = capsys.readouterr().err
    assert code == 1 and report == {}
    assert "ran without the prediction" in err and "nothing to compare" in err


# -- vLLM kind: a speculative server and a plain baseline -----------------------------------------


@pytest.mark.parametrize("per_request_metrics", [True, False], ids=["per-request-metrics", "prometheus-fallback"])
def test_bench_vllm_pair_reads_acceptance_per_request_or_from_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], per_request_metrics: bool
) -> None:
    with (
        FakeBackend(
            "vllm",
            step_s=STEP_S,
            draft_len=DRAFT_LEN,
            responder=corpus_responder,
            spec_decode_metrics=per_request_metrics,
        ) as spec,
        FakeBackend("vllm", step_s=STEP_S, responder=corpus_responder, speculation=False) as plain,
    ):
        config = write_config(tmp_path, spec=spec, plain=plain)
        code, report, _ = run_bench(
            tmp_path, config, "--backend", "spec", "--baseline-backend", "plain", "--task", SMALL_EDIT, "--repeat", "1"
        )
        measured = chat_requests(spec)
        counters = dict(spec.counters)
        baseline_requests = chat_requests(plain)
    out = capsys.readouterr()
    assert code == 0, out.err
    assert len(measured) == len(baseline_requests) == 1
    assert all("prediction" not in r for r in measured + baseline_requests)  # vLLM drafts from the prompt
    assert measured[0]["messages"] == baseline_requests[0]["messages"]
    # Each run salts vLLM's prefix cache its own way: no run reads a prompt another one cached.
    salts = [r.get("cache_salt") for r in measured + baseline_requests]
    assert all(salts) and len(set(salts)) == len(salts)

    task = load_tasks(TASKS_DIR, [SMALL_EDIT])[0]
    answer = task.expected_region()
    source = "\n".join(str(m.get("content", "")) for m in measured[0]["messages"])
    sim = simulate(answer, source, DRAFT_LEN, aligned=False, from_output=True)
    runs = report["runs"]
    for run in runs:
        stats = run["stats"]
        if run["mode"] == "prediction":
            assert (stats["accepted_prediction_tokens"], stats["rejected_prediction_tokens"]) == (
                sim.accepted,
                sim.rejected,
            )
            assert stats["acceptance_source"] == ("vllm-spec-decode-metrics" if per_request_metrics else metrics.SOURCE)
            # A local server's rejected drafts were never output: all completion tokens count.
            assert stats["tokens_per_s"] > 0
        else:
            assert stats["accepted_prediction_tokens"] is None and stats["prediction"] is False
            assert stats["prediction_via"] == "prompt" and stats["server_speculation"] is False
    # The server's own counters during the bench agree with the bench's sums (its lifetime counters also
    # hold the proposer probe's two requests, sent before the bench reads them: backend/proposer_probe.py).
    row = report["tasks"][0]
    during = report["meta"]["metrics_during_bench"]
    assert row["prediction"]["accepted_prediction_tokens"] == during["accepted"]
    assert (
        row["prediction"]["accepted_prediction_tokens"] + row["prediction"]["rejected_prediction_tokens"]
        == during["drafted"]
    )
    probes = [r for r in spec.requests if PROBE_KEY in (r.get("vllm_xargs") or {})]
    assert len(probes) == 2 and counters["drafted"] >= during["drafted"]
    region = region_of(measured[0]["messages"])
    times = answer_s(plain, region), answer_s(spec, region)
    assert_speedup_matches(row["speedup"], *times, (steps_without(answer), len(sim.steps)))
    meta = report["meta"]
    assert meta["baseline"]["name"] == "plain" and meta["backend"]["speculative_decoding"].startswith("on")
    assert meta["baseline"]["speculative_decoding"].startswith("off")  # a plain server has no draft counters
    assert "/metrics during the bench" in out.out


def test_bench_refuses_a_vllm_backend_without_a_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make_fake: Any
) -> None:
    spec = make_fake("vllm")
    config = write_config(tmp_path, spec=spec)
    code, report, _ = run_bench(tmp_path, config, "--backend", "spec", "--task", SMALL_EDIT)
    err = capsys.readouterr().err
    assert code == 2 and report == {}
    assert "--baseline-backend" in err and "speculative decoding is a server setting" in err
    assert spec.requests == []  # nothing was sent


def test_bench_names_unknown_tasks_and_unreachable_backends(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import closed_port_url

    config = write_config(tmp_path, down={"type": "openai", "base_url": closed_port_url(), "model": "m"})
    assert run_bench(tmp_path, config, "--task", "no-such-task")[0] == 2
    err = capsys.readouterr().err
    assert "no task named no-such-task" in err and SMALL_EDIT in err
    assert run_bench(tmp_path, config, "--task", SMALL_EDIT)[0] == 1
    assert "connection refused" in capsys.readouterr().err


# -- the parts, without a backend ------------------------------------------------------------------


def test_the_corpus_loads_and_every_region_follows_its_rule() -> None:
    tasks = load_tasks(TASKS_DIR)
    assert len(tasks) >= 12
    assert len({t.language for t in tasks}) >= 4
    assert {t.kind for t in tasks} == {"mostly-unchanged", "heavy-rewrite"}
    for task in tasks:
        assert 40 <= len(task.source.splitlines()) <= (1200 if task.region_lines >= 200 else 400), task.name
        start, end = task.span()
        prefix, suffix = task.source[:start], task.source[end:]
        assert task.expected.startswith(prefix) and task.expected.endswith(suffix), task.name
        request = task.request("b", None)
        assert request.scope == ("selection" if task.lines else "file")
        assert (request.start, request.end) == ((start, end) if task.lines else (0, 0))


def test_schedule_alternates_the_first_mode() -> None:
    config = build_config([])
    tasks = load_tasks(TASKS_DIR, [SMALL_EDIT, REWRITE])
    plan = make_plan(config, "openai", None, tasks, repeat=2)
    firsts = [(rep, task.name, modes[0]) for rep, task, modes in schedule(plan)]
    assert firsts == [
        (0, SMALL_EDIT, "prediction"),
        (0, REWRITE, "baseline"),
        (1, SMALL_EDIT, "baseline"),
        (1, REWRITE, "prediction"),
    ]
    assert plan.config.refactor.temperature == 0.0


def test_plan_checks(tmp_path: Path) -> None:
    config = build_config([])
    tasks = load_tasks(TASKS_DIR, [SMALL_EDIT])
    with pytest.raises(BenchError, match="--repeat"):
        make_plan(config, "openai", None, tasks, repeat=0)
    with pytest.raises(BenchError, match="local-plain"):
        make_plan(config, "local", None, tasks, repeat=1)
    with pytest.raises(BenchError, match="another backend"):
        make_plan(config, "local", "local", tasks, repeat=1)
    plan = make_plan(config, "local", "local-plain", tasks, repeat=1, max_tokens=256)
    assert plan.baseline.base_url == "http://127.0.0.1:8001/v1" and plan.config.refactor.max_tokens == 256


def test_progress_bar_on_a_terminal_and_lines_elsewhere() -> None:
    tty, plain = io.StringIO(), io.StringIO()
    run = Run("t", "prediction", 0, True, "b", "edit", stats=RefactorStats(latency_ms=1500.0, completion_tokens=42))
    for stream, is_tty in ((tty, True), (plain, False)):
        bar = ProgressDisplay(2, stream, tty=is_tty)
        bar.begin("t", "prediction", 0)
        bar.done(run)
        bar.close()
    assert "\r[" in tty.getvalue() and "1/2" in tty.getvalue() and "\n" not in tty.getvalue()
    assert plain.getvalue() == "bench: 1/2 t (with prediction, #1): 1.50 s, 42 tok\n"


def test_markdown_escapes_and_bolds_the_total() -> None:
    mode = ModeSummary(
        runs=1,
        measured=1,
        errors=0,
        refused=0,
        latency_ms=Spread(median=1000.0, min=900.0, max=1100.0),
        ttft_ms=50.0,
        completion_tokens=10.0,
        output_tokens=10.0,
        effective_tokens_per_s=10.0,
        generation_tokens_per_s=None,
        accepted_prediction_tokens=None,
        rejected_prediction_tokens=None,
        acceptance_rate=None,
        acceptance_reported_runs=0,
        acceptance_sources=(),
        matches_expected=0,
        expected_similarity=None,
    )
    row = PairsSummary(
        pairs=1,
        speedup=2.0,
        speedup_min=2.0,
        speedup_max=2.0,
        total_time_ratio=2.0,
        same_text_pairs=1,
        different_text_pairs=0,
        differ_after_chars=(),
        distinct_outputs={"prediction": 1, "baseline": 1},
        prediction=mode,
        baseline=mode,
    )
    meta = Meta(
        date="d",
        refactor_lsp="0",
        command="refactor-lsp bench",
        backend=ServerInfo(name="a|b", type="openai", base_url="u", model="m"),
        baseline=None,
        tasks_dir="t",
        repetitions=1,
        max_tokens=0,
        temperature=0.0,
        order="o",
        note="",
        machine=Machine(cpu="c", cores=2, memory_gib=1, os="o", python="3"),
        wall_s=0.0,
    )
    task = TaskSummary(name="t", kind="heavy-rewrite", language="python", lines=None, region_chars=1, summary=row)
    report = Report(meta=meta, tasks=(task,), total=row, pairs=())
    text = render_markdown(report)
    assert "a\\|b" in text and "| **all tasks** |" in text and "| t | rewrite |" in text
    assert "**2.00×**" in text and "not reported" in text


def test_a_failed_runs_reason_is_said_whole_in_lines_and_on_a_terminal() -> None:
    """Issue 36 item 18: the progress line cut the reason of a failed run off (and a terminal's bar never
    showed it): it is said whole, on a terminal on a line of its own above the bar."""
    import io

    from lsp_server.bench import ProgressDisplay, Run

    reason = "the model's answer was cut off at its token limit, so nothing was applied — " + "select less " * 20
    for tty in (False, True):
        out = io.StringIO()
        display = ProgressDisplay(1, stream=out, tty=tty)
        display.begin("task", "prediction", 0)
        display.done(Run("task", "prediction", 0, True, "b", "refused", message=reason))
        assert f"refused: {reason}" in out.getvalue()


def test_bench_reports_the_cost_with_and_without_the_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With prices set, each run's cost is billed tokens × prices: OpenAI bills the rejected prediction
    tokens, so the prediction's runs cost more for the same answer."""
    with FakeBackend("openai", step_s=STEP_S, draft_len=DRAFT_LEN, responder=corpus_responder) as fake:
        table = {"type": "openai", "base_url": fake.url, "model": "fake-model"}
        config = write_config(tmp_path, fake={**table, "price_input_per_mtok": 2.0, "price_output_per_mtok": 8.0})
        code, report, markdown = run_bench(tmp_path, config, "--task", REWRITE, "--repeat", "1")
    assert code == 0, capsys.readouterr().err
    for run in report["runs"]:
        stats = run["stats"]
        billed = (stats["prompt_tokens"] * 2.0 + stats["completion_tokens"] * 8.0) / 1e6
        assert stats["cost"] == pytest.approx(billed)
    (task,) = report["tasks"]
    with_, without = task["prediction"]["cost"], task["baseline"]["cost"]
    assert with_ > without and task["cost_ratio"] == pytest.approx(with_ / without)
    assert report["total"]["cost_ratio"] == pytest.approx(with_ / without)
    assert f"${with_:.4f} / ${without:.4f} ({with_ / without:.2f}×)" in markdown


def test_bench_counts_repairs_per_mode_and_their_time(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A model that slips only when the prediction field is sent: its runs need a repair, whose time
    is in what the user waited, so the speedup is not flattered by an answer that had to be mended."""
    slipping = SlippingResponder(corpus_responder, slip="dropped closing bracket", language="javascript")

    def slips_with_prediction(request: dict[str, Any]) -> str:
        return slipping(request) if "prediction" in request else corpus_responder(request)

    with FakeBackend("openai", step_s=0.001, responder=slips_with_prediction) as fake:
        config = write_config(tmp_path, fake=fake)
        code, report, _ = run_bench(tmp_path, config, "--task", SMALL_EDIT, "--repeat", "2")
        sent = chat_requests(fake)
    out = capsys.readouterr().out
    assert code == 0
    total = report["total"]
    assert (total["prediction"]["repaired"], total["baseline"]["repaired"]) == (2, 0)
    assert len(sent) == 6  # two pairs, and a repair for each run with the prediction
    runs = [run for run in report["runs"] if run["mode"] == "prediction"]
    for run in runs:
        stats = run["stats"]
        assert stats["repaired"] is True and stats["repair_ms"] > 0
    waits = sorted(r["stats"]["latency_ms"] + r["stats"]["repair_ms"] for r in runs)
    assert total["prediction"]["latency_ms"]["median"] == pytest.approx(sum(waits) / 2)
    assert "with prediction 2 repaired, 0 still broken; without prediction 0 repaired" in " ".join(out.split())


@pytest.mark.parametrize(("number", "code", "by"), [("SIGINT", 130, "Ctrl-C"), ("SIGTERM", 143, "SIGTERM")])
def test_ctrl_c_keeps_what_was_measured_and_says_it_was_interrupted(
    tmp_path: Path, number: str, code: int, by: str
) -> None:
    """Issue 36 item 18: Ctrl-C during `bench` lost everything (exit 130, no message, no --json). The
    first Ctrl-C ends the bench at the run in flight: the runs measured are shown, written and marked.
    SIGTERM (`timeout`, a cancelled CI job) is taken alike; it lost everything too (killed, no file)."""
    import signal
    import subprocess
    import sys

    with FakeBackend("openai", step_s=0.05, draft_len=DRAFT_LEN, responder=corpus_responder) as fake:
        config = write_config(tmp_path, fake=fake)
        report_file = tmp_path / "report.json"
        bench = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "bench", "--config", str(config), "--task", SMALL_EDIT,
             "--repeat", "10", "--json", str(report_file)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        )  # fmt: skip
        assert bench.stderr is not None
        lines = []
        for line in bench.stderr:  # plain progress lines: stderr is no terminal
            lines.append(line)
            if line.startswith("bench: 4/"):
                bench.send_signal(getattr(signal, number))
                break
        out, err = bench.communicate(timeout=120)
    err = "".join(lines) + err
    assert bench.returncode == code, err
    assert "Traceback" not in err
    assert f"INTERRUPTED ({by}) after 4 of 20 runs" in err or f"INTERRUPTED ({by}) after 5 of 20 runs" in err
    assert f"INTERRUPTED ({by})" in out  # the table's header says so
    report = json.loads(report_file.read_text(encoding="utf-8"))
    assert report["meta"]["interrupted"].startswith(f"INTERRUPTED ({by}) after")
    assert len(report["runs"]) >= 4


def test_nothing_drafted_reads_not_reported_rather_than_zero_percent() -> None:
    from dataclasses import replace

    from lsp_server.bench.probes import DraftsCounted
    from lsp_server.bench.render import metrics_lines

    meta = Meta(
        date="d", refactor_lsp="0", command="c", backend=ServerInfo(name="a", type="vllm", base_url="u", model="m"),
        baseline=None, tasks_dir="t", repetitions=1, max_tokens=0, temperature=0.0, order="o", note="",
        machine=Machine(cpu="c", cores=2, memory_gib=1, os="o", python="3"), wall_s=0.0,
    )  # fmt: skip
    none = replace(meta, metrics_during_bench=DraftsCounted("http://x/metrics", 0.0, 0.0, 0.0))
    assert metrics_lines(none) == [
        "/metrics during the bench (http://x/metrics): draft tokens not reported (none counted)"
    ]
    some = replace(meta, metrics_during_bench=DraftsCounted("http://x/metrics", 10.0, 5.0, 0.5))
    assert metrics_lines(some) == ["/metrics during the bench (http://x/metrics): 10 draft tokens, 5 accepted (50%)"]


def test_a_report_file_that_cannot_be_written_is_said_before_anything_is_measured(tmp_path: Path) -> None:
    """`--json` under a name that is a file, not a folder: the bench measured for its whole length, then
    ended in a traceback (FileExistsError) with the JSON not written and the markdown's fate unsaid."""
    with FakeBackend("openai", step_s=STEP_S, draft_len=DRAFT_LEN, responder=corpus_responder) as fake:
        config = write_config(tmp_path, fake=fake)
        (tmp_path / "a-file").write_text("x", encoding="utf-8")
        for flag in ("--json", "--markdown"):
            done = run_cli(
                "bench", "--config", str(config), "--task", SMALL_EDIT, "--repeat", "1",
                flag, str(tmp_path / "a-file" / "report"), config=None, cwd=tmp_path,
            )  # fmt: skip
            assert done.returncode == 2, done.stderr
            assert "Traceback" not in done.stderr
            folder = tmp_path / "a-file"
            assert f"cannot write {folder / 'report'}: {folder} is not a folder" in done.stderr
            assert "nothing was measured" in done.stderr
        assert fake.requests == []


def test_a_reader_of_the_table_gone_still_leaves_the_report_files(tmp_path: Path) -> None:
    """`bench --json r.json | head -3`, the reader gone before the table: the table went first, exit 141,
    and the files asked for were never written, the measurement lost."""
    import subprocess
    import sys

    with FakeBackend("openai", step_s=STEP_S, draft_len=DRAFT_LEN, responder=corpus_responder) as fake:
        config = write_config(tmp_path, fake=fake)
        bench = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", "bench", "--config", str(config), "--task", SMALL_EDIT,
             "--repeat", "1", "--json", "r.json", "--markdown", "r.md"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path,
        )  # fmt: skip
        assert bench.stdout is not None
        bench.stdout.close()  # the reader gone before the table
        assert bench.wait(timeout=120) == 141
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["runs"]
    assert "js-fetch-add-timeout-option" in (tmp_path / "r.md").read_text(encoding="utf-8")
