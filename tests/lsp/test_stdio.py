"""The server's stdin, read by the event loop from a pipe (what editors give it) and by pygls's thread
from anything else: both serve a session, and input that is not LSP ends it, never hangs it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import IO, Any

from tests.lsp_harness import server_setup

STATE_DIR, SERVER_ENV, _ = server_setup()
INITIALIZE = {"processId": None, "rootUri": None, "capabilities": {}}


def message(method: str, params: object, request_id: int | None = None) -> bytes:
    body: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        body["id"] = request_id
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(data), data)


def read_message(stdout: IO[bytes]) -> dict[str, Any] | None:
    """The server's next message, None at the end of its output."""
    length = None
    while True:
        line = stdout.readline()
        if not line:
            return None
        if line == b"\r\n" and length is not None:
            return json.loads(stdout.read(length))
        found = re.match(rb"Content-Length: (\d+)", line)
        if found:
            length = int(found.group(1))


def reply_to(stdout: IO[bytes], request_id: int) -> dict[str, Any] | None:
    while (found := read_message(stdout)) is not None:
        if found.get("id") == request_id:
            return found
    return None


def start(stdin: IO[bytes] | int = subprocess.PIPE) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "lsp_server"],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=SERVER_ENV,
    )


def send(process: subprocess.Popen[bytes], data: bytes, close: bool = False) -> None:
    assert process.stdin is not None
    process.stdin.write(data)
    process.stdin.flush()
    if close:
        process.stdin.close()


def test_a_session_over_a_pipe_runs_to_exit() -> None:
    process = start()
    assert process.stdout is not None
    try:
        send(process, message("initialize", INITIALIZE, 1))
        assert "capabilities" in (reply_to(process.stdout, 1) or {}).get("result", {})
        send(process, message("initialized", {}) + message("shutdown", None, 2))
        assert (reply_to(process.stdout, 2) or {}).get("result", "no reply") is None
        send(process, message("exit", None))
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()


def test_a_session_from_a_regular_file_is_served() -> None:
    script = STATE_DIR / "session.lsp"
    script.write_bytes(message("initialize", INITIALIZE, 1))
    with script.open("rb") as stdin:
        process = start(stdin)
    assert process.stdout is not None
    try:
        assert "capabilities" in (reply_to(process.stdout, 1) or {}).get("result", {})
        process.wait(timeout=30)  # the file's end is the session's
    finally:
        process.kill()


def test_a_header_line_that_never_ends_closes_the_session() -> None:
    process = start()
    assert process.stdout is not None
    try:
        send(process, b"Content-Length: " + b"9" * 200_000)  # the pipe stays open: only the limit ends it
        process.wait(timeout=30)
        said = read_message(process.stdout)
        assert said is not None and "header line of more than" in said["params"]["message"]
    finally:
        process.kill()


def test_a_body_cut_short_ends_the_session() -> None:
    process = start()
    assert process.stdout is not None
    try:
        send(process, message("initialize", INITIALIZE, 1) + message("shutdown", None, 2)[:-5], close=True)
        assert reply_to(process.stdout, 1) is not None  # the whole message is served
        assert reply_to(process.stdout, 2) is None  # the cut one is not, and the server ends
        process.wait(timeout=30)
    finally:
        process.kill()
