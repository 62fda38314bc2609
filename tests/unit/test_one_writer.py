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


def test_a_file_replaced_while_waiting_is_held_by_its_new_lock(tmp_path: Path) -> None:
    """The file was renamed over while this one waited on the old one's lock: holding that lock holds
    nothing, another refactor-lsp could take the new file's and write between this one's check and write."""
    path = tmp_path / "replaced.py"
    path.write_text("x = 1\n", encoding="utf-8")
    old = os.open(path, os.O_RDONLY)
    fcntl.flock(old, fcntl.LOCK_EX)
    inside, leave = threading.Event(), threading.Event()

    def write() -> None:
        with one_writer(path, wait_s=5):
            inside.set()
            leave.wait(5)

    worker = threading.Thread(target=write, daemon=True)
    worker.start()
    time.sleep(0.1)  # it waits on the old file's lock
    new = tmp_path / ".replaced.new"
    new.write_text("x = 2\n", encoding="utf-8")
    new.replace(path)
    os.close(old)  # the old file's holder done
    assert inside.wait(5)
    probe = os.open(path, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the new file is held
    finally:
        os.close(probe)
        leave.set()
        worker.join(5)
