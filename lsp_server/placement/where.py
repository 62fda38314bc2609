"""Where a snippet goes in a document: the definitions it names, each a region (`place_snippet`).

The snippet is read by `snippet.read_snippet`; each of its definitions is looked for in the document
by its name path (`Store.get`: a `get` whose enclosing definitions end with `Store`), at the lines
where its name occurs, asking the document's finder there. Then:

- a definition the document has is a region: the definition as the scope rules choose it for a
  cursor on its header (the same region a refactor there rewrites);
- a definition that only shows its children (`class X:` with markers around a method) gives its
  children's regions;
- a definition the document does not have goes into the enclosing definition the snippet shows, as
  a whole; with none, into the whole file when it is small (WHOLE_FILE_LINES), else where the user
  points (the selection, or the definition around the cursor);
- loose code before the snippet's first definition (an import) goes into the file's preamble (its
  lines before its first definition);
- a snippet that names nothing the document has goes to the selection, else to the definition
  around the cursor; with neither, `NotPlaced` says what to do.

Regions never overlap: one inside another is part of it. Several regions are one batch, one edit.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..config.schema import ScopeMode
from ..regions.cache import ScopeCache, Snapshot, snapshot_of
from ..regions.definition import Definition
from ..regions.region import _finder_for, choose_region, line_span, selection_lines
from ..regions.targets import Target
from ..text import count_of
from .snippet import Snippet, SnippetDefinition, Stopped, name_path, read_snippet

# A file this short takes a definition it does not have as a whole-file merge (the model places it).
WHOLE_FILE_LINES = 300
PREAMBLE_LINES = 300  # a preamble (imports, constants) longer than this is no region for loose lines
# What every refusal to place a snippet asks of the user.
POINT = (
    "select the lines it replaces, or put the cursor in the definition it belongs to (on the command line: "
    "--lines START:END, or --lines N for a cursor on line N), and apply it again"
)
_CANDIDATES = 400  # lines naming a definition asked about; past them, the name is too common to place
# Past this many names, the lines naming each are found by one pass over the document's words rather
# than one pass over its lines a name (390 names of tkinter/__init__.py: 18 ms against 150 ms).
_NAMES_INDEXED = 16
_WORD = re.compile(r"[\w$]+")

Finder = Callable[[Snapshot, int], Definition | None]
Stop = Callable[[], bool]  # true once the caller no longer wants the answer (a cancel)
__all__ = ["NotPlaced", "SnippetTarget", "Stopped", "TooManyParts", "enclosing_definitions", "place_snippet"]


class NotPlaced(Exception):
    """The snippet cannot be placed in the document; the message says what to do."""


class TooManyParts(Exception):
    """The snippet names more definitions than one apply takes; found before any was looked for."""


@dataclass(frozen=True)
class SnippetTarget:
    """One region of the document and the part of the snippet that goes there."""

    target: Target
    scope: ScopeMode  # how a request finds the region again: "block" at target.cursor, a "selection", the "file"
    part: str  # the snippet's lines for this region
    adds: bool = False  # the part adds a definition the document does not have


@dataclass(frozen=True)
class Match:
    definition: Definition
    line: int  # where its name is: a cursor there chooses it


class Document:
    def __init__(
        self,
        text: str,
        language: str | None,
        cache: ScopeCache | None,
        names: frozenset[str] = frozenset(),
        stop: Stop | None = None,
    ) -> None:
        """`names`: the names that will be asked about, when the caller knows them (they are indexed
        at once when there are many); `stop`: asked between steps, Stopped when it says so."""
        # A cache of our own when the caller keeps none: every question below reads the same snapshot.
        self.text, self.language, self.cache = text, language, cache if cache is not None else ScopeCache()
        self.snapshot = snapshot_of(text, self.cache)
        self.lines = self.snapshot.index.lines
        self.find: Finder = _finder_for(language)
        self.stop = stop
        self._paths: dict[tuple[int, int], tuple[str, ...]] = {}
        self._parents: dict[tuple[int, int], Definition | None] = {}
        self._found: dict[int, Definition | None] = {}  # the finder's answer at a line, asked once a line
        self._named: dict[str, list[int]] | None = self._index(names) if len(names) > _NAMES_INDEXED else None

    def definition_at(self, line: int) -> Definition | None:
        """The innermost definition holding `line`: a line naming many of the snippet's names is asked once."""
        if line not in self._found:
            self._found[line] = self.find(self.snapshot, line)
        return self._found[line]

    def check_stop(self) -> None:
        if self.stop is not None and self.stop():
            raise Stopped

    def _index(self, names: frozenset[str]) -> dict[str, list[int]]:
        """The lines where each of `names` occurs as a word, in one pass over the text."""
        offsets = self.snapshot.index.offsets
        found: dict[str, list[int]] = {}
        for match in _WORD.finditer(self.text):
            word = match.group()
            if word in names:
                lines = found.setdefault(word, [])
                line = bisect.bisect_right(offsets, match.start()) - 1
                if not lines or lines[-1] != line:
                    lines.append(line)
        return found

    def _lines_naming(self, name: str) -> list[int]:
        if self._named is not None:
            return self._named.get(name, [])
        pattern = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
        return [index for index, line in enumerate(self.lines) if name in line and pattern.search(line)]

    def matches(self, path: tuple[str, ...]) -> list[Match]:
        """The document's definitions whose name path ends with `path`, each once."""
        name = path[-1]
        found: dict[tuple[int, int], Match] = {}
        for index in self._lines_naming(name)[:_CANDIDATES]:
            self.check_stop()
            definition = self.definition_at(index)
            if definition is None or not definition.name or definition.name.rsplit(".", 1)[-1] != name:
                continue
            key = (definition.first_line, definition.last_line)
            if key not in found and self.path_of(definition)[-len(path) :] == path:
                found[key] = Match(definition, index)
        return list(found.values())

    def path_of(self, definition: Definition) -> tuple[str, ...]:
        key = (definition.first_line, definition.last_line)
        if key not in self._paths:
            parent = self._parent(definition)
            self._paths[key] = name_path(definition.name or "", self.path_of(parent) if parent else ())
        return self._paths[key]

    def _parent(self, definition: Definition) -> Definition | None:
        """The nearest named definition around `definition`, found by walking up over its siblings.

        Each sibling passed gets the same parent, remembered: a later walk that meets one stops there,
        so the parents of all the methods of a class cost one walk over the class, not one each."""
        key = (definition.first_line, definition.last_line)
        if key in self._parents:
            return self._parents[key]
        passed: list[Definition] = []  # what the walk met that does not hold `definition`, bottom up
        parent: Definition | None = None
        line = definition.first_line - 1
        while line >= 0:
            if not self.lines[line].strip():
                line -= 1
                continue
            around = self.definition_at(line)
            if around is None:
                break
            holds = around.first_line <= definition.first_line and around.last_line >= definition.last_line
            if holds and around.name and around != definition:
                parent = around
                break
            known = (around.first_line, around.last_line)
            if not holds and known in self._parents:
                # A sibling's parent holds `definition` too; a parent that does not is inside a sibling.
                above = self._parents[known]
                if above is None or (above.first_line <= definition.first_line <= above.last_line):
                    parent = above
                    break
            if not holds:
                passed.append(around)
            line = min(around.first_line, line) - 1
        self._parents[key] = parent
        outermost: Definition | None = None  # the siblings: what nothing met later (further up) holds
        for around in reversed(passed):
            if outermost is None or not outermost.first_line <= around.first_line <= outermost.last_line:
                self._parents.setdefault((around.first_line, around.last_line), parent)
                outermost = around
        return parent

    # -- regions -------------------------------------------------------------------------------
    def definition_target(self, match: Match) -> Target | None:
        cursor = self.snapshot.index.offsets[match.line]
        region = choose_region(self.text, cursor, cursor, "block", self.language, self.cache)
        chosen = region.definition
        if region.kind != "block" or chosen is None:
            return None
        return Target(region.start, region.end, chosen.first_line, chosen.last_line, chosen, cursor)

    def lines_target(self, first: int, last: int, kind: str = "lines") -> Target:
        start, end = line_span(self.text, first, last, self.cache)
        return Target(start, end, first, last, Definition(first, last, kind), start)

    def file_target(self) -> Target:
        last = max(len(self.lines) - 1, 0)
        return Target(0, len(self.text), 0, last, Definition(0, last, "file"), 0)

    def preamble(self) -> tuple[int, int] | None:
        """The lines before the file's first top-level definition, when there are some and not too many."""
        first = None
        for index, line in enumerate(self.lines[: PREAMBLE_LINES + 1]):
            if line.strip() and line[:1].strip() and (found := self.find(self.snapshot, index)) and found.name:
                first = found.first_line
                break
        if first is None or first == 0:
            return None
        last = first - 1
        while last > 0 and not self.lines[last].strip():
            last -= 1
        return (0, last) if self.lines[last].strip() else None


