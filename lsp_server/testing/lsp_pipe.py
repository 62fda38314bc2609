"""The server as an editor starts it, on real pipes, byte for byte: for the tests and benchmarks that
send what no LSP client library would (a broken header, a flood of changes) and watch the process;
and the long typing session they send it.

Standard library only. The server's output is read on a thread as it comes, so a server that writes
a lot (a log message per change) never blocks on a full pipe while the caller is still writing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

_CONTENT_LENGTH = re.compile(rb"Content-Length: (\d+)")
SHUTDOWN_COUNTS = "at shutdown, the session keeps"  # the server's debug line (handlers.on_shutdown)


def frame(method: str, params: object, request_id: int | None = None) -> bytes:
    """One JSON-RPC message, framed as LSP frames it."""
    body: dict[str, object] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        body["id"] = request_id
    data = json.dumps(body).encode()
    return b"Content-Length: %d\r\n\r\n%s" % (len(data), data)


def read_message(stdout: IO[bytes]) -> dict[str, Any] | None:
    """The next message on an LSP stream, None at its end."""
    length = None
    while True:
        line = stdout.readline()
        if not line:
            return None
        if line == b"\r\n" and length is not None:
            message: dict[str, Any] = json.loads(stdout.read(length))
            return message
        found = _CONTENT_LENGTH.match(line)
        if found:
            length = int(found.group(1))


class ServerPipe:
    """`python -m lsp_server ARGS` with its stdin and stdout on pipes; everything it says is kept."""

    def __init__(
        self, args: list[str], env: Mapping[str, str], stdin: BinaryIO | None = None, cwd: Path | None = None
    ) -> None:
        # A file, not a pipe: what it writes there never blocks it. Closed by close().
        self._stderr = tempfile.TemporaryFile()  # noqa: SIM115
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lsp_server", *args],
            stdin=stdin if stdin is not None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env=dict(env),
            cwd=cwd,  # `-m` looks in the working folder first: another checkout's server runs from its own
        )
        self.messages: list[dict[str, Any]] = []
        self._changed = threading.Condition()
        self._ended = False
        self._reader = threading.Thread(target=self._read, name="lsp-pipe-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        while (message := read_message(self.process.stdout)) is not None:
            with self._changed:
                self.messages.append(message)
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def send(self, data: bytes, close: bool = False) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(data)
        stdin.flush()
        if close:
            stdin.close()

    def wait_for(self, found: Callable[[dict[str, Any]], bool], timeout: float = 30.0) -> dict[str, Any] | None:
        """The first message said so far for which `found` holds; None when the output ends or time runs out."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                match = next((m for m in self.messages if found(m)), None)
                left = deadline - time.monotonic()
                if match is not None or self._ended or left <= 0:
                    return match
                self._changed.wait(left)

    def reply(self, request_id: int, timeout: float = 30.0) -> dict[str, Any] | None:
        return self.wait_for(lambda m: m.get("id") == request_id and "method" not in m, timeout)

    def log_lines(self) -> list[str]:
        """What it said in `window/logMessage` so far."""
        with self._changed:
            return [m["params"]["message"] for m in self.messages if m.get("method") == "window/logMessage"]

    def kept_at_shutdown(self, timeout: float = 30.0) -> dict[str, int] | None:
        """What the session kept, by name ("request futures": 2, ...): the debug line the server logs
        at `shutdown` (started with -vv); None when it said none."""
        said = self.wait_for(lambda m: SHUTDOWN_COUNTS in m.get("params", {}).get("message", ""), timeout)
        if said is None:
            return None
        counts = said["params"]["message"].partition(SHUTDOWN_COUNTS)[2]
        return {name: int(n) for n, name in re.findall(r"(\d+) ([a-z ]+?)(?=,|$)", counts)}

    def rss_kib(self) -> int:
        """Its resident memory now (Linux: /proc/PID/status)."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        found = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
        assert found is not None, "no VmRSS in /proc/PID/status"
        return int(found.group(1))

    def stderr_text(self) -> str:
        """What it wrote to stderr so far."""
        self._stderr.seek(0)
        return self._stderr.read().decode(errors="replace")

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        self._reader.join(timeout=30)
        for stream in (self.process.stdin, self.process.stdout, self._stderr):
            if stream is not None:
                stream.close()


# -- a day of typing ---------------------------------------------------------------------------------

SESSION_URI = "file:///work/typing.py"
SESSION_TEXT = "".join(f"def f{i}(a, b):\n    return a + b * {i}\n\n\n" for i in range(60))
ACTION_EVERY = 50  # a code action (the cursor moved) every this many changes


def open_session_document() -> bytes:
    document = {"uri": SESSION_URI, "languageId": "python", "version": 0, "text": SESSION_TEXT}
    return frame("textDocument/didOpen", {"textDocument": document})


def typing(changes: int, first_version: int) -> bytes:
    """`changes` keystrokes in the session's document (a letter typed, then deleted, so its size stays),
    and a code action on a line further down every ACTION_EVERY changes (request ids from 1,000,000)."""
    messages = []
    lines = SESSION_TEXT.count("\n")
    for n in range(changes):
        version = first_version + n
        at = {"line": 5, "character": 4}
        typed = n % 2 == 0
        end = at if typed else {"line": 5, "character": 5}
        change = {"range": {"start": at, "end": end}, "text": "x" if typed else ""}
        params = {"textDocument": {"uri": SESSION_URI, "version": version}, "contentChanges": [change]}
        messages.append(frame("textDocument/didChange", params))
        if n % ACTION_EVERY == 0:
            cursor = {"line": n // ACTION_EVERY % lines, "character": 0}
            where = {"uri": SESSION_URI}
            action = {"textDocument": where, "range": {"start": cursor, "end": cursor}, "context": {"diagnostics": []}}
            messages.append(frame("textDocument/codeAction", action, 1_000_000 + version))
    return b"".join(messages)


def other_documents(rounds: int) -> bytes:
    """Documents opened and closed, and whole-text changes to a document never opened."""
    messages = []
    for n in range(rounds):
        uri = f"file:///work/other{n}.py"
        document = {"uri": uri, "languageId": "python", "version": 1, "text": SESSION_TEXT}
        messages.append(frame("textDocument/didOpen", {"textDocument": document}))
        messages.append(frame("textDocument/didClose", {"textDocument": {"uri": uri}}))
        never = {"uri": "file:///work/never-opened.py", "version": n}
        whole = {"textDocument": never, "contentChanges": [{"text": SESSION_TEXT}]}
        messages.append(frame("textDocument/didChange", whole))
    return b"".join(messages)
