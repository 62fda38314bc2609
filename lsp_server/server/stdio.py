"""The server on stdin and stdout: the LSP framing read by our own reader, stdin read by the event loop itself.

A message is header lines, a blank line, and a body of exactly `Content-Length` bytes. The reader
takes what real clients send: header names in any case, spaces around a value, a `Content-Type`
(read and ignored: the body is UTF-8 JSON), a line ended by LF alone, the same length twice, blank
lines between messages. A header it cannot use (no `Content-Length`, a length that is not a whole
number from 1 or is over MAX_BODY_BYTES, two different lengths, a line that is not `Name: value`,
a header over HEADER_LIMIT bytes) is reported in the log, so in the editor's `window/logMessage`,
and the input is skipped, a chunk at a time and never kept, to the next `Content-Length`: that one
message is lost, never the session. A skipped JSON body cannot fake a header: a JSON string holds
no raw line break, so `Content-Length` inside one is followed by a quote before any line end, and
that is no length. pygls 2.1.1's own reader (pygls.io_.run_async) believes any length and reads
the next message's bytes as header lines after a header it cannot match: every request that follows
goes unanswered.

stdin from a pipe or a terminal (what editors give a language server) is read by the event loop
without a thread: pygls reads in a worker thread, one hop for each header line, the blank line and
the body, about a millisecond a command on a busy two-core machine
(benchmarks/recorded/2026-12-01-overhead.md). Anything else (a regular file, a platform whose loop
cannot) is read in a worker thread, a chunk at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import stat
import sys
import threading
from collections.abc import Awaitable, Callable
from typing import BinaryIO

from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.server import JsonRPCServer

from ..config.schema import RefactorSettings

log = logging.getLogger(__name__)

HEADER_LIMIT = 64 * 1024  # one message's header lines together: real ones are under 100 bytes
# The largest message body read: the largest document the server refactors (refactor.max_file_chars,
# by default) at the longest JSON escape of one character (12 bytes: a surrogate pair, `\ud83d\ude00`),
# plus 1 MiB for the rest of the message. A larger one is skipped unread: a document opened with it
# is not seen by the server (a refactor of it says it is not open).
MAX_BODY_BYTES = 12 * RefactorSettings.max_file_chars + (1 << 20)
_CHUNK_BYTES = 64 * 1024
_MAX_REPORTS = 20  # framing problems reported at error level in one session; later ones at debug
_CONTENT_LENGTH = b"content-length"  # found in lowered input: ten times faster than a regex ignoring case
_HEADER_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP field name (a token, RFC 9110)

ReadChunk = Callable[[int], Awaitable[bytes]]  # up to n bytes; b"" at the end of the input


class _Unusable(Exception):
    """A header the reader cannot use; the search for the next one resumes at `resume_at` in the buffer."""

    def __init__(self, problem: str, resume_at: int) -> None:
        super().__init__(problem)
        self.resume_at = resume_at


def _shown(data: bytes) -> str:
    """Bytes from the wire, quoted and clipped for a log line."""
    return repr(data[:60])[1:] + ("…" if len(data) > 60 else "")


def _length(value: bytes) -> int:
    """A Content-Length value as a number of bytes."""
    value = value.strip()
    digits = value.lstrip(b"0")
    if not value.isdigit() or not digits:  # ASCII digits only, and 0 is no message
        raise _Unusable(f"Content-Length {_shown(value)} is not a message length", 0)
    if len(digits) > len(str(MAX_BODY_BYTES)) or int(digits) > MAX_BODY_BYTES:
        raise _Unusable(f"Content-Length {_shown(digits)} is over the {MAX_BODY_BYTES:,} bytes a message may have", 0)
    return int(digits)


class MessageReader:
    """The bodies of the LSP messages in a byte stream (the rules are in the module's docstring)."""

    def __init__(self, read: ReadChunk) -> None:
        self._read = read
        self._buffer = bytearray()
        self._pos = 0  # where the unread input starts in the buffer (dropped in front a chunk at a time)
        self._at_end = False
        self._skipped: int | None = None  # bytes dropped since an unusable header; None: in step
        self._reports = 0

    async def next_body(self) -> bytes | None:
        """The next message's body; None when the input ends."""
        while True:
            if self._pos > _CHUNK_BYTES:
                self._compact()
            try:
                length = await self._header()
            except _Unusable as unusable:
                self._report(str(unusable))
                if not await self._skip_to_header(unusable.resume_at):
                    return None
                continue
            if length is None:
                return None
            if self._skipped is not None:
                log.info("found the next message after skipping %d bytes", self._skipped)
                self._skipped = None
            return await self._exactly(length)

    def _compact(self) -> None:
        del self._buffer[: self._pos]
        self._pos = 0

    async def _more(self, wanted: int = _CHUNK_BYTES) -> bool:
        if self._at_end:
            return False
        chunk = await self._read(max(wanted, _CHUNK_BYTES))
        if not chunk:
            self._at_end = True
            return False
        self._buffer += chunk
        return True

    async def _header(self) -> int | None:
        """The next message's Content-Length, its header consumed; None at the end of the input."""
        buffer = self._buffer
        length: int | None = None
        start = self._pos  # where the next header line starts
        while True:
            end = buffer.find(b"\n", start)
            if end < 0 or start - self._pos > HEADER_LIMIT:
                if len(buffer) - self._pos > HEADER_LIMIT:
                    raise _Unusable(f"a header of more than {HEADER_LIMIT:,} bytes", self._pos + 1)
                if not await self._more():
                    return None
                continue
            line, line_start, start = bytes(buffer[start:end]).rstrip(b"\r"), start, end + 1
            if not line.strip():
                if line_start == self._pos:  # a blank line between messages
                    self._pos = start
                elif length is None:
                    raise _Unusable("a header with no Content-Length", start)
                else:
                    self._pos = start
                    return length
                continue
            name, colon, value = line.partition(b":")
            name = name.strip()
            if not colon or not _HEADER_NAME.fullmatch(name):
                raise _Unusable(f"a header line that is not `Name: value`: {_shown(line)}", line_start + 1)
            if name.lower() != b"content-length":
                continue  # Content-Type and any other header: read and ignored
            try:
                found = _length(value)
            except _Unusable as unusable:
                raise _Unusable(str(unusable), line_start + 1) from None
            if length is not None and found != length:
                raise _Unusable(f"two different Content-Length headers ({length} and {found})", line_start + 1)
            length = found

    async def _exactly(self, n: int) -> bytes | None:
        while (have := len(self._buffer) - self._pos) < n:
            if not await self._more(n - have):
                log.warning("the input ended inside a message (%d of its %d bytes came)", have, n)
                return None
        with memoryview(self._buffer) as view:
            body = bytes(view[self._pos : self._pos + n])
        self._pos += n
        return body

    async def _skip_to_header(self, resume_at: int) -> bool:
        """Drop the input up to the next `Content-Length` at or after `resume_at`, keeping none of
        it; False when the input ends first."""
        start = resume_at
        while True:
            found = self._buffer.lower().find(_CONTENT_LENGTH, start)
            cut = found if found >= 0 else max(start, len(self._buffer) - len(_CONTENT_LENGTH) + 1)
            self._skipped = (self._skipped or 0) + cut - self._pos
            self._pos = cut
            if found >= 0:
                return True
            self._compact()
            start = 0
            if not await self._more():
                return False

    def _report(self, problem: str) -> None:
        if self._skipped is not None:  # part of the input already being skipped
            log.debug("while skipping: %s", problem)
            return
        self._skipped = 0
        self._reports += 1
        if self._reports > _MAX_REPORTS:
            log.debug("cannot read a message from the editor: %s", problem)
            return
        last = " (later ones are logged at debug level only)" if self._reports == _MAX_REPORTS else ""
        log.error("cannot read a message from the editor: %s; skipping to the next message%s", problem, last)


async def serve_messages(reader: MessageReader, server: JsonRPCServer, stop: threading.Event) -> None:
    """Hand each message to pygls until the input ends or the server stops (pygls.io_.run_async's loop)."""
    protocol = server.protocol
    while not stop.is_set():
        body = await reader.next_body()
        if body is None:
            return
        try:
            protocol.handle_message(json.loads(body, object_hook=protocol.structure_message))
        except Exception as exc:
            log.exception("Unable to handle message")
            server.report_server_error(exc, JsonRpcException)


def _loop_readable(stdin: BinaryIO) -> bool:
    """A pipe, a socket or a terminal: what the event loop can watch. Another device (`</dev/null`,
    `</dev/zero`) cannot be watched (epoll refuses it) and is read in a thread like a file."""
    try:
        fd = stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    watchable = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))
    return sys.platform != "win32" and watchable


