"""The GETs that read what a backend says of itself (`/v1/models`, `/metrics`, `/props`: backend/clients.
get_capped), against a hostile or broken server on 127.0.0.1: a raw asyncio server that answers each
request with the bytes a test gives it, headers included, so that it can lie about anything."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from lsp_server.backend import metrics
from lsp_server.backend.clients import BodyTooLarge, BodyUnreadable
from lsp_server.backend.metrics import METRICS_MAX_BYTES, fetch_metrics_text
from lsp_server.backend.proposer_probe import ProposerFound
from lsp_server.backend.window import fetch_json, models_url, probe_window
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import BackendConfig
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorError, RefactorRequest
from lsp_server.testing.fake_backend import FakeBackend
from tests.cli_harness import run_cli
from tests.conftest import backend_table, write_config

Answer = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Answer], Awaitable[str]]]:
    """`await serve(answer)`: the URL of a server that answers every request with `answer`."""
    servers: list[asyncio.Server] = []

    async def start(answer: Answer) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                await reader.readuntil(b"\r\n\r\n")
                await answer(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError):
                pass  # the client hung up: what these tests want
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"

    yield start
    for server in servers:
        server.close()
        await server.wait_closed()


def whole(body: bytes, *headers: str) -> Answer:
    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = ["HTTP/1.1 200 OK", "Content-Type: text/plain", f"Content-Length: {len(body)}", *headers]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + body)
        await writer.drain()

    return answer


def gzipped(chunks: Iterable[bytes]) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    return b"".join([*(packer.compress(chunk) for chunk in chunks), packer.flush()])


ZEROS_256_MB = [b"0" * (1 << 20)] * 256


async def peak_bytes_of(read: Awaitable[object]) -> tuple[object, int]:
    """What `read` gave (or raised) and the most memory Python objects held meanwhile."""
    tracemalloc.start()
    try:
        try:
            result: object = await read
        except Exception as exc:
            result = exc
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


async def test_gzip_inside_gzip_is_refused_before_it_is_decoded(serve: Callable[[Answer], Awaitable[str]]) -> None:
    # 256 MB of zeros, gzipped twice: a few hundred bytes on the wire. Before, httpx decoded the inner
    # layer whole in one call (2 GB of memory for the 1 GB version) and only then was the cap checked.
    body = gzipped([gzipped(ZEROS_256_MB)])
    assert len(body) < 4096
    url = await serve(whole(body, "Content-Encoding: gzip, gzip"))
    result, peak = await peak_bytes_of(fetch_metrics_text(url + "/metrics"))
    assert isinstance(result, BodyUnreadable) and "Content-Encoding: gzip, gzip" in str(result) and url in str(result)
    assert peak < 16 << 20


async def test_a_gzip_bomb_stops_at_the_cap_while_it_is_decoded(serve: Callable[[Answer], Awaitable[str]]) -> None:
    body = gzipped(ZEROS_256_MB)  # 250 KB on the wire; httpx decoded each 64 KB read into 64 MB
    url = await serve(whole(body, "Content-Encoding: gzip"))
    result, peak = await peak_bytes_of(fetch_metrics_text(url + "/metrics"))
    assert isinstance(result, BodyTooLarge) and url in str(result)
    assert peak < 4 * METRICS_MAX_BYTES


async def test_a_gzipped_page_is_read(serve: Callable[[Answer], Awaitable[str]]) -> None:
    page = "vllm:spec_decode_num_draft_tokens_total 36.0\n"
    url = await serve(whole(gzipped([page.encode()]), "Content-Encoding: gzip"))
    assert await fetch_metrics_text(url + "/metrics") == page


async def test_a_damaged_gzip_body_is_refused(serve: Callable[[Answer], Awaitable[str]]) -> None:
    url = await serve(whole(b"\x1f\x8b\x08\x00garbage-not-deflate", "Content-Encoding: gzip"))
    with pytest.raises(BodyUnreadable, match="damaged gzip"):
        await fetch_metrics_text(url + "/metrics")


# -- `check`, as a user runs it, against a server whose /v1/models is JSON nested 20,000 deep --------

DEEP = b"[" * 20_000 + b"]" * 20_000  # 40 KB: under every size cap, past the JSON parser's depth


@pytest.fixture
def deep_models() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = DEEP if self.path.endswith("/models") else b"vllm:num_requests_running 0\n"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_check_says_a_models_list_nested_too_deep_is_none(tmp_path: Path, deep_models: str) -> None:
    # Before: RecursionError escaped `except ValueError` and `check` died with a traceback.
    config = write_config(tmp_path, h={"type": "vllm", "base_url": deep_models, "model": "local"})
    result = run_cli("check", config=config, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"FAIL: the backend 'h' at {deep_models} answered GET /models with something that is not a list" in (
        result.stdout
    )


async def test_the_window_probe_reads_no_window_from_json_nested_too_deep(deep_models: str) -> None:
    backend = BackendConfig(name="h", type="vllm", base_url=deep_models, model="local")
    with pytest.raises(BodyUnreadable, match="nested too deep"):
        await fetch_json(models_url(backend), backend)
    assert await probe_window(backend) is None


# -- redirects: never followed, so the key never reaches a host the user did not name -------------


class Recorder:
    """A threaded server that answers `routes[path]` (status, headers, body) and records each request's
    path and Authorization header: the host a redirect points to."""

    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        self.seen: list[tuple[str, str | None]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                recorder.seen.append((self.path, self.headers.get("Authorization")))
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, headers, body = routes.get(self.path, (404, {}, b"<html>Not Found</html>"))
                self.send_response(status)
                for name, value in ({"Content-Length": str(len(body))} | headers).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("redirected", ["/v1/models", "/v1/chat/completions"])
def test_check_follows_no_redirect_and_says_where_it_points(tmp_path: Path, redirected: str) -> None:
    elsewhere = Recorder({})
    models = (200, {"Content-Type": "application/json"}, b'{"data": [{"id": "local"}]}')
    moved = (307, {"Location": elsewhere.url + redirected}, b"")
    routes = {"/v1/models": models, "/v1/chat/completions": moved} | {redirected: moved}
    backend = Recorder(routes)
    table = {"type": "vllm", "base_url": backend.url + "/v1", "model": "local", "api_key_env": "HOSTILE_KEY"}
    try:
        result = run_cli("check", config=write_config(tmp_path, h=table), cwd=tmp_path, env={"HOSTILE_KEY": "sk-t"})
    finally:
        elsewhere.close()
        backend.close()
    assert result.returncode == 1, result.stderr
    assert elsewhere.seen == []  # nothing, the key least of all, went where the redirect pointed
    assert ("/v1/models", "Bearer sk-t") in backend.seen
    assert f"HTTP 307: a redirect to {elsewhere.url}, not followed (the API key would go with it)" in result.stdout
    assert "sk-t" not in result.stdout + result.stderr


# -- a /metrics URL that answers a page that is not vLLM's ------------------------------------------

OK_STREAM = (
    b'data: {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "local", "choices": [{"index": 0, '
    b'"delta": {"content": "ok"}, "finish_reason": "stop"}]}\n\n'
    b'data: {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "local", "choices": [], '
    b'"usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}\n\ndata: [DONE]\n\n'
)


def test_check_does_not_call_a_page_that_is_not_vllms_metrics_no_speculation(tmp_path: Path) -> None:
    # A proxy's login page, 200 and HTML: before, "no counters on it" became "this server does not
    # speculate" in `check`, and the proposer "no" on the same grounds.
    backend = Recorder(
        {
            "/v1/models": (200, {"Content-Type": "application/json"}, b'{"data": [{"id": "local"}]}'),
            "/v1/chat/completions": (200, {"Content-Type": "text/event-stream"}, OK_STREAM),
            "/metrics": (200, {"Content-Type": "text/html"}, b"<html><body>Sign in \xff\xfe</body></html>"),
        }
    )
    table = {"type": "vllm", "base_url": backend.url + "/v1", "model": "local"}
    try:
        result = run_cli("check", config=write_config(tmp_path, h=table), cwd=tmp_path)
    finally:
        backend.close()
    assert result.returncode == 0, result.stderr
    assert "does not speculate" not in result.stdout
    assert f"whether the server speculates is not known ({backend.url}/metrics" in result.stdout
    assert "proposer: unknown:" in result.stdout


# -- a /metrics that trickles a byte a second ----------------------------------------------------


async def test_a_trickling_metrics_page_times_out_naming_its_url(serve: Callable[[Answer], Awaitable[str]]) -> None:
    async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n")
        for _ in range(1000):
            writer.write(b"#")
            await writer.drain()
            await asyncio.sleep(0.1)

    url = await serve(trickle)
    started = asyncio.get_running_loop().time()
    with pytest.raises(TimeoutError, match=rf"^{url}/metrics did not answer within 0\.5 s$"):
        await fetch_metrics_text(url + "/metrics", timeout_s=0.5)
    assert asyncio.get_running_loop().time() - started < 2


class Trickling(Recorder):
    """A vLLM-like server whose /metrics sends a byte every half second; everything else answers at once."""

    def __init__(self) -> None:
        super().__init__(
            {
                "/v1/models": (200, {"Content-Type": "application/json"}, b'{"data": [{"id": "local"}]}'),
                "/v1/chat/completions": (200, {"Content-Type": "text/event-stream"}, OK_STREAM),
            }
        )
        handler = self.server.RequestHandlerClass
        answer = handler._answer  # type: ignore[attr-defined]
        recorder = self

        def trickle_metrics(self: BaseHTTPRequestHandler) -> None:
            if self.path != "/metrics":
                answer(self)
                return
            recorder.seen.append((self.path, None))
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            for _ in range(100):
                try:
                    self.wfile.write(b"#")
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.5)

        handler.do_GET = trickle_metrics  # type: ignore[attr-defined]


async def test_a_trickling_metrics_page_delays_one_refactor_not_every_one(engine: Engine) -> None:
    # Before: each refactor waited FETCH_TIMEOUT_S (3 s) for /metrics before its request, every time.
    backend = Trickling()
    config = build_config(
        [
            Layer(
                "t",
                {
                    "default_backend": "h",
                    "backends": {"h": {"type": "vllm", "base_url": backend.url + "/v1", "model": "local"}},
                },
            )
        ]
    )
    engine.proposers.remember(config.backend("h"), ProposerFound(False, "not asked here"))
    text = "x = 1\n"
    request = RefactorRequest("a.py", text, 0, len(text), instruction="rename x", scope="selection")
    try:
        waits = []
        for _ in range(3):
            started = time.monotonic()
            with contextlib.suppress(RefactorError):  # "ok" is no code: refused, but measured
                await engine.refactor(request, config)
            waits.append(time.monotonic() - started)
    finally:
        backend.close()
    assert waits[0] >= metrics.FETCH_TIMEOUT_S - 0.5
    assert max(waits[1:]) < 1.5, waits
    assert [path for path, _ in backend.seen].count("/metrics") == 1


async def test_counters_no_counter_can_have_say_nothing_of_speculation(
    serve: Callable[[Answer], Awaitable[str]],
) -> None:
    """An infinite or negative draft counter is no sign the server speculates, nor a figure for the bench's
    report (JSON has no Infinity); and counters that went down between two readings (a restart) count
    no drafts."""
    from lsp_server.bench.probes import Counters, describe_server, drafts_between, read_counters

    page = b"vllm:num_requests_running 0\nvllm:spec_decode_num_draft_tokens_total +Inf\n"
    url = await serve(whole(page))
    backend = BackendConfig(name="h", type="vllm", base_url=url + "/v1", model="local")
    info = (await describe_server(backend)).to_dict()
    assert info["speculative_decoding"].startswith("unknown"), info
    assert "metrics_counters" not in info
    json.dumps(info, allow_nan=False)
    assert await read_counters(backend) is None

    before = Counters(url, {metrics.DRAFTED: 900.0, metrics.ACCEPTED: 500.0})
    restarted = Counters(url, {metrics.DRAFTED: 40.0, metrics.ACCEPTED: 10.0})
    assert drafts_between(before, restarted) is None
    moved = drafts_between(before, Counters(url, {metrics.DRAFTED: 1000.0, metrics.ACCEPTED: 560.0}))
    assert moved is not None and (moved.drafted, moved.accepted) == (100.0, 60.0)


# A draft counter whose value is no number: before, its sample was dropped and the page read as one without
# draft counters: "does not speculate" (check, the bench's header, the proposer probe, which did not ask).
NO_NUMBER = ["NaN", "12abc", "1_000"]


@pytest.mark.parametrize("value", NO_NUMBER)
async def test_a_draft_counter_that_is_no_number_says_nothing_of_speculation(
    serve: Callable[[Answer], Awaitable[str]], value: str
) -> None:
    from lsp_server.backend.proposer_probe import probe_proposer
    from lsp_server.bench.probes import describe_server, read_counters

    page = f"vllm:num_requests_running 0\nvllm:spec_decode_num_draft_tokens_total {value}\n"
    url = await serve(whole(page.encode()))
    backend = BackendConfig(name="h", type="vllm", base_url=url + "/v1", model="local")
    info = (await describe_server(backend)).to_dict()
    assert info["speculative_decoding"].startswith("unknown"), info
    assert "metrics_counters" not in info
    assert await read_counters(backend) is None
    asked: list[object] = []

    async def send(request: object) -> Any:
        asked.append(request)
        raise ConnectionError("not answered here")

    found = await probe_proposer(send, url + "/metrics")
    assert asked and found.present is None, found  # asked, not told "does not speculate"


async def test_an_accepted_counter_in_one_reading_only_counts_no_drafts() -> None:
    from lsp_server.bench.probes import Counters, drafts_between

    # Before: the missing reading counted as 0, and every token accepted since the server started was the bench's.
    drafted_only = Counters("u", {metrics.DRAFTED: 900.0})
    both = Counters("u", {metrics.DRAFTED: 1000.0, metrics.ACCEPTED: 60.0})
    assert drafts_between(drafted_only, both) is None
    assert drafts_between(both, Counters("u", {metrics.DRAFTED: 1100.0})) is None


@pytest.mark.parametrize("value", ["-5", *NO_NUMBER])
async def test_check_on_counters_no_counter_can_have_says_it_does_not_know(
    serve: Callable[[Answer], Awaitable[str]], tmp_path: Path, make_fake: Callable[..., FakeBackend], value: str
) -> None:
    page = f"vllm:num_requests_running 0\nvllm:spec_decode_num_draft_tokens_total {value}\n".encode()
    url = await serve(whole(page))
    config = write_config(tmp_path, local={**backend_table(make_fake("vllm")), "metrics_url": url + "/metrics"})
    result = await asyncio.to_thread(run_cli, "check", config=config, cwd=tmp_path)
    lines = [line for line in result.stdout.splitlines() if line.startswith("prediction:")]
    assert lines, (result.stdout, result.stderr)
    line = lines[0]
    assert "whether the server speculates is not known" in line and "counters that no counter can have" in line, line
    assert "does not speculate" not in line and "drafts from it" not in line
