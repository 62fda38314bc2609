"""What scope learns about one version of a document, kept for the next request on that version.

Code actions come on every cursor move, and each asks for the region (scope) and then for LSP
positions (`text.PositionMapper`) on the same document; the refactor that one of them starts asks
again. pygls hands every request on an unchanged buffer the same `str` object, so keyed on that
object the document is split into lines once per version, each chunk of Python parsed once, and a
cursor that comes back to a line gets its answer without a scan.

The caller owns the cache (the engine keeps one per document), so nothing outlives the caller and
tests never need to reset anything. Without a cache every call computes afresh.
"""

from __future__ import annotations

import ast

from ..text import LineIndex
from .definition import Definition

_MAX_TREES = 64  # parsed Python chunks kept for one text
_MAX_ANSWERS = 256  # definitions found, by (language family, line), kept for one text


class Snapshot:
    """One text, its lines, and what scope computed from it. Built for one text and never re-keyed:
    a reader holding a snapshot sees that text's facts, whatever the cache holds by then."""

    __slots__ = ("answers", "index", "text", "top_starts", "trees")

    def __init__(self, text: str) -> None:
        self.text = text
        self.index = LineIndex(text)
        # Python chunks by (first line, end line): the parsed module, or None when it does not parse.
        self.trees: dict[tuple[int, int], ast.Module | None] = {}
        # The definition around a line, by (language family, line); None: no definition there.
        self.answers: dict[tuple[str, int], Definition | None] = {}
        # Python: the lines that may start a top-level statement, found once (python.py), or None yet.
        self.top_starts: list[int] | None = None

    def remember(self, key: tuple[str, int], found: Definition | None) -> None:
        if len(self.answers) >= _MAX_ANSWERS:
            self.answers.clear()
        self.answers[key] = found

    def keep_tree(self, key: tuple[int, int], tree: ast.Module | None) -> None:
        if len(self.trees) >= _MAX_TREES:
            self.trees.clear()
        self.trees[key] = tree


class ScopeCache:
    """The `Snapshot` of the last text of one document that scope was asked about.

    Why an identity check and no reset: the snapshot holds its string, so that string's id cannot be
    reused while it is cached, and any other string, even an equal one, gets a snapshot of its own.
    The snapshot is swapped whole, so a reader on another thread sees the old one or the new.
    """

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = Snapshot("")

    def snapshot(self, text: str) -> Snapshot:
        last = self._last
        if last.text is not text:
            last = Snapshot(text)
            self._last = last
        return last

    def line_index(self, text: str) -> LineIndex:
        """The lines of `text`, split once per version: for `text.PositionMapper(text, encoding, index)`."""
        return self.snapshot(text).index


def snapshot_of(text: str, cache: ScopeCache | None) -> Snapshot:
    """The cached snapshot of `text`, or a fresh one when the caller keeps no cache."""
    return cache.snapshot(text) if cache is not None else Snapshot(text)
