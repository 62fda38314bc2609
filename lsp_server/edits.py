"""Edits: old region → new region as minimal replacements, and LSP positions for them.

Replacements are (start, end, text) in Python string offsets of the whole document. Lines are
compared by content (without their terminators), so an unchanged line keeps its own line ending
byte for byte, even in a file with mixed endings. Common leading and trailing lines are trimmed
before the line diff, which keeps the usual case (a few lines changed in a big region) linear;
the diff itself is bounded so no input makes it quadratic.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

from .scope import split_lines

PositionEncoding = Literal["utf-16", "utf-8", "utf-32"]

# Above this many line pairs the line diff is skipped for one replacement of the changed middle.
_MAX_DIFF_CELLS = 4_000_000
_EOL = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int
    text: str


def _content(line: str) -> str:
    return line.rstrip("\r\n")


def _key(line: str) -> tuple[str, bool]:
    """What a line is for the diff: its content and whether it ends (the style of ending is kept)."""
    content = _content(line)
    return content, len(content) != len(line)


def _common_prefix_len(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _refine(old: str, new: str, base: int) -> Replacement | None:
    """One replacement for a changed block, narrowed to its differing characters."""
    if old == new:
        return None
    p = _common_prefix_len(old, new)
    s = _common_prefix_len(old[p:][::-1], new[p:][::-1])
    # Never split a \r\n pair or a surrogate-free code point boundary: offsets are code points already.
    if p > 0 and old[p - 1] == "\r" and old[p : p + 1] == "\n":
        p -= 1
    end = len(old) - s
    if s > 0 and end > p and old[end - 1] == "\r" and old[end] == "\n":
        s -= 1  # an LSP position cannot fall between \r and \n: the edit would leave the \r behind
    return Replacement(base + p, base + len(old) - s, new[p : len(new) - s])


def region_replacements(document: str, start: int, end: int, new_region: str) -> list[Replacement]:
    """Minimal replacements turning document[start:end] into new_region, in document offsets."""
    old_lines = split_lines(document[start:end])
    new_lines = split_lines(new_region)
    old_keys = [_key(x) for x in old_lines]
    new_keys = [_key(x) for x in new_lines]

    # Trim common leading and trailing lines: linear, and most of the region in practice.
    lo = 0
    while lo < len(old_keys) and lo < len(new_keys) and old_keys[lo] == new_keys[lo]:
        lo += 1
    hi_old, hi_new = len(old_keys), len(new_keys)
    while hi_old > lo and hi_new > lo and old_keys[hi_old - 1] == new_keys[hi_new - 1]:
        hi_old -= 1
        hi_new -= 1

    offsets = [start]
    for line in old_lines:
        offsets.append(offsets[-1] + len(line))

    edits: list[Replacement] = []

    def replace(i1: int, i2: int, j1: int, j2: int) -> None:
        edit = _refine("".join(old_lines[i1:i2]), "".join(new_lines[j1:j2]), offsets[i1])
        if edit is not None:
            edits.append(edit)

    if lo == hi_old and lo == hi_new:
        return []
    if (hi_old - lo) * (hi_new - lo) > _MAX_DIFF_CELLS:
        replace(lo, hi_old, lo, hi_new)
    else:
        matcher = SequenceMatcher(None, old_keys[lo:hi_old], new_keys[lo:hi_new], autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                replace(lo + i1, lo + i2, lo + j1, lo + j2)
    return _merge_adjacent(edits)


def _merge_adjacent(edits: list[Replacement]) -> list[Replacement]:
    merged: list[Replacement] = []
    for edit in edits:
        if merged and merged[-1].end >= edit.start:
            prev = merged.pop()
            edit = Replacement(prev.start, max(prev.end, edit.end), prev.text + edit.text)
        merged.append(edit)
    return merged


def apply_replacements(document: str, edits: list[Replacement]) -> str:
    out: list[str] = []
    pos = 0
    for edit in sorted(edits, key=lambda e: e.start):
        out.append(document[pos : edit.start])
        out.append(edit.text)
        pos = edit.end
    out.append(document[pos:])
    return "".join(out)


class PositionMapper:
    """Document offsets ↔ LSP (line, character) in the negotiated encoding."""

    def __init__(self, text: str, encoding: PositionEncoding = "utf-16") -> None:
        self.text = text
        self.encoding = encoding
        self.line_starts = [0] + [m.end() for m in _EOL.finditer(text)]

    def _units(self, segment: str) -> int:
        if self.encoding == "utf-32" or segment.isascii():
            return len(segment)
        if self.encoding == "utf-8":
            return len(segment.encode("utf-8", "surrogatepass"))
        return len(segment) + sum(1 for ch in segment if ord(ch) > 0xFFFF)

    def position(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self.line_starts, offset) - 1
        return line, self._units(self.text[self.line_starts[line] : offset])

    def offset(self, line: int, character: int) -> int:
        """The offset of an LSP position; positions past a line's end clamp to it, as the spec says."""
        if line >= len(self.line_starts):
            return len(self.text)
        if line < 0:
            return 0
        start = self.line_starts[line]
        end = self.line_starts[line + 1] if line + 1 < len(self.line_starts) else len(self.text)
        content = _content(self.text[start:end])
        if self.encoding == "utf-32" or content.isascii():
            return start + min(character, len(content))
        units = 0
        for i, ch in enumerate(content):
            if units >= character:
                return start + i
            units += self._units(ch)
        return start + len(content)


@dataclass(frozen=True)
class Rebased:
    """Replacements moved onto the buffer the user has now, or None when their edits overlap."""

    edits: list[Replacement] | None


def changed_span(before: str, after: str) -> tuple[int, int, int]:
    """(start, old_end, new_end): the one span of `before` that differs from `after`."""
    p = _common_prefix_len(before, after)
    limit = min(len(before), len(after)) - p
    s = _common_prefix_len(before[::-1][:limit], after[::-1][:limit])
    return p, len(before) - s, len(after) - s


def rebase(snapshot: str, current: str, region: tuple[int, int], edits: list[Replacement]) -> Rebased:
    """Move edits computed on `snapshot` onto `current` when the user's changes avoid the region."""
    if snapshot == current:
        return Rebased(edits)
    start, old_end, new_end = changed_span(snapshot, current)
    region_start, region_end = region
    if old_end <= region_start and not (old_end == region_start and start == region_start and new_end > start):
        shift = new_end - old_end
        return Rebased([Replacement(e.start + shift, e.end + shift, e.text) for e in edits])
    if start >= region_end and region_end > region_start:
        return Rebased(edits)
    return Rebased(None)
