"""A small OpenAI-compatible server for tests and benchmarks, on 127.0.0.1 only.

It streams real SSE over real HTTP/1.1 (chunked, keep-alive), reports `usage` with
`completion_tokens_details`, and simulates speculative decoding: every forward pass costs `step_s`
and emits the draft tokens that match the answer plus one, so a good prediction gives a real,
measurable, known speed-up (`speculation.simulate` says how many passes an answer takes).

Kinds: "openai" drafts from the request's `prediction` field; "vllm" ignores that field and drafts
from the prompt and its own answer so far (n-gram lookup, as vLLM's proposer searches both), ends
with a usage chunk whose `choices` is empty, can add per-request `metrics.speculative_decoding`, and
counts drafts on `/metrics`; with `proposer=True` it drafts as a vLLM serving refactor-lsp's proposer
does (lsp_server/proposer): from the prediction a request sends in `vllm_xargs`, and answers the
proposer probe. "llamacpp" drafts likewise and reports `timings`. Faults are queued with
`enqueue(Reply(...))`.

How fast the prediction pays is its `profile`: `perfect` (the default, the upper bound) or one
calibrated to a real backend (`profiles`). Its load model, off by default, makes a pass dearer while
other answers stream (`ReplyStream.pass_s`; benchmarks/README.md, "The loopback backend's load
model"); `peak_active_streams` records how many answers streamed at once. Anything measured against
it is simulated, and its `/models` entries say so (`owned_by`, and `profile`).

This module is the server: its state, its life on a thread, its routes, its command line
(`python -m lsp_server.testing.fake_backend --kind vllm --port 8000`; `--help` for the rest). The
package's `__init__` maps the modules beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from ..proposer import PROBE_KEY
from ..testing import context_limit
from .profiles import PERFECT, PROFILES, BackendProfile, profile_named
from .replies import Reply, ReplyStream
from .responders import SlippingResponder, corpus_responder, rule_responder


def _profile_with(
    profile: BackendProfile, kind: str, draft_len: int | None, prefill_tokens_per_pass: float | None
) -> BackendProfile:
    """`profile` for a `kind` backend, with the draft length and prefill speed a test set (the upper
    bound's only: a calibrated profile is kept whole)."""
    if (prefill_tokens_per_pass or 0) < 0:
        raise ValueError("prefill_tokens_per_pass must be 0 (off) or more")
    if kind not in profile.kinds:
        raise ValueError(f"the profile {profile.name} is for a {' or '.join(profile.kinds)} backend, not {kind}")
    changed = [
        name
        for name, value in (("draft_len", draft_len), ("prefill_tokens_per_pass", prefill_tokens_per_pass))
        if value is not None
    ]
    if changed and not profile.upper_bound:
        fixed = " and ".join(changed)
        raise ValueError(f"the profile {profile.name} is calibrated as a whole: {fixed} cannot be changed")
    return dataclasses.replace(
        profile,
        draft_len=profile.draft_len if draft_len is None else draft_len,
        prefill_tokens_per_pass=profile.prefill_tokens_per_pass
        if prefill_tokens_per_pass is None
        else prefill_tokens_per_pass,
    )


class FakeBackend(ReplyStream):
    """The server, started with `start()` (or as a context manager) on a thread of its own. With the
    `perfect` profile, `draft_len` and `prefill_tokens_per_pass` may be set (the latter makes the time to
    first token grow with the prompt, as on a real server); a calibrated profile is kept whole."""

    def __init__(
        self,
        kind: str = "openai",
        *,
        step_s: float = 0.002,
        draft_len: int | None = None,
        models: tuple[str, ...] = ("fake-model",),
        responder: Callable[[dict[str, Any]], str] = rule_responder,
        spec_decode_metrics: bool = True,
        speculation: bool = True,
        reject_prediction: bool = False,
        host: str = "127.0.0.1",
        port: int = 0,
        load_factor: float = 0.0,
        batch_tokens: int = 0,
        prefill_tokens_per_pass: float | None = None,
        profile: BackendProfile = PERFECT,
        context_window: int = 0,
        reports_window: bool = True,
        roots: dict[str, str] | None = None,
        proposer: bool = False,
    ) -> None:
        self.kind = kind
        self.step_s = step_s
        self.profile = _profile_with(profile, kind, draft_len, prefill_tokens_per_pass)
        if load_factor < 0 or batch_tokens < 0:
            raise ValueError("load_factor and batch_tokens must be 0 (off) or more")
        self.models = models
        # Bytes of padding in one more /models entry (0: none): a list too large to be read whole.
        self.models_padding_bytes = 0
        # vLLM's `root` in each /v1/models entry: where the weights are (default: the name, as vLLM's own
        # when it serves a model under the name it was loaded by).
        self.roots = roots or {}
        self.responder = responder
        self.spec_decode_metrics = spec_decode_metrics
        self.speculation = speculation
        self.reject_prediction = reject_prediction
        self.proposer = proposer  # "vllm": drafts from the `vllm_xargs` prediction, as refactor-lsp's proposer
        self.host = host
        self.port = port
        self.load_factor = load_factor
        self.batch_tokens = batch_tokens  # 0: no limit
        # Prompt + answer tokens allowed (0: no limit), reported and enforced as the kind's server does
        # (context_limit); `reports_window` False: only its refusal tells.
        self.context_window = context_window
        self.reports_window = reports_window
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
        # By a completion request's index in `requests`: when the answer began and when it was done (monotonic).
        self.answer_spans: dict[int, tuple[float, float]] = {}
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
    def draft_len(self) -> int:
        return self.profile.draft_len

    @property
    def prefill_tokens_per_pass(self) -> float:
        """Prompt tokens read in the time of one pass, before the first answer token (0: no time at all)."""
        return self.profile.prefill_tokens_per_pass

    def describe(self) -> str:
        """What this server simulates, in a line (its `/models` entries carry it, and its profile's name)."""
        text = f"simulated by refactor-lsp's fake backend ({self.kind}, {self.step_s * 1000:g} ms a pass; "
        text += self.profile.describe()
        if not self.speculation:
            text += "; NO speculation: the profile's baseline, its time to first token only"
        if self.load_model:
            text += f"; load factor {self.load_factor:g}, {self.batch_tokens or 'unlimited'} tokens a pass"
        return text + ")"

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
            self.answer_spans.clear()
            self.disconnects = 0
            self.flood_sent = 0
            self.models_padding_bytes = 0
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
            listed = {
                "object": "list",
                "data": [
                    {
                        "id": m,
                        "object": "model",
                        "owned_by": self.describe(),
                        "profile": self.profile.name,
                        **({"root": self.roots.get(m, m)} if self.kind == "vllm" else {}),
                        **context_limit.model_card(self.kind, self.context_window, self.reports_window),
                    }
                    for m in self.models
                ],
            }
            if self.models_padding_bytes:
                prefix = json.dumps(listed).encode()[: -len(b"]}")] + b', {"id": "padding", "description": "'
                return await self._send_padded(writer, 200, prefix, self.models_padding_bytes, b'"}]}')
            await self._send(writer, 200, listed, {})
            return True
        props = context_limit.props(self.kind, self.context_window, self.reports_window)
        if method == "GET" and path == "/props" and props is not None:
            await self._send(writer, 200, props, {})
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
                index = len(self.requests) - 1
                self.headers_seen.append(headers)
                # The proposer probe's requests (backend/proposer_probe.py) are the client's bookkeeping, as its
                # /metrics reads are: a reply queued for "the next request" is kept for the next real one.
                probe = PROBE_KEY in (request.get("vllm_xargs") or {})
                queued = self.replies and not probe
                reply = self.replies.pop(0) if queued else Reply(reject_prediction=self.reject_prediction)
            refused = context_limit.refusal(self.kind, self.context_window, request)
            if refused is not None:
                await self._send(writer, 400, refused, {})
                return True
            cap = context_limit.answer_cap(self.kind, self.context_window, request)
            if cap is not None:  # a copy: the request as received stays in `requests`
                request = {**request, "max_tokens": cap, "max_completion_tokens": None}
            began = time.monotonic()
            try:
                return await self._complete(request, reply, reader, writer)
            finally:
                self.answer_spans[index] = (began, time.monotonic())
        await self._send(writer, 404, {"error": {"message": f"no route {path}"}}, {})
        return True


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="openai", choices=["openai", "vllm", "llamacpp"])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--step-ms", type=float, default=2.0)
    parser.add_argument("--model", action="append", default=None)
    parser.add_argument("--no-speculation", action="store_true")
    parser.add_argument(
        "--proposer", action="store_true", help="vllm: draft from the vllm_xargs prediction (refactor-lsp's proposer)"
    )
    parser.add_argument(
        "--profile",
        default=PERFECT.name,
        choices=list(PROFILES),
        help="how fast the prediction pays, as a real backend's, calibrated to measured figures "
        f"(lsp_server/testing/profiles.py); default {PERFECT.name}, the upper bound",
    )
    parser.add_argument(
        "--draft-len", type=int, default=None, help=f"draft tokens per pass ({PERFECT.name} only; default 8)"
    )
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
        default=None,
        help="prompt tokens read in the time of one pass before the first answer token: time to first token "
        f"grows with the prompt, as on a real server ({PERFECT.name} only; default 0: the prompt costs nothing)",
    )
    parser.add_argument(
        "--context-window",
        type=int,
        default=0,
        help="prompt + answer tokens allowed, reported and enforced as the kind's server does "
        "(lsp_server/testing/context_limit.py; default 0: no limit)",
    )
    parser.add_argument(
        "--corpus",
        metavar="DIR",
        help="answer each task of this bench corpus (benchmarks/tasks) with its expected region, as a perfect "
        "model would (default: follow `rename A to B` instructions, else echo the region)",
    )
    parser.add_argument(
        "--slip",
        metavar="NAME",
        help="a model that slips: one answer in --slip-every breaks the code this way (testing/slips.py: "
        "'dropped closing bracket', 'unterminated string', ...), and its repair mends it (the check before an "
        "edit)",
    )
    parser.add_argument(
        "--slip-every", type=int, default=3, metavar="N", help="with --slip: one answer in N (default 3)"
    )
    return parser


