"""A batch's targets: the definitions a selection touches, or every top-level definition of a file.

Each target is the exact region the single refactor's scope rules choose for a cursor on the
definition's first line (`choose_region`, mode "block"), so a region is always one definition. Of
nested definitions only the outermost the lines touch is a target, and two targets never overlap:
a selection over two methods of a class gives the two methods, a selection that also touches the
class's own lines (its header, an attribute between the methods) gives the class.

A "block" that is no definition (Python's multi-line top-level statement, a brace block the scan
cannot name) is not a target, except in the languages scoped by indentation alone, where every
region found is such a block.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cache import ScopeCache, snapshot_of
from .definition import Definition
from .indentation import indented_definition
from .region import _finder_for, choose_region, selection_lines


@dataclass(frozen=True)
class Target:
    """One definition to rewrite: its region [start, end) in offsets, on whole lines."""

    start: int
    end: int
    first_line: int  # 0-based, inclusive
    last_line: int
    definition: Definition
    cursor: int  # an offset where the single refactor's scope rules choose exactly this region

    @property
    def name(self) -> str:
        """What people call it: `Store.get`, else its kind (`function`)."""
        return self.definition.name or self.definition.kind

    def describe(self) -> str:
        """`method `Store.get` (lines 12-18)`, 1-based."""
        return f"{self.definition.describe()} (lines {self.first_line + 1}-{self.last_line + 1})"


def definitions_touched(
    text: str, start: int, end: int, language: str | None = None, cache: ScopeCache | None = None
) -> list[Target]:
    """The outermost definitions that the lines of the selection [start, end) touch, in order."""
    return touched_within(text, start, end, language, cache, None)[0]


def touched_within(
    text: str, start: int, end: int, language: str | None, cache: ScopeCache | None, budget: int | None
) -> tuple[list[Target], bool]:
    """`definitions_touched` asking the scope finders at most `budget` times (None: no limit), and
    whether the walk got to the selection's end: for the code-action menu, which must stay quick on a
    long selection (each question costs a parse or a scan near its line: 100 of them took about 5 ms of
    Python, 20 ms of JavaScript on this project's 2-core machine)."""
    if not text:
        return [], True
    first, last = selection_lines(text, start, end, cache)
    return _targets(text, first, last, language, cache, budget)


def top_level_definitions(text: str, language: str | None = None, cache: ScopeCache | None = None) -> list[Target]:
    """Every outermost definition of the file, in order."""
    if not text:
        return []
    return _targets(text, 0, len(snapshot_of(text, cache).index.lines) - 1, language, cache, None)[0]


def _targets(
    text: str, first: int, last: int, language: str | None, cache: ScopeCache | None, budget: int | None
) -> tuple[list[Target], bool]:
    """The targets whose definitions the walk from line `first` to `last` finds, and whether it got to the end."""
    snapshot = snapshot_of(text, cache)
    find = _finder_for(language)
    blocks_are_definitions = find is indented_definition
    lines = snapshot.index.lines
    regions: list[Target] = []
    # The innermost definition at each line not inside one found already: after a definition the walk
    # goes on below its last line, so it asks once per definition and once per line outside every one.
    line, asked = max(first, 0), 0
    while line <= min(last, len(lines) - 1):
        if not lines[line].strip():
            line += 1
            continue
        if budget is not None and asked >= budget:
            return _outermost(regions), False
        asked += 1
        definition = find(snapshot, line)
        if definition is None or (definition.kind == "block" and not blocks_are_definitions):
            line += 1
            continue
        # The region the single refactor chooses for a cursor on this line (not on the definition's
        # first line: a comment above a definition belongs to its region, but a cursor there may find
        # nothing), asked now, while the scope cache still holds what the finder just read.
        offset = snapshot.index.offsets[line]
        region = choose_region(text, offset, offset, "block", language, cache)
        if region.definition is not None and region.end > region.start:
            chosen = region.definition
            regions.append(Target(region.start, region.end, chosen.first_line, chosen.last_line, chosen, offset))
        line = max(line, definition.last_line) + 1
    return _outermost(regions), True


def _outermost(regions: list[Target]) -> list[Target]:
    """Outermost first at each start; a region starting inside a kept one is inside it (or would overlap it)."""
    kept: list[Target] = []
    for target in sorted(regions, key=lambda t: (t.start, -t.end)):
        if not kept or target.start >= kept[-1].end:
            kept.append(target)
    return kept
