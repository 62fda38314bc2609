"""The server's stdin, read by the event loop from a pipe (what editors give it) and in a thread from
anything else: both serve a session. A header the server cannot use is reported and the input skipped
to the next message, so the requests after it are answered; what real clients send is read as sent.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from lsp_server.server.stdio import MAX_BODY_BYTES
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.lsp_pipe import ServerPipe, frame, read_message
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings
from tests.lsp_harness import server_setup

STATE_DIR, SERVER_ENV, _ = server_setup()
INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}
PING = "refactorLsp/noSuchMethod"  # any request is answered, this one with MethodNotFound


@pytest.fixture
def server() -> Iterator[ServerPipe]:
    pipe = ServerPipe([], SERVER_ENV)
    yield pipe
    pipe.close()


def body_of(method: str, params: object, request_id: int | None = None) -> bytes:
    return frame(method, params, request_id).partition(b"\r\n\r\n")[2]


def said(pipe: ServerPipe, words: str) -> bool:
    return pipe.wait_for(lambda m: words in m.get("params", {}).get("message", ""), timeout=10) is not None


def test_a_session_over_a_pipe_runs_to_exit(server: ServerPipe) -> None:
    server.send(frame("initialize", INITIALIZE, 1))
    assert "capabilities" in (server.reply(1) or {}).get("result", {})
    server.send(frame("initialized", {}) + frame("shutdown", None, 2))
    assert (server.reply(2) or {}).get("result", "no reply") is None
    server.send(frame("exit", None))
    assert server.process.wait(timeout=30) == 0


def test_a_session_from_a_regular_file_is_served() -> None:
    script = STATE_DIR / "session.lsp"
    bad = b"Content-Length: -5\r\n\r\n" + body_of(PING, None, 1)
    script.write_bytes(frame("initialize", INITIALIZE, 1) + bad + frame(PING, None, 2))
    with script.open("rb") as stdin:
        pipe = ServerPipe([], SERVER_ENV, stdin=stdin)
    try:
        assert "capabilities" in (pipe.reply(1) or {}).get("result", {})
        assert (pipe.reply(2) or {}).get("error", {}).get("code") == -32601  # read past the broken one
        assert any("Content-Length" in line for line in pipe.log_lines())
        pipe.process.wait(timeout=30)  # the file's end is the session's
    finally:
        pipe.close()


# Each header the server cannot use, as a whole message (its body a request of id 2 that must not be
# run): the request after it (id 3) is answered, and the log says what was wrong.
UNUSABLE = {
    "negative length": (b"Content-Length: -5\r\n\r\n", "'-5' is not a message length"),
    "not a number": (b"Content-Length: abc\r\n\r\n", "'abc' is not a message length"),
    "zero": (b"Content-Length: 0\r\n\r\n", "'0' is not a message length"),
    "two different lengths": (b"Content-Length: 40\r\nContent-Length: 41\r\n\r\n", "two different Content-Length"),
    "no length": (b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n", "no Content-Length"),
    "not a header line": (b"hello there\r\n\r\n", "not `Name: value`"),
    # The body's end runs into the next message's header line: it is found in that line.
    "a length shorter than its body": (b"Content-Length: 20\r\n\r\n", "not `Name: value`"),
}


@pytest.mark.parametrize("header", list(UNUSABLE.values()), ids=list(UNUSABLE))
def test_an_unusable_header_is_reported_and_the_next_message_is_answered(
    server: ServerPipe, header: tuple[bytes, str]
) -> None:
    head, problem = header
    server.send(frame("initialize", INITIALIZE, 1))
    assert server.reply(1) is not None
    server.send(head + body_of(PING, None, 2) + frame(PING, None, 3))
    assert (server.reply(3, timeout=15) or {}).get("error", {}).get("code") == -32601
    assert said(server, problem), server.log_lines()
    assert "skipping to the next message" in " ".join(server.log_lines())
    assert server.reply(2, timeout=0) is None  # the broken message itself is not guessed at


def test_a_length_over_the_bound_is_refused_before_its_body_is_read(server: ServerPipe) -> None:
    server.send(frame("initialize", INITIALIZE, 1))
    assert server.reply(1) is not None
    before = server.rss_kib()
    # 32 MB of what would be its body, then a request: the server keeps none of it and answers the request.
    server.send(b"Content-Length: 1000000000000000\r\n\r\n")
    chunk = b'{"jsonrpc": "2.0", "method": "x", "params": "' + b"a" * (1 << 20) + b'"}\n'
    for _ in range(32):
        server.send(chunk)
    server.send(frame(PING, None, 2))
    assert (server.reply(2, timeout=60) or {}).get("error", {}).get("code") == -32601
    assert said(server, f"over the {MAX_BODY_BYTES:,} bytes a message may have")
    assert server.rss_kib() - before < 8 * 1024  # nothing of the 32 MB is kept


def test_a_message_just_over_the_bound_is_skipped_whole() -> None:
    """A real message over the bound (a document far past what the server refactors): skipped, and the
    message after it read."""
    pipe = ServerPipe([], SERVER_ENV)
    try:
        pipe.send(frame("initialize", INITIALIZE, 1))
        assert pipe.reply(1) is not None
        text = "Content-Length: 12\\r\\n" + "x" * MAX_BODY_BYTES  # a header's words inside the document
        big = frame("textDocument/didOpen", {"textDocument": {"uri": "file:///big.txt", "text": text}})
        pipe.send(big + frame(PING, None, 2))
        assert (pipe.reply(2, timeout=60) or {}).get("error", {}).get("code") == -32601
        assert said(pipe, "over the")
    finally:
        pipe.close()


def test_what_real_clients_send_is_read_as_sent(server: ServerPipe) -> None:
    """Header names in any case, spaces around the value, a Content-Type, a line ended by LF alone, the
    same length twice, a blank line between messages: each request is answered, nothing is reported."""
    server.send(frame("initialize", INITIALIZE, 1))
    assert server.reply(1) is not None
    heads = [
        b"content-length: %d\r\n\r\n",
        b"CONTENT-LENGTH:%d\r\n\r\n",
        b"Content-Length:   %d  \r\n\r\n",
        b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"Content-Length: %d\n\r\n",
        b"\r\nContent-Length: %d\r\n\r\n",
    ]
    for request_id, head in enumerate(heads, start=10):
        ping = body_of(PING, None, request_id)
        server.send(head % len(ping) + ping)
        assert server.reply(request_id, timeout=15) is not None, head
    ping = body_of(PING, None, 30)
    server.send(b"Content-Length: %d\r\nContent-Length: %d\r\n\r\n%s" % (len(ping), len(ping), ping))
    assert server.reply(30, timeout=15) is not None
    assert not [line for line in server.log_lines() if "cannot read" in line]


def test_a_header_line_that_never_ends_is_skipped(server: ServerPipe) -> None:
    server.send(frame("initialize", INITIALIZE, 1))
    assert server.reply(1) is not None
    server.send(b"Content-Length: " + b"9" * 200_000)  # no line end: only the bound stops it
    assert said(server, "a header of more than")
    server.send(b"\r\n\r\n" + frame(PING, None, 2))
    assert (server.reply(2, timeout=15) or {}).get("error", {}).get("code") == -32601


def test_a_body_cut_short_ends_the_session(server: ServerPipe) -> None:
    server.send(frame("initialize", INITIALIZE, 1) + frame("shutdown", None, 2)[:-5], close=True)
    assert server.reply(1) is not None  # the whole message is served
    assert server.reply(2, timeout=5) is None  # the cut one is not, and the server ends
    server.process.wait(timeout=30)


def test_a_server_whose_stdout_the_editor_closed_ends_at_once_and_quietly(fake_backend: FakeBackend) -> None:
    """An editor gone, or one that closed the server's stdout and not its stdin: nothing the server says
    can arrive any more. Each write failed with a traceback on stderr (here a `wait: false` refactor's
    progress and outcome) and the server ran on, waiting for input that never came; it ends, saying why once."""
    fake_backend.enqueue(Reply(delay_headers_s=1.0))
    document = STATE_DIR / "closed-stdout.py"
    document.write_text("x = 1\n", encoding="utf-8")
    uri = document.as_uri()
    err = STATE_DIR / "closed-stdout.err"
    with err.open("wb") as stderr:
        server = subprocess.Popen(
            [sys.executable, "-m", "lsp_server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            env=SERVER_ENV,
        )  # fmt: skip
    assert server.stdin is not None and server.stdout is not None
    arguments = {"uri": uri, "instruction": "rename x to y", "wait": False}
    try:
        server.stdin.write(
            frame("initialize", {**INITIALIZE, "initializationOptions": editor_settings(fake_backend)}, 1)
        )
        server.stdin.write(frame("initialized", {}))
        item = {"uri": uri, "languageId": "python", "version": 1, "text": "x = 1\n"}
        server.stdin.write(frame("textDocument/didOpen", {"textDocument": item}))
        command = {"command": "refactorLsp.refactor", "arguments": [arguments]}
        server.stdin.write(frame("workspace/executeCommand", command, 2))
        server.stdin.flush()
        while (message := read_message(server.stdout)) is not None and message.get("id") != 2:
            pass
        assert message is not None and message["result"] == {"status": "started"}
        server.stdout.close()  # the refactor runs on, and has things to say
        server.wait(timeout=10)
    finally:
        server.kill()
        server.stdin.close()
    said = err.read_text(encoding="utf-8")
    assert said.count("the connection to the editor is lost") == 1 and "Traceback" not in said, said
