"""Input that used to break the server: it answers every request, says what is wrong in one
message, and ends at once on `exit`."""

from __future__ import annotations

import asyncio
import json
import time

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.lsp_pipe import ServerPipe, frame
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings, fake_fixture
from tests.lsp.test_faults import chunk, sse
from tests.lsp_harness import Editor, server_setup, start_session

SETUP = server_setup()
SERVER_ENV = SETUP.env
WORKSPACE = SETUP.state_dir / "hostile-workspace"
SOURCE = "def load(path):\n    data = open(path).read()\n    return data\n"
RENAMED = SOURCE.replace("data", "content")


backend = fake_fixture(scope="function")


async def start(
    backend: FakeBackend, key: str | None = None, refactor: dict | None = None
) -> tuple[LanguageClient, Editor]:
    keyed = {"api_key_env": "TEST_KEY"} if key is not None else {}
    settings = editor_settings(backend, keys=keyed, refactor=refactor or {})
    editor = await start_session(SETUP, WORKSPACE, settings, env={"TEST_KEY": key} if key is not None else None)
    return editor.client, editor


async def refactor(editor: Editor, name: str, instruction: str = "rename data to content") -> tuple[str, dict]:
    uri = editor.open(WORKSPACE / name, SOURCE)
    result = await editor.execute(
        "refactorLsp.refactor", {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": instruction}
    )
    return uri, result


async def stop(client: LanguageClient) -> None:
    await client.shutdown_session()


async def test_exit_without_shutdown_ends_at_once_with_code_1_and_closes_the_streams(backend: FakeBackend):
    client, editor = await start(backend)
    uri = editor.open(WORKSPACE / "exit.py", SOURCE)
    backend.enqueue(Reply(stall_after_chars=5, stall_s=30))
    pending = asyncio.create_task(
        editor.execute(
            "refactorLsp.refactor",
            {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": "rename data to x"},
        )
    )
    while backend.active_streams < 1:
        await asyncio.sleep(0.01)
    started = time.monotonic()
    client.exit(None)
    await asyncio.wait_for(client._server.wait(), 3)  # type: ignore[union-attr]
    assert time.monotonic() - started < 3.0
    assert client._server.returncode == 1  # type: ignore[union-attr]
    for _ in range(200):  # the backend saw the client hang up: no more billed tokens
        if backend.disconnects >= 1:
            break
        await asyncio.sleep(0.01)
    assert backend.disconnects == 1
    assert editor.buffers[uri] == SOURCE
    pending.cancel()
    await client.stop()


async def test_a_request_the_server_cannot_read_is_answered_and_the_server_keeps_serving(backend: FakeBackend):
    client, editor = await start(backend)
    uri = editor.open(WORKSPACE / "negative.py", SOURCE)
    position = types.Position(line=0, character=0)
    object.__setattr__(position, "line", -1)  # what a buggy client sends; lsprotocol would refuse to build it
    params = types.CodeActionParams(
        types.TextDocumentIdentifier(uri), types.Range(position, position), types.CodeActionContext(diagnostics=[])
    )
    with pytest.raises(Exception) as info:
        await asyncio.wait_for(client.text_document_code_action_async(params), 5)
    assert not isinstance(info.value, TimeoutError)  # an answer came: the error
    _, result = await refactor(editor, "after-negative.py")
    assert result["status"] == "applied"
    await stop(client)


async def test_a_lone_surrogate_in_the_instruction_gets_a_message(backend: FakeBackend):
    client, editor = await start(backend)
    uri, result = await refactor(editor, "surrogate.py", "rename data to content \ud800")
    assert result["status"] == "error"
    (message,) = editor.messages()
    assert "instruction" in message and "lone surrogate" in message and "nothing was sent" in message
    assert editor.buffers[uri] == SOURCE and backend.requests == []
    await stop(client)


async def test_a_file_name_that_is_not_unicode_is_shown_escaped_in_the_prompt(backend: FakeBackend):
    """A URI may carry a lone surrogate (JSON can), as a file name the system gave as bytes does: the
    name the prompt shows is escaped, and the refactor goes on (it failed as an internal error)."""
    client, editor = await start(backend)
    path = WORKSPACE / "caf\udcff.py"  # the byte 0xFF, as Python spells a name that is not UTF-8
    uri = "file://" + str(path)  # the surrogate itself, as an editor's JSON may carry it
    editor.buffers[uri], editor.versions[uri] = SOURCE, 1
    item = types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)
    client.text_document_did_open(types.DidOpenTextDocumentParams(item))
    result = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": "rename data to content"},
    )
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == RENAMED
    assert "File: caf\\xff.py\n" in backend.requests[-1]["messages"][1]["content"]
    await stop(client)


