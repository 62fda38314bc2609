"""Stats: the derived rates, the line people read, and the history file."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from lsp_server.stats import history as history_module
from lsp_server.stats.history import History, HistoryRecord, history_path, summarize_history
from lsp_server.stats.measured import RefactorStats
from lsp_server.stats.measured import measured as derived
from lsp_server.stats.words import summary
from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import editor_settings
from tests.lsp_harness import ServerSetup, server_setup, start_session


def measured(**kwargs) -> RefactorStats:
    base = {
        "backend": "local",
        "model": "qwen-coder",
        "prediction": True,
        "prediction_via": "prompt",
        "scope": "block",
        "latency_ms": 2100.0,
        "ttft_ms": 100.0,
        "completion_tokens": 412,
        "accepted_prediction_tokens": 147,
        "rejected_prediction_tokens": 20,
    }
    base.update(kwargs)
    return derived(RefactorStats(**base))


def test_acceptance_rate_is_accepted_over_drafted() -> None:
    assert measured().acceptance_rate == pytest.approx(147 / 167)
    assert measured(accepted_prediction_tokens=300, rejected_prediction_tokens=100).acceptance_rate == 0.75


def test_no_acceptance_figures_means_no_rate() -> None:
    assert measured(accepted_prediction_tokens=None, rejected_prediction_tokens=None).acceptance_rate is None
    assert measured(accepted_prediction_tokens=0, rejected_prediction_tokens=0).acceptance_rate is None


def test_tokens_per_second_leaves_out_rejected_tokens_and_time_to_first_token() -> None:
    # OpenAI: rejected prediction tokens are billed in completion_tokens, but they are not output.
    # (412 - 20) tokens over (2100 - 100) ms
    assert measured(acceptance_source="usage").tokens_per_s == pytest.approx(196.0)
    assert measured(acceptance_source="usage", rejected_prediction_tokens=212).tokens_per_s == pytest.approx(100.0)


def test_tokens_per_second_for_local_speculation_counts_every_output_token() -> None:
    # vLLM and llama.cpp count only output tokens; their rejected drafts were never in the count.
    assert measured(acceptance_source="vllm-spec-decode-metrics").tokens_per_s == pytest.approx(412 / 2.0)
    assert measured(acceptance_source="llamacpp-timings").tokens_per_s == pytest.approx(412 / 2.0)


def test_tokens_per_second_without_a_first_token_time_uses_the_whole_latency() -> None:
    assert measured(ttft_ms=None, rejected_prediction_tokens=None).tokens_per_s == pytest.approx(412 / 2.1)
    # One token: there is no generation phase to speak of.
    assert measured(completion_tokens=1, rejected_prediction_tokens=None).tokens_per_s == pytest.approx(1 / 2.1)


def test_no_token_count_means_no_rate() -> None:
    assert measured(completion_tokens=None).tokens_per_s is None


def test_summary_line_with_prediction_accepted() -> None:
    assert summary(measured()) == (
        "refactor 2.1 s · 412 tok · 196 tok/s · server-side speculation: 88% accepted (147 accepted, 20 rejected)"
    )


def test_summary_line_variants() -> None:
    without = measured(prediction=False, accepted_prediction_tokens=None, rejected_prediction_tokens=None)
    assert summary(without) == "refactor 2.1 s · 412 tok · 206 tok/s · no prediction"
    unreported = measured(accepted_prediction_tokens=None, rejected_prediction_tokens=None)
    assert summary(unreported).endswith("server-side speculation (acceptance not reported by the server)")
    field = measured(prediction_via="field", accepted_prediction_tokens=None, rejected_prediction_tokens=None)
    assert summary(field).endswith("prediction field sent (acceptance not reported by the backend)")
    assert summary(measured(prediction_via="field")).endswith("prediction 88% accepted (147 accepted, 20 rejected)")
    plain = measured(prediction=False, server_speculation=False, accepted_prediction_tokens=None)
    assert summary(plain).endswith("no prediction (the server does not speculate)")
    forced = measured(speculation_always_on=True, server_speculation=True)
    assert summary(forced).endswith("server-side speculation, cannot be turned off per request: 88% accepted "
                                     "(147 accepted, 20 rejected)")  # fmt: skip
    assert summary(measured(completion_tokens=None)).startswith("refactor 2.1 s · server-side speculation: 88%")
    fallback = measured(backend="local", served_by="cloud")
    assert summary(fallback).endswith(" · served by cloud")
    assert " · served by" not in summary(measured(served_by="local"))


def test_to_dict_round_trips_and_ignores_unknown_fields() -> None:
    record = measured(notes=("retried after HTTP 429 (waited 1.0 s)",), uri="file:///x.py")
    data = json.loads(json.dumps(record.to_dict()))
    assert RefactorStats(**{**data, "notes": tuple(data["notes"])}) == record
    # The history keeps its own record, read back from what an older or newer writer left too.
    assert HistoryRecord.from_json({**data, "from_a_newer_version": 1}) == HistoryRecord.of(record)


# -- history -----------------------------------------------------------------------------------------


def test_history_lives_under_xdg_state_home_and_only_the_user_can_read_it(isolated_env: dict[str, Path]) -> None:
    path = history_path()
    assert path == isolated_env["XDG_STATE_HOME"] / "refactor-lsp" / "history.jsonl"
    assert not path.exists()

    History().append(measured())
    History().append(measured(backend="cloud", prediction=False))

    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) & 0o077 == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["backend"] for line in lines] == ["local", "cloud"]
    assert [r.backend for r in History().read()] == ["local", "cloud"]
    assert History().read()[0] == HistoryRecord.of(measured())


def test_history_skips_damaged_lines(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    History(path).append(measured())
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"backend": "half a line\n')
        fh.write("[1, 2]\n")
    History(path).append(measured(backend="cloud"))
    assert [r.backend for r in History(path).read()] == ["local", "cloud"]


def test_history_without_a_file_is_empty(tmp_path: Path) -> None:
    assert History(tmp_path / "missing.jsonl").read() == []


def test_history_is_trimmed_to_the_latest_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_module, "HISTORY_LIMIT", 5)  # trimmed beyond 5 × 2000 bytes, to 5 lines
    path = tmp_path / "history.jsonl"
    for i in range(40):
        History(path).append(measured(latency_ms=float(i)))
    latencies = [r.latency_ms for r in History(path).read()]
    assert len(latencies) < 40
    assert latencies == [float(i) for i in range(40 - len(latencies), 40)]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# -- what history says ---------------------------------------------------------------------------------


def test_summarize_history_medians_and_speedup() -> None:
    records = [
        measured(latency_ms=1000, accepted_prediction_tokens=90, rejected_prediction_tokens=10),
        measured(latency_ms=3000, accepted_prediction_tokens=50, rejected_prediction_tokens=50),
        measured(latency_ms=2000, accepted_prediction_tokens=80, rejected_prediction_tokens=20),
        measured(latency_ms=4000, prediction=False, accepted_prediction_tokens=None, rejected_prediction_tokens=None),
        measured(latency_ms=6000, prediction=False, accepted_prediction_tokens=None, rejected_prediction_tokens=None),
        measured(backend="cloud", latency_ms=500),
    ]
    cloud, local = summarize_history(map(HistoryRecord.of, records))
    assert (cloud.backend, local.backend) == ("cloud", "local")

    with_prediction, without = local.modes
    assert (with_prediction.prediction, with_prediction.count, with_prediction.latency_ms) == (True, 3, 2000.0)
    assert with_prediction.acceptance_rate == pytest.approx(0.8)
    assert (without.prediction, without.count, without.latency_ms) == (False, 2, 5000.0)
    assert without.acceptance_rate is None
    assert local.speedup == pytest.approx(2.5)
    line = local.line()
    assert line.startswith("local: with prediction: 3 refactors, median 2.00 s, ")
    assert "80% accepted; without: 2 refactors, median 5.00 s" in line
    assert line.endswith(" · speedup 2.50×")

    # Only one mode: nothing to compare.
    assert cloud.speedup is None
    assert "speedup" not in cloud.line()


def test_summarize_empty_history() -> None:
    assert summarize_history([]) == []


# -- test isolation: every test module's servers keep their own history ---------------------------------


async def _stats_after(setup: ServerSetup, backend: FakeBackend, refactor_first: bool) -> tuple[dict, list[str]]:
    """Start a server as a test module does, optionally refactor once, then ask for `showStats`."""
    workspace = setup.state_dir / "workspace"
    editor = await start_session(setup, workspace, editor_settings(backend))
    try:
        if refactor_first:
            uri = editor.open(workspace / "m.py", "def f(a):\n    return a\n")
            args = {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename a to b"}
            assert (await editor.execute("refactorLsp.refactor", args))["status"] == "applied"
        summary = await editor.execute("refactorLsp.showStats")
        return summary, editor.messages()
    finally:
        await editor.client.shutdown_session()


async def test_a_fresh_test_module_starts_with_an_empty_history(fake_backend: FakeBackend) -> None:
    first_module, second_module = server_setup(), server_setup()
    summary, _ = await _stats_after(first_module, fake_backend, refactor_first=True)
    assert summary["count"] == 1
    summary, messages = await _stats_after(second_module, fake_backend, refactor_first=False)
    assert summary == {"count": 0, "backends": [], "kept": []}
    assert messages[-1] == "refactor-lsp: no refactors recorded yet"


# -- cost ---------------------------------------------------------------------------------------------


def test_cost_from_billed_tokens_and_the_share_the_prediction_added() -> None:
    # OpenAI: 412 completion tokens billed, 20 of them rejected prediction tokens; 1,000 prompt tokens.
    stats = derived(measured(prediction_via="field", acceptance_source="usage", prompt_tokens=1000), 2.0, 8.0)
    assert stats.cost == pytest.approx((1000 * 2.0 + 412 * 8.0) / 1e6)
    assert stats.prediction_extra_cost == pytest.approx(20 * 8.0 / 1e6)
    share = 20 * 8.0 / (1000 * 2.0 + 392 * 8.0)
    assert summary(stats).endswith(f" · ${stats.cost:.4f}, +{share * 100:.0f} % for the prediction")


def test_no_prices_no_cost_and_local_drafts_cost_nothing_extra() -> None:
    assert derived(measured(), 0.0, 0.0).cost is None
    assert "$" not in summary(measured())
    local = derived(measured(acceptance_source="vllm-spec-decode-metrics", prompt_tokens=100), 1.0, 1.0)
    assert local.cost == pytest.approx((100 + 412) / 1e6) and local.prediction_extra_cost is None
    assert "for the prediction" not in summary(local)


def test_history_summary_shows_the_median_cost() -> None:
    records = [derived(measured(prediction_via="field", prompt_tokens=1000), 2.0, 8.0) for _ in range(3)]
    (line,) = summarize_history(map(HistoryRecord.of, records))
    assert line.modes[0].cost == pytest.approx(records[0].cost)
    assert f"${records[0].cost:.4f}" in line.line()


# -- a damaged history --------------------------------------------------------------------------------


async def test_a_damaged_history_stops_neither_a_refactor_nor_show_stats(fake_backend: FakeBackend) -> None:
    """Damaged records in the size band the refactor hits, where `auto` takes its medians: the refactor
    is applied, chosen by the good records alone, and `showStats` counts only them."""
    setup = server_setup()
    history = Path(setup.env["XDG_STATE_HOME"]) / "refactor-lsp" / "history.jsonl"
    history.parent.mkdir(parents=True, mode=0o700)

    def line(**fields: object) -> bytes:
        base = {"backend": "fake", "served_by": "fake", "region_lines": 2, "applied": True, "latency_ms": 900.0}
        return json.dumps({"v": 1, **base, **fields}).encode() + b"\n"

    good = [line(edit_format="region"), line(edit_format="hunks", latency_ms=5000.0)] * 3
    damaged = [
        line(edit_format="region", latency_ms="slow"),
        line(edit_format="hunks", region_lines="3"),
        line(edit_format="region", model="MODEL").replace(b"MODEL", b"\xff"),
    ]
    history.write_bytes(b"".join(good + damaged))

    workspace = setup.state_dir / "workspace"
    editor = await start_session(setup, workspace, editor_settings(fake_backend))
    try:
        uri = editor.open(workspace / "m.py", "def f(a):\n    return a\n")
        args = {"uri": uri, "range": editor.cursor_at(uri, "return"), "instruction": "rename a to b"}
        assert (await editor.execute("refactorLsp.refactor", args))["status"] == "applied"
        assert editor.buffers[uri] == "def f(b):\n    return b\n"
        assert editor.stats[-1]["format_reason"].startswith("auto, by fake's history for 1-50 lines: hunks 5.0 s")
        summary = await editor.execute("refactorLsp.showStats")
        assert summary["count"] == len(good) + 1
    finally:
        await editor.client.shutdown_session()
