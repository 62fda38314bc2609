"""The server on stdin and stdout, stdin read by the event loop itself.

pygls (2.1) reads stdin in a worker thread, one thread hop for each header line, the blank line and
the body: on a busy two-core machine that is about a millisecond between a command arriving and its
handler starting (benchmarks/recorded/2026-12-01-overhead.md). A pipe or a terminal, what editors
give a language server, can be read by the event loop without a thread; anything else (a regular
file, a platform whose loop cannot) keeps pygls's own reader.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
import sys
import threading
from typing import BinaryIO

from pygls.io_ import StdoutWriter, run_async
from pygls.server import JsonRPCServer

log = logging.getLogger(__name__)

# A header line is "Content-Length: N"; a longer one is not LSP, and ends the session as a closed pipe does.
HEADER_LINE_LIMIT = 64 * 1024


class _LoopReader:
    """pygls's reader interface over an asyncio stream: a closed or broken pipe reads as the end."""

    def __init__(self, stream: asyncio.StreamReader) -> None:
        self._stream = stream

    async def readline(self) -> bytes:
        try:
            return await self._stream.readline()
        except ValueError:  # a header line past the limit
            log.error("the editor sent a header line of more than %d bytes; closing the session", HEADER_LINE_LIMIT)
            return b""

    async def readexactly(self, n: int) -> bytes:
        try:
            return await self._stream.readexactly(n)
        except asyncio.IncompleteReadError as exc:
            return exc.partial  # pygls ends on an empty body; a partial one fails to parse, then the pipe is at its end


def _loop_readable(stdin: BinaryIO) -> bool:
    try:
        mode = os.fstat(stdin.fileno()).st_mode
    except (OSError, ValueError, AttributeError):
        return False
    return sys.platform != "win32" and (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode))


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
    """`server.start_io()`, with stdin read by the event loop where it can be."""
    source = stdin or sys.stdin.buffer
    if not _loop_readable(source):
        server.start_io(stdin, stdout)
        return
    # What pygls's start_io does (2.1.1), with the loop's reader in place of its thread's.
    stop = server._stop_event = threading.Event()  # pygls's shutdown() sets it
    server.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        stream = asyncio.StreamReader(limit=HEADER_LINE_LIMIT, loop=loop)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream, loop=loop), source)
        await run_async(
            stop_event=stop,
            reader=_LoopReader(stream),
            protocol=server.protocol,
            logger=log,
            error_handler=server.report_server_error,
        )

    try:
        asyncio.run(serve())
    except BrokenPipeError:
        log.error("the connection to the editor is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()