async def _loop_reads(source: BinaryIO) -> ReadChunk:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader(limit=_CHUNK_BYTES, loop=loop)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream, loop=loop), source)

    async def read(n: int) -> bytes:
        try:
            return await stream.read(n)
        except OSError as exc:  # a broken pipe reads as the end
            log.error("reading from the editor failed: %s", exc)
            return b""

    return read


def _thread_reads(source: BinaryIO) -> ReadChunk:
    loop = asyncio.get_running_loop()
    read_some = getattr(source, "read1", source.read)

    async def read(n: int) -> bytes:
        data: bytes = await loop.run_in_executor(None, read_some, n)
        return data

    return read


LOST = "the connection to the editor is lost (it closed the server's output); shutting down"


class EditorWriter(StdoutWriter):
    """pygls's writer to stdout, and the one place a lost editor shows: the first write that fails (the
    editor closed the server's stdout, or is gone) says so once and calls `lost`, and every write after
    it is dropped. pygls logged each failed write with a traceback (a reply, a log line, a `wait: false`
    job's outcome told) and the server ran on, waiting for input that may never come."""

    def __init__(self, stdout: BinaryIO, lost: Callable[[], None]) -> None:
        super().__init__(stdout)
        self._lost = lost
        self.gone = False

    def write(self, data: bytes) -> None:
        if self.gone:
            return
        try:
            super().write(data)
        except (OSError, ValueError) as exc:  # a broken pipe, a closed file
            self.gone = True
            log.error("%s: %s", LOST, exc)  # the log file, when there is one
            with contextlib.suppress(OSError, ValueError):
                print(f"refactor-lsp: {LOST}", file=sys.stderr, flush=True)
            self._lost()


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """`server.start_io()`, with our reader, and stdin read by the event loop where it can be; the session
    ends when the editor can no longer be written to (EditorWriter)."""
    source = stdin or sys.stdin.buffer
    # What pygls's start_io does (2.1.1), with our reader in place of its own.
    stop = server._stop_event = threading.Event()  # pygls's shutdown() sets it
    served: list[asyncio.Task[None]] = []

    def lost() -> None:
        stop.set()
        for task in served:  # the reader may wait for input for ever: stop it now
            task.get_loop().call_soon_threadsafe(task.cancel)

    server.protocol.set_writer(EditorWriter(stdout or sys.stdout.buffer, lost))

    async def serve() -> None:
        served.append(asyncio.current_task())  # type: ignore[arg-type]  # run by asyncio.run: a task
        read = await _loop_reads(source) if _loop_readable(source) else _thread_reads(source)
        with contextlib.suppress(asyncio.CancelledError):
            await serve_messages(MessageReader(read), server, stop)

    try:
        asyncio.run(serve())
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
