"""The refactor history: one versioned record per refactor, in the state folder (`files.state`).

Each line is `{"v": RECORD_VERSION, ...HistoryRecord fields}`; lines without "v" (written before the
format was versioned, with every field of the stats) are read as the same fields. Reading takes a
bounded tail of the file and checks every record (type, range, length); a damaged record, or one
from a newer version, is skipped and counted in one warning. Nothing here raises into its caller:
the history never takes a refactor or `showStats` down.

What reads it: `showStats` (the medians per backend and mode, below) and `auto`'s memory of how each
edit format went (edit_format.FormatHistory), which the server fills from it when it makes its engine.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..files.state import open_file, open_folder, open_state_file, replace_file, state_dir
from .measured import RefactorStats, median

log = logging.getLogger(__name__)

HISTORY_LIMIT = 2000  # records kept, and read
RECORD_VERSION = 1
RECORD_BYTES = 2000  # what a record takes at most, reasonably (about 600 bytes in practice)
MAX_LINE_BYTES = 64 * 1024  # a longer line is damage, not a record
# Bounds a record read back must keep: far beyond any real refactor, so that only damage is refused.
MAX_COUNT = 2**53  # tokens, lines
MAX_FIGURE = 1e15  # milliseconds, tokens per second, dollars
MAX_TEXT = 8192  # characters of one string


@dataclass(frozen=True)
class HistoryRecord:
    """What the history keeps of one refactor: enough to compare backends, modes and edit formats."""

    backend: str = ""
    served_by: str = ""
    model: str = ""
    action: str = ""
    prediction: bool = False
    prediction_via: str = "off"
    prediction_reason: str = ""  # added within version 1: a line without it reads as "", an older reader skips it
    region_lines: int = 0
    concurrency: int = 1  # added within version 1, as prediction_reason
    edit_format: str = ""
    edit_format_failed: bool = False
    retried_from: str | None = None
    first_attempt_ms: float | None = None
    latency_ms: float = 0.0
    ttft_ms: float | None = None
    completion_tokens: int | None = None
    prompt_tokens: int | None = None
    accepted_prediction_tokens: int | None = None
    rejected_prediction_tokens: int | None = None
    acceptance_rate: float | None = None
    tokens_per_s: float | None = None
    cost: float | None = None  # a repair's included
    # A repair (added within version 1, as prediction_reason): None when none was asked; its figures are
    # not in latency_ms and completion_tokens, which stay the first answer's.
    repaired: bool | None = None
    repair_ms: float | None = None
    repair_completion_tokens: int | None = None
    # A review (added within version 1, as prediction_reason): the answer's changes and how many the user
    # kept; None when the answer was applied whole.
    changes: int | None = None
    changes_kept: int | None = None
    applied: bool | None = None
    merged_by: str = "model"  # added within version 1, as prediction_reason: "splice" asked no model

    @classmethod
    def of(cls, stats: RefactorStats) -> HistoryRecord:
        return cls(**{f.name: getattr(stats, f.name) for f in fields(cls)})

    @classmethod
    def from_json(cls, data: Any) -> HistoryRecord:
        """A record read back. Unknown keys (an older or newer writer's) are ignored; a value of the
        wrong type or out of range raises ValueError, so that damage is never taken for a measurement
        (a latency of "slow" would break every median taken with it)."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a record is a JSON object, not {type(data).__name__}")
        return cls(**{f.name: _checked(f.name, str(f.type), data[f.name]) for f in fields(cls) if f.name in data})


def _checked(name: str, annotation: str, value: Any) -> Any:
    """`value` as field `name` (annotated `annotation`, a string under postponed annotations) holds it."""
    kind, _, rest = annotation.partition(" | ")
    if value is None and rest == "None":
        return None
    if kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "int":
        ok = type(value) is int and 0 <= value <= MAX_COUNT  # `type`: JSON's true is no count
    elif kind == "float":
        top = 1.0 if name == "acceptance_rate" else MAX_FIGURE
        ok = type(value) in (int, float) and math.isfinite(value) and 0 <= value <= top
        value = float(value) if ok else value
    elif kind == "str":
        ok = isinstance(value, str) and len(value) <= MAX_TEXT
    else:  # a new field's type: give it a check here (the round-trip test reaches every field)
        raise TypeError(f"HistoryRecord.{name}: no check for {annotation}")
    if not ok:
        raise ValueError(f"{name}: {value!r:.80} is not a valid {annotation}")
    return value


def history_path(env: Mapping[str, str] = os.environ) -> Path:
    return state_dir(env) / "history.jsonl"


