"""Your own checker: a command from your user file (`refactor.checkers`, per languageId) that reads a
document on its standard input and exits non-zero on an error, run on an answer before its edit.

Running a program is the most a setting can do, so only your user file names one (config/trust.py
drops it from every other layer). It runs without a shell, in your home folder (never the
repository's, whose config files for that tool are not yours), for at most CHECK_TIMEOUT_S, and at
most MAX_OUTPUT_BYTES of what it writes are read; its first lines are the error shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass
from pathlib import Path

from ..text import clip

CHECK_TIMEOUT_S = 10.0  # `node --check` on a large file takes well under a second; a linter a few
MAX_OUTPUT_BYTES = 64 * 1024
SHOWN_LINES = 3  # of its output, non-blank: the error, not its stack
# `file:12:5: message`, `[stdin]:12`: the first line number a checker names.
_LINE = re.compile(r":(\d+)(?::\d+)?(?=[:\s]|$)", re.M)


@dataclass(frozen=True)
class CommandResult:
    """How one run ended: `failed` (non-zero exit) with what it said, or `broken` (it could not run,
    or ran past its time: it says nothing about the text)."""

    failed: bool = False
    output: str = ""  # its first lines, or why it could not run
    line: int = 0  # the first line number its output names; 0: none
    broken: bool = False


async def run_checker(argv: list[str], text: str) -> CommandResult:
    """`argv` run on `text` (its standard input), bounded in time and output."""
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=Path.home(),
            start_new_session=True,  # its own process group: a cancelled refactor's terminal signal is not its
        )
    except OSError as exc:  # not found, not executable
        return CommandResult(output=f"could not run {clip(argv[0], 80)}: {exc.strerror or exc}", broken=True)
    assert process.stdin is not None and process.stdout is not None
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            output = await _talk(process.stdin, process.stdout, text.encode("utf-8", "surrogatepass"))
            code = await process.wait()
    except TimeoutError:
        return CommandResult(output=f"{clip(argv[0], 80)} ran past {CHECK_TIMEOUT_S:g} s", broken=True)
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
            await process.wait()
    if code == 0:
        return CommandResult()
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    shown = "; ".join(clip(line, 120) for line in lines[:SHOWN_LINES]) or f"{clip(argv[0], 80)} exited with {code}"
    found = _LINE.search("\n".join(lines[:SHOWN_LINES]))
    return CommandResult(failed=True, output=shown, line=int(found.group(1)) if found else 0)


async def _talk(stdin: asyncio.StreamWriter, stdout: asyncio.StreamReader, data: bytes) -> bytes:
    """Write `data` and close its input while reading its output, up to MAX_OUTPUT_BYTES (the rest is
    read and dropped, so that it never blocks on a full pipe)."""

    async def write() -> None:
        with contextlib.suppress(ConnectionError):  # it exited without reading all of it
            stdin.write(data)
            await stdin.drain()
            stdin.close()

    writer = asyncio.ensure_future(write())
    kept = bytearray()
    try:
        while chunk := await stdout.read(65536):
            if len(kept) < MAX_OUTPUT_BYTES:
                kept += chunk[: MAX_OUTPUT_BYTES - len(kept)]
        await writer
    finally:
        writer.cancel()
    return bytes(kept)
