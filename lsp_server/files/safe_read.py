"""Reading a file named by someone else (the user's command line, a repository's config file): only a
regular file, only up to a size, never blocking; and stdin, only up to a size.

`Path.read_bytes()` trusts its input: on a FIFO it waits for a writer for ever, on `/dev/zero` it
fills the memory, on a 10 GB file it reads 10 GB before anything can say "too large". Either reader
decides "too large" on the bytes, before anything decodes them: a read stopped at the bound may end
inside a character, and that is no reason to call the input "not UTF-8".
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class ReadRefused(ValueError):
    """The file was not read; the message names it and says why (`reason`: the why alone)."""

    def __init__(self, path: Path | str, reason: str) -> None:
        super().__init__(f"cannot read {path}: {reason}")
        self.reason = reason


def _what(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def read_regular_file(path: Path, max_bytes: int, *, limit_name: str = "") -> bytes:
    """The bytes of `path`, a regular file of at most `max_bytes` bytes; else ReadRefused.

    Opened non-blocking, so a FIFO or a device is refused at once instead of waiting; the size is
    checked on the open file (no swap between check and read) and the read stops one byte past the
    bound whatever the file claims (a file that grows meanwhile is refused too).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise ReadRefused(path, str(exc.strerror)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadRefused(path, f"it is {_what(info.st_mode)}, not a regular file")
        limit = f" ({limit_name})" if limit_name else ""
        too_large = f"it is larger than {max_bytes:,} bytes{limit}; nothing was read"
        if info.st_size > max_bytes:
            raise ReadRefused(path, too_large)
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise ReadRefused(path, too_large)
        return b"".join(chunks)
    except OSError as exc:
        raise ReadRefused(path, str(exc.strerror)) from None
    finally:
        os.close(fd)


def read_stream(stream: BinaryIO, max_bytes: int, name: str = "stdin", *, limit_name: str = "") -> bytes:
    """All the bytes of `stream` (stdin, a pipe) up to its end, when they are at most `max_bytes`; else
    ReadRefused, having read one byte past the bound and no more (the rest is left unread)."""
    chunks: list[bytes] = []
    size = 0
    while size <= max_bytes:
        chunk = stream.read(min(1 << 20, max_bytes + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    if size > max_bytes:
        limit = f" ({limit_name})" if limit_name else ""
        raise ReadRefused(name, f"it holds more than {max_bytes:,} bytes{limit}; nothing was read")
    return b"".join(chunks)
