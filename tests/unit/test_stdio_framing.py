"""The LSP framing read whatever size the reads come in: a header or a `Content-Length` split between
two reads is read as one (tests/lsp/test_stdio.py has the rules over real pipes)."""

from __future__ import annotations

import io

import pytest

from lsp_server.server.stdio import MAX_BODY_BYTES, MessageReader
from lsp_server.testing.lsp_pipe import frame

GOOD = [frame("a/b", {"n": n, "text": "Content-Length: 5"}, n) for n in range(4)]
STREAM = b"".join(
    [
        GOOD[0],
        b"Content-Length: -5\r\n\r\n" + GOOD[0].partition(b"\r\n\r\n")[2],  # unusable: skipped
        GOOD[1],
        b"content-length:%d\n\n" % (MAX_BODY_BYTES + 1) + b"x" * 100_000,  # over the bound: skipped unread
        GOOD[2],
        b"\r\n" + GOOD[3],  # a blank line between messages
    ]
)
EXPECTED = [g.partition(b"\r\n\r\n")[2] for g in GOOD]


async def bodies(data: bytes, read_size: int) -> list[bytes]:
    source = io.BytesIO(data)

    async def read(n: int) -> bytes:
        return source.read(min(n, read_size))

    reader = MessageReader(read)
    found = []
    while (body := await reader.next_body()) is not None:
        found.append(body)
    return found


@pytest.mark.parametrize("read_size", [1, 2, 3, 7, 13, 64, 4096, 1 << 20])
async def test_the_same_messages_whatever_the_reads(read_size: int) -> None:
    assert await bodies(STREAM, read_size) == EXPECTED
