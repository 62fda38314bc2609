"""A complete snippet, spliced as written: the merged code already, no model needed.

A snippet with no lazy marker whose definitions each parse alone, each one the document has or a new
one, says all of its code. Each definition the document has is replaced by the snippet's, re-indented
to where it goes (its leading comments and decorators kept when the snippet shows none); a new one
goes after the snippet's definition before it that the document has, else before the one after it,
else at the end of the definition the snippet shows around it. What cannot be placed so exactly (a
marker, code outside the definitions, a new definition with nothing the document has beside it, two
parts of one region, an indentation that cannot be moved) is left to the model's merge:
`splice_snippet` then says why, in words.
"""

from __future__ import annotations

import itertools
import re
import textwrap
from dataclasses import dataclass

from ..check.syntax import syntax_check
from ..regions.cache import ScopeCache
from ..regions.targets import Target
from ..text import split_lines
from .literals import lexed
from .snippet import CLOSING_LINE, LEAF_KINDS, Snippet, SnippetDefinition
from .where import (
    Document,
    Match,
    SnippetTarget,
    Stop,
    header_line,
    new_loose_lines,
    one_match,
    snippet_document,
)

_PYTHON_HEADER = re.compile(r"[ \t]*(?:async[ \t]+)?(?:def|class)\b")
# A line of a definition's leading block: a comment, a decorator, an annotation, an attribute.
_LEADING = ("#", "//", "/*", "*", "--", "@", "[")


class NotComplete(Exception):
    """The snippet is not the merged code as it stands; the message says why (for the log and notes)."""


@dataclass(frozen=True)
class Spliced:
    """One region of the document, the snippet's lines for it, and the region's new text."""

    placed: SnippetTarget
    text: str


@dataclass
class _Piece:
    """A definition of the document the snippet replaces, with the new ones that go beside it."""

    target: Target
    node: SnippetDefinition
    before: list[SnippetDefinition]
    after: list[SnippetDefinition]


def splice_snippet(
    text: str,
    read: Snippet,
    language: str | None,
    selection: tuple[int, int] | None = None,
    cache: ScopeCache | None = None,
    stop: Stop | None = None,
) -> list[Spliced]:
    """The regions a complete snippet replaces and their new texts, in order. Raises NotComplete (the
    model merges it), NotPlaced (a name the document has twice, as the model's placement would)."""
    if read.markers:
        raise NotComplete("it has lazy markers")
    if not read.roots:
        raise NotComplete("it names no definition of the file")
    document = snippet_document(text, read, language, cache, stop)
    if new_loose_lines(document, read):
        raise NotComplete("it has code outside its definitions that the file does not have")
    splicer = _Splicer(document, read, language, selection)
    pieces: list[_Piece] = []
    splicer.group(list(read.roots), None, pieces)
    spliced = [splicer.spliced(piece) for piece in pieces]
    spliced += splicer.at_ends
    spliced.sort(key=lambda s: s.placed.target.start)
    for first, second in itertools.pairwise(spliced):
        if second.placed.target.start < first.placed.target.end:
            raise NotComplete("two of its parts fall in one definition of the file")
    return spliced


