"""The cost guard on the prediction field (`prediction = "auto"`): what it decides from a backend's
recent refactors, and why in words; which refactors it counts; where it is asked at all (the engine's
policy); and that a history line written before the guard still reads."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from lsp_server.config.schema import BackendConfig
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.prediction_guard import MIN_SAMPLES, RETRY_EVERY, WINDOW, PredictionGuard
from lsp_server.stats.history import RECORD_VERSION, History, HistoryRecord, history_path
from lsp_server.stats.measured import RefactorStats
from lsp_server.stats.words import summary

REGION = HistoryRecord(served_by="cloud", model="gpt", edit_format="region")


def with_field(
    accepted: int | None, rejected: int | None, tokens_per_s: float | None = 100.0, **keys: Any
) -> HistoryRecord:
    """A region refactor that sent the prediction field and got this back."""
    sent = {"prediction": True, "prediction_via": "field", "tokens_per_s": tokens_per_s}
    figures = {"accepted_prediction_tokens": accepted, "rejected_prediction_tokens": rejected}
    return replace(REGION, **(sent | figures | keys))


def without(tokens_per_s: float | None = 100.0) -> HistoryRecord:
    """A region refactor without the prediction field."""
    return replace(REGION, prediction_via="off", tokens_per_s=tokens_per_s)


def test_a_backend_it_knows_nothing_of_gets_the_prediction_without_a_reason() -> None:
    verdict = PredictionGuard().decide("cloud", "gpt")
    assert (verdict.send, verdict.reason) == (True, "")


def test_too_few_refactors_are_not_judged() -> None:
    guard = PredictionGuard().learn([with_field(0, 100)] * (MIN_SAMPLES - 1))
    assert guard.decide("cloud", "gpt").send


def test_low_acceptance_stops_the_prediction_and_says_why() -> None:
    guard = PredictionGuard().learn([with_field(10, 90)] * MIN_SAMPLES)
    verdict = guard.decide("cloud", "gpt")
    assert (verdict.send, verdict.reason) == (False, "prediction off: 10% accepted over the last 3 refactors with it")


def test_acceptance_is_summed_in_tokens_so_one_heavy_rewrite_does_not_stop_it() -> None:
    guard = PredictionGuard().learn([with_field(90, 10)] * (WINDOW - 1) + [with_field(0, 300)])
    verdict = guard.decide("cloud", "gpt")
    share = 90 * 7 / (100 * 7 + 300)
    assert verdict.send and verdict.reason == f"prediction on: {share:.0%} accepted over the last 8 refactors with it"


def test_only_the_last_refactors_count() -> None:
    guard = PredictionGuard().learn([with_field(95, 5)] * 20 + [with_field(5, 95)] * WINDOW)
    assert guard.decide("cloud", "gpt").reason == "prediction off: 5% accepted over the last 8 refactors with it"


def test_while_off_every_tenth_refactor_tries_it_again() -> None:
    guard = PredictionGuard().learn([with_field(10, 90)] * MIN_SAMPLES)
    decisions = []
    for _ in range(2 * RETRY_EVERY):
        verdict = guard.decide("cloud", "gpt")
        decisions.append(verdict.send)
        # The try fails as the others did: off again, and the count starts over.
        guard.record(with_field(10, 90) if verdict.send else without())
    assert decisions == ([False] * (RETRY_EVERY - 1) + [True]) * 2
    guard = PredictionGuard().learn([with_field(10, 90)] * MIN_SAMPLES + [without()] * (RETRY_EVERY - 1))
    assert guard.decide("cloud", "gpt").reason == f"prediction on: trying it again (1 in {RETRY_EVERY})"


def test_a_try_that_pays_starts_the_judgement_afresh() -> None:
    guard = PredictionGuard().learn([with_field(10, 90)] * WINDOW + [without(None)] * (RETRY_EVERY - 1))
    guard.record(with_field(90, 10))  # the backend got better
    assert guard.decide("cloud", "gpt") == guard.decide("new", "gpt")  # sent, nothing to judge by yet
    guard.learn([with_field(85, 15)] * (MIN_SAMPLES - 1))
    assert guard.decide("cloud", "gpt").reason == "prediction on: 87% accepted over the last 3 refactors with it"


def test_slower_than_without_it_stops_the_prediction_even_when_accepted() -> None:
    runs = [without(200.0)] * MIN_SAMPLES + [with_field(90, 10, tokens_per_s=150.0)] * MIN_SAMPLES
    verdict = PredictionGuard().learn(runs).decide("cloud", "gpt")
    assert not verdict.send
    assert verdict.reason == (
        "prediction off: no faster than without it (0.75× the tokens/s, medians of the last 3 refactors with it "
        "and 3 without)"
    )
    faster = [without(100.0)] * MIN_SAMPLES + [with_field(90, 10, tokens_per_s=160.0)] * MIN_SAMPLES
    assert PredictionGuard().learn(faster).decide("cloud", "gpt").reason == (
        "prediction on: 90% accepted over the last 3 refactors with it, 1.6× the tokens/s without it"
    )


def test_a_backend_that_reports_no_acceptance_is_judged_by_speed_alone() -> None:
    unreported = [with_field(None, None, tokens_per_s=80.0)] * MIN_SAMPLES
    guard = PredictionGuard().learn(unreported)
    assert guard.decide("cloud", "gpt").send  # nothing to judge by: as before the guard
    assert not guard.learn([without(100.0)] * MIN_SAMPLES).decide("cloud", "gpt").send


def test_only_region_refactors_on_the_field_route_of_the_same_backend_and_model_count() -> None:
    ignored = [
        with_field(0, 100, edit_format="hunks"),  # a hunks answer: no prediction field, another format's speed
        with_field(0, 100, prediction_via="prompt"),  # a server that drafts from the prompt
        with_field(0, 100, served_by=""),  # a record from before the backend was named
    ]
    guard = PredictionGuard().learn(ignored * MIN_SAMPLES + [with_field(0, 100, model="other")] * MIN_SAMPLES)
    assert guard.decide("cloud", "gpt").send
    assert not guard.decide("cloud", "other").send


# -- where the guard is asked: the engine's policy ---------------------------------------------------


def refusing_guard() -> PredictionGuard:
    return PredictionGuard().learn([with_field(0, 100)] * MIN_SAMPLES)


@pytest.mark.parametrize(
    ("backend", "override", "expected"),
    [
        (BackendConfig(name="cloud", type="openai", model="gpt"), None, "off"),  # auto: the guard decides
        (BackendConfig(name="cloud", type="openai-compatible", model="gpt"), None, "off"),
        (BackendConfig(name="cloud", type="openai", model="gpt", prediction="always"), None, "field"),
        (BackendConfig(name="cloud", type="openai", model="gpt"), True, "field"),  # asked for: sent
        (BackendConfig(name="cloud", type="openai", model="gpt", prediction="never"), None, "off"),
        # A server that drafts from the prompt cannot be switched per request: auto stays as it was.
        (BackendConfig(name="cloud", type="vllm", model="gpt"), None, "prompt"),
        (BackendConfig(name="cloud", type="llamacpp", model="gpt"), None, "prompt"),
    ],
)
def test_the_guard_decides_only_the_field_under_auto(
    backend: BackendConfig, override: bool | None, expected: str
) -> None:
    mode, reason = Engine(prediction_guard=refusing_guard()).prediction_choice(backend, override)
    assert mode == expected
    assert reason.startswith("prediction off: 0% accepted") == (expected == "off" and backend.prediction == "auto")


def test_an_engine_without_a_guard_sends_the_field_as_before() -> None:
    backend = BackendConfig(name="cloud", type="openai", model="gpt")
    assert Engine().prediction_choice(backend) == ("field", "")


def test_engine_from_history_learns_the_guard_too() -> None:
    engine = Engine.from_history([with_field(0, 100)] * MIN_SAMPLES, try_formats=False)
    assert engine.prediction_choice(BackendConfig(name="cloud", type="openai", model="gpt"))[0] == "off"


# -- in words, and in the history --------------------------------------------------------------------


def test_the_summary_says_why_in_place_of_no_prediction_or_after_the_acceptance() -> None:
    off = RefactorStats(latency_ms=900.0, prediction_reason="prediction off: 10% accepted over the last 3 refactors")
    assert " · prediction off: 10% accepted over the last 3 refactors" in summary(off)
    assert "no prediction" not in summary(off)
    on = RefactorStats(
        latency_ms=900.0,
        prediction=True,
        prediction_via="field",
        accepted_prediction_tokens=90,
        rejected_prediction_tokens=10,
        acceptance_rate=0.9,
        prediction_reason="prediction on: trying it again (1 in 10)",
    )
    assert (
        " · prediction 90% accepted (90 accepted, 10 rejected) · prediction on: trying it again (1 in 10)"
        in summary(on)
    )
    assert summary(replace(on, prediction_reason="")).endswith(" · prediction 90% accepted (90 accepted, 10 rejected)")


def test_a_history_line_from_before_the_guard_still_reads() -> None:
    history_path().parent.mkdir(mode=0o700)
    old = {
        "v": RECORD_VERSION,
        "served_by": "cloud",
        "model": "gpt",
        "edit_format": "region",
        "prediction_via": "field",
    }
    history_path().write_bytes(json.dumps(old).encode() + b"\n")
    (record,) = History().read()
    assert record.prediction_reason == "" and record.prediction_via == "field"
    History().append(RefactorStats(served_by="cloud", prediction_reason="prediction on: trying it again (1 in 10)"))
    assert History().read()[-1].prediction_reason == "prediction on: trying it again (1 in 10)"


def test_a_batchs_refactors_count_for_acceptance_but_not_for_speed() -> None:
    """Run four at once, a refactor's tokens/s is a share of the backend's: compared with single runs
    it would make the prediction look slower than it is."""
    loaded = [with_field(90, 10, tokens_per_s=40.0, concurrency=4)] * MIN_SAMPLES
    verdict = PredictionGuard().learn([without(100.0)] * MIN_SAMPLES + loaded).decide("cloud", "gpt")
    assert verdict.send
    assert verdict.reason == "prediction on: 90% accepted over the last 3 refactors with it"
    refused = [with_field(5, 95, concurrency=4)] * MIN_SAMPLES
    assert not PredictionGuard().learn(refused).decide("cloud", "gpt").send