@pytest.mark.parametrize("key", ["sk-caf\u00e9-123", "sk-abc 123"])
async def test_a_malformed_key_gets_a_message_that_names_the_variable(backend: FakeBackend, key: str):
    client, editor = await start(backend, key=key)
    uri, result = await refactor(editor, "badkey.py")
    assert result["status"] == "error"
    (message,) = editor.messages()
    assert "TEST_KEY" in message and "not a valid key" in message and key not in message
    assert editor.buffers[uri] == SOURCE and backend.requests == []
    await stop(client)


async def test_a_key_with_a_trailing_newline_works(backend: FakeBackend):
    client, editor = await start(backend, key="sk-test-newline-0123\n")
    uri, result = await refactor(editor, "newline.py")
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == RENAMED
    assert backend.headers_seen[-1]["authorization"] == "Bearer sk-test-newline-0123"
    await stop(client)


async def test_thousands_of_empty_hunks_are_counted_in_one_note_not_listed(backend: FakeBackend):
    # Each empty `@@` hunk was a note of its own, all joined: a 300 KB answer gave an 8 MB message,
    # reply and stats notification.
    client, editor = await start(backend, refactor={"hunksForm": "diff", "maxTokens": 50_000})
    lines = "".join(f"    v{i} = open(path).read()  # line {i}\n" for i in range(120))
    source = "def load(path):\n" + lines + "    return v0\n"
    uri = editor.open(WORKSPACE / "empty-hunks.py", source)
    change = "@@\n-    v7 = open(path).read()  # line 7\n+    v7 = open(path).read().strip()  # line 7\n"
    backend.enqueue(Reply(raw_body=sse(chunk("@@\n" * 15_000 + change, "stop"))))  # whole, not paced
    result = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "v7 ="), "instruction": "strip v7", "editFormat": "hunks"},
    )
    assert result["status"] == "applied", result
    assert editor.buffers[uri] == source.replace("read()  # line 7\n", "read().strip()  # line 7\n")
    (stats,) = editor.stats
    assert stats["notes"] == [
        "rewrote the whole file, 122 lines; select lines to rewrite less",
        "15,000 hunks change nothing, so they were skipped (hunks 1, 2, 3, 4, 5 and 14,995 more)",
    ]
    assert all(len(message) < 1_000 for message in editor.messages()), [len(m) for m in editor.messages()]
    assert len(json.dumps(result)) < 5_000
    await stop(client)


def test_the_cli_refuses_half_an_answer_and_leaves_the_file(tmp_path, backend: FakeBackend):
    from tests.cli_harness import run_cli
    from tests.conftest import write_config

    source = tmp_path / "m.py"
    source.write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, fake=backend)
    half = RENAMED[len("def load(path):\n") : -len("data\n")]  # the region minus its last word
    chunk = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "fake-model"}
    body = b"data: " + json.dumps({**chunk, "choices": [{"index": 0, "delta": {"content": half}}]}).encode()
    backend.enqueue(Reply(raw_body=body + b"\n\ndata: [DONE]\n\n"))
    done = run_cli("refactor", str(source), "-i", "rename data to content", "--write", config=config, cwd=tmp_path)
    assert done.returncode == 3  # refused: an answer came, unusable
    assert "no finish_reason" in done.stderr and "nothing was applied" in done.stderr
    assert source.read_text(encoding="utf-8") == SOURCE


@pytest.mark.parametrize("verbose", [[], ["-vv"]], ids=["normal", "debug"])
def test_a_body_that_is_not_json_is_one_line_in_the_editors_log(verbose: list[str]) -> None:
    # The editor's log once got pygls's whole traceback for it, at every level.
    pipe = ServerPipe(verbose, SERVER_ENV)
    try:
        pipe.send(frame("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, 1))
        pipe.send(frame("initialized", {}) + b"Content-Length: 9\r\n\r\nnot json!" + frame("shutdown", None, 2))
        assert (pipe.reply(2) or {}).get("result", "no reply") is None  # the session goes on
        logged = pipe.log_lines()
        assert any("JSON" in line for line in logged), logged
        if verbose:
            assert any("Traceback" in line for line in logged)
        else:
            assert all("Traceback" not in line and "\n" not in line for line in logged), logged
    finally:
        pipe.close()


async def test_header_names_in_editor_settings_reach_the_backend_as_written(backend: FakeBackend):
    """Editor settings' keys are snake_cased (`maxTokens`), but a header's name is the user's: `X-Api-Key`
    was sent as `x_api_key` (another header, one many proxies drop), `HTTP-Referer` as `http_referer`."""
    headers = {"X-Api-Key": "k-123", "HTTP-Referer": "https://example.org", "XTitle": "t"}
    editor = await start_session(SETUP, WORKSPACE, editor_settings(backend, keys={"headers": headers}))
    _, result = await refactor(editor, "headers.py")
    assert result["status"] == "applied", result
    seen = backend.headers_seen[-1]
    assert [seen.get(name) for name in ("x-api-key", "http-referer", "xtitle")] == list(headers.values()), seen
    assert not any("_" in name for name in seen), seen
    await stop(editor.client)