def enclosing_definitions(
    text: str, definition: Definition, language: str | None, cache: ScopeCache | None = None
) -> list[Definition]:
    """The named definitions around `definition`, outermost first (a class around a method)."""
    document = Document(text, language, cache)
    found: list[Definition] = []
    parent = document._parent(definition)
    while parent is not None:
        found.insert(0, parent)
        parent = document._parent(parent)
    return found


_NEEDS_ENCLOSING = None  # a definition (or a child of it) the document does not have


def read_parts(snippet: str, language: str | None, max_parts: int | None = None, stop: Stop | None = None) -> Snippet:
    """The snippet read; TooManyParts when it names more than `max_parts` definitions, said before any
    is looked for in the document; NotPlaced when it holds no code."""
    read = read_snippet(snippet, language, stop)
    if not read.has_code:
        raise NotPlaced("the snippet holds no code (only blank lines and lazy markers); nothing to merge")
    parts = sum(part_count(root) for root in read.roots)
    if max_parts is not None and parts > max_parts:
        raise TooManyParts(f"the snippet names {parts:,} definitions, more than one apply takes ({max_parts:,})")
    return read


def snippet_document(
    text: str, read: Snippet, language: str | None, cache: ScopeCache | None, stop: Stop | None
) -> Document:
    """The document, ready for the questions about the snippet's names."""
    names = frozenset(node.path[-1] for root in read.roots for node in named_nodes(root))
    return Document(text, language, cache, names, stop)


