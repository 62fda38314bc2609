"""The fault matrix, end to end over real LSP with the backend on 127.0.0.1.

For each fault: the buffer is untouched (unless the output is cleanly recoverable), the user gets
exactly one clear message, progress ends, and the server serves the next request.
"""

from __future__ import annotations

import asyncio
import json
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import backend_settings, closed_port_url, editor_settings, fake_fixture
from tests.lsp_harness import Editor, server_setup, session, until

SETUP = server_setup()
STATE_DIR = SETUP.state_dir
WORKSPACE = STATE_DIR / "faults-workspace"
SOURCE = "import os\n\n\ndef load(path):\n    data = open(path).read()\n    return data\n"
REGION = "def load(path):\n    data = open(path).read()\n    return data\n"
RENAMED = SOURCE.replace("data", "content")
DOCUMENTED = (
    "def load(path):\n"
    '    """Read a file.\n\n    ```python\n    >>> load("a.txt")\n    \'text\'\n    ```\n    """\n'
    "    data = open(path).read()\n    return data\n"
)
SECRET = "sk-test-NEVER-SHOW-THIS-KEY-0123456789"

backend = fake_fixture(models=("fake-model", "other-model"))
second = fake_fixture(models=("second-model",))

SETTINGS = {
    "connectTimeoutS": 2,
    "firstTokenTimeoutS": 1.0,
    "idleTimeoutS": 0.5,
    "timeoutS": 6,
    "maxRetries": 2,
    "maxRegionChars": 5000,
}


def backends_settings(backend: FakeBackend, second: FakeBackend) -> dict:
    """`fake` and the faulty backends beside it: a key, a model nobody serves, a closed port, no host, TLS
    to a plain server, and a fallback from the closed port to `second`."""
    down = closed_port_url()
    return editor_settings(
        backend,
        others={
            "keyed": backend_settings(backend, api_key_env="TEST_KEY"),
            "unknown-model": backend_settings(backend, model="no-such-model"),
            "down": {"type": "openai", "baseUrl": down, "model": "m"},
            "nohost": {"type": "openai", "baseUrl": "https://nonexistent.invalid:9/v1", "model": "m"},
            "tls": {"type": "openai", "baseUrl": backend.url.replace("http://", "https://"), "model": "m"},
            "with-fallback": {"type": "openai", "baseUrl": down, "model": "m", "fallback": ["second"]},
            "second": backend_settings(second),
        },
        refactor=SETTINGS,
    )


client = session(SETUP, WORKSPACE, backends_settings, env={"TEST_KEY": SECRET})


@dataclass
class Case:
    name: str
    replies: list[Reply] = field(default_factory=list)
    backend: str = "fake"
    status: str = "error"
    message: tuple[str, ...] = ()  # all of these appear in the one message
    result: str | None = None  # the buffer after; None: untouched


