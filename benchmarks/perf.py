#!/usr/bin/env python3
"""Performance figures for refactor-lsp, each next to its target (issue 7).

    python benchmarks/perf.py [--json FILE|-] [--only overhead,edits,scope,startup,streaming] [--pairs N]

Prints one table row per figure: the median measured, the target, PASS or FAIL. Ratios come from
runs interleaved in the same process (A B A B ...), as medians of per-pair ratios. Exits 1 when a
target is missed. Everything runs on 127.0.0.1 with the loopback test backend (lsp_server/testing/fake_backend.py),
which simulates a model's forward passes (`step_s` each) and speculative decoding; the server is the
real `python -m lsp_server` over stdio, driven by pygls's own LSP client. Nothing touches the real
home directory. Runs in about two minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import perf_inputs as inputs  # noqa: E402

SECTIONS = ("edits", "startup", "overhead", "streaming", "scope", "verify")
OVERHEAD_STEP_S = 0.01  # one simulated forward pass: 10 ms, so the backend dominates as a real model does
SCOPE_STEP_S = 0.002
STREAM_STEP_S = 0.01
FLOOD_STEP_S = 0.0002
DIFFLIB_CAP_S = 2.0
VERIFY_LINES = 20_000
VERIFY_TARGET_S = 0.050  # issue 31: the check before an edit adds at most 50 ms (p99) on a 20,000-line file
LOCAL_VLLM = "http://127.0.0.1:8000/v1"


# -- results -----------------------------------------------------------------------------------------


@dataclass
class Row:
    section: str
    figure: str
    measured: str
    target: str
    ok: bool | None  # None: information, no target
    value: float | None = None


ROWS: list[Row] = []


def row(section: str, figure: str, measured: str, target: str, ok: bool | None, value: float | None = None) -> None:
    ROWS.append(Row(section, figure, measured, target, ok, value))
    status = "" if ok is None else ("PASS" if ok else "FAIL")
    print(f"  {figure:<84} {measured:>12}  {target:<12} {status}", flush=True)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of `repeat` calls, and the last result."""
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


# -- an isolated environment -------------------------------------------------------------------------

STATE = Path(tempfile.mkdtemp(prefix="refactor-lsp-perf-"))
ENV = {
    **{k: v for k, v in os.environ.items() if k not in ("REFACTOR_LSP_CONFIG", "OPENAI_API_KEY")},
    "HOME": str(STATE / "home"),
    "XDG_CONFIG_HOME": str(STATE / "config"),
    "XDG_STATE_HOME": str(STATE / "state"),
    "XDG_CACHE_HOME": str(STATE / "cache"),
    "PYTHONUNBUFFERED": "1",
}
os.environ.update({k: ENV[k] for k in ("HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME")})
for _k in ("REFACTOR_LSP_CONFIG", "OPENAI_API_KEY"):
    os.environ.pop(_k, None)
WORKSPACE = STATE / "workspace"
WORKSPACE.mkdir(parents=True)
SERVER_CMD = [sys.executable, "-m", "lsp_server"]


# -- 2. edits ----------------------------------------------------------------------------------------


def _difflib_job(old: str, new: str, out: Any) -> None:
    from difflib import SequenceMatcher

    t0 = time.perf_counter()
    SequenceMatcher(None, old, new).get_opcodes()
    out.put(time.perf_counter() - t0)


def difflib_time(old: str, new: str, cap: float) -> float | None:
    """Plain difflib.SequenceMatcher on the whole text (characters), in a child process; None past `cap`."""
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_difflib_job, args=(old, new, queue), daemon=True)
    proc.start()
    proc.join(cap)
    if proc.is_alive():
        proc.kill()
        proc.join()
        return None
    return queue.get() if not queue.empty() else None


def bench_edits() -> None:
    from lsp_server.formats.edits import apply_replacements, region_replacements
    from lsp_server.text import PositionMapper

    def to_lsp(old: str, new: str) -> list[Any]:
        """What the server does: replacements, then LSP positions for each."""
        edits = region_replacements(old, 0, len(old), new)
        mapper = PositionMapper(old)
        return [(mapper.position(e.start), mapper.position(e.end), e.text) for e in edits]

    f2k = inputs.python_file(2_000)
    f20k = inputs.python_file(20_000)
    f100k = inputs.python_file(100_000)
    same20k = inputs.identical_lines(20_000)
    n = inputs.function_count(2_000) // 2
    cases = [
        # (figure, old, new, target seconds or None, repeats)
        ("2,000 lines, one function changed", f2k, f2k.replace(f"total_{n}", f"running_total_{n}"), 0.005, 15),
        ("2,000 lines, 1 % of lines changed (scattered)", f2k, inputs.change_lines(f2k, 0.01), 0.005, 15),
        ("20,000 lines, 1 % changed", f20k, inputs.change_lines(f20k, 0.01), 0.030, 7),
        ("100,000 lines, 1 % changed", f100k, inputs.change_lines(f100k, 0.01), 1.0, 3),
        ("100,000 lines, fully rewritten", f100k, inputs.rewrite_all(f100k), 1.0, 3),
        ("adversarial: 20,000 identical lines, 1 % changed", same20k, inputs.change_lines(same20k, 0.01), 1.0, 5),
        ("adversarial: 20,000 lines, every other line changed", f20k, inputs.alternating(f20k), 1.0, 3),
        ("adversarial: 20,000 lines, functions reordered", f20k, inputs.shuffled_blocks(f20k), 1.0, 3),
        ("adversarial: 20,000 lines, fully rewritten", f20k, inputs.rewrite_all(f20k), 1.0, 3),
    ]
    print(
        f"\n[edits] region_replacements + PositionMapper positions; difflib = SequenceMatcher(None, old, new) "
        f"on the whole text, capped at {DIFFLIB_CAP_S:g} s"
    )
    for figure, old, new, target, repeat in cases:
        median, positions = timed(lambda old=old, new=new: to_lsp(old, new), repeat)
        edits = region_replacements(old, 0, len(old), new)
        assert apply_replacements(old, edits) == new, figure  # correctness, not timed
        base = difflib_time(old, new, DIFFLIB_CAP_S)
        versus = f"difflib {ms(base)}" if base is not None else f"difflib > {DIFFLIB_CAP_S:g} s"
        row(
            "edits",
            f"{figure} ({len(positions)} edits; {versus})",
            ms(median),
            f"≤ {ms(target)}",
            median <= target,
            median,
        )


