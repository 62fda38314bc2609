"""The server over real LSP with input it must bound or refuse: documents the editor never opened
(a FIFO among them), a backend that ignores max_tokens, command arguments of the wrong type, and
requests after `shutdown`."""

from __future__ import annotations

import asyncio
import os
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, server_setup, session, start_session

SETUP = server_setup()
WORKSPACE = SETUP.state_dir / "bounded-workspace"
SOURCE = "def load(path):\n    data = open(path).read()\n    return data\n"
RENAMED = SOURCE.replace("data", "content")
INVALID_PARAMS, INVALID_REQUEST = -32602, -32600


backend = fake_fixture()
# One server for the tests that leave it as they found it; a test that ends its server starts its own.
client = session(SETUP, WORKSPACE, lambda backend: editor_settings(backend))


async def start(backend: FakeBackend) -> tuple[LanguageClient, Editor]:
    backend.reset()  # the module's fake, as fresh as the server
    editor = await start_session(SETUP, WORKSPACE, editor_settings(backend))
    return editor.client, editor


def cursor(line: int = 1) -> dict:
    return {"start": {"line": line, "character": 4}, "end": {"line": line, "character": 4}}


async def round_trip_ms(editor: Editor, uri: str) -> float:
    started = time.perf_counter()
    await asyncio.wait_for(editor.code_actions(uri, editor.cursor_at(uri, "data =")), 5)
    return (time.perf_counter() - started) * 1000


async def test_a_document_the_editor_never_opened_is_refused_and_not_read(editor: Editor, backend: FakeBackend):
    client = editor.client
    on_disk = WORKSPACE / "never-opened.py"
    on_disk.write_text(SOURCE, encoding="utf-8")
    fifo = WORKSPACE / "pipe.py"
    if not fifo.exists():
        os.mkfifo(fifo)
    for path in (on_disk, fifo):
        uri = path.as_uri()
        # Listing actions never reads the file (a FIFO would block the whole server): nothing is offered.
        actions = await asyncio.wait_for(
            client.text_document_code_action_async(
                types.CodeActionParams(
                    types.TextDocumentIdentifier(uri),
                    types.Range(types.Position(1, 4), types.Position(1, 4)),
                    types.CodeActionContext(diagnostics=[]),
                )
            ),
            5,
        )
        assert not actions
        reply = await asyncio.wait_for(
            editor.execute("refactorLsp.refactor", {"uri": uri, "range": cursor(), "instruction": "rename"}), 5
        )
        assert reply["status"] == "error"
        assert "is not open in the editor" in reply["message"] and "open it and try again" in reply["message"]
    assert backend.requests == [], "a file the editor never opened was sent to the backend"
    assert on_disk.read_text(encoding="utf-8") == SOURCE
    # The server still serves an open document normally.
    uri = editor.open(WORKSPACE / "opened.py", SOURCE)
    reply = await editor.execute(
        "refactorLsp.refactor",
        {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": "rename data to content"},
    )
    assert reply["status"] == "applied" and editor.buffers[uri] == RENAMED


async def test_a_backend_that_ignores_max_tokens_is_cut_off_and_the_buffer_kept(editor: Editor, backend: FakeBackend):
    uri = editor.open(WORKSPACE / "flood.py", SOURCE)
    backend.enqueue(Reply(flood_chunk_chars=256 * 1024, flood_max_bytes=512 << 20))
    task = asyncio.create_task(
        editor.execute(
            "refactorLsp.refactor", {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": "x"}
        )
    )
    reply = await asyncio.wait_for(task, 30)
    assert reply["status"] == "error"
    assert "does not keep to max_tokens" in reply["message"]
    assert [m for m in editor.messages() if "max_tokens" in m] == ["refactor-lsp: " + reply["message"]]
    assert editor.buffers[uri] == SOURCE and not editor.edits_received
    assert backend.flood_sent < 32 << 20, backend.flood_sent
    assert await round_trip_ms(editor, uri) < 1000  # still serving


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        ("instruction", {"text": "rename"}, "`instruction` must be a string, not an object"),
        ("backend", ["fake"], "`backend` must be a string (a configured backend's name), not an array"),
        ("prediction", "yes", "`prediction` must be true or false, not a string"),
        ("wait", 0, "`wait` must be true or false, not a number"),
        ("actionId", 7, "`actionId` must be a string, not a number"),
        ("diagnostics", "line 1: x", "`diagnostics` must be an array of strings, not a string"),
        ("diagnostics", [{"message": "x"}], "`diagnostics` must be an array of strings"),
        ("editFormat", True, "`editFormat` must be a string, not a boolean"),
        ("uri", 42, "`uri` must be a string (the document's URI), not a number"),
    ],
)
async def test_an_argument_of_the_wrong_type_is_invalid_params_naming_it(
    editor: Editor, backend: FakeBackend, field: str, value: object, problem: str
):
    uri = editor.open(WORKSPACE / "typed.py", SOURCE)
    arguments = {"uri": uri, "range": cursor(), "instruction": "rename data to content", field: value}
    with pytest.raises(JsonRpcException) as info:
        await editor.execute("refactorLsp.refactor", arguments)
    assert info.value.code == INVALID_PARAMS
    assert problem in str(info.value)
    assert "Traceback" not in str(info.value) and "Traceback" not in repr(info.value.data)
    assert backend.requests == [] and editor.buffers[uri] == SOURCE


async def test_a_request_after_shutdown_gets_invalid_request_at_once(backend: FakeBackend):
    client, editor = await start(backend)
    uri = editor.open(WORKSPACE / "after-shutdown.py", SOURCE)
    await client.shutdown_async(None)
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(editor.code_actions(uri, editor.cursor_at(uri, "data =")), 5)
    assert info.value.code == INVALID_REQUEST and "shutting down" in str(info.value)
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(editor.execute("refactorLsp.showStats"), 5)
    assert info.value.code == INVALID_REQUEST
    client.exit(None)
    await asyncio.wait_for(client._server.wait(), 5)  # type: ignore[union-attr]
    assert client._server.returncode == 0  # type: ignore[union-attr]
    await client.stop()


@pytest.mark.parametrize("argument", [["file:///x.py"], {"uri": 7}, 3])
async def test_cancel_with_an_argument_of_the_wrong_type_cancels_nothing(
    editor: Editor, backend: FakeBackend, argument: object
):
    uri = editor.open(WORKSPACE / "cancel-typed.py", SOURCE)
    backend.enqueue(Reply(stall_after_chars=5, stall_s=2))
    running = editor.start_refactor(uri, "data =", "rename data to content")
    while backend.active_streams < 1:
        await asyncio.sleep(0.01)
    with pytest.raises(JsonRpcException) as info:
        await editor.execute("refactorLsp.cancel", argument)
    assert info.value.code == INVALID_PARAMS and "`uri` is not a string" in str(info.value)
    reply = await asyncio.wait_for(running, 10)
    assert reply["status"] == "applied" and editor.buffers[uri] == RENAMED  # not cancelled