class _Splicer:
    def __init__(self, document: Document, read: Snippet, language: str | None, selection: tuple[int, int] | None):
        self.document, self.read, self.language, self.selection = document, read, language, selection
        self.at_ends: list[Spliced] = []
        self.python = (language or "").lower() in ("python", "py")

    # -- where each definition goes -----------------------------------------------------------------
    def match(self, node: SnippetDefinition) -> Match | None:
        self.document.check_stop()
        matches = self.document.matches(node.path)
        return (
            one_match(self.document, node, matches, self.selection, header_line(self.read, node)) if matches else None
        )

    def group(
        self, nodes: list[SnippetDefinition], around: tuple[Target, SnippetDefinition] | None, out: list[_Piece]
    ) -> None:
        """The pieces of sibling definitions; new ones beside a sibling the document has, else at the end
        of `around` (the definition of the document the snippet shows them in)."""
        placed: list[_Piece | SnippetDefinition | None] = []  # a piece, a new definition, or None: a container
        for node in nodes:
            match = self.match(node)
            target = self.document.definition_target(match) if match is not None else None
            if match is not None and target is None:
                raise NotComplete(f"`{node.name}` is no definition the file's scope rules choose")
            if target is not None and node.shows_only_children:
                self.group(node.children, (target, node), out)
                placed.append(None)
            elif target is not None:
                piece = _Piece(target, node, [], [])
                out.append(piece)
                placed.append(piece)
            else:
                self.parses(node)
                placed.append(node)
        pieces = [p for p in placed if isinstance(p, _Piece)]
        new = [(i, p) for i, p in enumerate(placed) if isinstance(p, SnippetDefinition)]
        if not new:
            return
        if not pieces:
            if around is None:
                raise NotComplete(f"its new definition `{new[0][1].name}` has nothing of the file beside it")
            self.at_ends.append(self.at_end(around[0], around[1], [node for _, node in new]))
            return
        for i, node in new:
            above = [p for p in placed[:i] if isinstance(p, _Piece)]
            if above:
                above[-1].after.append(node)
            else:
                next(p for p in placed[i:] if isinstance(p, _Piece)).before.append(node)

    # -- the new texts ------------------------------------------------------------------------------
    def spliced(self, piece: _Piece) -> Spliced:
        node, target = piece.node, piece.target
        self.parses(node)
        self.keeps_members(node, target)
        region = split_lines(self.document.text[target.start : target.end])
        shift = (_indent_of(self.read.lines[node.first_line : node.last_line + 1]), _indent_of(region))
        lines: list[str] = []
        for new in piece.before:
            lines += self.lines_of(new, shift) + self.between(new.last_line, _next_of(piece, new))
        lines += self.lines_of(node, shift, region)
        previous = node.last_line
        for new in piece.after:
            lines += self.between(previous, new.first_line) + self.lines_of(new, shift)
            previous = new.last_line
        first = min([node.first_line, *(n.first_line for n in piece.before)])
        last = max([node.last_line, *(n.last_line for n in piece.after)])
        placed = SnippetTarget(target, "block", self.read.text(first, last), adds=bool(piece.before or piece.after))
        return Spliced(placed, _ended_as(lines, region))

    def at_end(self, target: Target, container: SnippetDefinition, new: list[SnippetDefinition]) -> Spliced:
        """`target` (a definition of the document) with the new definitions at the end of its body: before
        its closing line (`}`, `end`), or in Python after its last line."""
        region = split_lines(self.document.text[target.start : target.end])
        shift = (_indent_of(self.read.lines[container.first_line : container.last_line + 1]), _indent_of(region))
        closing = not self.python and len(region) > 1 and bool(CLOSING_LINE.fullmatch(region[-1].strip()))
        body, tail = (region[:-1], region[-1:]) if closing else (region, [])
        lines = list(body)
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += "\n"
        previous: int | None = None
        for node in new:
            gap = self.between(previous, node.first_line) if previous is not None else []
            lines += (gap or ["\n"]) + self.lines_of(node, shift)
            previous = node.last_line
        placed = SnippetTarget(target, "block", self.read.text(new[0].first_line, new[-1].last_line), adds=True)
        return Spliced(placed, _ended_as(lines + tail, region))

    def keeps_members(self, node: SnippetDefinition, target: Target) -> None:
        """A class (or other definition that holds definitions) replaced whole must show every definition
        the file's has: one the snippet leaves out without a marker may be left out for brevity, not
        deleted (the model's merge judges that; a function's body, rewritten whole, is the snippet's)."""
        if target.definition.kind in LEAF_KINDS:
            return
        shown = {child.path[-1] for child in node.children}
        line, missing = target.first_line + 1, []
        while line <= target.last_line:
            self.document.check_stop()
            inner = self.document.definition_at(line)
            if inner is None or inner.first_line < target.first_line or inner == target.definition:
                line += 1
                continue
            name = (inner.name or "").rsplit(".", 1)[-1]
            if name and name not in shown:
                missing.append(name)
            line = max(inner.last_line, line) + 1
        if missing:
            raise NotComplete(f"`{node.name}` in the file also holds {', '.join(f'`{m}`' for m in missing[:3])}")

    def lines_of(self, node: SnippetDefinition, shift: tuple[str, str], region: list[str] | None = None) -> list[str]:
        """The snippet's lines of `node`, moved to the file's indentation, each ending its line. Replacing
        `region`: the region's own leading block (comments, decorators) is kept when the snippet shows none."""
        lines = list(self.read.lines[node.first_line : node.last_line + 1])
        if lines and not lines[-1].endswith(("\n", "\r")):
            lines[-1] += "\n"
        moved = self.moved(lines, shift, node)
        if region is not None and self.header_index(lines, node) == 0:
            kept = self.header_index(region, node)
            if kept > 0:
                return region[:kept] + moved
        return moved

    def moved(self, lines: list[str], shift: tuple[str, str], node: SnippetDefinition) -> list[str]:
        snippet_indent, file_indent = shift
        if snippet_indent == file_indent:
            return lines
        file_chars, snippet_chars = set(file_indent), set(snippet_indent) | _deeper(lines, snippet_indent)
        if file_chars and snippet_chars and file_chars != snippet_chars:
            raise NotComplete(f"`{node.name}` is indented with other characters than the file (tabs, spaces)")
        read = lexed(lines, self.language, self.python)
        if read.in_literal - read.docstrings:  # a docstring moves with its code, as an editor's paste moves it
            raise NotComplete(f"`{node.name}` would move to another indentation with a string of several lines")
        moved = []
        for line in lines:
            if not line.strip():
                moved.append(line)
            elif line.startswith(snippet_indent):
                moved.append(file_indent + line[len(snippet_indent) :])
            else:
                raise NotComplete(f"`{node.name}` is indented less than its first line")
        return moved

    def header_index(self, lines: list[str], node: SnippetDefinition) -> int:
        """Where the definition's header is among its lines (after its leading block)."""
        name = re.compile(rf"(?<![\w$]){re.escape(node.path[-1])}(?![\w$])")
        for index, line in enumerate(lines):
            stripped = line.strip()
            if self.python and _PYTHON_HEADER.match(line):
                return index
            if not self.python and stripped and not stripped.startswith(_LEADING) and name.search(line):
                return index
        return 0

    def between(self, after: int | None, before: int) -> list[str]:
        """The snippet's blank lines between two of its definitions (what separates them there)."""
        start = 0 if after is None else after + 1
        return [line for line in self.read.lines[start:before] if not line.strip()]

    def parses(self, node: SnippetDefinition) -> None:
        """A definition of a complete snippet parses on its own (a snippet cut short is no merged code)."""
        part = textwrap.dedent(self.read.text(node.first_line, node.last_line))
        found = syntax_check("", 0, 0, part, self.language or "")
        if found.problem is not None:
            raise NotComplete(f"`{node.name}` does not parse on its own ({found.problem.message})")


