"""Your own checker that starts a child (issue 36 item 9): at its limit the checker's whole process
group is killed, its output is read without waiting for a pipe the child holds, and the refactor ends
within the limit with a clear note; a checker that exits leaves no child behind either. Real child
processes: a shell script that starts `sleep 1000` in the background, its output still open."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from lsp_server.check import command as check_command
from lsp_server.pipeline.engine import Engine
from lsp_server.testing.fake_backend import FakeBackend
from tests.backends.test_repair import FUNCTION, RENAMED, SOURCE, config, request

LIMIT_S = 1.0


def checker(tmp_path: Path, then: str) -> list[str]:
    """A checker that starts `sleep 1000` in the background (its stdout the checker's, left open), writes
    its pid, then runs `then`."""
    return ["sh", "-c", f"sleep 1000 & echo $! > {tmp_path / 'child.pid'}; cat > /dev/null; {then}"]


def gone(pid: int) -> bool:
    """No such process, or a zombie that only waits for its reaper: it runs no more (a SIGKILL takes
    effect when the process is next scheduled, so a moment is allowed)."""
    deadline = time.monotonic() + 1.0
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state in ("Z", "X") or time.monotonic() > deadline:
            return state in ("Z", "X")
        time.sleep(0.01)


def child_of(tmp_path: Path) -> int:
    return int((tmp_path / "child.pid").read_text())


@pytest.fixture(autouse=True)
def short_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(check_command, "CHECK_TIMEOUT_S", LIMIT_S)


async def test_a_checker_past_its_limit_is_stopped_with_its_child_and_the_refactor_ends(
    tmp_path: Path, engine: Engine, fake_backend: FakeBackend
) -> None:
    await engine.refactor(request(), config(fake_backend))  # warm: its first request's imports are not the checker's
    settings = config(fake_backend, checkers={"python": checker(tmp_path, "sleep 1000")})
    started = time.monotonic()
    result = await asyncio.wait_for(engine.refactor(request(), settings), 10 * LIMIT_S)
    assert time.monotonic() - started < LIMIT_S + 3.0  # the limit, and a refactor's own time on a busy machine
    assert result.new_text == SOURCE.replace(FUNCTION, RENAMED)  # the syntax check passed: applied
    assert gone(child_of(tmp_path))
    assert result.stats.checked == "python"  # your checker said nothing
    # What the user reads after the speed line (the editor's message, the CLI's `notes:` line).
    assert result.stats.notes == (
        "your checker sh said nothing: sh ran past 1 s and was stopped, with what it started",
    )


async def test_a_checker_that_exits_and_leaves_a_child_holding_its_output_is_read_at_once(
    tmp_path: Path, engine: Engine, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(check_command, "CHECK_TIMEOUT_S", 10.0)  # far from what the refactor may take
    await engine.refactor(request(), config(fake_backend))
    settings = config(fake_backend, checkers={"python": checker(tmp_path, "exit 0")})
    started = time.monotonic()
    result = await asyncio.wait_for(engine.refactor(request(), settings), 10 * LIMIT_S)
    assert time.monotonic() - started < 5.0  # its exit is its answer: the child's open output is not waited for
    assert result.stats.checked == "python, sh" and result.new_text == SOURCE.replace(FUNCTION, RENAMED)
    assert gone(child_of(tmp_path))


async def test_a_failing_checkers_words_are_read_though_its_child_holds_its_output(tmp_path: Path) -> None:
    argv = checker(tmp_path, "echo 'stdin:3: no TODO'; exit 1")
    found = await asyncio.wait_for(check_command.run_checker(argv, "x = 1\n"), 10 * LIMIT_S)
    assert (found.failed, found.line, found.output) == (True, 3, "stdin:3: no TODO")
    assert gone(child_of(tmp_path))


async def test_a_checkers_output_is_read_bounded(tmp_path: Path) -> None:
    argv = ["sh", "-c", "cat > /dev/null; head -c 1000000 /dev/zero | tr '\\0' 'x'; exit 1"]
    found = await check_command.run_checker(argv, "x\n")
    assert found.failed and len(found.output) <= 120  # a line, clipped; MAX_OUTPUT_BYTES read at most
