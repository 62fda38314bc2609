"""Acceptance read back from every backend kind, into the same stats fields.

Recorded responses (tests/backends/data/, provenance in its README) are replayed over loopback HTTP through
the real client code: OpenAI's `usage.completion_tokens_details`, vLLM's per-request
`metrics.speculative_decoding`, llama.cpp's `timings`, and, for a vLLM server that reports nothing
per request, the difference of its `/metrics` counters around the request.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lsp_server.backend import metrics
from lsp_server.backend.acceptance import read_acceptance
from lsp_server.backend.chat import stream_completion
from lsp_server.backend.proposer_probe import ProposerFound
from lsp_server.backend.stream import StreamRequest
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import RefactorSettings
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorError, RefactorRequest
from lsp_server.stats.measured import RefactorStats
from lsp_server.stats.words import summary

DATA = Path(__file__).resolve().parent / "data"
SETTINGS = RefactorSettings(timeout_s=20, connect_timeout_s=5, first_token_timeout_s=10, idle_timeout_s=10)
RECORDED_TEXT = (
    "def add_all(xs):\n    return sum(x for x in xs if isinstance(x, (int, float)))\n```\n\nThis function uses a "
    "generator expression to create a new list of sums, which is then returned"
)


class Replay:
    """A loopback server that answers with recorded bodies: the next stream for each chat request,
    the next metrics page for each GET /metrics (the last one again once they run out)."""

    def __init__(self) -> None:
        self.streams: list[bytes] = []
        self.pages: list[str] = []
        self.metrics_reads = 0
        self.chat_requests: list[dict[str, Any]] = []
        replay = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path == "/metrics":
                    replay.metrics_reads += 1
                    if not replay.pages:
                        self._send(404, b"not found", "text/plain")
                        return
                    page = replay.pages.pop(0) if len(replay.pages) > 1 else replay.pages[0]
                    self._send(200, page.encode(), "text/plain; version=0.0.4")
                elif self.path.endswith("/models"):
                    self._send(200, json.dumps({"data": [{"id": "local"}]}).encode(), "application/json")
                else:
                    self._send(404, b"{}", "application/json")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                replay.chat_requests.append(json.loads(body))
                self._send(200, replay.streams.pop(0), "text/event-stream")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"


@pytest.fixture
def replay() -> Iterator[Replay]:
    server = Replay()
    server.thread.start()
    yield server
    server.server.shutdown()
    server.server.server_close()


def recorded(name: str) -> bytes:
    return (DATA / name).read_bytes()


def without_per_request_metrics(sse: bytes) -> bytes:
    """The same recorded stream as a vLLM started without --per-request-spec-decode-metrics sends it."""
    out = []
    for line in sse.decode().split("\n"):
        if line.startswith("data: {"):
            chunk = json.loads(line[len("data: ") :])
            chunk.pop("metrics", None)
            line = "data: " + json.dumps(chunk)
        out.append(line)
    return "\n".join(out).encode()


def config_for(replay: Replay, kind: str) -> Any:
    return build_config(
        [
            Layer(
                "test",
                {
                    "default_backend": "r",
                    "backends": {"r": {"type": kind, "base_url": replay.base_url, "model": "local"}},
                },
            )
        ]
    )


def final_chunks(name: str) -> list[dict[str, Any]]:
    chunks = []
    for line in recorded(name).decode().splitlines():
        if line.startswith("data: {"):
            chunks.append(json.loads(line[len("data: ") :]))
    return chunks


# -- through the client, from recorded streams ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "kind", "accepted", "rejected", "source", "completion_tokens"),
    [
        ("openai-prediction.sse", "openai", 18, 5, "usage", 31),
        ("vllm-ngram-per-request-metrics.sse", "vllm", 8, 28, "vllm-spec-decode-metrics", 48),
        ("llamacpp-draft.sse", "llamacpp", 21, 11, "llamacpp-timings", 26),
        ("vllm-plain.sse", "vllm", None, None, None, 48),
    ],
)
async def test_acceptance_from_recorded_streams(
    replay: Replay,
    engine: Engine,
    name: str,
    kind: str,
    accepted: int | None,
    rejected: int | None,
    source: str | None,
    completion_tokens: int,
) -> None:
    replay.streams.append(recorded(name))
    backend = config_for(replay, kind).backend("r")
    request = StreamRequest([{"role": "user", "content": "Rename total to acc"}], None, 64, 0.0)
    completion = await stream_completion(engine.clients, backend, SETTINGS, request)
    expected_text = "".join(
        c["delta"].get("content") or "" for chunk in final_chunks(name) for c in chunk.get("choices", [])
    )
    assert completion.text == expected_text and completion.text
    assert completion.completion_tokens == completion_tokens  # llama.cpp: timings.predicted_n
    if source is None:
        assert completion.acceptance is None
    else:
        assert completion.acceptance is not None
        assert (completion.acceptance.accepted, completion.acceptance.rejected) == (accepted, rejected)
        assert completion.acceptance.source == source


def test_read_acceptance_ignores_chunks_without_figures() -> None:
    for name in ("openai-prediction.sse", "vllm-plain.sse", "llamacpp-draft.sse"):
        assert read_acceptance(final_chunks(name)[1]) is None  # a content chunk
    # OpenAI sends zeros when no prediction was given: that is "not reported", not 0 %.
    zeros = {"usage": {"completion_tokens_details": {"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}}
    assert read_acceptance(zeros) is None


# -- vLLM without per-request metrics: the /metrics counters, through the pipeline ----------------


def pages() -> tuple[str, str]:
    return (DATA / "vllm-metrics-before.prom").read_text(), (DATA / "vllm-metrics-after.prom").read_text()


async def refactor_stats(engine: Engine, replay: Replay) -> RefactorStats:
    text = "def add_all(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
    request = RefactorRequest("a.py", text, 0, len(text), instruction="rename total to acc", scope="selection")
    config = config_for(replay, "vllm")
    # The recording's server ran n-gram lookup, not refactor-lsp's proposer: known, so its recorded streams
    # and /metrics pages answer the refactor alone (the probe is tested in test_proposer_route.py).
    engine.proposers.remember(config.backend("r"), ProposerFound(False, "recorded with n-gram lookup"))
    try:
        result = await engine.refactor(request, config)
    except RefactorError as exc:  # the tiny model's recorded answer was cut off: measured, not applied
        assert exc.stats is not None and exc.output == RECORDED_TEXT
        return exc.stats
    return result.stats


async def test_vllm_acceptance_from_metrics_counters_when_the_answer_has_none(replay: Replay, engine: Engine) -> None:
    before, after = pages()
    replay.pages = [before, after]
    replay.streams.append(without_per_request_metrics(recorded("vllm-ngram-per-request-metrics.sse")))
    stats = await refactor_stats(engine, replay)
    # The counters moved by exactly what the server reported per request in the recording.
    assert (stats.accepted_prediction_tokens, stats.rejected_prediction_tokens) == (8, 28)
    assert stats.acceptance_source == "vllm-metrics"
    assert stats.acceptance_rate == pytest.approx(8 / 36)
    assert stats.prediction is True and stats.prediction_via == "prompt"
    assert not any("approximate" in note for note in stats.notes)
    assert "server-side speculation: 22% accepted (8 accepted, 28 rejected)" in summary(stats)
    # 48 tokens were output; rejected drafts were never part of them.
    assert stats.completion_tokens == 48
    assert stats.tokens_per_s == pytest.approx(48 / ((stats.latency_ms - stats.ttft_ms) / 1000), rel=1e-6)


async def test_vllm_metrics_are_approximate_when_other_requests_finished_meanwhile(
    replay: Replay, engine: Engine
) -> None:
    before, after = pages()
    busier = after.replace(
        'request_success_total{engine="0",finished_reason="stop",model_name="local"} 0.0',
        'request_success_total{engine="0",finished_reason="stop",model_name="local"} 1.0',
    )
    assert busier != after
    replay.pages = [before, busier]
    replay.streams.append(without_per_request_metrics(recorded("vllm-ngram-per-request-metrics.sse")))
    stats = await refactor_stats(engine, replay)
    assert (stats.accepted_prediction_tokens, stats.rejected_prediction_tokens) == (8, 28)
    assert stats.acceptance_source == "vllm-metrics-approximate"
    assert any("approximate" in note for note in stats.notes)


async def test_per_request_metrics_win_and_metrics_are_not_read_again(replay: Replay, engine: Engine) -> None:
    before, after = pages()
    replay.pages = [before, after]
    replay.streams += [recorded("vllm-ngram-per-request-metrics.sse")] * 2
    first = await refactor_stats(engine, replay)
    assert first.acceptance_source == "vllm-spec-decode-metrics"
    reads = replay.metrics_reads
    second = await refactor_stats(engine, replay)
    assert second.acceptance_source == "vllm-spec-decode-metrics"
    assert replay.metrics_reads == reads  # the server reports per request: /metrics is left alone


async def test_a_server_without_speculation_reports_no_acceptance(replay: Replay, engine: Engine) -> None:
    replay.pages = ["# HELP vllm:num_requests_running x\nvllm:num_requests_running 0.0\n"]
    replay.streams += [recorded("vllm-plain.sse")] * 2
    assert (await refactor_stats(engine, replay)).accepted_prediction_tokens is None
    reads = replay.metrics_reads
    assert (await refactor_stats(engine, replay)).acceptance_source is None
    assert replay.metrics_reads == reads  # no counters there: not asked again


async def test_no_metrics_page_is_not_an_error(replay: Replay, engine: Engine) -> None:
    replay.streams.append(without_per_request_metrics(recorded("vllm-ngram-per-request-metrics.sse")))
    stats = await refactor_stats(engine, replay)  # GET /metrics answers 404
    assert stats.accepted_prediction_tokens is None and stats.completion_tokens == 48


# -- the pure parts --------------------------------------------------------------------------------


def test_parse_prometheus_sums_label_sets() -> None:
    before, after = (metrics.parse_prometheus(page) for page in pages())
    assert after[metrics.ACCEPTED] - before[metrics.ACCEPTED] == 8
    assert after[metrics.DRAFTED] - before[metrics.DRAFTED] == 36
    assert after[metrics.FINISHED] - before[metrics.FINISHED] == 1  # summed over finished_reason labels
    assert metrics.parse_prometheus("# only comments\n\n") == {}
    # A sample whose value is no number: the metric is on the page, its value not known (NaN, not dropped).
    unknown = metrics.parse_prometheus("bad line here\nx NaN\ny 1\ny 2_0\n")
    assert sorted(unknown) == ["bad", "x", "y"] and all(math.isnan(value) for value in unknown.values())


def test_metrics_url_beside_a_vllm_backend() -> None:
    config = build_config(
        [
            Layer(
                "test",
                {
                    "backends": {
                        "a": {"type": "vllm", "base_url": "http://10.0.0.5:8000/v1", "model": "m"},
                        "b": {"type": "vllm", "base_url": "https://h/prefix/v1/", "model": "m"},
                        "c": {"type": "vllm", "base_url": "http://h:1/v1", "model": "m", "metrics_url": "http://h:2/m"},
                    }
                },
            )
        ]
    )
    assert metrics.metrics_url(config.backends["a"]) == "http://10.0.0.5:8000/metrics"
    assert metrics.metrics_url(config.backends["b"]) == "https://h/prefix/metrics"
    assert metrics.metrics_url(config.backends["c"]) == "http://h:2/m"
    assert metrics.metrics_url(config.backends["openai"]) is None


def test_useful_tokens_take_off_only_what_openai_bills() -> None:
    openai = RefactorStats(completion_tokens=100, rejected_prediction_tokens=30, acceptance_source="usage")
    local = RefactorStats(completion_tokens=100, rejected_prediction_tokens=300, acceptance_source="vllm-metrics")
    timings = RefactorStats(completion_tokens=100, rejected_prediction_tokens=30, acceptance_source="llamacpp-timings")
    assert (openai.useful_tokens(), local.useful_tokens(), timings.useful_tokens()) == (70, 100, 100)
