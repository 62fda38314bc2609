"""The lock between a `--write`'s check and its write (files.safe_write.one_writer): held against
another refactor-lsp, never waited on without end, never taken on what is not a regular file."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

import pytest

from lsp_server.files.safe_write import WriteRefused, one_writer


def test_a_lock_another_program_keeps_is_waited_on_for_a_bound_then_refused(tmp_path: Path) -> None:
    """Another program may hold its lock for as long as it likes: the write waited for ever (and Ctrl-C
    had to be pressed twice)."""
    path = tmp_path / "held.py"
    path.write_text("x = 1\n", encoding="utf-8")
    held = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)
        started = time.monotonic()
        refused = pytest.raises(WriteRefused, match=r"another program holds .*held\.py.* nothing was written")
        with refused, one_writer(path, wait_s=0.3):
            pytest.fail("the block ran under another's lock")
        assert time.monotonic() - started < 5
    finally:
        os.close(held)


def test_a_lock_let_go_within_the_bound_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "brief.py"
    path.write_text("x = 1\n", encoding="utf-8")
    held = os.open(path, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    threading.Timer(0.2, os.close, [held]).start()
    ran = []
    with one_writer(path, wait_s=5):
        ran.append(True)
    assert ran == [True]


def test_what_is_not_a_regular_file_is_not_opened_to_be_locked(tmp_path: Path) -> None:
    """A FIFO put in the file's place: no open that waits for a writer, no lock; the block runs and the
    write's own check says what is wrong."""
    fifo = tmp_path / "fifo.py"
    os.mkfifo(fifo)
    done = []

    def write() -> None:
        with one_writer(fifo):
            done.append(True)

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    worker.join(5)
    assert done == [True]
