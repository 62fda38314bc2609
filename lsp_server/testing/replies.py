"""How the fake backend answers one chat completion: a scripted `Reply` (the faults: errors, stalls,
drops, raw bytes, floods) or the responder's answer, streamed as SSE over chunked HTTP/1.1, one
forward pass at a time as `simulate` and the load model pace it, with each kind's usage, metrics
and timings.

`ReplyStream` is the part of `FakeBackend` that writes its responses; the attributes it declares
are the backend's, set in `FakeBackend.__init__`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .pacing import Paced, pace
from .profiles import BackendProfile
from .responders import model_answer
from .speculation import tokenize


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
    # A non-200 reply whose JSON message makes its body this many bytes, written a megabyte at a time
    # until the client hangs up; what went out is counted in `flood_sent`.
    error_body_bytes: int = 0


class ReplyStream:
    """Writes the fake's HTTP responses: JSON bodies, and a chat completion's SSE stream."""

    kind: str
    step_s: float
    profile: BackendProfile
    models: tuple[str, ...]
    responder: Callable[[dict[str, Any]], str]
    spec_decode_metrics: bool
    speculation: bool
    proposer: bool
    load_factor: float
    batch_tokens: int
    active_streams: int
    peak_active_streams: int
    _in_pass: dict[int, int]
    _stream_ids: itertools.count[int]
    disconnects: int
    flood_sent: int
    counters: dict[str, int]
    first_content_sent_at: list[float]

    @property
    def load_model(self) -> bool:
        return bool(self.load_factor or self.batch_tokens)

    def prefill_s(self, prompt_tokens: int) -> float:
        """The wait before the first answer token (on top of that token's own pass): the profile's fixed
        wait and its reading of the prompt, a wait of its own that neither slows nor is slowed by other
        requests' passes."""
        return self.step_s * self.profile.prefill_passes(prompt_tokens)

    def pass_s(self, active: int, tokens: int, cost: float = 1.0) -> float:
        """What one forward pass costs with `active` answers streaming that put `tokens` into their passes;
        `cost`: the pass on its own, in plain passes (the profile's price of its draft tokens).

        The load model (off unless `load_factor` or `batch_tokens` is set): a real server runs its
        requests' passes as one batch. Decoding is memory-bound, so a pass that carries a few more tokens
        costs about the same until the batch saturates the compute, which is why speculation pays on an
        idle server and less on a busy one. Each other answer streaming makes a pass dearer by
        `load_factor` (KV-cache reads, scheduling); each puts 1 + its draft tokens into the pass, and past
        `batch_tokens` in all the pass costs in proportion, so verifying drafts competes with the other
        requests. Each stream advances on its own clock rather than in a lockstep batch: simpler, and the
        same in steady state."""
        if not self.load_model:
            return self.step_s * cost
        crowding = 1 + self.load_factor * max(active - 1, 0)
        saturation = max(1.0, tokens / self.batch_tokens) if self.batch_tokens else 1.0
        return self.step_s * cost * crowding * saturation

    async def _send(self, writer: asyncio.StreamWriter, status: int, payload: Any, headers: dict[str, str]) -> None:
        body = json.dumps(payload).encode()
        head = [f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}", "Content-Type: application/json"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        head.append(f"Content-Length: {len(body)}")
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    async def _send_padded(
        self, writer: asyncio.StreamWriter, status: int, prefix: bytes, pad_bytes: int, suffix: bytes
    ) -> bool:
        """A JSON body of `pad_bytes` x's between `prefix` and `suffix`, written as it goes (never whole in
        memory) and counted in `flood_sent`; False when the client hung up before the end."""
        head = f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\nContent-Type: application/json\r\n"
        writer.write(f"{head}Content-Length: {len(prefix) + pad_bytes + len(suffix)}\r\n\r\n".encode() + prefix)
        piece = b"x" * (1 << 20)
        try:
            left = pad_bytes
            while left > 0:
                writer.write(piece[:left])
                self.flood_sent += min(left, len(piece))
                left -= len(piece)
                await writer.drain()
            writer.write(suffix)
            await writer.drain()
        except (ConnectionError, OSError):
            self.disconnects += 1
            return False
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
        refused = await self._refused(request, reply, writer)
        if refused is not None:
            return refused
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
        answer = reply.text if reply.text is not None else model_answer(request, self.responder)
        paced = pace(request, answer, self.kind, self.profile, self.speculation, reply.finish_reason, self.proposer)
        base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time())}

        def event(payload: dict[str, Any]) -> None:
            chunk(b"data: " + json.dumps({**base, "model": request["model"], **payload}).encode() + b"\n\n")

        self.active_streams += 1
        self.peak_active_streams = max(self.peak_active_streams, self.active_streams)
        stream_id = next(self._stream_ids)
        try:
            event({"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})
            await writer.drain()
            if paced.wait_passes:
                await asyncio.sleep(self.prefill_s(paced.prompt_tokens))
            if not await self._stream_steps(request, reply, paced, stream_id, event, reader, writer):
                return False
            self._end_events(request, paced, event)
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

    async def _refused(self, request: dict[str, Any], reply: Reply, writer: asyncio.StreamWriter) -> bool | None:
        """An error reply, as the backend sends it (an unknown model, a refused `prediction`, a status
        the test asked for); None when the request is answered with a stream."""
        if request.get("model") not in self.models:
            message = f"The model `{request.get('model')}` does not exist."
            await self._send(writer, 404, {"error": {"message": message}}, {})
            return True
        if reply.reject_prediction and "prediction" in request:
            message = "Unrecognized request argument supplied: prediction"
            await self._send(writer, 400, {"error": {"message": message}}, {})
            return True
        if reply.status != 200 and reply.error_body_bytes:
            padded = reply.error_body_bytes
            return await self._send_padded(writer, reply.status, b'{"error": {"message": "', padded, b'"}}')
        if reply.status != 200:
            await self._send(writer, reply.status, {"error": {"message": reply.error or "error"}}, reply.headers)
            return True
        return None

    async def _stream_steps(
        self,
        request: dict[str, Any],
        reply: Reply,
        paced: Paced,
        stream_id: int,
        event: Callable[[dict[str, Any]], None],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        """The answer's content chunks, one a forward pass, paced; False when the reply drops the
        connection (or the client did, during a stall)."""
        sim, steps = paced.sim, paced.steps
        sent = 0
        emitted = 0
        options = request.get("stream_options") or {}
        continuous_usage = self.kind == "vllm" and bool(options.get("continuous_usage_stats"))
        stalled = False
        for index, text in enumerate(steps):
            if self.load_model:
                self._in_pass[stream_id] = 1 + (sim.drafts[index] if index < len(sim.drafts) else 0)
            await asyncio.sleep(self.pass_s(len(self._in_pass), sum(self._in_pass.values()), paced.pass_costs[index]))
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
        return True

    def _end_events(self, request: dict[str, Any], paced: Paced, event: Callable[[dict[str, Any]], None]) -> None:
        """The last chunk and the usage, each backend kind its own way."""
        sim, steps, prompt_tokens = paced.sim, paced.steps, paced.prompt_tokens
        completion_tokens = sum(len(tokenize(s)) for s in steps)
        final: dict[str, Any] = {"index": 0, "delta": {}, "finish_reason": paced.finish}
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        self.counters["accepted"] += sim.accepted
        self.counters["drafted"] += sim.drafted
        wants_usage = bool((request.get("stream_options") or {}).get("include_usage"))
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
            if wants_usage:
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
            if wants_usage:
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
