"""Your own checker: a command from your user file (`refactor.checkers`, per languageId) that reads a
document on its standard input and exits non-zero on an error, run on an answer before its edit.

Running a program is the most a setting can do, so only your user file names one (config/trust.py
drops it from every other layer). It runs without a shell, in your home folder (never the
repository's, whose config files for that tool are not yours), for at most CHECK_TIMEOUT_S, and at
most MAX_OUTPUT_BYTES of what it writes are read; its first lines are the error shown.

Its input and output are unnamed temporary files, not pipes: a child it leaves in the background holds
a pipe open after it exits, and a read until the end of one would wait for that child. So only its
exit is awaited, within the limit, and then its whole process group is killed, done or not.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..text import clip

CHECK_TIMEOUT_S = 10.0  # `node --check` on a large file takes well under a second; a linter a few
MAX_OUTPUT_BYTES = 64 * 1024
REAP_S = 2.0  # for a killed checker to be reaped: SIGKILL is not refused, so this is a bound, not a wait
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
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as said:
        given.write(text.encode("utf-8", "surrogatepass"))
        given.seek(0)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=given,
                stdout=said,
                stderr=asyncio.subprocess.STDOUT,
                cwd=Path.home(),
                start_new_session=True,  # its own process group, ended whole at its limit
            )
        except OSError as exc:  # not found, not executable
            return CommandResult(output=f"could not run {clip(argv[0], 80)}: {exc.strerror or exc}", broken=True)
        try:
            async with asyncio.timeout(CHECK_TIMEOUT_S):
                code = await process.wait()  # no pipe: its exit alone, whatever it started goes on holding
        except TimeoutError:
            return CommandResult(
                output=f"{clip(argv[0], 80)} ran past {CHECK_TIMEOUT_S:g} s and was stopped, with what it started",
                broken=True,
            )
        finally:
            await _end_group(process)
        said.seek(0)
        output = said.read(MAX_OUTPUT_BYTES)
    if code == 0:
        return CommandResult()
    lines = [line.strip() for line in output.decode("utf-8", "replace").splitlines() if line.strip()]
    shown = "; ".join(clip(line, 120) for line in lines[:SHOWN_LINES]) or f"{clip(argv[0], 80)} exited with {code}"
    found = _LINE.search("\n".join(lines[:SHOWN_LINES]))
    return CommandResult(failed=True, output=shown, line=int(found.group(1)) if found else 0)


async def _end_group(process: asyncio.subprocess.Process) -> None:
    """Kill the checker's process group (what it started in the background too: left running, a
    child would outlive the refactor), then reap the checker, within REAP_S."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(REAP_S):
            await process.wait()
