"""The state folder and the history file: nothing planted there is followed or written through, and
no damaged record reaches `auto` or `showStats`."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
import threading
from collections.abc import Callable, Iterator
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from lsp_server.files.state import keep_refused_answers, write_state_file
from lsp_server.formats.choice import FormatHistory, choose_format
from lsp_server.stats import history as history_module
from lsp_server.stats.history import MAX_LINE_BYTES, RECORD_VERSION, History, HistoryRecord, history_path
from lsp_server.stats.measured import RefactorStats

OUTSIDE = "a file of yours outside the state folder\n"


def measured(**changes: Any) -> RefactorStats:
    base = RefactorStats(
        backend="cloud", served_by="cloud", edit_format="region", region_lines=12, latency_ms=900.0, applied=True
    )
    return replace(base, **changes)


def line(version: int | None = RECORD_VERSION, **changes: Any) -> bytes:
    """One history line, with any value (of any type) in any field."""
    data = measured().to_dict() | changes
    return json.dumps(data if version is None else {"v": version, **data}).encode() + b"\n"


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    target = tmp_path_factory.mktemp("elsewhere") / "precious.txt"
    target.write_text(OUTSIDE, encoding="utf-8")
    return target


@pytest.fixture
def folder() -> Path:
    path = history_path().parent
    path.mkdir(mode=0o700)
    return path


def warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == history_module.__name__ and r.levelname == "WARNING"]


def finishes(action: Callable[[], object], release: Path, seconds: float = 5.0) -> bool:
    """Whether `action` returns within `seconds`; a FIFO it may be stuck opening is then released."""
    worker = threading.Thread(target=action, daemon=True)
    worker.start()
    worker.join(seconds)
    stuck = worker.is_alive()
    for _ in range(20):  # let a blocked open on either end go, so that a failing test still ends
        if not worker.is_alive():
            break
        for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
            with contextlib.suppress(OSError):
                os.close(os.open(release, flags))
        worker.join(0.1)
    return not stuck


# -- nothing planted is followed ----------------------------------------------------------------------


def test_a_linked_history_is_neither_appended_to_nor_read(
    folder: Path, outside: Path, caplog: pytest.LogCaptureFixture
) -> None:
    history_path().symlink_to(outside)
    History().append(measured())
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert History().read() == []
    assert [m for m in warnings(caplog) if "history.jsonl is a link, and is not followed" in m] != []


def test_a_hard_link_to_another_file_is_neither_appended_to_nor_replaced(
    folder: Path, outside: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.link(outside, history_path())
    History().append(measured())
    os.link(outside, folder / "refused-answer.txt")
    kept = keep_refused_answers(["the refused answer\n"], numbered=False)[0]
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert kept is not None and kept.read_text(encoding="utf-8") == "the refused answer\n"
    assert "not a regular file of yours with one name" in warnings(caplog)[0]


def test_the_trim_never_follows_a_planted_temporary_file(
    folder: Path, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(history_module, "HISTORY_LIMIT", 5)  # trimmed beyond 5 × 2000 bytes
    (folder / "history.tmp").symlink_to(outside)  # the name the trim once used
    # and the first unpredictable name it will draw: a taken name is skipped, never opened
    drawn = iter([b"\0" * 8, b"\1" * 8] * 100)
    (folder / f".history.jsonl.{'00' * 8}.tmp").symlink_to(outside)
    with monkeypatch.context() as patched:
        patched.setattr(history_module.os, "urandom", lambda n: next(drawn))
        for latency in range(40):
            History().append(measured(latency_ms=float(latency)))
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert stat.S_ISREG(history_path().lstat().st_mode)
    latencies = [r.latency_ms for r in History().read()]
    assert 5 <= len(latencies) < 40  # it was trimmed
    assert latencies == [float(i) for i in range(40 - len(latencies), 40)]
    planted = f".history.jsonl.{'00' * 8}.tmp"
    assert sorted(p.name for p in folder.iterdir()) == [planted, "history.jsonl", "history.tmp"]  # none left over


def test_a_linked_state_folder_is_refused(outside: Path, caplog: pytest.LogCaptureFixture) -> None:
    history_path().parent.symlink_to(outside.parent, target_is_directory=True)
    History().append(measured())
    assert keep_refused_answers(["answer"], numbered=False)[0] is None
    assert sorted(p.name for p in outside.parent.iterdir()) == ["precious.txt"]
    assert History().read() == []
    assert len(warnings(caplog)) == 2 and all("must be a real folder" in m for m in warnings(caplog))


def test_a_refused_answer_replaces_a_planted_link_without_following_it(folder: Path, outside: Path) -> None:
    (folder / "refused-answer.txt").symlink_to(outside)
    kept = keep_refused_answers(["the refused answer\n"], numbered=False)[0]
    assert kept == folder / "refused-answer.txt" and not kept.is_symlink()
    assert kept.read_text(encoding="utf-8") == "the refused answer\n"
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert sorted(p.name for p in folder.iterdir()) == ["refused-answer.txt"]  # no temporary file left


def test_a_request_of_several_targets_replaces_every_numbered_answer_an_earlier_one_left(
    folder: Path, outside: Path
) -> None:
    first = keep_refused_answers(["one\n", None, "two\n", "three\n"], numbered=True)
    assert [p.name if p else None for p in first] == [
        "refused-answer-1.txt",
        None,
        "refused-answer-2.txt",
        "refused-answer-3.txt",
    ]
    (folder / "refused-answer-9.txt").symlink_to(outside)  # planted: removed as a link, never followed
    second = keep_refused_answers([None, "again\n"], numbered=True)
    assert [p.name if p else None for p in second] == [None, "refused-answer-1.txt"]
    assert sorted(p.name for p in folder.iterdir()) == ["refused-answer-1.txt"]
    assert (folder / "refused-answer-1.txt").read_text(encoding="utf-8") == "again\n"
    assert outside.read_text(encoding="utf-8") == OUTSIDE
    keep_refused_answers([None, None], numbered=True)  # a request with nothing refused leaves none behind
    assert list(folder.iterdir()) == []


def test_the_folder_is_0700_and_its_files_0600_even_when_they_existed_wider() -> None:
    folder = history_path().parent
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    history_path().write_bytes(line())
    history_path().chmod(0o644)
    History().append(measured())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(history_path().stat().st_mode) == 0o600
    assert len(History().read()) == 2


def test_a_new_folder_and_files_are_0700_and_0600_under_any_umask() -> None:
    old = os.umask(0)
    try:
        History().append(measured())
        path = write_state_file("refused-answer.txt", b"answer")
    finally:
        os.umask(old)
    assert stat.S_IMODE(history_path().parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(history_path().stat().st_mode) == 0o600
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_fifo_named_history_hangs_neither_the_reader_nor_the_writer(
    folder: Path, caplog: pytest.LogCaptureFixture
) -> None:
    os.mkfifo(history_path(), 0o600)
    results: list[list[HistoryRecord]] = []
    assert finishes(lambda: History().append(measured()), history_path())
    assert finishes(lambda: results.append(History().read()), history_path())
    assert results == [[]]
    assert len(warnings(caplog)) == 2


def test_a_failure_to_write_is_a_warning_never_an_error(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    History(blocked / "history.jsonl").append(measured())  # its folder cannot exist
    assert History(blocked / "history.jsonl").read() == []
    assert len(warnings(caplog)) == 2


# -- records are checked on read ------------------------------------------------------------------------


DAMAGED = [
    line(latency_ms="slow"),
    line(region_lines="3"),
    line(region_lines=True),
    line(model="MODEL").replace(b"MODEL", b"mod\xffel"),  # not UTF-8
    b"[1, 2]\n",
    b'{"backend": "half a line\n',
    line(notes=["x" * 8000] * 10),  # every note of a fair size, the line too long
    line(latency_ms=float("nan")),
    line(latency_ms=-5.0),
    line(acceptance_rate=1.5),
    line(served_by=["not", "text"]),
    line(completion_tokens=12.5),
    line(applied="yes"),
    line(version=RECORD_VERSION + 1),  # a newer format
    line(version=True),
    b"[" * 60_000 + b"\n",  # nested deeper than the parser recurses
]


def test_damaged_records_are_skipped_and_counted_once(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    assert len(line(notes=["x" * 8000] * 10)) > MAX_LINE_BYTES
    good = [line(model="first"), line(version=None, model="unversioned"), line(model="third", latency_ms=7)]
    history_path().write_bytes(good[0] + b"".join(DAMAGED) + good[1] + good[2])
    history = History()  # the server's one: it reports the same damage once
    records = history.read()
    assert [(r.model, r.latency_ms) for r in records] == [("first", 900.0), ("unversioned", 900.0), ("third", 7.0)]
    said = f"the refactor history {history_path()}: {len(DAMAGED)} record(s) skipped, damaged or written by a newer"
    assert warnings(caplog) == [said + " version"]
    history.append(measured(model="fourth"))
    assert [r.model for r in history.read()] == ["first", "unversioned", "third", "fourth"]
    assert len(warnings(caplog)) == 1  # the same damage is not reported on every read


def test_damaged_records_never_reach_auto(folder: Path) -> None:
    records = [line(edit_format=f, latency_ms=900.0 if f == "region" else 5000.0) for f in ("region", "hunks") * 3]
    history_path().write_bytes(b"".join(records) + b"".join(DAMAGED))
    formats = FormatHistory().learn(History().read())
    choice = choose_format("auto", "", 12, 600, "cloud", formats)
    assert (choice.format, choice.reason.startswith("auto, by cloud's history for 1-50 lines")) == ("region", True)


def test_records_are_versioned_and_round_trip(folder: Path) -> None:
    stats = measured(notes=("retried after HTTP 429",), cost=0.002, acceptance_rate=0.5, uri="file:///x.py")
    History().append(stats)
    written = json.loads(history_path().read_bytes())
    assert written["v"] == RECORD_VERSION
    assert "uri" not in written and "notes" not in written  # the history keeps figures, not your files' names
    assert History().read() == [HistoryRecord.of(stats)]


@pytest.mark.parametrize("name", [f.name for f in fields(HistoryRecord)])
def test_every_field_is_checked(name: str) -> None:
    with pytest.raises(ValueError, match=name):
        HistoryRecord.from_json({name: object()})


def test_a_record_the_reader_would_skip_is_not_written(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    History().append(measured(model="m" * 10_000))
    History().append(measured(latency_ms=float("inf")))
    assert not history_path().exists() or History().read() == []
    assert len(warnings(caplog)) == 2


def test_only_a_bounded_tail_is_read_and_its_cut_line_is_no_damage(
    folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(history_module, "HISTORY_LIMIT", 5)  # reads 5 × 2000 bytes + one long line at most
    history_path().write_bytes(b"".join(line(latency_ms=float(i)) for i in range(300)))
    read: list[int] = []
    real_read = os.read

    def counted(fd: int, n: int) -> bytes:
        data = real_read(fd, n)
        read.append(len(data))
        return data

    with monkeypatch.context() as patched:
        patched.setattr(history_module.os, "read", counted)
        latencies = [r.latency_ms for r in History().read()]
    assert latencies == [float(i) for i in range(295, 300)]
    assert 0 < sum(read) <= 5 * 2000 + MAX_LINE_BYTES < history_path().stat().st_size
    assert warnings(caplog) == []


@pytest.fixture(autouse=True)
def _warn_afresh(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    caplog.set_level(logging.WARNING, logger=history_module.__name__)
    yield