def main() -> None:
    parser = _parser()
    args = parser.parse_args()
    if args.load_factor < 0 or args.batch_tokens < 0 or (args.prefill_tokens_per_pass or 0) < 0:
        parser.error("--load-factor, --batch-tokens and --prefill-tokens-per-pass must be 0 (off) or more")
    profile = profile_named(args.profile)
    if args.kind not in profile.kinds:
        parser.error(f"--profile {profile.name} is for --kind {' or '.join(profile.kinds)}, not {args.kind}")
    if not profile.upper_bound and (args.draft_len is not None or args.prefill_tokens_per_pass is not None):
        parser.error(
            f"--profile {profile.name} is calibrated as a whole: leave out --draft-len and --prefill-tokens-per-pass"
        )
    responder: Callable[[dict[str, Any]], str] = rule_responder
    if args.corpus:
        from ..bench.tasks import BenchError

        try:
            responder = corpus_responder(args.corpus, prime_applies=True)
        except BenchError as exc:
            parser.error(f"--corpus: {exc}")
    if args.slip:
        from .slips import SLIPS

        if args.slip not in SLIPS:
            parser.error(f"--slip: one of {', '.join(repr(name) for name in SLIPS)}, not {args.slip!r}")
        responder = SlippingResponder(responder, slip=args.slip, every=args.slip_every, language=None)
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
        profile=profile,
        responder=responder,
        context_window=args.context_window,
        proposer=args.proposer,
    ).start()
    print(backend.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        threading.Event().wait()


if __name__ == "__main__":
    main()
