"""One streamed chat completion, read from the SDK's stream under the refactor's bounds: the
request (`StreamRequest`), the answer's size limits, the first-token and idle timeouts, a stream
that breaks the protocol, and what comes back (`Completion`). Retries are the caller's
(`chat.stream_completion`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from ..config.schema import BackendConfig, RefactorSettings
from ..text import clip
from .acceptance import Acceptance, plausible, read_acceptance, section, token_count
from .clients import ClientPool
from .errors import BackendError, redact

_SURROGATE = re.compile("[\ud800-\udfff]")


class MalformedStream(ValueError):
    """The stream broke the protocol (a second choice, text after the end): the answer is not usable."""


class AnswerTooLong(Exception):
    """The backend sent more than the request's limits allow: it ignores them, and reading on would
    fill the memory (a stream of whitespace without a finish, or one line that never ends)."""


# Code averages about 4 characters a token, and a tokenizer's longest tokens (runs of spaces or
# punctuation) are a few dozen: an answer past 32 characters a token is not keeping to max_tokens.
MAX_CHARS_PER_TOKEN = 32
# However large max_tokens is set, a rewrite of a region is not more than ten times the region
# (docstrings on a short function add a few times its size), plus room for a small region.
REGION_ANSWER_FACTOR, REGION_ANSWER_SLACK = 10, 20_000
# One SSE line carries one chunk: its JSON around the text (id, model, usage) is a few hundred bytes,
# and JSON escaping makes a character at most 6 bytes (\u00XX).
SSE_LINE_OVERHEAD, JSON_BYTES_PER_CHAR = 64 * 1024, 6


def answer_char_limit(max_tokens: int, predicted_chars: int = 0) -> int:
    """The most characters an answer may have before the stream is stopped and refused."""
    limit = max(max_tokens, 1) * MAX_CHARS_PER_TOKEN
    if predicted_chars:
        limit = min(limit, REGION_ANSWER_FACTOR * predicted_chars + REGION_ANSWER_SLACK)
    return limit


@contextlib.contextmanager
def _bound_sse_lines(stream: Any, max_line_bytes: int) -> Iterator[None]:
    """Refuse an SSE line longer than `max_line_bytes` as it arrives: the SDK's decoder keeps a line
    in memory until it ends, so one that never ends would fill it before any delta reached us. Undone
    at the end: the bounded reader holds the response (its request, the prompt), a cycle otherwise."""
    response = stream.response
    read = response.aiter_bytes

    async def bounded(*args: Any, **kwargs: Any) -> Any:
        run = 0  # bytes since the last line end
        async for chunk in read(*args, **kwargs):
            end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
            run = run + len(chunk) if end < 0 else len(chunk) - end - 1
            if run > max_line_bytes:
                raise AnswerTooLong(f"one line of the stream ran past {max_line_bytes:,} bytes")
            yield chunk

    response.aiter_bytes = bounded
    try:
        yield
    finally:
        del response.aiter_bytes  # the class's own again


@dataclass
class Completion:
    text: str = ""
    finish_reason: str | None = None
    ttft_ms: float | None = None
    latency_ms: float = 0.0
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    acceptance: Acceptance | None = None
    prediction_sent: bool = False
    speculation: bool | None = None  # the server said whether it drafted (None: it did not say)
    notes: list[str] = field(default_factory=list)


# (the text just streamed, the output tokens so far when the server counts them per chunk, else None)
DeltaCallback = Callable[[str, int | None], None]


@dataclass
class StreamRequest:
    messages: list[dict[str, str]]
    prediction: str | None  # sent as the `prediction` field when not None
    max_tokens: int
    temperature: float
    live_usage: bool = False  # ask for the token count on every chunk (vLLM's continuous_usage_stats)
    # Keep the server's prompt cache out of this request: vLLM's `cache_salt`, or for llama.cpp
    # `cache_prompt: false` (it has no salt). None: the server caches as it likes.
    cache_salt: str | None = None
    # Stop reading past this many characters of answer (None: what max_tokens allows, answer_char_limit).
    max_answer_chars: int | None = None
    # vLLM's per-request extra arguments (`vllm_xargs`): the prediction, for a server whose proposer drafts
    # from it (lsp_server/proposer); None: not sent.
    vllm_xargs: dict[str, str] | None = None
    ignore_eos: bool = False  # vLLM: write max_tokens tokens whatever the model would (the proposer probe)

    def answer_limit(self) -> int:
        return self.max_answer_chars if self.max_answer_chars is not None else answer_char_limit(self.max_tokens)


async def stream_once(
    clients: ClientPool,
    backend: BackendConfig,
    settings: RefactorSettings,
    request: StreamRequest,
    on_delta: DeltaCallback | None,
) -> Completion:
    """One streamed answer: the request sent (its first byte within first_token_timeout_s), every chunk
    read under the answer's bounds and the idle timeout, and what the backend said of itself. Raises
    BackendError (with a message naming the backend and what to do), or the SDK's APIStatusError."""
    started = time.perf_counter()
    stream = await _open(clients, backend, settings, request)
    reader = _Reader(request, settings, on_delta, started)
    try:
        await reader.read(stream)
        text = reader.text()
    except Exception as exc:
        reader.parts.clear()  # what was read goes now, not when the error is done with
        raise _stream_error(exc, backend, request, reader) from None
    finally:
        with contextlib.suppress(Exception):
            await stream.close()
    result = reader.result
    result.latency_ms = (time.perf_counter() - started) * 1000
    result.text = text
    return result


