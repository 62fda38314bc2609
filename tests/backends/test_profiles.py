"""The loopback backend's profiles of real backends: each reproduces the figures it is calibrated to on
the bench's corpus (computed in simulated time: the engine's own prompts, the fake's own pacing, summed
instead of slept), the fake paces a request over HTTP exactly as that simulation does, `auto`'s
defaults are the calibrated profiles' crossovers (not the perfect model's), and the bench names the
profile it ran against in a report that fits a terminal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server.bench import SizeRuleOnly, load_tasks
from lsp_server.cli.main import main
from lsp_server.formats.choice import DEFAULT_HUNKS_MIN_LINES
from lsp_server.pipeline.engine import Engine
from lsp_server.testing.calibration import (
    Simulator,
    calibrate,
    crossover_lines,
    default_threshold,
    first_attempt,
    request_of,
    sim_config,
)
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.pacing import pace
from lsp_server.testing.profiles import CALIBRATED, PERFECT, PROFILES, BackendProfile
from lsp_server.testing.responders import corpus_responder, model_answer
from tests.backends.test_fake_backend import post, text_of
from tests.conftest import write_config

TASKS_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "tasks"
TASKS = load_tasks(TASKS_DIR)
SMALL, LARGE = "js-fetch-add-timeout-option", "go-sync-add-context-param"  # 34 and 204 lines
GPU = PROFILES["gpu-vllm-ngram"]


@pytest.mark.parametrize("profile", CALIBRATED, ids=lambda p: p.name)
def test_a_calibrated_profile_reproduces_its_figures_on_the_corpus(profile: BackendProfile) -> None:
    measured = calibrate(profile, tasks_dir=TASKS_DIR)
    assert profile.speedup is not None and profile.speedup.source
    assert measured.speedup == pytest.approx(profile.speedup.value, rel=0.2), measured
    if profile.acceptance is not None:
        assert measured.acceptance == pytest.approx(profile.acceptance.value, rel=0.2), measured
    # The perfect model on the same corpus and kind is far faster: the calibration is what brings it down.
    upper = calibrate(PERFECT, measured.kind, tasks_dir=TASKS_DIR)
    assert upper.speedup > 1.5 * measured.speedup


def test_the_fake_paces_a_request_as_the_simulation_does() -> None:
    """Over HTTP, the passes (one SSE chunk each) and the drafts the fake counts are the simulation's."""
    task = next(t for t in TASKS if t.name == SMALL)
    for profile, kind in ((GPU, "vllm"), (PROFILES["openai-predicted"], "openai")):
        engine = Engine(SizeRuleOnly())
        plan = engine.plan(task.request("sim", None, "region"), sim_config(kind))
        body = request_of(first_attempt(engine, plan)) | {"stream": True, "stream_options": {"include_usage": True}}
        expected = pace(body, model_answer(body, corpus_responder(TASKS_DIR)), kind, profile)
        with FakeBackend(kind, step_s=0.0002, responder=corpus_responder(TASKS_DIR), profile=profile) as fake:
            status, events = post(fake, body)
        assert status == 200
        chunks = [e for e in events if e.get("choices") and e["choices"][0]["delta"].get("content")]
        assert len(chunks) == len(expected.steps) and text_of(events) == task.expected_region()
        usage = events[-1]
        if kind == "openai":
            details = usage["usage"]["completion_tokens_details"]
            counted = (details["accepted_prediction_tokens"], details["rejected_prediction_tokens"])
        else:
            spec = usage["metrics"]["speculative_decoding"]
            counted = (spec["num_accepted_draft_tokens"], spec["num_draft_tokens"] - spec["num_accepted_draft_tokens"])
        assert counted == (expected.sim.accepted, expected.sim.rejected)
        assert 0 < expected.sim.accepted < expected.sim.drafted  # drafts were turned down: not the perfect model


def _crossover(profile: BackendProfile, kind: str, against: Any) -> int | None:
    return crossover_lines(Simulator(profile, kind, TASKS).runs((against, "hunks")), TASKS, against)