FAULTS = [
    Case(
        "connection refused",
        backend="down",
        message=("cannot reach the backend 'down' at http://127.0.0.1:", "connection refused"),
    ),
    Case("unresolvable host", backend="nohost", message=("https://nonexistent.invalid:9/v1", "does not resolve")),
    Case("TLS failure", backend="tls", message=("https://127.0.0.1:", "TLS")),
    Case("401", [Reply(status=401, error="Incorrect API key provided")], backend="keyed", message=("401", "TEST_KEY")),
    Case("403", [Reply(status=403, error="forbidden")], backend="keyed", message=("403", "TEST_KEY")),
    Case("404 unknown model", backend="unknown-model", message=("no model 'no-such-model'", "fake-model, other-model")),
    Case(
        "429 then ok",
        [Reply(status=429, error="slow down", headers={"Retry-After": "0.2"})],
        status="applied",
        message=("retried after HTTP 429",),
        result=RENAMED,
    ),
    Case("500 x3", [Reply(status=500, error="boom")] * 3, message=("HTTP 500", "3 tries", "try again later")),
    Case("502 x3", [Reply(status=502, error="bad gateway")] * 3, message=("HTTP 502", "3 tries")),
    Case(
        "503 then ok",
        [Reply(status=503, error="busy")],
        status="applied",
        message=("retried after HTTP 503",),
        result=RENAMED,
    ),
    Case(
        "429 longer than the time allowed",
        [Reply(status=429, error="later", headers={"Retry-After": "60"})],
        message=("rate limiting", "try again later"),
    ),
    Case("no first byte", [Reply(delay_headers_s=3)], message=("sent nothing within 1 s", "first_token_timeout_s")),
    Case("no first token", [Reply(stall_after_chars=0, stall_s=3)], message=("no first token within 1 s",)),
    Case("stall mid-stream", [Reply(stall_after_chars=10, stall_s=3)], message=("stalled for 0.5 s", "idle_timeout_s")),
    Case("dropped mid-stream", [Reply(drop_after_chars=10)], message=("broke mid-answer", "nothing was applied")),
    Case(
        "truncated",
        [Reply(finish_reason="length")],
        message=("cut the answer off after", "before the 256 this refactor allows", "select a smaller region"),
    ),
    Case("empty output", [Reply(text="")], message=("leaves no code in the region", "nothing was applied")),
    Case(
        "explanation only",
        [Reply(text="Sure! I renamed the variable as you asked, it is much clearer now.\n")],
        message=("explanation instead of code",),
    ),
    Case(
        "markdown fence",
        [Reply(text="Here you go:\n```python\n" + REGION.replace("data", "content") + "```\n")],
        status="applied",
        result=RENAMED,
    ),
    Case(
        "docstring with a fenced example (a correct answer)",
        [Reply(text=DOCUMENTED)],
        status="applied",
        result=SOURCE.replace(REGION, DOCUMENTED),
    ),
    Case(
        "think inside a string literal (a correct answer)",
        [Reply(text=REGION.replace("data", "content").replace(".read()", '.read()  # "<think>x</think>"'))],
        status="applied",
        result=RENAMED.replace(".read()", '.read()  # "<think>x</think>"'),
    ),
    Case(
        "the whole file echoed between the markers",
        [Reply(text="import os\n\n\n<<<REGION\n" + REGION.replace("data", "content") + "REGION>>>\n")],
        message=("region markers", "nothing was applied"),
    ),
    Case(
        "prose after the code",
        [Reply(text=REGION.replace("data", "content") + "\nThis renames the variable data to content everywhere.\n")],
        message=("explanation after its code", "nothing was applied"),
    ),
    Case(
        "think block",
        [Reply(text="<think>rename all of them</think>\n" + REGION.replace("data", "content"))],
        status="applied",
        result=RENAMED,
    ),
]


def sse(*payloads: object, raw: bytes = b"") -> bytes:
    out = b""
    for payload in payloads:
        out += b"data: " + json.dumps(payload).encode() + b"\n\n"
    return out + raw