def _next_of(piece: _Piece, new: SnippetDefinition) -> int:
    """The first line of what follows `new` among the definitions before `piece`'s own."""
    later = piece.before[piece.before.index(new) + 1 :]
    return later[0].first_line if later else piece.node.first_line


def _indent_of(lines: list[str] | tuple[str, ...]) -> str:
    """The indentation of the first line that is not blank."""
    first = next((line for line in lines if line.strip()), "")
    return first[: len(first) - len(first.lstrip(" \t"))]


def _deeper(lines: list[str], indent: str) -> set[str]:
    """The characters that indent the lines further than `indent`."""
    found: set[str] = set()
    for line in lines:
        if line.strip() and line.startswith(indent):
            rest = line[len(indent) :]
            found |= set(rest[: len(rest) - len(rest.lstrip(" \t"))])
    return found


def _ended_as(lines: list[str], region: list[str]) -> str:
    """The lines joined, with the line endings the region has (a snippet pasted with `\\n` into a
    `\\r\\n` file), and ending as the region ends (with a line break, or without at the file's end)."""
    ending = next((line[len(line.rstrip("\r\n")) :] for line in region if line.endswith(("\n", "\r"))), "\n")
    text = "".join(line.rstrip("\r\n") + ending if line.endswith(("\n", "\r")) else line for line in lines)
    if region and not region[-1].endswith(("\n", "\r")):
        text = text.rstrip("\r\n")
    return text
