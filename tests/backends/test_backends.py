"""Backends and the refactor pipeline, against the loopback fake: what is sent, what comes back, and
what the user is told when it goes wrong."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from lsp_server.backend.acceptance import Acceptance, read_acceptance
from lsp_server.backend.chat import list_models, stream_completion
from lsp_server.backend.errors import BackendError, PredictionUnsupported
from lsp_server.backend.stream import StreamRequest
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import BackendConfig, Config, RefactorSettings
from lsp_server.formats.prompt import build_prompt
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorError, RefactorRequest, default_max_tokens
from lsp_server.stats.words import summary
from lsp_server.testing.calibration import first_attempt
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.speculation import simulate, tokenize
from tests.conftest import backend_table, closed_port_url

SOURCE = '''"""Shapes."""


def area(width, height):
    """The area of a rectangle."""
    result = width * height
    return result


def describe(width, height):
    return f"{width}x{height} has area {area(width, height)}"
'''
RENAMED = SOURCE.replace("result", "total")
SECRET = "sk-test-51HnZ0dAbCdEfGhIjKlMnOpQr"


def settings(**kwargs: Any) -> RefactorSettings:
    values: dict[str, Any] = {
        "timeout_s": 20.0,
        "connect_timeout_s": 2.0,
        "first_token_timeout_s": 5.0,
        "idle_timeout_s": 5.0,
        "max_retries": 2,
    }
    values.update(kwargs)
    return RefactorSettings(**values)


def backend_for(fake: FakeBackend | None = None, **kwargs: Any) -> BackendConfig:
    table = backend_table(fake, **kwargs)
    return BackendConfig(name=table.pop("name", "fake"), **table)


def rename_request(prediction: bool = True) -> StreamRequest:
    prompt = build_prompt(text=SOURCE, start=0, end=len(SOURCE), instruction="rename result to total", path="s.py")
    return StreamRequest(prompt.messages, prompt.prediction if prediction else None, max_tokens=2000, temperature=0.0)


async def complete(
    engine: Engine, fake: FakeBackend | None = None, request: StreamRequest | None = None, **kwargs: Any
):
    settings_kw = {k: kwargs.pop(k) for k in list(kwargs) if k in RefactorSettings.__dataclass_fields__}
    sleep = kwargs.pop("sleep", None)
    extra = {"sleep": sleep} if sleep else {}
    return await stream_completion(
        engine.clients, backend_for(fake, **kwargs), settings(**settings_kw), request or rename_request(), **extra
    )


async def failure(
    engine: Engine, fake: FakeBackend | None = None, request: StreamRequest | None = None, **kwargs: Any
) -> BackendError:
    with pytest.raises(BackendError) as info:
        await complete(engine, fake, request, **kwargs)
    return info.value


class Sleeps:
    """A stand-in for asyncio.sleep: records the waits, waits for nothing."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


# -- acceptance figures, as each kind of server reports them ---------------------------------------------


def test_read_acceptance_from_openai_usage() -> None:
    chunk = {
        "id": "chatcmpl-AbC123xyz",
        "object": "chat.completion.chunk",
        "created": 1730000000,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_45c6de4934",
        "choices": [],
        "usage": {
            "prompt_tokens": 1021,
            "completion_tokens": 412,
            "total_tokens": 1433,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {
                "reasoning_tokens": 0,
                "audio_tokens": 0,
                "accepted_prediction_tokens": 363,
                "rejected_prediction_tokens": 49,
            },
        },
    }
    assert read_acceptance(chunk) == Acceptance(363, 49, "usage")


