"""The region a refactor rewrites: the selected lines, else the innermost definition around the
cursor, else the whole file, said so. All offsets are Python string indices."""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from ..config.schema import ScopeMode
from ..text import count_of
from .cache import ScopeCache, Snapshot, snapshot_of
from .definition import Definition
from .indentation import indented_definition
from .python import python_definition

# Past this many times the smallest definition around the cursor, a region is named to the user; so
# is a whole file, unless it is so short that naming it would only be noise.
OVERSIZED_RATIO = 10
SHORT_FILE_LINES = 20

Finder = Callable[[Snapshot, int], Definition | None]


@dataclass(frozen=True)
class Region:
    """The rewritten span [start, end) of the document, and how it was chosen."""

    start: int
    end: int
    kind: str  # "selection" | "block" | "file"
    # The definition rewritten (kind "block"), or for a whole file the smallest one around the cursor.
    definition: Definition | None = None
    lines: int = 0

    def describe(self) -> str:
        """What is rewritten, for people: "method `Foo.bar`, 27 lines", "the whole file, 420 lines"."""
        count = count_of(self.lines, "line")
        if self.kind == "file":
            return f"the whole file, {count}"
        if self.kind == "block" and self.definition is not None:
            return f"{self.definition.describe()}, {count}"
        return f"{'the selected lines' if self.kind == 'selection' else 'the block'}, {count}"

    def oversized_note(self) -> str | None:
        """Said in the progress title and the final message when the region is the whole file, or
        many times larger than the smallest definition around the cursor, so the user can select less."""
        smallest = self.definition
        whole_file = self.kind == "file" and self.lines > SHORT_FILE_LINES
        if whole_file or (
            self.kind != "selection" and smallest is not None and self.lines > OVERSIZED_RATIO * smallest.line_count
        ):
            return f"rewrote {self.describe()}; select lines to rewrite less"
        return None


def line_span(text: str, first_line: int, last_line: int, cache: ScopeCache | None = None) -> tuple[int, int]:
    """Offsets covering whole lines first_line..last_line (0-based, inclusive)."""
    return _line_span(snapshot_of(text, cache), first_line, last_line)


def _line_span(snapshot: Snapshot, first_line: int, last_line: int) -> tuple[int, int]:
    lines, offsets = snapshot.index.lines, snapshot.index.offsets
    if not lines:
        return 0, 0
    first = max(0, min(first_line, len(lines) - 1))
    last = max(first, min(last_line, len(lines) - 1))
    return offsets[first], offsets[last + 1]


def selection_lines(text: str, start: int, end: int, cache: ScopeCache | None = None) -> tuple[int, int]:
    """Widen a selection to whole lines; a selection ending at column 0 leaves that line out."""
    offsets = snapshot_of(text, cache).index.offsets
    first = _line_at(offsets, start)
    last = _line_at(offsets, end)
    if end > start and last > first and offsets[last] == end:
        last -= 1
    return first, last


def _line_at(offsets: list[int], offset: int) -> int:
    return max(0, min(bisect.bisect_right(offsets, offset) - 1, len(offsets) - 2))


def choose_region(
    text: str,
    start: int,
    end: int,
    mode: ScopeMode = "auto",
    language: str | None = None,
    cache: ScopeCache | None = None,
) -> Region:
    """The region to rewrite for a request whose selection is [start, end).

    `language` is the editor's languageId or the guess from the file name (`file_language.language_of`);
    `cache` is the document's, when the caller keeps one (see `ScopeCache`).
    """
    if not text:
        return Region(0, 0, "file")
    snapshot = snapshot_of(text, cache)
    if mode == "selection" or (mode == "auto" and end > start):
        first, last = selection_lines(text, start, end, cache)
        a, b = _line_span(snapshot, first, last)
        return Region(a, b, "selection", lines=last - first + 1)
    cursor = _line_at(snapshot.index.offsets, start)
    definition = _definition_at(snapshot, cursor, language)
    if mode in ("auto", "block") and definition is not None:
        a, b = _line_span(snapshot, definition.first_line, definition.last_line)
        if (a, b) != (0, len(text)):
            return Region(a, b, "block", definition, definition.line_count)
    return Region(0, len(text), "file", definition, len(snapshot.index.lines))


def definition_at(
    text: str, cursor: int, language: str | None = None, cache: ScopeCache | None = None
) -> Definition | None:
    """The innermost definition holding line `cursor`; on a blank line outside any, the one after it
    (else before it): the code a cursor between definitions is about."""
    return _definition_at(snapshot_of(text, cache), cursor, language)


def _definition_at(snapshot: Snapshot, cursor: int, language: str | None) -> Definition | None:
    find = _finder_for(language)
    found = find(snapshot, cursor)
    if found is not None:
        return found
    lines = snapshot.index.lines
    if cursor >= len(lines) or lines[cursor].strip():
        return None
    below = next((i for i in range(cursor + 1, len(lines)) if lines[i].strip()), None)
    above = next((i for i in range(cursor - 1, -1, -1) if lines[i].strip()), None)
    for line in (below, above):
        if line is not None and (found := find(snapshot, line)) is not None:
            return found
    return None


_PYTHON_LANGUAGES = frozenset({"python", "py"})


def _finder_for(language: str | None) -> Finder:
    if language in _PYTHON_LANGUAGES:
        return python_definition
    if not language:
        return indented_definition
    # Imported on the first non-Python document: compiling its lexers costs ~25 ms of start-up otherwise.
    from .code import code_finder

    return code_finder(language) or indented_definition
