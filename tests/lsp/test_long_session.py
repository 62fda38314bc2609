"""A day of typing in a few seconds: 20,000 changes, code actions as the cursor moves, documents
opened and closed, changes to a document that is not open. What the server keeps stays the same size
(its own count at shutdown) and so does its memory (benchmarks/long_session.py runs it longer)."""

from __future__ import annotations

import json

from lsp_server.testing.lsp_pipe import (
    SESSION_URI,
    ServerPipe,
    frame,
    open_session_document,
    other_documents,
    typing,
)
from tests.conftest import closed_port_url
from tests.lsp_harness import server_setup

_, SERVER_ENV, _ = server_setup()
PING = "refactorLsp/noSuchMethod"  # answered (MethodNotFound) once every message before it is handled


def test_twenty_thousand_changes_leave_the_server_the_size_it_was() -> None:
    server = ServerPipe(["-vv"], SERVER_ENV)  # -vv: the count at shutdown is a debug line
    try:
        server.send(frame("initialize", {"processId": None, "rootUri": None, "capabilities": {}}, 1))
        assert server.reply(1) is not None
        server.send(frame("initialized", {}) + open_session_document() + typing(2_000, 1) + frame(PING, None, 2))
        assert server.reply(2, timeout=120) is not None
        before = server.rss_kib()

        server.send(typing(20_000, 2_001) + other_documents(1_000) + frame(PING, None, 3))
        assert server.reply(3, timeout=300) is not None
        after = server.rss_kib()
        # pygls's leak was about 2 KB a change: 40 MB here. What is left is the allocator's noise.
        assert after - before < 6 * 1024, (before, after)

        server.send(frame("shutdown", None, 4))
        assert server.reply(4) is not None
        kept = server.kept_at_shutdown()
        assert kept is not None, server.log_lines()[-5:]
        assert kept["request futures"] <= 2, kept  # the shutdown request itself, and its handler
        assert kept["result types"] == 0, kept
        assert kept["open documents"] == 1, kept
        assert kept["scope caches"] <= 1, kept
        assert not any("Error in server" in str(m) for m in server.messages)  # the never-opened document: quiet
    finally:
        server.close()


def test_a_request_the_editor_never_answers_is_not_kept() -> None:
    """The server asks the editor for its settings and stops waiting after a while: nothing of the
    request is kept, and an answer that comes late finds nothing waiting for it."""
    # A port nothing listens on: the refactor fails at once, after the settings.
    backends = {"nowhere": {"type": "openai", "baseUrl": closed_port_url(), "model": "m"}}
    initialize = {
        "processId": None,
        "rootUri": None,
        "capabilities": {"workspace": {"configuration": True}},
        "initializationOptions": {"defaultBackend": "nowhere", "backends": backends},
    }
    refactor = {"uri": SESSION_URI, "instruction": "rename a to x", "range": None, "wait": True}
    command = {"command": "refactorLsp.refactor", "arguments": [refactor]}
    server = ServerPipe(["-vv"], SERVER_ENV)
    try:
        server.send(frame("initialize", initialize, 1))
        assert server.reply(1) is not None
        server.send(frame("initialized", {}) + open_session_document())
        asked = []
        for request_id in (2, 3):  # each refactor asks again: the last ask went unanswered
            server.send(frame("workspace/executeCommand", command, request_id))
            assert server.reply(request_id, timeout=60) is not None  # the server gave up waiting, and went on
            settings = [m for m in server.messages if m.get("method") == "workspace/configuration"]
            asked = [m["id"] for m in settings]
        assert len(asked) == 2
        late = json.dumps({"jsonrpc": "2.0", "id": asked[0], "result": [None]}).encode()  # the second: never
        server.send(b"Content-Length: %d\r\n\r\n%s" % (len(late), late) + frame("shutdown", None, 4))
        assert server.reply(4) is not None
        kept = server.kept_at_shutdown()
        assert kept is not None
        assert kept["result types"] == 0 and kept["request futures"] <= 2, kept
        assert not [line for line in server.log_lines() if "Unable to handle message" in line]
    finally:
        server.close()