class History:
    """The history file: appended one record a refactor, trimmed to the latest HISTORY_LIMIT, read
    back checked. Owned by whoever records (the server) or reads (showStats, the engine's maker)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or history_path()
        self._warned: set[int] = set()  # counts of records skipped already reported: the same damage once

    def append(self, stats: RefactorStats) -> None:
        """Add one record; a failure is logged."""
        path = self.path
        try:
            record = asdict(HistoryRecord.of(stats))
            HistoryRecord.from_json(record)  # a record the reader would skip is not written
            line = json.dumps({"v": RECORD_VERSION, **record}, sort_keys=True, allow_nan=False).encode()
            if len(line) > MAX_LINE_BYTES:
                raise ValueError(f"the record takes {len(line)} bytes")
            folder_fd = open_folder(path.parent, create=True)
            try:
                fd = open_file(folder_fd, path.parent, path.name, os.O_RDWR | os.O_CREAT | os.O_APPEND)
                try:
                    if os.write(fd, line + b"\n") != len(line) + 1:
                        raise OSError(f"only part of the record was written to {path} (is the disk full?)")
                    size = os.fstat(fd).st_size
                    if size > HISTORY_LIMIT * RECORD_BYTES:
                        # Half the budget is kept, so that the next trim is thousands of refactors away.
                        kept = _tail(fd, size, HISTORY_LIMIT * RECORD_BYTES // 2)[-HISTORY_LIMIT:]
                        replace_file(folder_fd, path.name, b"\n".join(kept) + b"\n")
                finally:
                    os.close(fd)
            finally:
                os.close(folder_fd)
        except (OSError, ValueError, TypeError) as exc:
            log.warning("cannot write the refactor history %s: %s", path, exc)

    def read(self, limit: int | None = None) -> list[HistoryRecord]:
        """The latest `limit` (HISTORY_LIMIT) records, oldest first, damaged ones left out; none when
        the file cannot be read (logged)."""
        path, limit = self.path, limit or HISTORY_LIMIT
        try:
            fd = open_state_file(path)
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
        if skipped and skipped not in self._warned:
            self._warned.add(skipped)
            log.warning(
                "the refactor history %s: %d record(s) skipped, damaged or written by a newer version", path, skipped
            )
        return records


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


def _record(line: bytes) -> HistoryRecord | None:
    """The record on one line, or None: damaged (not UTF-8, not JSON, a value of the wrong type or
    range, too long) or of an unknown version."""
    if len(line) > MAX_LINE_BYTES:
        return None
    try:
        data = json.loads(line.decode("utf-8"))
        # A line without "v" is from before the format was versioned: the same fields.
        if isinstance(data, dict) and "v" in data and (type(data["v"]) is not int or data["v"] != RECORD_VERSION):
            return None
        return HistoryRecord.from_json(data)  # "v" is no field: ignored
    except (ValueError, TypeError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None


@dataclass(frozen=True)
class ModeSummary:
    backend: str
    prediction: bool
    count: int
    latency_ms: float | None
    tokens_per_s: float | None
    acceptance_rate: float | None
    cost: float | None = None  # median, when prices are set


@dataclass(frozen=True)
class BackendSummary:
    backend: str
    modes: tuple[ModeSummary, ...]
    speedup: float | None  # median latency without ÷ median latency with prediction

    def line(self) -> str:
        parts = []
        for mode in self.modes:
            label = "with prediction" if mode.prediction else "without"
            text = f"{label}: {mode.count} refactors, median {(mode.latency_ms or 0) / 1000:.2f} s"
            if mode.tokens_per_s is not None:
                text += f", {mode.tokens_per_s:.0f} tok/s"
            if mode.acceptance_rate is not None:
                text += f", {mode.acceptance_rate:.0%} accepted"
            if mode.cost is not None:
                text += f", ${mode.cost:.4f}"
            parts.append(text)
        speed = f" · speedup {self.speedup:.2f}×" if self.speedup else ""
        return f"{self.backend}: " + "; ".join(parts) + speed


def summarize_history(records: Iterable[HistoryRecord]) -> list[BackendSummary]:
    """Medians per backend and mode; the speedup when both modes exist.

    Latency depends on how much was rewritten, so this compares like with like only roughly;
    `refactor-lsp bench` measures the same edits both ways. A complete snippet spliced as written
    (`merged_by` "splice") asked no backend and is left out.
    """
    records = [r for r in records if r.merged_by != "splice"]  # no backend wrote those: nothing to compare
    summaries = []
    for backend in sorted({r.backend for r in records}):
        modes = []
        for prediction in (True, False):
            group = [r for r in records if r.backend == backend and r.prediction == prediction]
            if group:
                modes.append(
                    ModeSummary(
                        backend,
                        prediction,
                        len(group),
                        median(r.latency_ms for r in group),
                        median(r.tokens_per_s for r in group),
                        median(r.acceptance_rate for r in group),
                        median(r.cost for r in group),
                    )
                )
        speedup = None
        if len(modes) == 2 and modes[0].latency_ms and modes[1].latency_ms:
            speedup = modes[1].latency_ms / modes[0].latency_ms
        summaries.append(BackendSummary(backend, tuple(modes), speedup))
    return summaries


@dataclass(frozen=True)
class KeptSummary:
    """How much of a backend's answers for one action people kept when they reviewed them."""

    backend: str
    action: str
    reviews: int
    changes: int
    kept: int

    def line(self) -> str:
        """`cloud, add type hints: 82% of changes kept (41 of 50, in 12 reviews)`."""
        share = self.kept / self.changes if self.changes else 0.0
        reviews = f"{self.reviews} review{'' if self.reviews == 1 else 's'}"
        counted = f"{self.kept} of {self.changes}, in {reviews}"
        return f"{self.backend}, {self.action or 'refactor'}: {share:.0%} of changes kept ({counted})"


def summarize_kept(records: Iterable[HistoryRecord], backend: str | None = None) -> list[KeptSummary]:
    """Per backend and action, the changes people kept of the answers they reviewed (most reviewed first)."""
    groups: dict[tuple[str, str], list[HistoryRecord]] = {}
    for record in records:
        if record.changes is None or record.changes_kept is None or not record.changes:
            continue
        if backend is not None and record.backend != backend:
            continue
        groups.setdefault((record.backend, record.action), []).append(record)
    summaries = [
        KeptSummary(
            name, action, len(group), sum(r.changes or 0 for r in group), sum(r.changes_kept or 0 for r in group)
        )
        for (name, action), group in groups.items()
    ]
    return sorted(summaries, key=lambda s: (-s.reviews, s.backend, s.action))
