"""The files a `refactor`/`apply` run writes (`--write`) or shows: each held against every other
refactor-lsp before any is written (files.safe_write.one_writer), checked to be still the text read,
then written; or its diff printed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..files.safe_write import WriteRefused, one_writer, write_file
from ..text import count_of
from .io import interruptible, print_diff, read_source

if TYPE_CHECKING:
    from ..config.schema import Config
    from ..pipeline.outcome import Settled
    from ..pipeline.runner import Outcome


@dataclass(frozen=True)
class File:
    """A file the request reads: its path, its text as read, its config (the workspace file near it)."""

    path: Path
    text: str
    config: Config
    target: str  # the file the path named when it was read (through links): the one a write may change


def identity(path: Path) -> object:
    """What makes two names one file: its device and inode (hard links, symlinks, `./a.py` and `a.py`
    alike); a name that cannot be looked at is compared by its resolved path (reading it says why)."""
    try:
        found = path.stat()
    except OSError:
        return path.resolve()
    return found.st_dev, found.st_ino


def held(locks: contextlib.ExitStack, files: list[File]) -> dict[Path, str]:
    """Every file about to be written held against every other refactor-lsp (one_writer, on `locks`)
    before any is written, in one order (device and inode) so that two runs on the same files never
    hold one each and wait for the other; the refusals (a lock held past its bound), by path. Ctrl-C
    while waiting ends the run at once, nothing written: asyncio's first Ctrl-C only cancels the task,
    which a wait with no await never sees (it waited on, then wrote, then exited 130 saying nothing)."""
    refused: dict[Path, str] = {}
    try:
        with interruptible():
            for file in sorted(files, key=lambda file: str(identity(file.path))):
                try:
                    locks.enter_context(one_writer(file.path))
                except WriteRefused as exc:
                    refused[file.path] = str(exc)
    except KeyboardInterrupt:
        raise asyncio.CancelledError from None  # run_request's Ctrl-C: 'interrupted; nothing was written'
    return refused


def deliver(
    file: File,
    settled: Settled,
    indexes: list[int],
    write: bool,
    show: bool,
    count: bool,
    refused: str | None = None,
) -> tuple[str, Outcome, str | None]:
    """One file once its targets settled: its new text (the edits of `indexes`, together, on the text
    every prompt carried), written (`write`: only when the file on disk is still that text, which the
    caller holds against other writers or says why it could not, `refused`; `count`: say how many
    definitions) or its diff printed (`show`); and what became of those targets ("edit", "applied",
    "stale", "error") and why."""
    from ..formats.edits import apply_replacements

    results = [settled.outcomes[i].result for i in indexes]
    edits = sorted(
        (e for result in results if result is not None for e in result.edits), key=lambda e: (e.start, e.end)
    )
    new_text = apply_replacements(file.text, edits)
    if not indexes:
        return new_text, "edit", None
    if not write:
        if show:
            print_diff(file.path, file.text, new_text)
        return new_text, "edit", None
    if refused is not None:
        return new_text, "error", refused
    stale = _changed_on_disk(file)  # held (_held): the check and the write one step
    if stale is not None:
        return new_text, "stale", f"{stale}; nothing was written to it — run it again"
    try:
        write_file(file.path, new_text.encode("utf-8"))
    except WriteRefused as exc:
        return new_text, "error", str(exc)
    counted = f" ({count_of(len(indexes), 'definition')})" if count else ""
    print(f"wrote {file.path}{counted}", file=sys.stderr)
    return new_text, "applied", None


def _changed_on_disk(file: File) -> str | None:
    """How the file on disk is no longer the one read, or None: its name now leads to another file (a link
    put in its place, whose target a write would change though nothing of it was read), or its text
    changed (into other text, or into something no longer read as text: gone, not UTF-8, over the limit)."""
    now = os.path.realpath(file.path)
    if now != file.target:
        what = f"a link to {now}" if os.path.islink(file.path) else "a file of its own"
        return f"{file.path} is now {what}, not the file read ({file.target}), since the refactor started"
    try:
        if read_source(file.path, file.config.refactor.max_file_chars) == file.text:
            return None
    except ValueError as exc:
        return f"{file.path} changed while the refactor ran and can no longer be read as it was ({exc})"
    return f"{file.path} changed while the refactor ran"