def test_auto_defaults_are_the_calibrated_profiles_crossovers() -> None:
    """Each way the prediction reaches the backend, from the profiles of that way (docs/edit-formats.md)."""
    ways = {
        "prompt": [(PROFILES["local-vllm-cpu"], "vllm", "prediction"), (GPU, "vllm", "prediction")],
        "field": [(PROFILES["openai-predicted"], "openai", "prediction")],
        "off": [(PROFILES["openai-predicted"], "openai", "baseline")],
    }
    for via, runs in ways.items():
        for profile, kind, against in runs:
            crossover = _crossover(profile, kind, against)
            assert crossover is not None and default_threshold(crossover) == DEFAULT_HUNKS_MIN_LINES[via], (
                via,
                profile,
            )
    # The perfect model would have kept region + prediction far longer with a prediction field.
    perfect = _crossover(PERFECT, "openai", "prediction")
    assert perfect is not None and default_threshold(perfect) > 5 * DEFAULT_HUNKS_MIN_LINES["field"]


def test_a_calibrated_profile_is_calibrated_as_a_whole() -> None:
    with pytest.raises(ValueError, match="calibrated as a whole: draft_len"):
        FakeBackend("vllm", profile=GPU, draft_len=3)
    with pytest.raises(ValueError, match="for a vllm or llamacpp backend, not openai"):
        FakeBackend("openai", profile=GPU)
    assert FakeBackend("vllm", draft_len=3).draft_len == 3  # the perfect model's knobs stay free


def _bench(tmp_path: Path, fake: FakeBackend, plain: FakeBackend, *args: str) -> tuple[int, dict[str, Any], str]:
    config = write_config(tmp_path, sim=fake, plain=plain)
    md, js = tmp_path / "report.md", tmp_path / "report.json"
    argv = ["bench", "--config", str(config), "--tasks", str(TASKS_DIR), "--baseline-backend", "plain"]
    code = main([*argv, "--markdown", str(md), "--json", str(js), *args])
    return code, json.loads(js.read_text(encoding="utf-8")), md.read_text(encoding="utf-8")


def test_the_bench_names_its_profile_and_fits_a_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    responder = corpus_responder(TASKS_DIR)
    with (
        FakeBackend("vllm", step_s=0.001, responder=responder, profile=GPU) as fake,
        FakeBackend("vllm", step_s=0.001, responder=responder, profile=GPU, speculation=False) as plain,
    ):
        args = ("--task", SMALL, "--task", LARGE, "--repeat", "1", "--edit-format", "region,hunks,auto")
        code, report, markdown = _bench(tmp_path, fake, plain, *args)
    out = capsys.readouterr()
    assert code == 0, out.err
    lines = out.out.splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    header = lines[: lines.index("")]
    assert any(line.startswith("profile: gpu-vllm-ngram, calibrated to measured figures") for line in header)
    assert report["meta"]["backend"]["model_info"]["profile"] == "gpu-vllm-ngram"
    # The ideal of each task, as the JSON has it, is on its row; what the terminal left out is said, and
    # the Markdown has every column.
    formats_table = lines[next(i for i, line in enumerate(lines) if line.startswith("Edit formats:")) :]
    for task in report["formats"]["tasks"]:
        ideal = task["ideal"]["ideal_ms"] / 1000
        row = next(line for line in formats_table if line.startswith(task["name"]))
        assert (f"{ideal:.3f}" if ideal < 1 else f"{ideal:.2f}") in row.split()
    assert any(line.startswith("(left out to fit 120 columns:") for line in lines)
    assert "| task | kind | region lines | changed lines | ideal, s |" in markdown
    assert "matches expected (region + prediction · region, no prediction · hunks · auto)" in markdown
    assert "- profile: gpu-vllm-ngram, calibrated" in markdown


def test_servers_of_different_profiles_are_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    responder = corpus_responder(TASKS_DIR)
    with (
        FakeBackend("vllm", step_s=0.0005, responder=responder, profile=GPU) as fake,
        FakeBackend("vllm", step_s=0.0005, responder=responder, speculation=False) as plain,
    ):
        code, _, markdown = _bench(tmp_path, fake, plain, "--task", SMALL, "--repeat", "1")
    out = capsys.readouterr().out
    assert code == 0
    assert "profile: WARNING, the servers run different profiles (gpu-vllm-ngram with prediction, perfect without)" in (
        out.replace("\n  ", " ")
    )
    assert "their figures do not compare" in markdown