def place_snippet(
    text: str,
    snippet: str | Snippet,
    language: str | None,
    selection: tuple[int, int] | None = None,
    cache: ScopeCache | None = None,
    max_parts: int | None = None,
    stop: Stop | None = None,
) -> list[SnippetTarget]:
    """The regions the snippet (its text, or as `read_parts` read it) goes to, in order. `selection`: the
    user's selection (start < end), cursor (start == end), or None for neither; `max_parts`: as
    `read_parts`; `stop`: asked between steps (Stopped). Raises NotPlaced."""
    read = snippet if isinstance(snippet, Snippet) else read_parts(snippet, language, max_parts, stop)
    document = snippet_document(text, read, language, cache, stop)
    if not read.roots:
        return [_pointed(document, read, selection, "the snippet names no definition")]
    small = len(document.lines) <= WHOLE_FILE_LINES
    placed: list[SnippetTarget] = []
    for root in read.roots:
        found = _visit(document, read, root, selection)
        if found is _NEEDS_ENCLOSING:
            if small:
                return [SnippetTarget(document.file_target(), "file", read.text(0, len(read.lines) - 1), adds=True)]
            where = f"{root.kind} `{root.name}` is not in the file"
            placed.append(_pointed(document, read, selection, where, root))
        else:
            placed += found
    loose = new_loose_lines(document, read)
    if loose:
        first_root = read.roots[0].first_line
        preamble = document.preamble()
        if small:
            return [SnippetTarget(document.file_target(), "file", read.text(0, len(read.lines) - 1))]
        if all(i < first_root for i in loose) and preamble is not None:
            placed.append(
                SnippetTarget(document.lines_target(*preamble, "preamble"), "selection", read.text(0, first_root - 1))
            )
        else:
            shown = read.lines[loose[0]].strip()
            raise NotPlaced(
                f"line {loose[0] + 1} of the snippet (`{shown[:60]}`) is outside its definitions and not in the file, "
                f"so where it goes is not known; {POINT}, or leave that line out"
            )
    return _without_overlaps(placed)


def part_count(node: SnippetDefinition) -> int:
    """The definitions the snippet changes under `node`: the most parts it can become."""
    return sum(part_count(child) for child in node.children) if node.shows_only_children else 1


def named_nodes(node: SnippetDefinition) -> list[SnippetDefinition]:
    """`node` and every definition it shows, at any depth."""
    return [node, *(found for child in node.children for found in named_nodes(child))]


