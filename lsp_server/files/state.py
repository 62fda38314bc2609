"""The state folder (`$XDG_STATE_HOME/refactor-lsp`): the one place that opens files there.

The folder is yours: created 0700 and refused when it is a link or another user's. A file in it is
opened without following links and used only when it is a regular file with one name that you own
(a planted link, hard link, FIFO or device is refused, never written or waited on), and it is
created 0600. A file replaced whole (the history's trim, the refused answer) is written to a
temporary file created exclusively under an unpredictable name, then renamed over the old name.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

REFUSED_ANSWER = "refused-answer.txt"  # the last answer a refusal held back (server and CLI), for the user to judge
NOFOLLOW = os.O_NOFOLLOW | os.O_NONBLOCK  # O_NONBLOCK: opening a FIFO returns at once


class StateRefused(OSError):
    """A path in the state folder that is not safe to use; the message names it and says why."""


def state_dir(env: Mapping[str, str] = os.environ) -> Path:
    base = Path(env.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return base / "refactor-lsp"


def open_folder(folder: Path, create: bool) -> int:
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
    return _kept(fd, 0o700, _yours, f"{folder} belongs to another user")


def open_file(folder_fd: int, folder: Path, name: str, flags: int) -> int:
    """A descriptor of the file `name` in the open folder, made 0600: a regular file of yours with one name."""
    try:
        fd = os.open(name, flags | NOFOLLOW, 0o600, dir_fd=folder_fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StateRefused(f"{folder / name} is a link, and is not followed") from None
        raise
    return _kept(fd, 0o600, _one_regular_file_of_yours, f"{folder / name} is not a regular file of yours with one name")


def _yours(status: os.stat_result) -> bool:
    return status.st_uid == os.geteuid()


def _one_regular_file_of_yours(status: os.stat_result) -> bool:
    return stat.S_ISREG(status.st_mode) and status.st_nlink == 1 and _yours(status)


def _kept(fd: int, mode: int, safe: Callable[[os.stat_result], bool], refusal: str) -> int:
    """`fd`, made `mode`, when what it opened is `safe`; else closed, and StateRefused(refusal)."""
    try:
        status = os.fstat(fd)
        if not safe(status):
            raise StateRefused(refusal)
        if stat.S_IMODE(status.st_mode) != mode:
            os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_state_file(path: Path) -> int:
    """An fd to read the state file `path` (a folder and a file of yours, neither a link). Raises OSError
    (FileNotFoundError when there is none yet, StateRefused when it is not safe to read)."""
    folder_fd = open_folder(path.parent, create=False)
    try:
        return open_file(folder_fd, path.parent, path.name, os.O_RDONLY)
    finally:
        os.close(folder_fd)


def replace_file(folder_fd: int, name: str, data: bytes) -> None:
    for _ in range(100):  # a name taken (planted, or another process's) is skipped, never reused
        tmp = f".{name}.{os.urandom(8).hex()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600, dir_fd=folder_fd)
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
    folder_fd = open_folder(folder, create=True)
    try:
        replace_file(folder_fd, name, data)
    finally:
        os.close(folder_fd)
    return folder / name


def keep_refused_answers(answers: Sequence[str | None], numbered: bool) -> list[Path | None]:
    """Keep the answers refusals held back, so the user can judge them: files only they can read, in
    the state folder (never next to the document), one per answer given (None: none to keep). A
    request of one target keeps its answer as `refused-answer.txt`; one of several (`numbered`) as
    `refused-answer-N.txt`, N counting its refused answers, and the numbered files it does not
    write, a request before it left, are removed: what is there is this request's. A file that
    cannot be written is None in its place (the log says why)."""
    kept: list[Path | None] = []
    count = 0
    for answer in answers:
        if answer is None:
            kept.append(None)
            continue
        count += 1
        name = REFUSED_ANSWER if not numbered else _numbered(count)
        try:
            kept.append(write_state_file(name, answer.encode("utf-8", "replace")))
        except OSError as exc:
            log.warning("cannot keep the refused answer: %s", exc)
            kept.append(None)
    if numbered:
        _remove_numbered_after(count)
    return kept


def _numbered(number: int) -> str:
    return REFUSED_ANSWER.replace(".txt", f"-{number}.txt")


_NUMBERED = re.compile(r"refused-answer-(\d+)\.txt")


def _remove_numbered_after(count: int) -> None:
    """Remove the numbered refused answers past `count`, the ones an earlier request left."""
    try:
        folder_fd = open_folder(state_dir(), create=False)
    except OSError:
        return  # no state folder yet: nothing to remove
    try:
        for name in os.listdir(folder_fd):
            found = _NUMBERED.fullmatch(name)
            if found and int(found.group(1)) > count:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=folder_fd)  # removes a planted link itself, never what it points at
    finally:
        os.close(folder_fd)