def chunk(content: str | None = None, finish: str | None = None, role: bool = False) -> dict:
    delta: dict = {"role": "assistant"} if role else {}
    if content is not None:
        delta["content"] = content
    return {
        "id": "x",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "fake-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


NEW_REGION = REGION.replace("data", "content")
STREAMS = [
    Case(
        "a lone surrogate in the answer",
        [Reply(raw_body=sse(chunk(NEW_REGION.replace("content", "con\udcfftent", 1)), chunk(finish="stop")))],
        message=("malformed stream", "lone surrogate (U+DCFF)", "nothing was applied"),
    ),
    Case(
        "a surrogate pair split across two deltas",
        [Reply(raw_body=sse(chunk(NEW_REGION + "# \ud83d"), chunk("\ude00\n"), chunk(finish="stop")))],
        status="applied",
        result=RENAMED + "# \U0001f600\n",
    ),
    Case(
        "invalid UTF-8",
        [
            Reply(
                raw_body=b'data: {"id":"x","object":"chat.completion.chunk","created":1,"model":"m",'
                b'"choices":[{"index":0,"delta":{"content":"def \xff\xfe"},"finish_reason":null}]}\n\n'
                + sse(chunk(finish="stop"))
                + b"data: [DONE]\n\n"
            )
        ],
        message=("not valid UTF-8",),
    ),
    Case(
        "malformed SSE",
        [Reply(raw_body=sse(chunk(NEW_REGION[:10])) + b"data: {not json\n\n")],
        message=("malformed stream",),
    ),
    Case(
        "vLLM-style stream",
        [
            Reply(
                raw_body=sse(
                    chunk("", role=True),
                    chunk(NEW_REGION),
                    chunk(finish="stop"),
                    {
                        "id": "x",
                        "object": "chat.completion.chunk",
                        "created": 1,
                        "model": "m",
                        "choices": [],
                        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
                    },
                )
                + b"data: [DONE]\n\n"
            )
        ],
        status="applied",
        result=RENAMED,
    ),
    Case(
        "keep-alive comments, data: without space, role-only first chunk",
        [
            Reply(
                raw_body=(
                    b": keep-alive\n\n"
                    + b"data:"
                    + json.dumps(chunk(role=True)).encode()
                    + b"\n\n"
                    + b": ping\n\n"
                    + b"data:"
                    + json.dumps(chunk(NEW_REGION[:20])).encode()
                    + b"\n\n"
                    + sse(chunk(NEW_REGION[20:]), chunk(finish="stop"))
                    + b"data:[DONE]\n\n"
                )
            )
        ],
        status="applied",
        result=RENAMED,
    ),
    # An answer is complete only when its choice ended with finish_reason "stop".
    Case(
        "ends mid-answer without finish_reason, then [DONE]",
        [Reply(raw_body=sse(chunk("", role=True), chunk(NEW_REGION[:-12])) + b"data: [DONE]\n\n")],
        message=("without saying it was complete", "no finish_reason", "nothing was applied"),
    ),
    Case(
        "ends mid-answer without finish_reason or [DONE]",
        [Reply(raw_body=sse(chunk("", role=True), chunk(NEW_REGION[:-12])))],
        message=("no finish_reason", "nothing was applied"),
    ),
    Case(
        "whole answer but no finish_reason",
        [Reply(raw_body=sse(chunk(NEW_REGION)) + b"data: [DONE]\n\n")],
        message=("no finish_reason",),
    ),
    Case(
        "content after the finish_reason",
        [Reply(raw_body=sse(chunk(NEW_REGION), chunk(finish="stop"), chunk("import shutil\n")) + b"data: [DONE]\n\n")],
        message=("malformed stream", "after the answer ended"),
    ),
    Case(
        "a second choice interleaved",
        [
            Reply(
                raw_body=sse(
                    chunk(NEW_REGION[:20]),
                    {
                        **chunk("rm -rf /\n"),
                        "choices": [{"index": 1, "delta": {"content": "x"}, "finish_reason": None}],
                    },
                    chunk(NEW_REGION[20:]),
                    chunk(finish="stop"),
                )
                + b"data: [DONE]\n\n"
            )
        ],
        message=("malformed stream", "second choice"),
    ),
    Case(
        "length followed by stop",
        [
            Reply(
                raw_body=sse(chunk(NEW_REGION[:30]), chunk(finish="length"), chunk(finish="stop")) + b"data: [DONE]\n\n"
            )
        ],
        message=("malformed stream", "ended twice"),
    ),
    Case(
        "finish_reason other than stop",
        [Reply(raw_body=sse(chunk(NEW_REGION), chunk(finish="tool_calls")) + b"data: [DONE]\n\n")],
        message=('finish_reason "tool_calls"', "nothing was applied"),
    ),
]


async def run(editor: Editor, name: str, backend: str = "fake") -> tuple[str, dict]:
    uri = editor.open(WORKSPACE / f"{name.replace(' ', '_').replace(',', '').replace(':', '')}.py", SOURCE)
    result = await editor.execute(
        "refactorLsp.refactor",
        {
            "uri": uri,
            "range": editor.cursor_at(uri, "data = open"),
            "instruction": "rename data to content",
            "backend": backend,
        },
    )
    return uri, result


@pytest.mark.parametrize("case", FAULTS + STREAMS, ids=lambda c: c.name)
async def test_fault(editor: Editor, backend: FakeBackend, client: LanguageClient, case: Case, monkeypatch):
    backend.enqueue(*case.replies)
    known_tokens = set(client.progress_reports)
    started = time.monotonic()
    uri, result = await run(editor, case.name, case.backend)
    elapsed = time.monotonic() - started
    assert result["status"] == case.status, result
    assert editor.buffers[uri] == (case.result if case.result is not None else SOURCE)
    (message,) = editor.messages()  # exactly one message
    for needle in case.message:
        assert needle in message, message
    assert SECRET not in message
    if case.status == "error":
        assert message.startswith("refactor-lsp: ") and editor.edits_received == []
    assert elapsed < SETTINGS["timeoutS"] + 2  # never more than the configured total time
    for token in set(client.progress_reports) - known_tokens:
        assert isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd)
    # The server keeps serving.
    editor.clear()
    backend.reset()
    uri, result = await run(editor, case.name + " after")
    assert result["status"] == "applied"
    assert editor.buffers[uri] == RENAMED