def _visit(
    document: Document, read: Snippet, node: SnippetDefinition, selection: tuple[int, int] | None
) -> list[SnippetTarget] | None:
    """The regions of `node` and its children, or _NEEDS_ENCLOSING when the document lacks it (or,
    for a definition showing only its children, one of them) and it must go into an enclosing one."""
    document.check_stop()
    part = read.text(node.first_line, node.last_line)
    if node.shows_only_children:
        placed: list[SnippetTarget] = []
        for child in node.children:
            found = _visit(document, read, child, selection)
            if found is _NEEDS_ENCLOSING:
                break
            placed += found
        else:
            return placed
    matches = document.matches(node.path)
    if not matches:
        return _NEEDS_ENCLOSING
    match = one_match(document, node, matches, selection, header_line(read, node))
    target = document.definition_target(match)
    if target is None:
        return _NEEDS_ENCLOSING
    return [SnippetTarget(target, "block", part, adds=node.shows_only_children)]


def one_match(
    document: Document,
    node: SnippetDefinition,
    matches: list[Match],
    selection: tuple[int, int] | None,
    header: str = "",
) -> Match:
    """The match, or of several the one the cursor or selection is in. Raises NotPlaced."""
    exact = [m for m in matches if document.path_of(m.definition) == node.path]
    matches = exact or matches  # a class `Foo` over Java's constructor `Foo.Foo`, whose path only ends with it
    if len(matches) > 1 and header:  # overloads (Java's, C#'s): the one whose header line the snippet shows
        same = [m for m in matches if document.lines[m.line].strip() == header]
        matches = same if len(same) == 1 else matches
    if len(matches) == 1:
        return matches[0]
    if selection is not None:
        first, last = selection_lines(document.text, *selection, document.cache)
        inside = [m for m in matches if m.definition.first_line <= first and last <= m.definition.last_line]
        if inside:
            return min(inside, key=lambda m: m.definition.line_count)
    where = ", ".join(str(m.definition.first_line + 1) for m in matches[:8])
    raise NotPlaced(
        f"the file has {count_of(len(matches), 'definition')} named `{node.name}` (lines {where}); put the cursor "
        "in the one the snippet is for (on the command line: --lines N) and apply it again"
    )


def header_line(read: Snippet, node: SnippetDefinition) -> str:
    """The snippet's line that names the definition (stripped), or ""."""
    name = re.compile(rf"(?<![\w$]){re.escape(node.path[-1])}(?![\w$])")
    for index in range(node.first_line, node.last_line + 1):
        if index not in read.markers and name.search(read.lines[index]):
            return read.lines[index].strip()
    return ""


def _pointed(
    document: Document,
    read: Snippet,
    selection: tuple[int, int] | None,
    why: str,
    node: SnippetDefinition | None = None,
) -> SnippetTarget:
    """The region the user points at, for a snippet (or a definition of it) the file does not place."""
    part = read.text(node.first_line, node.last_line) if node else read.text(0, len(read.lines) - 1)
    if selection is None:
        raise NotPlaced(f"{why}, so where it goes is not known; {POINT}")
    start, end = selection
    if end > start:
        first, last = selection_lines(document.text, start, end, document.cache)
        return SnippetTarget(document.lines_target(first, last), "selection", part, adds=node is not None)
    region = choose_region(document.text, start, start, "block", document.language, document.cache)
    if region.kind == "block" and region.definition is not None:
        chosen = region.definition
        target = Target(region.start, region.end, chosen.first_line, chosen.last_line, chosen, start)
        return SnippetTarget(target, "block", part, adds=node is not None)
    if len(document.lines) <= WHOLE_FILE_LINES:
        return SnippetTarget(document.file_target(), "file", part, adds=node is not None)
    raise NotPlaced(
        f"{why}, and the cursor is in no definition; select the lines the snippet replaces (on the command line: "
        "--lines START:END) and apply it again"
    )


def new_loose_lines(document: Document, read: Snippet) -> list[int]:
    """The snippet's loose code lines the document does not hold already (context shown, not changed)."""
    present = {line.strip() for line in document.lines}
    return [i for i in read.loose if read.lines[i].strip() not in present]


def _without_overlaps(placed: list[SnippetTarget]) -> list[SnippetTarget]:
    """In order; a region inside another is part of it, and one named twice is one (its parts joined)."""
    kept: list[SnippetTarget] = []
    for item in sorted(placed, key=lambda p: (p.target.start, -p.target.end)):
        if kept and item.target.start < kept[-1].target.end:
            last = kept[-1]
            if (item.target.start, item.target.end) == (last.target.start, last.target.end) and item.part != last.part:
                kept[-1] = SnippetTarget(last.target, last.scope, last.part + item.part, last.adds or item.adds)
            continue
        kept.append(item)
    return kept