# -- LSP plumbing ------------------------------------------------------------------------------------


def frame(payload: dict[str, Any]) -> bytes:
    body = json.dumps(payload).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: Any) -> dict[str, Any]:
    length = 0
    while True:
        line = stream.readline()
        if not line:
            raise EOFError("the server closed its output")
        if line in (b"\r\n", b"\n"):
            break
        name, _, value = line.decode("ascii").partition(":")
        if name.strip().lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))


def _utf16_offset(text: str, line: int, character: int) -> int:
    """Client-side position → offset (an independent implementation, as an editor has)."""
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]
    if line >= len(starts):
        return len(text)
    start = starts[line]
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    content = text[start:end].rstrip("\r\n")
    units = 0
    for i, ch in enumerate(content):
        if units >= character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(content)


class Editor:
    """pygls's LSP client driving `python -m lsp_server`; records when things arrive."""

    def __init__(self, progress_fields: bool = False) -> None:
        from lsprotocol import types
        from pygls.lsp.client import LanguageClient

        self.types = types
        self.client = LanguageClient("refactor-lsp-perf", "1")
        # As the VS Code extension and the Neovim plugin: ask for `refactorLsp/progress`, and read it.
        self.progress_fields = progress_fields
        self.fields_seen = 0
        self.buffers: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.apply_times: list[float] = []  # perf_counter() when workspace/applyEdit arrived
        self.apply_cpu: list[float] = []  # the server's CPU seconds then (see cpu_seconds)
        self.server_pid: int | None = None
        self.progress: list[tuple[float, str, str]] = []  # (time.time(), token, kind)
        self.tokens: list[str] = []
        self.stats: list[dict[str, Any]] = []
        self.edit_arrived = asyncio.Event()
        client = self.client

        @client.feature(types.WORKSPACE_APPLY_EDIT)
        def on_apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
            self.apply_times.append(time.perf_counter())
            if self.server_pid:
                self.apply_cpu.append(cpu_seconds(self.server_pid))
            for change in params.edit.document_changes or []:
                uri = change.text_document.uri
                text = self.buffers[uri]
                spans = [
                    (
                        _utf16_offset(text, e.range.start.line, e.range.start.character),
                        _utf16_offset(text, e.range.end.line, e.range.end.character),
                        e.new_text,
                    )
                    for e in change.edits
                ]
                for start, end, new in sorted(spans, reverse=True):
                    text = text[:start] + new + text[end:]
                self.change(uri, text)
            self.edit_arrived.set()
            return types.ApplyWorkspaceEditResult(applied=True)

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def on_progress_create(params: types.WorkDoneProgressCreateParams) -> None:
            self.tokens.append(str(params.token))

        @client.feature(types.PROGRESS)
        def on_progress(params: types.ProgressParams) -> None:
            value = params.value
            kind = value.get("kind") if isinstance(value, dict) else getattr(value, "kind", "")
            self.progress.append((time.time(), str(params.token), str(kind)))

        @client.feature(types.WORKSPACE_CONFIGURATION)
        def on_configuration(params: types.ConfigurationParams) -> list[Any]:
            return [None for _ in params.items]

        @client.feature(types.WINDOW_SHOW_MESSAGE)
        def on_message(params: types.ShowMessageParams) -> None:
            pass

        @client.feature(types.WINDOW_LOG_MESSAGE)
        def on_log(params: types.LogMessageParams) -> None:
            pass

        @client.feature("refactorLsp/progress")
        def on_progress_fields(params: Any) -> None:
            self.fields_seen += 1

        @client.feature("refactorLsp/stats")
        def on_stats(params: Any) -> None:
            self.stats.append(params if isinstance(params, dict) else dict(params._asdict()))

    async def start(self, init_options: dict[str, Any]) -> None:
        types = self.types
        await self.client.start_io(*SERVER_CMD, env=ENV, cwd=str(ROOT))
        self.server_pid = self.client._server.pid if self.client._server else None
        capabilities = types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(
                apply_edit=True,
                workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True),
                configuration=False,
            ),
            window=types.WindowClientCapabilities(work_done_progress=True),
            text_document=types.TextDocumentClientCapabilities(
                code_action=types.CodeActionClientCapabilities(
                    resolve_support=types.ClientCodeActionResolveOptions(properties=["command"])
                )
            ),
        )
        await self.client.initialize_async(
            types.InitializeParams(
                capabilities=capabilities,
                process_id=os.getpid(),
                workspace_folders=[types.WorkspaceFolder(WORKSPACE.as_uri(), "workspace")],
                initialization_options={**init_options, "progressFields": self.progress_fields},
            )
        )
        self.client.initialized(types.InitializedParams())

    async def stop(self) -> None:
        try:
            await asyncio.wait_for(self.client.shutdown_async(None), 5)
            self.client.exit(None)
        finally:
            await self.client.stop()

    def open(self, name: str, text: str) -> str:
        path = WORKSPACE / name
        path.write_text(text, encoding="utf-8", newline="")
        uri = path.as_uri()
        self.buffers[uri], self.versions[uri] = text, 1
        self.client.text_document_did_open(
            self.types.DidOpenTextDocumentParams(
                self.types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
            )
        )
        return uri

    def change(self, uri: str, text: str) -> None:
        types = self.types
        self.buffers[uri] = text
        self.versions[uri] += 1
        self.client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=self.versions[uri]),
                [types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )

    def cursor(self, uri: str, needle: str) -> dict[str, Any]:
        text = self.buffers[uri]
        offset = text.index(needle)
        line = text.count("\n", 0, offset)
        character = offset - (text.rfind("\n", 0, offset) + 1)
        pos = {"line": line, "character": character}
        return {"start": pos, "end": pos}

    async def refactor(self, args: dict[str, Any]) -> tuple[float, Any]:
        """(seconds from sending the command to workspace/applyEdit arriving, the command's reply)."""
        self.edit_arrived.clear()
        t0 = time.perf_counter()
        reply = await self.client.workspace_execute_command_async(
            self.types.ExecuteCommandParams(command="refactorLsp.refactor", arguments=[args])
        )
        if not self.edit_arrived.is_set():
            raise RuntimeError(f"no workspace/applyEdit arrived: {reply}")
        return self.apply_times[-1] - t0, reply

    async def code_actions(self, uri: str, rng: dict[str, Any]) -> list[Any]:
        types = self.types
        params = types.CodeActionParams(
            types.TextDocumentIdentifier(uri),
            types.Range(
                types.Position(rng["start"]["line"], rng["start"]["character"]),
                types.Position(rng["end"]["line"], rng["end"]["character"]),
            ),
            types.CodeActionContext(diagnostics=[]),
        )
        return list(await self.client.text_document_code_action_async(params) or [])


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far, all its threads (Linux /proc, nanosecond precision)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError, ValueError, IndexError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def backend_subprocess(kind: str, step_s: float) -> tuple[subprocess.Popen[str], str]:
    """The loopback backend in its own process (its own GIL), so it runs alike for both sides of a pair."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "lsp_server.testing.fake_backend", "--kind", kind, "--step-ms", str(step_s * 1000)],
        stdout=subprocess.PIPE,
        text=True,
        env=ENV,
        cwd=str(ROOT),
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http://127.0.0.1:"):
        proc.kill()
        raise RuntimeError(f"the fake backend did not start: {url!r}")
    return proc, url


def settings(backends: dict[str, dict[str, Any]], default: str, **refactor: Any) -> dict[str, Any]:
    return {"defaultBackend": default, "backends": backends, "refactor": refactor, "logLevel": "warning"}


# -- 1. LSP overhead ---------------------------------------------------------------------------------


async def direct_call(client: Any, request: dict[str, Any]) -> tuple[float, str]:
    """The same backend call made directly with the openai SDK: (seconds until the stream ended, text)."""
    t0 = time.perf_counter()
    stream = await client.chat.completions.create(**request)
    parts = []
    async for chunk in stream:
        for choice in chunk.choices or []:
            if choice.delta is not None and choice.delta.content:
                parts.append(choice.delta.content)
    return time.perf_counter() - t0, "".join(parts)


async def bench_overhead(pairs: int, progress_fields: bool = False) -> None:
    from openai import AsyncOpenAI

    from lsp_server.config.layers import editor_layer
    from lsp_server.config.load import build_config
    from lsp_server.pipeline.engine import Engine
    from lsp_server.pipeline.plan import RefactorRequest
    from lsp_server.testing.calibration import first_attempt
    from lsp_server.testing.fake_backend import FakeBackend

    text = inputs.python_file(2_000)
    n = inputs.function_count(2_000) // 2
    instruction = f"rename total_{n} to running_total_{n}"
    proc, url = backend_subprocess("openai", OVERHEAD_STEP_S)
    probe = FakeBackend("openai", step_s=0.0).start()  # to check that we replay the server's exact request
    options = settings(
        {
            "fake": {"type": "openai", "baseUrl": url, "model": "fake-model"},
            "probe": {"type": "openai", "baseUrl": probe.url, "model": "fake-model"},
        },
        "fake",
    )
    editor = Editor(progress_fields)
    sdk = AsyncOpenAI(base_url=url, api_key="no-key", max_retries=0)
    print(
        f"\n[overhead] 2,000-line file, cursor in one function, '{instruction}'; loopback backend in its own "
        f"process, {OVERHEAD_STEP_S * 1000:g} ms per forward pass, speculation from the prediction field; the "
        + ("client asks for refactorLsp/progress, as the plugins do" if progress_fields else "client: any LSP editor")
    )
    try:
        await editor.start(options)
        uri = editor.open("overhead.py", text)
        cursor = editor.cursor(uri, f"total_{n} = 0")
        args = {"uri": uri, "range": cursor, "instruction": instruction}

        # The request the pipeline builds, exactly as the server builds it (checked against the probe).
        config = build_config([editor_layer(options)])
        offset = text.index(f"total_{n} = 0")
        engine = Engine()
        plan = engine.plan(
            RefactorRequest(
                path=str(WORKSPACE / "overhead.py"),
                text=text,
                start=offset,
                end=offset,
                instruction=instruction,
                language_id="python",
            ),
            config,
        )
        attempt = first_attempt(engine, plan)  # an OpenAI-kind backend tells no window: sent as made
        request = {
            "model": "fake-model",
            "messages": attempt.prompt.messages,
            "temperature": config.refactor.temperature,
            "max_tokens": attempt.max_tokens,
            "stream": True,
            "stream_options": {"include_usage": True},
            "prediction": {"type": "content", "content": attempt.prompt.prediction},
        }
        await editor.refactor({**args, "backend": "probe"})
        editor.change(uri, text)
        sent = probe.requests[-1]
        same = all(sent.get(k) == v for k, v in request.items() if k != "stream_options") and sent.get(
            "stream_options"
        ) == {"include_usage": True}
        if not same:
            raise RuntimeError("the replayed request differs from the one the server sent")

        expected = text.replace(f"total_{n}", f"running_total_{n}")
        ratios, server_times, direct_times, server_cpu, direct_cpu = [], [], [], [], []
        server_pid = editor.server_pid
        for k in range(pairs + 2):  # two warm-up pairs
            cpu0 = cpu_seconds(server_pid) if server_pid else 0.0
            a, reply = await editor.refactor(args)
            cpu1 = editor.apply_cpu[-1] if server_pid else 0.0
            if editor.buffers[uri] != expected or reply.get("status") != "applied":
                raise RuntimeError(f"the refactor did not give the expected file: {reply}")
            editor.change(uri, text)
            await asyncio.sleep(0.05)
            own0 = cpu_seconds(os.getpid())
            b, _ = await direct_call(sdk, request)
            own1 = cpu_seconds(os.getpid())
            if k >= 2:
                ratios.append(a / b)
                server_times.append(a)
                direct_times.append(b)
                server_cpu.append(cpu1 - cpu0)
                direct_cpu.append(own1 - own0)
            await asyncio.sleep(0.05)
        tokens = editor.stats[-1].get("completion_tokens") if editor.stats else None
        ratio = statistics.median(ratios)
        row(
            "overhead",
            f"through the server ÷ direct openai SDK call (median of {pairs} A/B pairs)",
            f"{ratio:.3f}",
            "≤ 1.02",
            ratio <= 1.02,
            ratio,
        )
        row(
            "overhead",
            f"  server: command sent → workspace/applyEdit received ({tokens} tokens)",
            ms(statistics.median(server_times)),
            "",
            None,
            statistics.median(server_times),
        )
        row(
            "overhead",
            "  direct: create() → end of stream",
            ms(statistics.median(direct_times)),
            "",
            None,
            statistics.median(direct_times),
        )
        extra = statistics.median(a - b for a, b in zip(server_times, direct_times, strict=True))
        row("overhead", "  added by the server (median of per-pair differences)", ms(extra), "", None, extra)
        if server_pid:
            cpu_a, cpu_b = statistics.median(server_cpu), statistics.median(direct_cpu)
            row(
                "overhead",
                f"  CPU until the edit: server process vs direct call ({ms(cpu_a)} vs {ms(cpu_b)})",
                f"+{ms(cpu_a - cpu_b)}",
                "",
                None,
                cpu_a - cpu_b,
            )
    finally:
        await sdk.close()
        await editor.stop()
        probe.stop()
        proc.kill()
        proc.wait()


# -- 4. start-up and footprint -----------------------------------------------------------------------


def libraries_once() -> float:
    """Seconds for the same Python to start and import pygls's server (lsprotocol's classes compiled as
    usual): what any pygls server pays before it can answer, on this machine, now."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import pygls.lsp.server"], env=ENV, cwd=str(ROOT), check=True)
    return time.perf_counter() - t0