def test_openai_usage_without_prediction_reports_no_acceptance() -> None:
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": 5,
        "total_tokens": 35,
        "completion_tokens_details": {"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }
    assert read_acceptance({"choices": [], "usage": usage}) is None
    assert read_acceptance({"choices": [], "usage": None}) is None


def test_read_acceptance_from_vllm_spec_decode_metrics() -> None:
    chunk = {
        "id": "chatcmpl-8c1f0e3e1a9f4c7e",
        "object": "chat.completion.chunk",
        "created": 1730000001,
        "model": "Qwen/Qwen2.5-Coder-7B-Instruct",
        "choices": [],
        "usage": {"prompt_tokens": 812, "total_tokens": 1124, "completion_tokens": 312, "prompt_tokens_details": None},
        "metrics": {
            "speculative_decoding": {
                "num_spec_steps": 61,
                "num_draft_tokens": 240,
                "num_accepted_draft_tokens": 198,
                "draft_acceptance_rate": 0.825,
            }
        },
    }
    assert read_acceptance(chunk) == Acceptance(198, 42, "vllm-spec-decode-metrics")


def test_read_acceptance_from_llamacpp_timings() -> None:
    chunk = {
        "choices": [{"finish_reason": "stop", "index": 0, "delta": {}}],
        "created": 1730000002,
        "id": "chatcmpl-Xx81qYkM1uQm2G1d",
        "model": "qwen2.5-coder-7b-instruct-q4_k_m.gguf",
        "system_fingerprint": "b4589-1a24c462",
        "object": "chat.completion.chunk",
        "timings": {
            "prompt_n": 412,
            "prompt_ms": 35.214,
            "prompt_per_token_ms": 0.0855,
            "prompt_per_second": 11699.9,
            "predicted_n": 210,
            "predicted_ms": 1203.5,
            "predicted_per_token_ms": 5.73,
            "predicted_per_second": 174.5,
            "draft_n": 160,
            "draft_n_accepted": 131,
        },
    }
    assert read_acceptance(chunk) == Acceptance(131, 29, "llamacpp-timings")


def test_chunk_without_figures_has_no_acceptance() -> None:
    assert read_acceptance({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": None}]}) is None
    assert read_acceptance({"timings": {"predicted_n": 3}}) is None


# -- how the prediction is sent ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "mode", "override", "expected"),
    [
        ("openai", "auto", None, "field"),
        ("openai-compatible", "auto", None, "field"),
        ("vllm", "auto", None, "prompt"),
        ("llamacpp", "auto", None, "prompt"),
        ("vllm", "always", None, "field"),
        ("openai", "never", None, "off"),
        ("openai", "always", False, "off"),
        ("vllm", "auto", False, "prompt"),  # the server drafts from the prompt whatever we ask
    ],
)
def test_how_the_prediction_reaches_the_model(kind: str, mode: str, override: bool | None, expected: str) -> None:
    backend = BackendConfig(name="b", type=kind, base_url="http://127.0.0.1:1/v1", model="m", prediction=mode)  # type: ignore[arg-type]
    assert Engine().prediction_mode(backend, override) == expected


def test_default_max_tokens_leaves_room_to_grow() -> None:
    assert default_max_tokens(30, RefactorSettings()) == 256
    assert default_max_tokens(3000, RefactorSettings()) == 2128
    assert default_max_tokens(3000, RefactorSettings(max_tokens=500)) == 500
    assert default_max_tokens(3000, RefactorSettings(), "hunks") == 3128  # SEARCH and REPLACE
    assert default_max_tokens(3000, RefactorSettings(max_tokens=500), "hunks") == 500


# -- streaming from each kind of server --------------------------------------------------------------


async def test_openai_kind_streams_the_answer_with_prediction_figures(
    fake_backend: FakeBackend, engine: Engine
) -> None:
    request = rename_request()
    deltas: list[str] = []
    result = await stream_completion(
        engine.clients,
        backend_for(fake_backend),
        settings(),
        request,
        on_delta=lambda text, _chunks: deltas.append(text),
    )
    sim = simulate(RENAMED, SOURCE, fake_backend.draft_len, aligned=True)
    assert result.text == RENAMED
    assert "".join(deltas) == RENAMED
    assert result.finish_reason == "stop"
    # As OpenAI does, rejected prediction tokens are billed as completion tokens.
    assert result.completion_tokens == len(tokenize(RENAMED)) + sim.rejected
    assert result.acceptance == Acceptance(sim.accepted, sim.rejected, "usage")
    assert result.prediction_sent is True
    assert result.ttft_ms is not None and result.latency_ms >= result.ttft_ms

    (sent,) = fake_backend.requests
    assert sent["prediction"] == {"type": "content", "content": SOURCE}
    assert sent["model"] == "fake-model"
    assert sent["stream"] is True
    assert sent["stream_options"] == {"include_usage": True}
    assert sent["temperature"] == 0.0
    assert sent["max_tokens"] == 2000
    assert sent["messages"] == request.messages


async def test_vllm_kind_drafts_from_the_prompt(make_fake, engine: Engine) -> None:
    fake = make_fake("vllm")
    request = rename_request(prediction=False)
    result = await complete(engine, fake, request)
    sim = simulate(
        RENAMED, "\n".join(m["content"] for m in request.messages), fake.draft_len, aligned=False, from_output=True
    )
    assert result.text == RENAMED
    assert result.completion_tokens == len(tokenize(RENAMED))
    assert result.acceptance == Acceptance(sim.accepted, sim.rejected, "vllm-spec-decode-metrics")
    assert "prediction" not in fake.requests[0]


async def test_a_cache_salt_goes_in_the_body_only_when_asked_for(make_fake, engine: Engine) -> None:
    fake = make_fake("vllm")
    request = rename_request(prediction=False)
    await complete(engine, fake, request)
    request.cache_salt = "bench-run-7f3a"
    result = await complete(engine, fake, request)
    assert result.text == RENAMED
    assert "cache_salt" not in fake.requests[0]  # an editor's refactor may use the server's cache
    assert fake.requests[1]["cache_salt"] == "bench-run-7f3a"
    # llama.cpp has no salt: the request skips its prompt cache instead.
    llamacpp = make_fake("llamacpp")
    await complete(engine, llamacpp, request)
    assert llamacpp.requests[0]["cache_prompt"] is False and "cache_salt" not in llamacpp.requests[0]


async def test_llamacpp_kind_reports_timings(make_fake, engine: Engine) -> None:
    fake = make_fake("llamacpp")
    request = rename_request(prediction=False)
    result = await complete(engine, fake, request)
    sim = simulate(
        RENAMED, "\n".join(m["content"] for m in request.messages), fake.draft_len, aligned=False, from_output=True
    )
    assert result.text == RENAMED
    assert result.finish_reason == "stop"
    assert result.acceptance == Acceptance(sim.accepted, sim.rejected, "llamacpp-timings")
    assert result.completion_tokens == len(tokenize(RENAMED))  # from timings.predicted_n: no usage chunk


async def test_answer_cut_at_max_tokens_says_length(fake_backend: FakeBackend, engine: Engine) -> None:
    request = rename_request()
    request.max_tokens = 5
    result = await complete(engine, fake_backend, request)
    assert result.finish_reason == "length"
    assert len(tokenize(result.text)) <= 5
    assert fake_backend.requests[0]["max_tokens"] == 5


async def test_key_and_headers_are_sent(
    fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", SECRET)
    await complete(engine, fake_backend, api_key_env="FAKE_API_KEY", headers={"X-Team": "tools"})
    (headers,) = fake_backend.headers_seen
    assert headers["authorization"] == f"Bearer {SECRET}"
    assert headers["x-team"] == "tools"


async def test_unset_key_variable_is_named_and_nothing_is_sent(fake_backend: FakeBackend, engine: Engine) -> None:
    error = await failure(engine, fake_backend, api_key_env="FAKE_API_KEY_UNSET")
    assert "FAKE_API_KEY_UNSET" in str(error)
    assert "not set" in str(error)
    assert fake_backend.requests == []


async def test_list_models(make_fake, engine: Engine) -> None:
    fake = make_fake(models=("coder-7b", "coder-1b"))
    assert await list_models(engine.clients, backend_for(fake), settings()) == ["coder-7b", "coder-1b"]


# -- what the user is told when it goes wrong ----------------------------------------------------------


async def test_prediction_refused_is_its_own_error(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(reject_prediction=True))
    with pytest.raises(PredictionUnsupported) as info:
        await complete(engine, fake_backend)
    assert "prediction" in str(info.value)
    assert len(fake_backend.requests) == 1


async def test_prediction_refused_when_forced_says_how_to_fix_the_config(
    fake_backend: FakeBackend, engine: Engine
) -> None:
    fake_backend.enqueue(Reply(reject_prediction=True))
    error = await failure(engine, fake_backend, prediction="always")
    assert not isinstance(error, PredictionUnsupported)
    assert "does not accept the `prediction` field" in str(error)
    assert 'backends.fake.prediction = "auto" or "never"' in str(error)


async def test_other_bad_request_is_reported_once_without_retry(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(status=400, error="temperature must be at most 2"))
    error = await failure(engine, fake_backend)
    assert "answered HTTP 400: temperature must be at most 2" in str(error)
    assert error.status == 400
    assert len(fake_backend.requests) == 1


async def test_unauthorized_names_the_variable_never_the_key(
    fake_backend: FakeBackend,
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", SECRET)
    fake_backend.enqueue(Reply(status=401, error=f"Incorrect API key provided: {SECRET}."))
    error = await failure(engine, fake_backend, api_key_env="FAKE_API_KEY")
    assert "401 unauthorized" in str(error)
    assert "check the key in the environment variable FAKE_API_KEY" in str(error)
    assert SECRET not in str(error)
    assert SECRET[-8:] not in str(error)
    assert error.fallback_ok is False


async def test_forbidden_without_a_key_variable_says_to_configure_one(
    fake_backend: FakeBackend, engine: Engine
) -> None:
    fake_backend.enqueue(Reply(status=403, error="forbidden"))
    error = await failure(engine, fake_backend)
    assert "403 forbidden" in str(error)
    assert "set backends.fake.api_key_env" in str(error)


async def test_server_messages_are_redacted(
    fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch, engine: Engine
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", SECRET)
    fake_backend.enqueue(Reply(status=422, error=f"key {SECRET} is not allowed to use this model"))
    error = await failure(engine, fake_backend, api_key_env="FAKE_API_KEY")
    assert "key *** is not allowed" in str(error)
    assert SECRET not in str(error)


async def test_unknown_model_lists_the_offered_models(make_fake, engine: Engine) -> None:
    fake = make_fake(models=("coder-7b", "coder-1b"))
    error = await failure(engine, fake, model="coder-70b")
    assert "has no model 'coder-70b' (it offers: coder-7b, coder-1b)" in str(error)
    assert "set backends.fake.model" in str(error)
    assert error.status == 404


async def test_rate_limit_with_retry_after_is_retried(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(status=429, error="Rate limit reached", headers={"Retry-After": "1.5"}))
    sleeps = Sleeps()
    result = await complete(engine, fake_backend, sleep=sleeps)
    assert result.text == RENAMED
    assert sleeps.waits == [1.5]  # the server's Retry-After, honoured
    assert len(fake_backend.requests) == 2
    assert result.notes == ["retried after HTTP 429 (waited 1.5 s)"]


async def test_unavailable_again_and_again_gives_up_after_max_retries(
    fake_backend: FakeBackend, engine: Engine
) -> None:
    fake_backend.enqueue(*[Reply(status=503, error="model is loading")] * 3, Reply())
    sleeps = Sleeps()
    error = await failure(engine, fake_backend, sleep=sleeps, max_retries=2)
    assert "failed with HTTP 503 after 3 tries (model is loading)" in str(error)
    assert "try again later" in str(error)
    assert len(fake_backend.requests) == 3
    assert len(sleeps.waits) == 2
    assert sleeps.waits[0] < sleeps.waits[1]  # backing off
    assert error.fallback_ok is True


async def test_rate_limited_throughout_says_so(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(status=429, error="slow down", headers={"Retry-After": "0"}))
    error = await failure(engine, fake_backend, sleep=Sleeps(), max_retries=0)
    assert "is rate limiting us (429) after 1 try (slow down)" in str(error)


async def test_retry_after_beyond_the_time_limit_is_not_waited_for(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(status=429, error="slow down", headers={"Retry-After": "3600"}))
    sleeps = Sleeps()
    error = await failure(engine, fake_backend, sleep=sleeps, timeout_s=20)
    assert "rate limiting" in str(error)
    assert sleeps.waits == []


async def test_connection_refused_names_the_url(engine: Engine) -> None:
    url = closed_port_url()
    error = await failure(engine, None, type="openai", base_url=url, model="m")
    assert f"cannot reach the backend 'fake' at {url}: connection refused" in str(error)
    assert error.fallback_ok is True


async def test_unresolvable_host_says_so(engine: Engine) -> None:
    url = "http://nonexistent.invalid:1/v1"
    error = await failure(engine, None, type="openai", base_url=url, model="m", connect_timeout_s=5)
    assert f"cannot reach the backend 'fake' at {url}: the host name does not resolve" in str(error)


async def test_stall_mid_answer_beyond_idle_timeout(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(stall_after_chars=10, stall_s=3.0))
    error = await failure(engine, fake_backend, idle_timeout_s=0.2)
    assert "stalled for 0.2 s mid-answer (refactor.idle_timeout_s); nothing was applied" in str(error)


async def test_connection_dropped_mid_answer(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(drop_after_chars=10))
    error = await failure(engine, fake_backend)
    assert "broke mid-answer; nothing was applied" in str(error)
    assert fake_backend.url in str(error)


@pytest.mark.parametrize(
    "body",
    [
        b"data: {not json\n\n",
        b'data: {"choices": [{"index": 0, "delta": {"content": 5}}]}\n\n',
        b'data: {"choices": "abc"}\n\n',
        b"data: [1, 2]\n\n",
        b'data: {"choices": [], "usage": 5}\n\n',
    ],
    ids=["not-json", "content-not-text", "choices-not-a-list", "not-an-object", "usage-not-an-object"],
)
async def test_malformed_stream(fake_backend: FakeBackend, body: bytes, engine: Engine) -> None:
    fake_backend.enqueue(Reply(raw_body=body))
    error = await failure(engine, fake_backend)
    assert "sent a malformed stream" in str(error)
    assert "nothing was applied" in str(error)


async def test_stream_that_is_not_utf8(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(raw_body=b'data: {"choices": [{"index": 0, "delta": {"content": "caf\xe9"}}]}\n\n'))
    error = await failure(engine, fake_backend)
    assert "not valid UTF-8; nothing was applied" in str(error)


async def test_error_event_in_the_stream_is_reported(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(raw_body=b'data: {"error": {"message": "out of memory"}}\n\n'))
    error = await failure(engine, fake_backend)
    assert "out of memory" in str(error)


async def test_no_first_token_in_time(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(delay_headers_s=3.0))
    error = await failure(engine, fake_backend, first_token_timeout_s=0.2)
    assert "sent nothing within 0.2 s (refactor.first_token_timeout_s)" in str(error)
    assert error.fallback_ok is True


async def test_whole_refactor_time_limit(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(stall_after_chars=10, stall_s=3.0))
    error = await failure(engine, fake_backend, timeout_s=0.3, idle_timeout_s=2.0)
    assert "took longer than 0.3 s (refactor.timeout_s)" in str(error)


# -- the whole pipeline: run_refactor ------------------------------------------------------------------


def config_with(**tables: dict[str, Any]) -> Config:
    return build_config([Layer("test config", {"default_backend": next(iter(tables)), "backends": tables})])


def file_request(**kwargs: Any) -> RefactorRequest:
    values: dict[str, Any] = {"path": "shapes.py", "text": SOURCE, "start": 0, "end": 0, "scope": "file"}
    values.update(kwargs)
    return RefactorRequest(instruction=values.pop("instruction", "rename result to total"), **values)


async def test_refactor_end_to_end_with_the_prediction_field(fake_backend: FakeBackend, engine: Engine) -> None:
    config = config_with(fake=backend_table(fake_backend))
    result = await engine.refactor(file_request(), config)
    assert result.new_text == RENAMED
    stats = result.stats
    sim = simulate(RENAMED, SOURCE, fake_backend.draft_len)
    assert (stats.backend, stats.served_by, stats.model) == ("fake", "fake", "fake-model")
    assert (stats.prediction, stats.prediction_via, stats.scope) == (True, "field", "file")
    assert (stats.accepted_prediction_tokens, stats.rejected_prediction_tokens) == (sim.accepted, sim.rejected)
    assert stats.acceptance_rate == pytest.approx(sim.accepted / sim.drafted)
    assert stats.completion_tokens == len(tokenize(RENAMED)) + sim.rejected
    # Effective speed counts only what was output, not the billed rejected tokens.
    generation_s = (stats.latency_ms - stats.ttft_ms) / 1000
    assert stats.tokens_per_s == pytest.approx(len(tokenize(RENAMED)) / generation_s)
    assert fake_backend.requests[0]["prediction"]["content"] == SOURCE


async def test_refactor_of_a_block_rewrites_only_that_block(fake_backend: FakeBackend, engine: Engine) -> None:
    config = config_with(fake=backend_table(fake_backend))
    cursor = SOURCE.index("result = width")
    result = await engine.refactor(file_request(start=cursor, end=cursor, scope=None), config)
    block = SOURCE[SOURCE.index("def area") : SOURCE.index("\n\n\ndef describe") + 1]
    assert result.stats.scope == "block"
    assert fake_backend.requests[0]["prediction"]["content"] == block
    assert result.new_text == RENAMED
    assert all(SOURCE.index("def area") <= e.start and e.end <= SOURCE.index("def describe") for e in result.edits)


@pytest.mark.parametrize(("mode", "sent"), [("auto", False), ("always", True)])
async def test_vllm_gets_the_prediction_field_only_when_always(
    make_fake, mode: str, sent: bool, engine: Engine
) -> None:
    fake = make_fake("vllm")
    result = await engine.refactor(file_request(), config_with(local=backend_table(fake, prediction=mode)))
    assert result.new_text == RENAMED
    assert ("prediction" in fake.requests[0]) is sent
    assert result.stats.prediction is True
    assert result.stats.prediction_via == ("field" if sent else "prompt")
    assert result.stats.acceptance_source == "vllm-spec-decode-metrics"


async def test_no_prediction_requested_sends_none(fake_backend: FakeBackend, engine: Engine) -> None:
    result = await engine.refactor(file_request(prediction=False), config_with(fake=backend_table(fake_backend)))
    assert result.new_text == RENAMED
    assert "prediction" not in fake_backend.requests[0]
    assert result.stats.prediction is False
    assert " · no prediction · region (" in summary(result.stats)


async def test_fallback_to_the_next_backend_when_the_first_is_down(fake_backend: FakeBackend, engine: Engine) -> None:
    down = closed_port_url()
    config = config_with(
        primary={"type": "openai", "base_url": down, "model": "m", "fallback": ["fake"]},
        fake=backend_table(fake_backend),
    )
    result = await engine.refactor(file_request(), config)
    assert result.new_text == RENAMED
    assert result.stats.backend == "primary"
    assert result.stats.served_by == "fake"
    assert result.stats.model == "fake-model"
    assert any("served by fallback backend 'fake'" in note and down in note for note in result.stats.notes)
    assert summary(result.stats).endswith(" · served by fake")
    assert len(fake_backend.requests) == 1


async def test_no_fallback_for_a_problem_another_backend_would_not_fix(
    fake_backend: FakeBackend,
    make_fake,
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
) -> None:
    monkeypatch.setenv("FAKE_API_KEY", SECRET)
    spare = make_fake()
    fake_backend.enqueue(Reply(status=401, error="bad key"))
    config = config_with(
        fake=backend_table(fake_backend, api_key_env="FAKE_API_KEY", fallback=["spare"]),
        spare=backend_table(spare),
    )
    with pytest.raises(RefactorError) as info:
        await engine.refactor(file_request(), config)
    assert "FAKE_API_KEY" in str(info.value)
    assert spare.requests == []


async def test_every_backend_down_reports_each(fake_backend: FakeBackend, engine: Engine) -> None:
    first, second = closed_port_url(), "http://nonexistent.invalid:1/v1"
    config = config_with(
        a={"type": "openai", "base_url": first, "model": "m", "fallback": ["b"]},
        b={"type": "openai", "base_url": second, "model": "m"},
    )
    with pytest.raises(RefactorError) as info:
        await engine.refactor(file_request(), config)
    assert first in str(info.value) and second in str(info.value)


async def test_refused_prediction_is_retried_without_and_remembered(fake_backend: FakeBackend, engine: Engine) -> None:
    config = config_with(fake=backend_table(fake_backend))
    fake_backend.enqueue(Reply(reject_prediction=True))

    result = await engine.refactor(file_request(), config)

    assert result.new_text == RENAMED
    first, second = fake_backend.requests
    assert "prediction" in first
    assert "prediction" not in second
    assert result.stats.prediction is False
    assert result.stats.prediction_via == "off"
    assert any("refused the prediction field" in note for note in result.stats.notes)

    again = await engine.refactor(file_request(), config)
    assert again.new_text == RENAMED
    assert len(fake_backend.requests) == 3
    assert "prediction" not in fake_backend.requests[2]  # not asked again
    assert again.stats.prediction is False


async def test_unusable_answer_is_refused_with_its_stats(fake_backend: FakeBackend, engine: Engine) -> None:
    fake_backend.enqueue(Reply(text="Sure! I renamed result to total everywhere in the function."))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(file_request(), config_with(fake=backend_table(fake_backend)))
    assert "explanation instead of code" in str(info.value)
    assert info.value.stats is not None
    assert info.value.stats.completion_tokens is not None


async def test_instruction_comment_drives_the_refactor_and_is_removed(
    fake_backend: FakeBackend, engine: Engine
) -> None:
    text = SOURCE.replace('    """The area', '    # refactor-lsp: rename width to w\n    """The area')
    cursor = text.index("result = width")
    request = RefactorRequest(path="shapes.py", text=text, start=cursor, end=cursor, action_id="instruction-comment")
    result = await engine.refactor(request, config_with(fake=backend_table(fake_backend)))
    block = SOURCE[SOURCE.index("def area") : SOURCE.index("\n\n\ndef describe") + 1]
    assert fake_backend.requests[0]["prediction"]["content"] == block  # without the comment
    assert "Instruction: rename width to w" in fake_backend.requests[0]["messages"][1]["content"]
    assert result.new_text == SOURCE.replace(block, block.replace("width", "w"))


async def test_unknown_backend_name_is_a_refactor_error(fake_backend: FakeBackend, engine: Engine) -> None:
    with pytest.raises(RefactorError) as info:
        await engine.refactor(file_request(backend="nope"), config_with(fake=backend_table(fake_backend)))
    assert "unknown backend 'nope' (configured backends: fake, local" in str(info.value)
    assert fake_backend.requests == []


async def test_concurrent_refactors_share_the_backend(fake_backend: FakeBackend, engine: Engine) -> None:
    config = config_with(fake=backend_table(fake_backend))
    results = await asyncio.gather(*(engine.refactor(file_request(), config) for _ in range(4)))
    assert [r.new_text for r in results] == [RENAMED] * 4


async def test_each_engine_keeps_its_own_memory(fake_backend: FakeBackend, engine: Engine) -> None:
    """What one engine learned (a refused prediction field) is not global state another engine sees."""
    config = config_with(fake=backend_table(fake_backend))
    fake_backend.enqueue(Reply(reject_prediction=True))
    await engine.refactor(file_request(), config)
    assert engine.prediction_mode(config.backends["fake"]) == "off"
    other = Engine()
    try:
        assert other.prediction_mode(config.backends["fake"]) == "field"
        result = await other.refactor(file_request(), config)
    finally:
        await other.close()
    assert result.stats.prediction_via == "field" and "prediction" in fake_backend.requests[-1]


def test_a_refactor_is_planned_once_with_its_backend_chain(fake_backend: FakeBackend) -> None:
    config = config_with(
        fake=backend_table(fake_backend, fallback=["spare"]),
        spare=backend_table(fake_backend, type="vllm"),
    )
    engine = Engine()
    plan = engine.plan(file_request(instruction="rename width to w"), config)
    assert [(r.backend.name, r.prediction) for r in plan.routes] == [("fake", "field"), ("spare", "prompt")]
    assert plan.title == "rename width to w" and first_attempt(engine, plan).max_tokens >= 256
    with pytest.raises(AttributeError):
        plan.title = "changed"  # type: ignore[misc]
