"""What a backend reports about an answer (usage, per-request metrics, timings, /metrics counters), when
the backend is broken or hostile: a figure of the wrong type or one that cannot be true is not shown.
An inflated acceptance is a bug: every accepted draft token is one of the answer's tokens, and a draft
accepts no more tokens than it had. Real HTTP on 127.0.0.1 (test_acceptance's replaying server).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from lsp_server.backend.chat import stream_completion
from lsp_server.backend.errors import BackendError
from lsp_server.backend.stream import StreamRequest
from lsp_server.pipeline.engine import Engine

from .test_acceptance import SETTINGS, Replay, config_for, pages, recorded, refactor_stats, without_per_request_metrics


@pytest.fixture
def server() -> Iterator[Replay]:
    replay = Replay()
    replay.thread.start()
    yield replay
    replay.server.shutdown()
    replay.server.server_close()


def sse(final: dict[str, Any]) -> bytes:
    """A two-chunk stream: 'ok', then `final` (the chunk that carries the figures)."""
    content = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "local"}
    chunks = [
        content | {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
        content | {"choices": []} | final,
    ]
    return b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks) + b"data: [DONE]\n\n"


USAGE_31 = {"prompt_tokens": 10, "completion_tokens": 31, "total_tokens": 41}


def vllm(accepted: Any, drafted: Any) -> dict[str, Any]:
    spec = {"num_accepted_draft_tokens": accepted, "num_draft_tokens": drafted}
    return {"usage": USAGE_31, "metrics": {"speculative_decoding": spec}}


def openai(accepted: Any, rejected: Any) -> dict[str, Any]:
    details = {"accepted_prediction_tokens": accepted, "rejected_prediction_tokens": rejected}
    return {"usage": USAGE_31 | {"completion_tokens_details": details}}


@pytest.mark.parametrize(
    ("kind", "final"),
    [
        # vLLM: more accepted than drafted (was shown as 40 accepted, 0 rejected: 100 %)
        ("vllm", vllm(40, 5)),
        # vLLM: more accepted than the answer's 31 tokens
        ("vllm", vllm(90, 100)),
        # OpenAI: more accepted prediction tokens than completion tokens
        ("openai", openai(500, 0)),
        # negative counts
        ("openai", openai(-5, 9)),
        ("vllm", vllm(3, -1)),
        # llama.cpp: more accepted than drafted, and than predicted
        ("llamacpp", {"timings": {"predicted_n": 26, "draft_n": 10, "draft_n_accepted": 30}}),
        # booleans and floats are no counts
        ("vllm", vllm(True, 2.5)),
    ],
)
async def test_an_impossible_acceptance_is_not_reported(server: Replay, engine: Engine, kind: str, final: Any) -> None:
    server.streams.append(sse(final))
    backend = config_for(server, kind).backend("r")
    request = StreamRequest([{"role": "user", "content": "hi"}], None, 64, 0.0)
    completion = await stream_completion(engine.clients, backend, SETTINGS, request)
    assert completion.text == "ok"
    assert completion.acceptance is None


@pytest.mark.parametrize(
    "final",
    [
        {"usage": {"prompt_tokens": "ten", "completion_tokens": "31", "total_tokens": 1e308}},
        {"usage": {"prompt_tokens": -4, "completion_tokens": -31, "total_tokens": 0}},
        {"usage": {"prompt_tokens": 1, "completion_tokens": 31}, "timings": ["not", "a", "map"]},
    ],
)
async def test_counts_of_the_wrong_shape_are_not_read_and_the_answer_stands(
    server: Replay, engine: Engine, final: Any
) -> None:
    server.streams.append(sse(final))
    backend = config_for(server, "vllm").backend("r")
    request = StreamRequest([{"role": "user", "content": "hi"}], None, 64, 0.0)
    completion = await stream_completion(engine.clients, backend, SETTINGS, request)
    assert completion.text == "ok"
    assert completion.completion_tokens in (None, 31)
    assert completion.prompt_tokens in (None, 1)


TWO_ENGINES_AT_1E308 = "".join(
    f'vllm:spec_decode_num_{name}_tokens_total{{engine="{engine}",model_name="local"}} 1e308\n'
    for name in ("accepted", "draft")
    for engine in (1, 2)
)


def _moved(page: str, accepted: str, drafted: str | None = None) -> str:
    """`page` with vLLM's accepted and drafted counters set to these sample values."""
    lines = []
    for line in page.splitlines():
        if line.startswith("vllm:spec_decode_num_accepted_tokens_total{"):
            line = line.rpartition(" ")[0] + " " + accepted
        elif line.startswith("vllm:spec_decode_num_draft_tokens_total{"):
            line = line.rpartition(" ")[0] + " " + (drafted or accepted)
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    "pair",
    [
        # a counter at 1e308 twice over (two label sets): infinite (this crashed the refactor: OverflowError)
        lambda before, after: (before, after + TWO_ENGINES_AT_1E308),
        # +Inf and NaN on the counters
        lambda before, after: (_moved(before, "+Inf"), _moved(after, "+Inf")),
        # negative counters before: the difference would be 1,000 more than the truth
        lambda before, after: (_moved(before, "-1000"), after),
        # another client's requests, unseen: 1,000 more accepted (and drafted) than this answer's 48 tokens
        lambda before, after: (before, _moved(after, "1016", "1072")),
    ],
    ids=["infinite", "inf", "negative", "more-than-written"],
)
async def test_metrics_counters_that_cannot_be_true_give_no_acceptance(
    server: Replay, engine: Engine, pair: Any
) -> None:
    before, after = pair(*pages())
    server.pages = [before, after]
    server.streams.append(without_per_request_metrics(recorded("vllm-ngram-per-request-metrics.sse")))
    stats = await refactor_stats(engine, server)
    assert stats.completion_tokens == 48
    assert stats.accepted_prediction_tokens is None and stats.acceptance_rate is None