async def test_prediction_refused_is_retried_without_and_remembered(editor: Editor, backend: FakeBackend):
    backend.reject_prediction = True
    try:
        uri, result = await run(editor, "refused prediction")
        assert result["status"] == "applied"
        assert editor.buffers[uri] == RENAMED
        assert ["prediction" in r for r in backend.requests] == [True, False]
        stats = editor.stats[-1]
        assert stats["prediction"] is False
        (message,) = editor.messages()
        assert "no prediction" in message and "refused the prediction field" in message
        editor.clear()
        uri, result = await run(editor, "refused prediction again")
        assert result["status"] == "applied"
        assert "prediction" not in backend.requests[-1]  # remembered for this backend
    finally:
        backend.reject_prediction = False


async def test_fallback_serves_when_the_first_backend_is_down(editor: Editor, second: FakeBackend):
    uri, result = await run(editor, "fallback", backend="with-fallback")
    assert result["status"] == "applied"
    assert editor.buffers[uri] == RENAMED
    assert len(second.requests) == 1
    assert editor.stats[-1]["served_by"] == "second"
    assert editor.stats[-1]["backend"] == "with-fallback"
    (message,) = editor.messages()
    assert "served by second" in message


async def test_region_over_the_size_limit_is_refused_before_sending(editor: Editor, backend: FakeBackend):
    big = "def big():\n" + "    x = 1\n" * 1000
    uri = editor.open(WORKSPACE / "big.py", big)
    result = await editor.execute(
        "refactorLsp.refactor", {"uri": uri, "range": editor.cursor_at(uri, "x = 1"), "instruction": "rename x to y"}
    )
    assert result["status"] == "error"
    (message,) = editor.messages()
    assert "refactor.max_region_chars" in message and "nothing was sent" in message
    assert backend.requests == []
    assert editor.buffers[uri] == big


async def test_typing_outside_the_region_is_kept_and_the_edit_rebased(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "rebase.py", SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=0.3))
    task = editor.start_refactor(uri, "data = open", "rename data to content")
    await until(lambda: backend.requests)
    typed = SOURCE.replace("import os\n", "import os\nimport sys\n") + "\nprint('done')\n"
    editor.change(uri, typed)
    result = await task
    assert result["status"] == "applied"
    assert editor.buffers[uri] == typed.replace("data", "content")


async def test_document_closed_during_refactor(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "closed.py", SOURCE)
    backend.enqueue(Reply(stall_after_chars=0, stall_s=5))
    task = editor.start_refactor(uri, "data = open", "rename data to content")
    await until(lambda: backend.requests)
    editor.close(uri)
    result = await asyncio.wait_for(task, 3)
    assert result["status"] == "cancelled"
    assert editor.edits_received == []
    (message,) = editor.messages()
    assert "closed" in message and "nothing was applied" in message


async def test_twenty_documents_at_once(editor: Editor, backend: FakeBackend):
    uris = [editor.open(WORKSPACE / f"many_{i}.py", SOURCE.replace("data", f"data{i}")) for i in range(20)]
    results = await asyncio.gather(
        *(
            editor.execute(
                "refactorLsp.refactor",
                {"uri": uri, "range": editor.cursor_at(uri, "= open"), "instruction": f"rename data{i} to out{i}"},
            )
            for i, uri in enumerate(uris)
        )
    )
    assert [r["status"] for r in results] == ["applied"] * 20
    for i, uri in enumerate(uris):
        assert editor.buffers[uri] == SOURCE.replace("data", f"out{i}")
    assert all(
        p.edit.document_changes[0].text_document.uri == uri
        for p, uri in zip(
            sorted(editor.edits_received, key=lambda p: p.edit.document_changes[0].text_document.uri),
            sorted(uris),
            strict=True,
        )
    )


async def test_a_refused_answer_is_kept_for_the_user_to_read(editor: Editor, backend: FakeBackend):
    answer = "Sure! I renamed the variable as you asked, it is much clearer now.\n"
    backend.enqueue(Reply(text=answer))
    uri, result = await run(editor, "kept answer")
    assert result["status"] == "error" and editor.buffers[uri] == SOURCE
    (message,) = editor.messages()
    assert "explanation instead of code" in message and "the model's answer: " in message
    kept = Path(message.rsplit("the model's answer: ", 1)[1].rstrip(")"))
    assert kept.read_text(encoding="utf-8") == answer
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert STATE_DIR in kept.parents  # the server's state folder, never next to the document