async def _open(clients: ClientPool, backend: BackendConfig, settings: RefactorSettings, request: StreamRequest) -> Any:
    """The streaming request, sent: the response has begun within first_token_timeout_s."""
    import openai

    client = clients.get(backend, settings)
    prediction: Any = openai.omit  # omitted, not null: not every server takes a null field
    if request.prediction is not None:
        prediction = {"type": "content", "content": request.prediction}
    extra: dict[str, Any] = {}  # not OpenAI fields: in the body as they are
    if request.cache_salt is not None:
        extra.update({"cache_prompt": False} if backend.type == "llamacpp" else {"cache_salt": request.cache_salt})
    if request.vllm_xargs is not None:
        extra["vllm_xargs"] = request.vllm_xargs
    if request.ignore_eos:
        extra["ignore_eos"] = True
    stream_options: dict[str, bool] = {"include_usage": True}
    if request.live_usage:
        stream_options["continuous_usage_stats"] = True  # vLLM counts tokens on every chunk: an exact live rate
    try:
        # asyncio.timeout, not wait_for: Python 3.11's wait_for swallows a cancel that arrives just as
        # the response starts, and the refactor would then stream on.
        async with asyncio.timeout(settings.first_token_timeout_s):
            stream = await client.chat.completions.create(
                model=backend.model,
                messages=cast(Any, request.messages),  # plain role/content dicts: what the SDK sends as they are
                temperature=request.temperature,
                max_tokens=request.max_tokens,
                stream=True,
                stream_options=cast(Any, stream_options),  # vLLM's continuous_usage_stats: not in the SDK's type
                prediction=prediction,
                extra_body=extra or None,
            )
    except TimeoutError:
        raise BackendError(
            f"the backend '{backend.name}' at {backend.base_url} sent nothing within "
            f"{settings.first_token_timeout_s:g} s (refactor.first_token_timeout_s) — is it overloaded?",
            fallback_ok=True,
        ) from None
    return stream


class _IdleTimer:
    """A stream's one idle timer, entered with `async with`: the block's wait is cancelled (TimeoutError)
    once no chunk came for `wait` seconds. A chunk only notes the time (`touched`); the timer, when due,
    expires the timeout or moves itself to the new due time. An object, not a closure: a closure that
    schedules itself is a reference cycle that kept the whole refactor (its document, its answer) until
    a full collection. For the same reason it lets go of its asyncio.Timeout on the way out: that holds
    the task, a cancelled task holds its CancelledError, and the error's traceback holds the frame that
    holds this timer."""

    def __init__(self, wait: float) -> None:
        self.loop = asyncio.get_running_loop()
        self.wait = wait
        self.last_chunk_at = self.loop.time()
        self.timeout: asyncio.Timeout | None = None
        self.handle: asyncio.TimerHandle | None = None

    async def __aenter__(self) -> _IdleTimer:
        self.timeout = asyncio.timeout(None)
        await self.timeout.__aenter__()
        self.handle = self.loop.call_at(self.last_chunk_at + self.wait, self._due)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        timeout, self.timeout = self.timeout, None
        if self.handle is not None:
            self.handle.cancel()  # a cancelled handle drops its callback: nothing holds this timer
        if timeout is not None:
            await timeout.__aexit__(*exc_info)  # raises TimeoutError where the timer expired it

    def touched(self) -> None:
        self.last_chunk_at = self.loop.time()

    def wait_from_now(self, wait: float) -> None:
        """From now on, `wait` seconds of quiet end the stream (the idle timeout after the first token)."""
        self.wait = wait
        if self.handle is not None:
            self.handle.cancel()
        self.handle = self.loop.call_at(self.last_chunk_at + wait, self._due)

    def _due(self) -> None:
        due = self.last_chunk_at + self.wait
        if self.loop.time() < due:
            self.handle = self.loop.call_at(due, self._due)
        elif self.timeout is not None:
            self.timeout.reschedule(self.loop.time())  # cancels the read; `async with` turns it to TimeoutError