def initialize_once(rss_after: str | None = None) -> tuple[float, int | None]:
    """(seconds from spawning the server to its initialize answer, VmRSS in kB after opening `rss_after`)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(SERVER_CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=ENV, cwd=str(ROOT))
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(
        frame(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {"processId": os.getpid(), "rootUri": WORKSPACE.as_uri(), "capabilities": {}},
            }
        )
    )
    proc.stdin.flush()
    while read_frame(proc.stdout).get("id") != 1:
        pass
    elapsed = time.perf_counter() - t0
    rss = None
    try:
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        if rss_after is not None:
            uri = (WORKSPACE / "rss.py").as_uri()
            item = {"uri": uri, "languageId": "python", "version": 1, "text": rss_after}
            proc.stdin.write(
                frame({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": item}})
            )
            pos = {"line": 100, "character": 4}
            proc.stdin.write(
                frame(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "textDocument/codeAction",
                        "params": {
                            "textDocument": {"uri": uri},
                            "range": {"start": pos, "end": pos},
                            "context": {"diagnostics": []},
                        },
                    }
                )
            )
            proc.stdin.flush()
            while read_frame(proc.stdout).get("id") != 2:
                pass
            time.sleep(0.2)
            status = Path(f"/proc/{proc.pid}/status").read_text()
            match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
            rss = int(match.group(1)) if match else None
        proc.stdin.write(frame({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}))
        proc.stdin.flush()
        while read_frame(proc.stdout).get("id") != 3:
            pass
        proc.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        proc.stdin.flush()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return elapsed, rss


async def bench_startup(runs: int) -> None:
    print(
        f"\n[startup] `python -m lsp_server` spawned → initialize answered (median of {runs}); RSS after "
        "initialize + opening a 2,000-line document; code actions listed on a 20,000-line file"
    )
    initialize_once()  # warm the OS file cache, the bytecode and the code cache
    libraries_once()
    times, floors = [], []
    for _ in range(runs):  # interleaved, so a slow spell of a shared machine hits both alike
        times.append(initialize_once()[0])
        floors.append(libraries_once())
    median, floor = statistics.median(times), statistics.median(floors)
    from lsp_server.server import startup

    if startup.attrs_version() in startup.VERIFIED_ATTRS:
        row("startup", "initialize answered after the process starts", ms(median), "≤ 300.0 ms", median <= 0.3, median)
        # The same start-up against this machine's own floor: a ratio a slower or busier machine keeps
        # (the guard judges this one). The code cache has to pay for everything the server adds, with
        # room to spare: without it the ratio is about 0.99, with it 0.71 idle to 0.81 right after the suites
        # (2 cores, 2026-12-02).
        row(
            "startup",
            f"initialize answered ÷ importing pygls alone without the cache ({ms(median)} vs {ms(floor)})",
            f"{median / floor:.2f}",
            "≤ 0.9",
            median <= 0.9 * floor,
            median / floor,
        )
    else:  # the code cache is off for an attrs release it was not verified with: measured, not judged
        figure = f"initialize answered after the process starts (attrs {startup.attrs_version()}: no code cache)"
        row("startup", figure, ms(median), "", None, median)
    _, rss = initialize_once(inputs.python_file(2_000))
    if rss is not None:
        row(
            "startup",
            "idle RSS (VmRSS) after initialize + didOpen",
            f"{rss / 1024:.1f} MB",
            "≤ 80 MB",
            rss <= 80 * 1024,
            rss,
        )

    editor = Editor()
    try:
        await editor.start(settings({}, "local"))
        text = inputs.python_file(20_000)
        uri = editor.open("big.py", text)
        count = inputs.function_count(20_000)
        cursors = [editor.cursor(uri, f"total_{i} += value *") for i in range(count // 3, count // 3 + 10)]
        actions = await editor.code_actions(uri, cursors[0])  # the first one loads the settings
        times = []
        for k in range(33):
            t0 = time.perf_counter()
            actions = await editor.code_actions(uri, cursors[k % len(cursors)])
            if k >= 3:
                times.append(time.perf_counter() - t0)
        median = statistics.median(times)
        row(
            "startup",
            f"code actions listed on a 20,000-line file ({len(actions)} actions, median of {len(times)})",
            ms(median),
            "≤ 10.0 ms",
            median <= 0.010,
            median,
        )
    finally:
        await editor.stop()


# -- 5. streaming ------------------------------------------------------------------------------------


async def bench_streaming(runs: int) -> None:
    from lsp_server.testing.fake_backend import FakeBackend
    from lsp_server.testing.speculation import tokenize

    text = inputs.python_file(2_000)
    stream = FakeBackend("openai", step_s=STREAM_STEP_S).start()
    flood = FakeBackend("openai", step_s=FLOOD_STEP_S, speculation=False).start()
    options = settings(
        {
            "stream": {"type": "openai", "baseUrl": stream.url, "model": "fake-model"},
            "flood": {"type": "openai", "baseUrl": flood.url, "model": "fake-model"},
        },
        "stream",
        maxRegionChars=200_000,
    )
    editor = Editor()
    print(
        f"\n[streaming] first $/progress report at the client vs the backend's first content chunk "
        f"({STREAM_STEP_S * 1000:g} ms per pass); then a 10,000-token answer without speculation"
    )
    try:
        await editor.start(options)
        uri = editor.open("stream.py", text)
        gaps = []
        for k in range(runs + 1):
            n = 5 + k
            await editor.refactor(
                {"uri": uri, "range": editor.cursor(uri, f"total_{n} = 0"), "instruction": f"rename total_{n} to t{n}"}
            )
            token = editor.tokens[-1]
            reports = [t for t, tok, kind in editor.progress if tok == token and kind == "report"]
            if k and reports and stream.first_content_sent_at:
                gaps.append(reports[0] - stream.first_content_sent_at[-1])
            editor.change(uri, text)
        gap = statistics.median(gaps)
        row(
            "streaming",
            f"first token sent by the backend → first progress report at the client (median of {len(gaps)})",
            ms(gap),
            "≤ 50.0 ms",
            gap <= 0.050,
            gap,
        )

        # A 10,000-token answer, one token per chunk: how many reports reach the client?
        lines, body = [], 0
        i = 0
        while body < 10_600:
            line = f"    value_{i} = compute(value_{i - 1}, {i}) + offset  # step {i}\n"
            body += len(tokenize(line))
            lines.append(line)
            i += 1
        big = "def long_function(offset):\n    value_-1 = 0\n" + "".join(lines) + "    return value_0\n"
        big_uri = editor.open("flood.py", big)
        t0 = time.perf_counter()
        await editor.refactor(
            {
                "uri": big_uri,
                "range": editor.cursor(big_uri, "def long_function"),
                "instruction": "rename offset to shift",
                "backend": "flood",
            }
        )
        wall = time.perf_counter() - t0
        token = editor.tokens[-1]
        reports = [t for t, tok, kind in editor.progress if tok == token and kind == "report"]
        stats = editor.stats[-1] if editor.stats else {}
        tokens = stats.get("completion_tokens") or 0
        stream_s = (stats.get("latency_ms") or wall * 1000) / 1000
        rate = len(reports) / stream_s if stream_s else 0.0
        ok = rate <= 12 and len(reports) <= max(3, tokens / 50)
        row(
            "streaming",
            f"progress reports for a {tokens:,}-token answer streamed in {stream_s:.1f} s",
            f"{len(reports)} ({rate:.1f}/s)",
            "≤ 12/s",
            ok,
            len(reports),
        )
    finally:
        await editor.stop()
        stream.stop()
        flood.stop()


# -- 3. scope ----------------------------------------------------------------------------------------


async def scope_pair(
    kind: str, url: str, model: str, text: str, needle: str, instruction: str, reps: int, **refactor: Any
) -> None:
    from lsp_server.config.layers import editor_layer
    from lsp_server.config.load import build_config
    from lsp_server.pipeline.engine import Engine
    from lsp_server.pipeline.plan import RefactorRequest

    backend = {"type": kind, "baseUrl": url, "model": model}
    config = build_config([editor_layer(settings({"b": backend}, "b", maxRegionChars=400_000, **refactor))])
    offset = text.index(needle)
    results: dict[str, list[Any]] = {"block": [], "file": []}
    engine = Engine()
    try:
        for _ in range(reps):
            for scope in ("block", "file"):  # interleaved
                request = RefactorRequest(
                    path="module.py",
                    text=text,
                    start=offset,
                    end=offset,
                    instruction=instruction,
                    language_id="python",
                    scope="auto" if scope == "block" else "file",
                    edit_format="region",  # scope is measured here; `auto` would answer a whole file in hunks
                )
                results[scope].append(await engine.refactor(request, config))
    finally:
        await engine.close()
    block, whole = results["block"], results["file"]
    same = all(r.new_text == whole[0].new_text for r in block + whole)
    changed = block[0].new_text != text
    scoped_tokens = statistics.median(r.stats.completion_tokens or 0 for r in block)
    file_tokens = statistics.median(r.stats.completion_tokens or 0 for r in whole)
    scoped_ms = statistics.median(r.stats.latency_ms for r in block)
    file_ms = statistics.median(r.stats.latency_ms for r in whole)
    token_ratio = file_tokens / scoped_tokens if scoped_tokens else float("inf")
    time_ratio = file_ms / scoped_ms if scoped_ms else float("inf")
    where = f"{kind}, {block[0].stats.prediction_via}"
    row(
        "scope",
        f"{where}: output tokens, whole file ÷ scoped ({file_tokens:.0f} vs {scoped_tokens:.0f})",
        f"{token_ratio:.1f}×",
        "≥ 5×",
        token_ratio >= 5,
        token_ratio,
    )
    row(
        "scope",
        f"{where}: backend time, whole file ÷ scoped ({ms(file_ms / 1000)} vs {ms(scoped_ms / 1000)})",
        f"{time_ratio:.1f}×",
        "≥ 5×",
        time_ratio >= 5,
        time_ratio,
    )
    row(
        "scope",
        f"{where}: same resulting file (scope {block[0].plan.region.kind} vs file)",
        "yes" if same and changed else "NO",
        "same",
        same and changed,
    )


def local_vllm_model() -> tuple[str, int] | None:
    """(model id, context length) of the local vLLM, when it answers."""
    try:
        with urllib.request.urlopen(LOCAL_VLLM + "/models", timeout=1.0) as response:
            data = json.load(response)
        model = data["data"][0]
        return str(model["id"]), int(model.get("max_model_len") or 4096)
    except Exception:
        return None


async def bench_scope(reps: int, vllm_functions: int) -> None:
    from lsp_server.testing.fake_backend import FakeBackend

    text = inputs.python_file(2_000)
    n = inputs.function_count(2_000) // 2
    needle, instruction = f"total_{n} = 0", f"rename total_{n} to running_total_{n}"
    print(
        f"\n[scope] one function changed in a 2,000-line file: cursor in it (block scope) vs the whole file as "
        f"the prediction; loopback backend, {SCOPE_STEP_S * 1000:g} ms per pass, simulated speculation; "
        f"medians of {reps}"
    )
    for kind in ("openai", "vllm"):
        fake = FakeBackend(kind, step_s=SCOPE_STEP_S).start()
        try:
            await scope_pair(kind, fake.url, "fake-model", text, needle, instruction, reps)
        finally:
            fake.stop()
    found = local_vllm_model()
    if found is None:
        print("  skipped: local vLLM not running (make vllm-up)")
        row("scope", "local vLLM", "skipped: not running (make vllm-up)", "", None)
        return
    model, context = found
    # The whole file must fit the model's context twice (prompt and answer): short functions, as
    # many as fit, so one function is still a small part of the file.
    functions = max(8, min(vllm_functions, int(context * 3.0 / 2.2 / 7 / 30)))
    small = inputs.small_python_file(functions)
    m = functions // 2
    print(
        f"  local vLLM at {LOCAL_VLLM}, model {model} ({context} tokens of context): a {functions}-function, "
        f"{small.count(chr(10))}-line file (a 2,000-line file does not fit a small model's context), one run each"
    )
    try:
        await scope_local_vllm(model, small, f"total_{m} = 0", f"rename total_{m} to running_total_{m}")
    except Exception as exc:  # a real model may fail in ways the loopback one does not
        row("scope", "local vLLM", f"error: {str(exc)[:60]}", "", False)


async def scope_local_vllm(model: str, text: str, needle: str, instruction: str) -> None:
    """Scoped vs whole-file on the real local vLLM. Its tiny model cannot perform the edit (it loops
    until the token cap), so the answers are measured even when the pipeline refuses to apply them,
    and the ratios are reported as information, not as a verdict on the target."""
    from lsp_server.config.layers import editor_layer
    from lsp_server.config.load import build_config
    from lsp_server.pipeline.engine import Engine
    from lsp_server.pipeline.plan import RefactorError, RefactorRequest

    backend = {"type": "vllm", "baseUrl": LOCAL_VLLM, "model": model}
    config = build_config(
        # The pipeline's own cap (about twice the region's tokens), as in the editor: the whole file gets
        # a cap for the whole file, the scoped region one for the region.
        [editor_layer(settings({"b": backend}, "b", maxRegionChars=400_000, timeoutS=600))]
    )
    offset = text.index(needle)
    measured: dict[str, Any] = {}
    refused = 0
    engine = Engine()
    try:
        for scope in ("block", "file"):
            request = RefactorRequest(
                path="module.py",
                text=text,
                start=offset,
                end=offset,
                instruction=instruction,
                language_id="python",
                scope="auto" if scope == "block" else "file",
                edit_format="region",  # scope is measured here, not the edit format
            )
            try:
                measured[scope] = (await engine.refactor(request, config)).stats
            except RefactorError as exc:
                if exc.stats is None:
                    raise
                measured[scope] = exc.stats
                refused += 1
    finally:
        await engine.close()
    block, whole = measured["block"], measured["file"]
    token_ratio = (whole.completion_tokens or 0) / (block.completion_tokens or 1)
    time_ratio = whole.latency_ms / block.latency_ms if block.latency_ms else float("inf")
    note = " (answers not applicable: this model cannot edit; it writes until the cap)" if refused else ""
    row(
        "scope",
        f"local vLLM: output tokens, whole file ÷ scoped "
        f"({whole.completion_tokens} vs {block.completion_tokens}){note}",
        f"{token_ratio:.1f}×",
        "information",
        None,
        token_ratio,
    )
    row(
        "scope",
        f"local vLLM: backend time, whole file ÷ scoped ({ms(whole.latency_ms / 1000)} vs "
        f"{ms(block.latency_ms / 1000)}){note}",
        f"{time_ratio:.1f}×",
        "information",
        None,
        time_ratio,
    )


# -- the check before an edit --------------------------------------------------------------------------


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


async def bench_verify(samples: int) -> None:
    """The check before an edit (check/verify.py) as the engine awaits it, thread hop included, on
    regions of a 20,000-line file, each sample a different place in it."""
    import random

    from lsp_server.check.verify import verify_answer
    from lsp_server.config.schema import RefactorSettings
    from lsp_server.regions import choose_region

    print(
        f"\n[verify] the check before an edit on a {VERIFY_LINES:,}-line file (the engine's call, thread hop "
        f"included): p99 of {samples} regions at random cursors, each answer a rename in it"
    )
    settings = RefactorSettings()
    python, js = inputs.python_file(VERIFY_LINES), inputs.js_file(VERIFY_LINES)
    broken = python.replace("    return report_3\n", "    return report_3(\n", 1)  # mid-edit near the top
    rng = random.Random(31)

    def definition(text: str, language: str) -> tuple[int, int]:
        cursor = text.index("total_" if language == "python" else "total", rng.randrange(len(text) - 2000))
        region = choose_region(text, cursor, cursor, "auto", language)
        return region.start, region.end

    def two_lines(text: str, language: str) -> tuple[int, int]:  # no whole statement: read in context
        start = text.index("        if value > limit:\n", rng.randrange(len(text) - 2000))
        return start, text.index("\n", text.index("\n", start) + 1) + 1

    cases = (
        ("Python, a function", python, "python", definition),
        ("Python, a function in a file that does not parse", broken, "python", definition),
        ("Python, two lines of a function (the statements around them parsed)", python, "python", two_lines),
        ("JavaScript, a function (brackets by the scope's lexer)", js, "javascript", definition),
    )
    for label, text, language, pick in cases:
        times = []
        for _ in range(samples):
            start, end = pick(text, language)
            region = text[start:end]
            new = re.sub(r"\btotal(_?\d+)\b", r"sum\1", region)
            t0 = time.perf_counter()
            verified = await verify_answer(text, start, end, new, language, settings)
            times.append(time.perf_counter() - t0)
            assert verified.problem is None, (label, verified.problem)
        worst = p99(times)
        row(
            "verify",
            f"{label}: p99 (median {ms(statistics.median(times))})",
            ms(worst),
            f"≤ {ms(VERIFY_TARGET_S)}",
            worst <= VERIFY_TARGET_S,
            worst,
        )
    # The largest region a refactor sends (refactor.max_region_chars): the whole of it is parsed.
    whole = inputs.python_file(3_000)
    whole = whole[: whole.rindex("\ndef ", 0, 100_000) + 1]
    new = re.sub(r"\btotal(_?\d+)\b", r"sum\1", whole)
    times = []
    for _ in range(10):
        t0 = time.perf_counter()
        await verify_answer(whole, 0, len(whole), new, "python", settings)
        times.append(time.perf_counter() - t0)
    row(
        "verify",
        f"Python, a whole file as the region ({len(whole):,} characters, the most refactor.max_region_chars "
        "lets through): median",
        ms(statistics.median(times)),
        "information",
        None,
        statistics.median(times),
    )


# -- main --------------------------------------------------------------------------------------------


def machine() -> str:
    model = ""
    with contextlib.suppress(OSError):
        found = re.search(r"^model name\s*:\s*(.+)$", Path("/proc/cpuinfo").read_text(), re.M)
        model = found.group(1).strip() if found else ""
    return f"{model or 'unknown CPU'}, {os.cpu_count()} CPUs, Python {sys.version.split()[0]}"


def print_table(command: str, load: tuple[float, float]) -> None:
    print(f"\n`{command}` on {machine()}, load average {load[0]:.1f} before / {load[1]:.1f} after:")
    print("\n| figure | measured | target | result |\n|---|---|---|---|")
    for r in ROWS:
        status = "" if r.ok is None else ("PASS" if r.ok else "**FAIL**")
        print(f"| {r.figure.strip()} | {r.measured} | {r.target} | {status} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows as JSON to this file ('-' for stdout)")
    parser.add_argument("--only", help="comma-separated sections: " + ",".join(SECTIONS))
    parser.add_argument("--pairs", type=int, default=16, help="A/B pairs for the overhead ratio")
    parser.add_argument(
        "--progress-fields",
        action="store_true",
        help="overhead: the client asks for refactorLsp/progress and reads it, as the VS Code and Neovim plugins do",
    )
    parser.add_argument("--runs", type=int, default=7, help="runs for start-up and streaming medians")
    parser.add_argument("--scope-reps", type=int, default=3)
    parser.add_argument("--verify-samples", type=int, default=200, help="regions checked per case (p99 of them)")
    parser.add_argument("--vllm-functions", type=int, default=16, help="most functions in the real local vLLM file")
    parser.add_argument("--profile-server", metavar="DIR", help="run the servers under cProfile, profiles into DIR")
    args = parser.parse_args()
    if args.profile_server:
        Path(args.profile_server).mkdir(parents=True, exist_ok=True)
        SERVER_CMD[1:] = [str(ROOT / "benchmarks" / "perf_profile_server.py"), str(Path(args.profile_server).resolve())]
    only = set(args.only.split(",")) if args.only else set(SECTIONS)
    unknown = only - set(SECTIONS)
    if unknown:
        parser.error(f"unknown sections: {', '.join(sorted(unknown))}")
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    print(f"refactor-lsp performance: {machine()}, load average {load_before:.1f}")
    if load_before > (os.cpu_count() or 1) * 0.5:
        print("  note: the machine is busy: wall-clock figures (start-up, overhead) come out higher than when idle")
    if "edits" in only:
        bench_edits()  # first: it forks for difflib, before any thread starts

    async def run_async() -> None:
        if "startup" in only:
            await bench_startup(args.runs)
        if "overhead" in only:
            await bench_overhead(args.pairs, args.progress_fields)
        if "streaming" in only:
            await bench_streaming(args.runs)
        if "scope" in only:
            await bench_scope(args.scope_reps, args.vllm_functions)
        if "verify" in only:
            await bench_verify(args.verify_samples)

    asyncio.run(run_async())
    command = "python benchmarks/perf.py" + ("" if len(sys.argv) == 1 else " " + " ".join(sys.argv[1:]))
    print_table(command, (load_before, os.getloadavg()[0]))
    failed = [r for r in ROWS if r.ok is False]
    print(
        f"\n{len(ROWS) - len(failed)} of {len(ROWS)} rows fine, {len(failed)} targets missed; "
        f"{time.perf_counter() - started:.0f} s"
    )
    if args.json:
        payload = json.dumps([asdict(r) for r in ROWS], indent=2)
        if args.json == "-":
            print(payload)
        else:
            Path(args.json).write_text(payload + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
