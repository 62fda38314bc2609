"""Rewriting a file on disk (`refactor --write`) so that nothing is lost, whatever fails.

- A file with one name is replaced atomically: the new bytes go to a temporary file created
  exclusively beside it (an unpredictable name, O_EXCL: a planted file or symlink is never
  followed), synced, given the target's mode and owner, then renamed over it. A reader sees the old
  file or the new one.
- A file with other hard links is rewritten in place, as Vim (`backupcopy=auto`), black, ruff and
  prettier do: a rename would leave the other names on the old contents. That cannot be atomic, so
  the old bytes are first saved to an exclusive temporary file beside it; if the write fails they
  are written back, and if even that fails the message says where they are.
- A symlink stays a link: the file it points to is the one rewritten.
On any failure the file is left as it was and no temporary file stays behind (unless it holds the
only copy of the old contents, which the message names). Everything raises WriteRefused.
- `one_writer` holds a file against every other refactor-lsp that writes it, so that a check that
  the file is still the one read and the write after it are one step.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


class WriteRefused(Exception):
    """The file cannot be rewritten; the message names it and says why."""


def writable_target(path: Path) -> tuple[Path, os.stat_result]:
    """The regular file `path` names (through symlinks, as editors do) and its status, or WriteRefused."""
    target = Path(os.path.realpath(path))
    try:
        status = target.stat()
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}; nothing was written") from None
    if not stat.S_ISREG(status.st_mode):
        raise WriteRefused(f"cannot write {path}: not a regular file; nothing was written")
    # access() says yes to root for any file: a file without write bits is read-only for everyone.
    if not os.access(target, os.W_OK) or not status.st_mode & 0o222:
        raise WriteRefused(f"{path} is read-only; nothing was written (make it writable, or drop --write)")
    return target, status


LOCK_WAIT_S = 10.0  # ours holds a file for a check and a write (milliseconds); longer is someone else's


@contextlib.contextmanager
def one_writer(path: Path, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """The file `path` names, held against every other refactor-lsp that writes it while the block runs
    (an advisory lock, flock, on the file as it is now; an editor takes none). Two `--write`s that read
    the same text both found it unchanged and both wrote, the later over the earlier, each saying
    `wrote`; one after the other, the later finds the earlier's text and writes nothing. A file replaced
    by a rename while we waited is another file: its lock is the one taken (the old one's held nothing).
    Only a regular file is opened (a device's open may act), and the wait is bounded: a lock held past
    `wait_s` (another program's, for as long as it likes) is WriteRefused, nothing written."""
    deadline = time.monotonic() + wait_s
    while True:
        fd = _open_regular(path)
        if fd < 0:
            yield  # nothing to hold: the check reads it, and the write says why it cannot
            return
        if not _held(fd, max(deadline - time.monotonic(), 0.0)):
            os.close(fd)
            raise WriteRefused(
                f"another program holds {path} (a lock) for over {wait_s:g} s; nothing was written to it — "
                "run it again once that program is done"
            )
        if _same_file(path, fd):
            break
        os.close(fd)  # replaced (a rename) while we waited: the lock to hold is the new file's
    try:
        yield
    finally:
        os.close(fd)


def _open_regular(path: Path) -> int:
    """A descriptor on the regular file `path` names, -1 for anything else (a device's open may act; a
    FIFO's would wait for a writer: non-blocking)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return -1
        return os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return -1


def _same_file(path: Path, fd: int) -> bool:
    try:
        now, held = os.stat(path), os.fstat(fd)
    except OSError:
        return True  # gone: the check after finds it so and says so
    return (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino)


def _held(fd: int, wait_s: float) -> bool:
    """The lock taken within `wait_s` (or none to take: Windows, a file system without locks)."""
    if sys.platform == "win32":
        return True
    import fcntl

    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)  # a Ctrl-C ends the wait at once (a blocking flock needed a second one)
        except OSError:
            return True  # a file system without locks: as before, unheld


def write_file(path: Path, data: bytes) -> None:
    """Replace the contents of the file `path` names with `data`. Raises WriteRefused."""
    target, status = writable_target(path)
    if status.st_nlink > 1:
        _rewrite_in_place(path, target, status, data)
    else:
        _replace(path, target, status, data)


def _temporary_beside(path: Path, target: Path, suffix: str) -> tuple[int, str]:
    try:
        return tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=suffix)
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}; nothing was written") from None


def _replace(path: Path, target: Path, status: os.stat_result, data: bytes) -> None:
    fd, tmp = _temporary_beside(path, target, ".refactor-lsp.tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            created = os.fstat(out.fileno())
            if (status.st_uid, status.st_gid) != (created.st_uid, created.st_gid):
                with contextlib.suppress(OSError):  # only root may give a file away; else it stays ours
                    os.fchown(out.fileno(), status.st_uid, status.st_gid)
            os.fchmod(out.fileno(), stat.S_IMODE(status.st_mode))
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise WriteRefused(f"cannot write {path}: {exc.strerror or exc}; the file is unchanged") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # the rename itself survives a crash once the folder is synced
        folder = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)


def _rewrite_in_place(path: Path, target: Path, status: os.stat_result, data: bytes) -> None:
    try:
        fd = os.open(target, os.O_RDWR | os.O_NOFOLLOW)
    except OSError as exc:
        raise WriteRefused(f"cannot write {path}: {exc.strerror}; nothing was written") from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (status.st_dev, status.st_ino):
            raise WriteRefused(f"{path} was replaced while it was being written; nothing was written — run it again")
        old = _read_all(fd)
        backup = _save_backup(path, target, old)
        try:
            _overwrite(fd, data)
        except OSError as exc:
            why = exc.strerror or str(exc)
            try:
                _overwrite(fd, old)
            except OSError:
                raise WriteRefused(
                    f"cannot write {path}: {why}, and its old contents could not be put back: they are in {backup}"
                ) from None
            os.unlink(backup)
            raise WriteRefused(f"cannot write {path}: {why}; the file is unchanged") from None
        except BaseException:
            with contextlib.suppress(OSError):
                _overwrite(fd, old)
                os.unlink(backup)
            raise
        with contextlib.suppress(OSError):
            os.unlink(backup)
    finally:
        os.close(fd)


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _save_backup(path: Path, target: Path, old: bytes) -> str:
    """The old bytes, synced to an exclusive temporary file beside the target: its name."""
    fd, backup = _temporary_beside(path, target, ".refactor-lsp.bak")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(old)
            out.flush()
            os.fsync(out.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(backup)
        raise WriteRefused(f"cannot write {path}: {exc.strerror or exc}; nothing was written") from None
    return backup


def _overwrite(fd: int, data: bytes) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.ftruncate(fd, len(data))
    os.fsync(fd)
