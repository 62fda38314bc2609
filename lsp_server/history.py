"""The state folder and the refactor history in it: the one place that opens files there.

The folder is yours: created 0700 and refused when it is a link or another user's. A file in it is
opened without following links and used only when it is a regular file with one name that you own
(a planted link, hard link, FIFO or device is refused, never written or waited on), and it is
created 0600. A file replaced whole (the trim, the refused answer) is written to a temporary file
created exclusively under an unpredictable name, then renamed over the old name.

The history is one JSON object per line, `{"v": RECORD_VERSION, ...RefactorStats fields}`; lines
without "v" (written before the format was versioned) hold the same fields. Reading takes a bounded
tail of the file and checks every record (RefactorStats.from_dict); a damaged record, or one from a
newer version, is skipped and counted in one warning. Nothing here raises into its caller: the
history never takes a refactor or `showStats` down.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from .stats import RefactorStats

log = logging.getLogger(__name__)

HISTORY_LIMIT = 2000  # records kept, and read
REFUSED_ANSWER = "refused-answer.txt"  # the last answer a refusal held back (server and CLI), for the user to judge
RECORD_VERSION = 1
RECORD_BYTES = 2000  # what a record takes at most, reasonably (about 800 bytes in practice)
MAX_LINE_BYTES = 64 * 1024  # a longer line is damage, not a record
_NOFOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK  # O_NONBLOCK: opening a FIFO returns at once
_warned: set[tuple[str, int]] = set()  # (file, records skipped): the same damage is reported once


class StateRefused(OSError):
    """A path in the state folder that is not safe to use; the message names it and says why."""


def state_dir(env: Mapping[str, str] = os.environ) -> Path:
    base = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "refactor-lsp"


def history_path(env: Mapping[str, str] = os.environ) -> Path:
    return state_dir(env) / "history.jsonl"


def _open_folder(folder: Path, create: bool) -> int:
    """A descriptor of `folder`, a real folder of yours, made 0700; every file is opened relative to it,
    so that the folder cannot be swapped for a link between the check and the use."""
    if create:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        if folder.is_symlink():
            raise StateRefused(f"{folder} is a link: the state folder must be a real folder") from None
        raise
    try:
        status = os.fstat(fd)
        if status.st_uid != os.geteuid():
            raise StateRefused(f"{folder} belongs to another user")
        if stat.S_IMODE(status.st_mode) != 0o700:
            os.fchmod(fd, 0o700)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_file(folder_fd: int, folder: Path, name: str, flags: int) -> int:
    try:
        fd = os.open(name, flags | _NOFOLLOW, 0o600, dir_fd=folder_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateRefused(f"{folder / name} is a link, and is not followed") from None
        raise
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_nlink != 1 or status.st_uid != os.geteuid():
            raise StateRefused(f"{folder / name} is not a regular file of yours with one name")
        if stat.S_IMODE(status.st_mode) != 0o600:
            os.fchmod(fd, 0o600)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _replace(folder_fd: int, name: str, data: bytes) -> None:
    for _ in range(100):  # a name taken (planted, or another process's) is skipped, never reused
        tmp = f".{name}.{os.urandom(8).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600, dir_fd=folder_fd)
            break
        except FileExistsError:
            continue
    else:
        raise StateRefused(f"cannot create a temporary file for {name}")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)  # replaces a link, never follows it
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=folder_fd)
        raise


def write_state_file(name: str, data: bytes, folder: Path | None = None) -> Path:
    """Replace the file `name` in the state folder with `data`. Raises OSError, with a message."""
    folder = folder or state_dir()
    folder_fd = _open_folder(folder, create=True)
    try:
        _replace(folder_fd, name, data)
    finally:
        os.close(folder_fd)
    return folder / name


def _tail(fd: int, size: int, limit: int) -> list[bytes]:
    """The lines of the last `limit` bytes of the file (a line cut by the start left out)."""
    start = max(size - limit, 0)
    os.lseek(fd, start, os.SEEK_SET)
    chunks, left = [], limit
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    lines = b"".join(chunks).split(b"\n")
    return [line for line in lines[1 if start else 0 :] if line.strip()]


def append_history(stats: RefactorStats, path: Path | None = None) -> None:
    """Add one record; trimmed to the latest HISTORY_LIMIT when it grows. A failure is logged."""
    path = path or history_path()
    try:
        record = stats.to_dict()
        RefactorStats.from_dict(record)  # a record the reader would skip is not written
        line = json.dumps({"v": RECORD_VERSION, **record}, sort_keys=True, allow_nan=False).encode()
        if len(line) > MAX_LINE_BYTES:
            raise ValueError(f"the record takes {len(line)} bytes")
        folder_fd = _open_folder(path.parent, create=True)
        try:
            fd = _open_file(folder_fd, path.parent, path.name, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                if os.write(fd, line + b"\n") != len(line) + 1:
                    raise OSError(f"only part of the record was written to {path} (is the disk full?)")
                size = os.fstat(fd).st_size
                if size > HISTORY_LIMIT * RECORD_BYTES:
                    # Half the budget is kept, so that the next trim is thousands of refactors away.
                    kept = _tail(fd, size, HISTORY_LIMIT * RECORD_BYTES // 2)[-HISTORY_LIMIT:]
                    _replace(folder_fd, path.name, b"\n".join(kept) + b"\n")
            finally:
                os.close(fd)
        finally:
            os.close(folder_fd)
    except (OSError, ValueError, TypeError) as exc:
        log.warning("cannot write the refactor history %s: %s", path, exc)


def read_history(path: Path | None = None, limit: int | None = None) -> list[RefactorStats]:
    """The latest `limit` (HISTORY_LIMIT) records, oldest first, damaged ones left out; none when the
    file cannot be read (logged)."""
    path, limit = path or history_path(), limit or HISTORY_LIMIT
    try:
        folder_fd = _open_folder(path.parent, create=False)
        try:
            fd = _open_file(folder_fd, path.parent, path.name, os.O_RDONLY)
        finally:
            os.close(folder_fd)
        try:
            lines = _tail(fd, os.fstat(fd).st_size, HISTORY_LIMIT * RECORD_BYTES + MAX_LINE_BYTES)[-limit:]
        finally:
            os.close(fd)
    except FileNotFoundError:
        return []
    except OSError as exc:
        log.warning("cannot read the refactor history %s: %s", path, exc)
        return []
    records = [record for line in lines if (record := _record(line)) is not None]
    skipped = len(lines) - len(records)
    if skipped and (str(path), skipped) not in _warned:
        _warned.add((str(path), skipped))
        log.warning(
            "the refactor history %s: %d record(s) skipped, damaged or written by a newer version", path, skipped
        )
    return records


def _record(line: bytes) -> RefactorStats | None:
    """The record on one line, or None: damaged (not UTF-8, not JSON, a value of the wrong type or
    range, too long) or of an unknown version."""
    if len(line) > MAX_LINE_BYTES:
        return None
    try:
        data = json.loads(line.decode("utf-8"))
        # A line without "v" is from before the format was versioned: the same fields.
        if isinstance(data, dict) and "v" in data and (type(data["v"]) is not int or data["v"] != RECORD_VERSION):
            return None
        return RefactorStats.from_dict(data)  # "v" is no field: ignored
    except (ValueError, TypeError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