@pytest.mark.parametrize("answered", [False, True], ids=["before-the-answer", "after-the-answer"])
async def test_a_chunk_nested_too_deep_is_a_malformed_stream(server: Replay, engine: Engine, answered: bool) -> None:
    # 40 KB: under the stream's line cap, past the JSON parser's depth. Before: RecursionError escaped.
    deep = b'data: {"choices": [], "x": ' + b"[" * 20_000 + b"]" * 20_000 + b"}\n\n"
    server.streams.append((sse({"usage": USAGE_31}).split(b"data: [DONE]")[0] if answered else b"") + deep)
    backend = config_for(server, "vllm").backend("r")
    request = StreamRequest([{"role": "user", "content": "hi"}], None, 64, 0.0)
    with pytest.raises(BackendError, match=r"sent a malformed stream \(a chunk nested too deep\); nothing was applied"):
        await stream_completion(engine.clients, backend, SETTINGS, request)


async def test_a_token_count_past_what_the_request_allows_is_not_read(server: Replay, engine: Engine) -> None:
    # A server that counts a billion tokens for an answer of at most 64 (on each chunk, as vLLM's
    # continuous_usage_stats does, and at the end): before, the live rate and the final speed used it.
    billion = {"prompt_tokens": 3, "completion_tokens": 10**9, "total_tokens": 10**9 + 3}
    content = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "local"}
    chunks = [
        content | {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}], "usage": billion},
        content | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": billion},
        content | {"choices": [], "usage": billion},
    ]
    server.streams.append(b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks) + b"data: [DONE]\n\n")
    backend = config_for(server, "vllm").backend("r")
    live: list[int | None] = []
    request = StreamRequest([{"role": "user", "content": "hi"}], None, 64, 0.0, live_usage=True)
    completion = await stream_completion(
        engine.clients, backend, SETTINGS, request, on_delta=lambda _text, tokens: live.append(tokens)
    )
    assert completion.text == "ok"
    assert live == [None]
    assert completion.completion_tokens is None