class _Reader:
    """Reads one stream's chunks into a `Completion`, under the answer's bounds and one idle timer."""

    def __init__(
        self, request: StreamRequest, settings: RefactorSettings, on_delta: DeltaCallback | None, started: float
    ) -> None:
        self.request = request
        self.settings = settings
        self.on_delta = on_delta
        self.started = started
        self.result = Completion(prediction_sent=request.prediction is not None)
        self.parts: list[str] = []
        self.received = 0
        self.max_chars = request.answer_limit()
        # The most tokens an answer can count: max_tokens, plus (OpenAI bills rejected prediction tokens
        # as completion tokens) at most one a character of the prediction. A count past it would inflate
        # the speed shown (live and final); it is not read.
        self.max_counted = max(request.max_tokens, 1) + len(request.prediction or "")
        self.wait = settings.first_token_timeout_s  # until the first token; then the idle timeout

    async def read(self, stream: Any) -> None:
        """Every chunk, until the stream ends, under one idle timer for the whole stream (not one armed
        and cancelled per chunk: a few µs each, hundreds of chunks). Raises TimeoutError, AnswerTooLong,
        MalformedStream, and what the SDK raises."""
        with _bound_sse_lines(stream, self.max_chars * JSON_BYTES_PER_CHAR + SSE_LINE_OVERHEAD):
            iterator = stream.__aiter__()
            async with _IdleTimer(self.wait) as idle:
                while True:
                    try:
                        chunk = await iterator.__anext__()
                    except StopAsyncIteration:
                        break
                    first = self.result.ttft_ms is None
                    idle.touched()
                    self._chunk(chunk)
                    if first and self.result.ttft_ms is not None:  # usually shorter: the timer moves to it
                        idle.wait_from_now(self.wait)

    def _chunk(self, chunk: Any) -> None:
        result = self.result
        # The SDK does not validate a streamed chunk: a count is read only where it is a count (a `usage`
        # that is no object at all is a malformed stream: AttributeError).
        tokens_so_far = (
            self._count(chunk.usage.completion_tokens) if chunk.usage is not None and chunk.choices else None
        )
        for choice in chunk.choices or []:
            # We ask for one choice: another one interleaved into the stream is not part of the answer.
            if (getattr(choice, "index", 0) or 0) != 0:
                raise MalformedStream(f"a second choice (index {choice.index}) came in the stream")
            delta = choice.delta
            content = getattr(delta, "content", None) if delta is not None else None
            if content:
                self._text(content, tokens_so_far)
            if choice.finish_reason:
                if result.finish_reason not in (None, choice.finish_reason):
                    raise MalformedStream(
                        f"the answer ended twice ({result.finish_reason}, then {choice.finish_reason})"
                    )
                result.finish_reason = choice.finish_reason
        if chunk.usage is not None:
            result.completion_tokens = self._count(chunk.usage.completion_tokens)
            result.prompt_tokens = token_count(chunk.usage.prompt_tokens)
        if chunk.model_extra or (chunk.usage is not None and (not chunk.choices or result.finish_reason)):
            self._final(chunk)

    def _count(self, value: Any) -> int | None:
        """An answer's token count as the server reports it, where it can be true (`max_counted`)."""
        count = token_count(value)
        return count if count is not None and count <= self.max_counted else None

    def _text(self, content: Any, tokens_so_far: int | None) -> None:
        result = self.result
        if not isinstance(content, str):
            raise MalformedStream(f"a delta's content is {type(content).__name__}, not text")
        if result.finish_reason is not None:
            raise MalformedStream(f"text came after the answer ended ({result.finish_reason})")
        if result.ttft_ms is None:
            result.ttft_ms = (time.perf_counter() - self.started) * 1000
            self.wait = self.settings.idle_timeout_s
        self.received += len(content)
        if self.received > self.max_chars:
            raise AnswerTooLong(f"the answer ran past {self.max_chars:,} characters")
        self.parts.append(content)
        if self.on_delta is not None:
            self.on_delta(content, tokens_so_far)

    def text(self) -> str:
        """The answer, which is text: JSON may carry a lone surrogate (`"\\udcff"`), no character of
        any text (it failed later, as an internal error, where the answer was encoded). A pair split
        across two deltas is one character, joined."""
        text = "".join(self.parts)
        if _SURROGATE.search(text) is None:
            return text
        try:
            return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le")
        except UnicodeDecodeError as exc:
            lone = int.from_bytes(exc.object[exc.start : exc.start + 2], "little")
            raise MalformedStream(f"the answer holds a lone surrogate (U+{lone:04X}), which is no text") from None

    def _final(self, chunk: Any) -> None:
        """What a final chunk says of the answer: acceptance, whether the server drafted, llama.cpp's
        token count. Only final chunks carry it; dumping every chunk would cost time per token."""
        result = self.result
        raw = chunk.model_dump(warnings=False)
        timings = section(raw, "timings")
        predicted = self._count(timings.get("predicted_n"))
        if result.completion_tokens is None and predicted is not None:
            result.completion_tokens = predicted  # llama.cpp reports its count in `timings`
        # The count may come in an earlier chunk than the figures: both are checked against each other.
        acceptance = plausible(read_acceptance(raw), result.completion_tokens)
        if acceptance is not None:
            result.acceptance = acceptance
        if acceptance is not None and acceptance.source != "usage":
            result.speculation = True
        elif timings and "draft_n" not in timings:
            result.speculation = False  # llama.cpp reports its drafts here when it makes any


