"""A snippet read as the scope lexers read a file: its definitions, how they nest, and its lazy markers.

A snippet from a chat or an agent shows the definitions it changes, often inside the class they
belong to, with lazy markers (`lazy.py`) for what it leaves out. Its definitions are found by the
same finders as a document's (Python's syntax tree, the scan of other languages), on the snippet
with its common indentation removed (a method pasted alone, indented, is still read) and its markers
written as comments of the file's language (a `// ...` in a Python snippet would stop the parser).

A definition *shows only its children* when its own lines (those outside its children) are its
header, markers, blank lines and closing brackets: `class X:` with markers around a method. Such a
definition is not what the snippet changes; its children are (`placement.py` decides).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from ..regions.cache import Snapshot
from ..regions.definition import Definition
from ..regions.region import _finder_for
from ..text import split_lines
from .lazy import comment_openers, marker_lines

CLOSING_LINE = re.compile(r"[\s})\];,]*(?:end\b[\s;]*)?")  # `}`, `};`, `})`, `end`: a block's last line
_HEADER_SEARCH_LINES = 12  # a header (decorators, a long signature) ends within this many lines
# Definitions read as a whole: a function's nested definitions are its body, never parts of a snippet
# of their own (and a long function is not asked about line by line).
LEAF_KINDS = frozenset({"function", "method"})
STOP_EVERY = 64  # lines read between two questions to the caller's `stop`


class Stopped(Exception):
    """The caller stopped the reading or the placement (its `stop`): a cancel, which frees the thread."""


@dataclass
class SnippetDefinition:
    """One definition of the snippet: its lines (0-based, inclusive, trailing markers of its body
    included), its name path from the outermost definition, and the definitions inside it."""

    first_line: int
    last_line: int
    kind: str
    path: tuple[str, ...]
    children: list[SnippetDefinition] = field(default_factory=list)
    shows_only_children: bool = False

    @property
    def name(self) -> str:
        return ".".join(self.path)


@dataclass(frozen=True)
class Snippet:
    """A snippet, read: its lines (common indentation removed), which are markers, its outermost
    definitions, and the lines of code outside every definition."""

    lines: tuple[str, ...]
    markers: frozenset[int]
    roots: tuple[SnippetDefinition, ...]
    loose: tuple[int, ...]  # code lines outside every definition (imports, constants), markers aside

    def text(self, first: int, last: int) -> str:
        """Lines first..last, joined, ending with a line break."""
        part = "".join(self.lines[first : last + 1])
        return part if part.endswith(("\n", "\r")) else part + "\n"

    @property
    def has_code(self) -> bool:
        return any(line.strip() and i not in self.markers for i, line in enumerate(self.lines))

    def has_markers(self, first: int, last: int) -> bool:
        return any(first <= i <= last for i in self.markers)


def _dedented(lines: list[str]) -> list[str]:
    """The lines less the indentation every non-blank one shares."""
    indents = [line[: len(line) - len(line.lstrip(" \t"))] for line in lines if line.strip()]
    if not indents:
        return lines
    common = indents[0]
    for indent in indents[1:]:
        while not indent.startswith(common):
            common = common[:-1]
    return [line[len(common) :] if line.strip() else line for line in lines]


def _as_comment(line: str, language: str | None) -> str:
    """A marker line written as a comment of the language, for the finders (same indentation)."""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    opener = comment_openers(language)[0]
    closer = {"/*": " */", "<!--": " -->", "(*": " *)"}.get(opener, "")
    ending = line[len(line.rstrip("\r\n")) :]
    return f"{indent}{opener} ...{closer}{ending}"


def read_snippet(snippet: str, language: str | None, stop: Callable[[], bool] | None = None) -> Snippet:
    """The snippet's definitions as a tree, its markers and its loose code lines. `stop`: asked every
    STOP_EVERY lines; when it says so, the reading ends (Stopped)."""
    lines = _dedented(split_lines(snippet))
    markers = frozenset(marker_lines(lines, language, lenient=True))
    readable = [_as_comment(line, language) if i in markers else line for i, line in enumerate(lines)]
    snapshot = Snapshot("".join(readable))
    find = _finder_for(language)
    found: dict[tuple[int, int], Definition] = {}
    index = 0
    while index < len(lines):
        if stop is not None and index % STOP_EVERY == 0 and stop():
            raise Stopped
        definition = find(snapshot, index) if lines[index].strip() and index not in markers else None
        if definition is not None and definition.name:
            found.setdefault((definition.first_line, definition.last_line), definition)
            if definition.kind in LEAF_KINDS and definition.last_line > index:
                index = definition.last_line  # what a function holds is its own: no definition of the snippet's
        index += 1
    roots = _tree(list(found.values()), lines, markers)
    covered = {i for root in roots for i in range(root.first_line, root.last_line + 1)}
    loose = tuple(i for i, line in enumerate(lines) if line.strip() and i not in markers and i not in covered)
    return Snippet(tuple(lines), markers, tuple(roots), loose)


def _tree(definitions: list[Definition], lines: list[str], markers: frozenset[int]) -> list[SnippetDefinition]:
    """The definitions nested by their spans, each named by its path from the outermost."""
    roots: list[SnippetDefinition] = []
    stack: list[SnippetDefinition] = []
    for definition in sorted(definitions, key=lambda d: (d.first_line, -d.last_line)):
        while stack and definition.first_line > stack[-1].last_line:
            stack.pop()
        parent = stack[-1] if stack else None
        first, last = definition.first_line, _with_trailing_markers(definition, lines, markers)
        while first < definition.last_line and (first in markers or not lines[first].strip()):
            first += 1  # a marker right above a definition is the code before it, not part of it
        if parent is not None:
            last = min(last, parent.last_line)
        path = name_path(definition.name or "", parent.path if parent else ())
        node = SnippetDefinition(first, last, definition.kind, path)
        (parent.children if parent is not None else roots).append(node)
        stack.append(node)
    for root in roots:
        _mark_containers(root, lines, markers)
    return roots


def name_path(name: str, parent_path: tuple[str, ...]) -> tuple[str, ...]:
    """A definition's path: its own name's parts after its parent's path, unless the name already
    starts with it (Python's finder names a method `Class.method`, the scan of JS `method`)."""
    parts = tuple(part for part in name.split(".") if part)
    if parts[: len(parent_path)] == parent_path:
        return parts
    return parent_path + parts


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _with_trailing_markers(definition: Definition, lines: list[str], markers: frozenset[int]) -> int:
    """Its last line, moved down over the markers (and blank lines between them) indented deeper than
    its header: Python's syntax tree ends a class at its last statement, not at `# ... rest ...`."""
    header = next((i for i in range(definition.first_line, definition.last_line + 1) if lines[i].strip()), None)
    if header is None:
        return definition.last_line
    depth, last = _indent(lines[header]), definition.last_line
    for index in range(definition.last_line + 1, len(lines)):
        if not lines[index].strip():
            continue
        if index in markers and _indent(lines[index]) > depth:
            last = index
            continue
        break
    return last


def header_end(lines: list[str] | tuple[str, ...], first: int, last: int, skip: frozenset[int] = frozenset()) -> int:
    """The last line of the header of a definition on lines first..last: the first that opens its body
    (`:` at its end, or a `{`), not counting the lines in `skip` (markers); `first` when none does."""
    for index in range(first, min(last, first + _HEADER_SEARCH_LINES) + 1):
        code = lines[index].split("#", 1)[0].split("//", 1)[0].rstrip()
        if index not in skip and (code.endswith(":") or "{" in code):
            return index
    return first


def _mark_containers(node: SnippetDefinition, lines: list[str], markers: frozenset[int]) -> None:
    for child in node.children:
        _mark_containers(child, lines, markers)
    if not node.children:
        return
    inside = {i for child in node.children for i in range(child.first_line, child.last_line + 1)}
    for index in range(header_end(lines, node.first_line, node.last_line, markers) + 1, node.last_line + 1):
        line = lines[index]
        if index in inside or index in markers or not line.strip():
            continue
        if index > max(inside) and CLOSING_LINE.fullmatch(line.strip()):
            continue
        return
    node.shows_only_children = True