def _stream_error(exc: Exception, backend: BackendConfig, request: StreamRequest, reader: _Reader) -> Exception:
    """What a failure while reading the stream tells the user: a BackendError naming the backend and
    what to do; the SDK's status errors as they are (chat.py reads them); anything else as it is."""
    import openai

    where = f"the backend '{backend.name}' at {backend.base_url}"
    if isinstance(exc, TimeoutError):
        if reader.result.ttft_ms is None:
            return BackendError(
                f"{where} sent no first token within {reader.wait:g} s (refactor.first_token_timeout_s) — is it "
                "overloaded?",
                fallback_ok=True,
            )
        return BackendError(
            f"{where} stalled for {reader.wait:g} s mid-answer (refactor.idle_timeout_s); nothing was applied — "
            "run it again"
        )
    if isinstance(exc, AnswerTooLong):
        return BackendError(
            f"{where} sent more than this refactor allows ({exc}, for an answer of at most {request.max_tokens:,} "
            "tokens): it does not keep to max_tokens; nothing was applied and the stream was closed — check the "
            "backend's settings or try another model"
        )
    if isinstance(exc, openai.APIStatusError):
        return exc
    if isinstance(exc, UnicodeDecodeError):
        return BackendError(
            f"{where} sent text that is not valid UTF-8; nothing was applied — run it again or check the backend"
        )
    if isinstance(exc, openai.APIConnectionError):
        return BackendError(f"the connection to {where} broke mid-answer; nothing was applied — run it again")
    # RecursionError: a chunk nested past the JSON parser's depth (the SDK parses each chunk).
    malformed = (openai.APIError, json.JSONDecodeError, ValueError, AttributeError, TypeError, RecursionError)
    if not isinstance(exc, malformed):  # AttributeError, TypeError: a chunk of the wrong shape (the SDK does not
        return exc  #                     validate streamed chunks)
    problem = (
        str(exc)
        if isinstance(exc, MalformedStream)
        else "a chunk nested too deep"
        if isinstance(exc, RecursionError)
        else f"{type(exc).__name__}: {exc}"
    )
    return BackendError(
        f"{where} sent a malformed stream ({clip(redact(problem, backend))}); nothing was applied — run it again "
        "or check the backend"
    )
