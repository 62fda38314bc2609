"""Scope: which part of the document a refactor rewrites.

Less output is faster and cheaper, so we rewrite as little as the request needs: the selected
lines, else the innermost definition around the cursor, else the whole file, said so. The
definition comes from Python's syntax tree (`scope_python`), from a header-aware scan of brackets,
strings and comments for the other languages (`scope_code`), and from indentation for the rest.
All offsets are Python string indices.

Code actions ask for a region on every cursor move, so the work stays near the cursor: the
document is split into lines once per version (at C speed, by `text.line_index`, which keeps it for
the next request), and the walks go only as far as the enclosing definition.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .config import ScopeMode
from .definition import Definition
from .scope_python import find_python_definition
from .text import count_of, line_index, split_lines

INSTRUCTION_MARKER = "refactor-lsp:"
# A comment opener followed by the marker: `# refactor-lsp: ...`, `// refactor-lsp: ...`, `-- ...`, `/* ... */`.
_INSTRUCTION_COMMENT = re.compile(
    r"^[ \t]*(?:#|//|--|;+|%|/\*+|\*|<!--|\(\*)[ \t]*refactor-lsp:[ \t]*(?P<text>.*?)[ \t]*(?:\*/|-->|\*\))?[ \t]*$"
)
_DEFINITION = re.compile(
    r"^\s*(?:@|(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?"
    r"(?:def|class|function|func|fn|impl|trait|struct|enum|interface|module|namespace|object|"
    r"(?:public|private|protected|internal|static|final|abstract|override|virtual)\b))"
    r"|^\s*(?:const|let|var)\s+\w+\s*=\s*(?:async\s*)?(?:\([^)]*\)|\w+)\s*=>"
    # A method: `name(args) {`, `async name(x): T {`, `void name(int x) throws E {` (not `if (...) {`).
    r"|^\s*(?!(?:if|for|while|switch|catch|else|do|try|return|with|synchronized|foreach|elif|unless)\b)"
    r"(?:[\w$<>\[\],.?*&]+\s+)*[A-Za-z_$][\w$]*\s*\([^)]*\)\s*(?::\s*[^{=;]+)?(?:throws\s+[\w.,\s]+)?\{\s*$"
)
_DECORATION = re.compile(r"^\s*(?:@|#\[)")
_CLOSERS = re.compile(r"^\s*(?:[}\])]|end\b|fi\b|done\b|esac\b)")
_OPENERS = "([{"
_CLOSERS_CHARS = ")]}"


# Past this many times the smallest definition around the cursor, a region is named to the user; so
# is a whole file, unless it is so short that naming it would only be noise.
OVERSIZED_RATIO = 10
SHORT_FILE_LINES = 20


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


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def _blank(line: str) -> bool:
    return not line.strip()


def line_span(text: str, first_line: int, last_line: int) -> tuple[int, int]:
    """Offsets covering whole lines first_line..last_line (0-based, inclusive)."""
    index = line_index(text)
    lines, offsets = index.lines, index.offsets
    if not lines:
        return 0, 0
    first = max(0, min(first_line, len(lines) - 1))
    last = max(first, min(last_line, len(lines) - 1))
    return offsets[first], offsets[last + 1]


def selection_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """Widen a selection to whole lines; a selection ending at column 0 leaves that line out."""
    offsets = line_index(text).offsets
    first = _line_at(offsets, start)
    last = _line_at(offsets, end)
    if end > start and last > first and offsets[last] == end:
        last -= 1
    return first, last


def _line_at(offsets: list[int], offset: int) -> int:
    return max(0, min(bisect.bisect_right(offsets, offset) - 1, len(offsets) - 2))


def _bracket_balance(lines: list[str]) -> int:
    text = "".join(lines)
    return sum(map(text.count, _OPENERS)) - sum(map(text.count, _CLOSERS_CHARS))


def _block_at(lines: list[str], header: int) -> int:
    """Last line (inclusive) of the block whose header line is `header`."""
    base = _indent(lines[header])
    last = header
    i = header + 1
    while i < len(lines):
        line = lines[i]
        if _blank(line):
            i += 1
            continue
        if _indent(line) > base:
            last = i
            i += 1
            continue
        if _indent(line) == base and _CLOSERS.match(line):
            last = i
        break
    # Bracket languages written without indentation: extend until the brackets balance.
    depth = _bracket_balance(lines[header : last + 1])
    while depth > 0 and last + 1 < len(lines):
        last += 1
        depth += _bracket_balance([lines[last]])
    return last


def _opens_block(lines: list[str], i: int) -> bool:
    nxt = next((j for j in range(i + 1, len(lines)) if not _blank(lines[j])), None)
    return nxt is not None and _indent(lines[nxt]) > _indent(lines[i])


def _header_above(lines: list[str], i: int) -> int | None:
    """The nearest line above `i` with less indentation: the header of the block holding line i."""
    target = _indent(lines[i])
    if target == 0:
        return None  # nothing is less indented: no need to walk to the top of the file
    for j in range(i - 1, -1, -1):
        if not _blank(lines[j]) and _indent(lines[j]) < target:
            return j
    return None


def _with_decorations(lines: list[str], header: int) -> int:
    """Include decorators, attributes and doc comments written directly above a definition."""
    base = _indent(lines[header])
    first = header
    for j in range(header - 1, -1, -1):
        stripped = lines[j].strip()
        if _indent(lines[j]) == base and stripped.startswith(("@", "#[", "///", "/**", "* ", "*/", "[")):
            first = j
        else:
            break
    return first


def enclosing_block(text: str, cursor: int) -> tuple[int, int] | None:
    """By indentation alone, for languages no finder knows: lines (first, last) of the innermost
    definition-like block around line `cursor`, else its outermost block.

    None when the cursor is on a blank or top-level line that belongs to no block.
    """
    lines = line_index(text).lines
    if not lines:
        return None
    # On a blank line, look at the code that follows, then above.
    i = cursor
    while i < len(lines) and _blank(lines[i]):
        i += 1
    if i == len(lines):
        i = cursor
        while i >= 0 and _blank(lines[i]):
            i -= 1
        if i < 0:
            return None
    # On a decorator or attribute line, the definition it decorates is the anchor.
    while _DECORATION.match(lines[i]) and i + 1 < len(lines) and _indent(lines[i + 1]) == _indent(lines[i]):
        i += 1
    # Headers from the innermost out, found lazily: the walk up stops at the first definition
    # holding the cursor, rather than at the top of a big class.
    outer = None
    for header in _headers(lines, i):
        if _DEFINITION.match(lines[header]):
            last = _block_at(lines, header)
            if last >= cursor or cursor < header:
                return _with_decorations(lines, header), last
        outer = header
    if outer is None:
        return None
    return _with_decorations(lines, outer), _block_at(lines, outer)


def _headers(lines: list[str], i: int) -> Iterator[int]:
    """Line i when it opens a block, then the headers of the blocks holding it, innermost first."""
    if _opens_block(lines, i):
        yield i
    h = _header_above(lines, i)
    while h is not None:
        yield h
        h = _header_above(lines, h)


def choose_region(text: str, start: int, end: int, mode: ScopeMode = "auto", language: str | None = None) -> Region:
    """The region to rewrite for a request whose selection is [start, end).

    `language` is the editor's languageId or the guess from the file name (`prompt.language_of`).
    """
    if not text:
        return Region(0, 0, "file")
    if mode == "selection" or (mode == "auto" and end > start):
        first, last = selection_lines(text, start, end)
        a, b = line_span(text, first, last)
        return Region(a, b, "selection", lines=last - first + 1)
    cursor = _line_at(line_index(text).offsets, start)
    definition = definition_at(text, cursor, language)
    if mode in ("auto", "block") and definition is not None:
        a, b = line_span(text, definition.first_line, definition.last_line)
        if (a, b) != (0, len(text)):
            return Region(a, b, "block", definition, definition.line_count)
    return Region(0, len(text), "file", definition, len(line_index(text).lines))


def definition_at(text: str, cursor: int, language: str | None = None) -> Definition | None:
    """The innermost definition holding line `cursor`; on a blank line outside any, the one after it
    (else before it): the code a cursor between definitions is about."""
    found = _finder_for(language)(text, cursor)
    if found is not None:
        return found
    lines = line_index(text).lines
    if cursor >= len(lines) or not _blank(lines[cursor]):
        return None
    below = next((i for i in range(cursor + 1, len(lines)) if not _blank(lines[i])), None)
    above = next((i for i in range(cursor - 1, -1, -1) if not _blank(lines[i])), None)
    for line in (below, above):
        if line is not None and (found := _finder_for(language)(text, line)) is not None:
            return found
    return None


def _finder_for(language: str | None) -> Callable[[str, int], Definition | None]:
    if language in _PYTHON_LANGUAGES:
        return find_python_definition
    if not language:
        return _indented_definition
    # Imported on the first non-Python document: compiling its lexers costs ~25 ms of start-up otherwise.
    from .scope_code import code_family, find_code_definition

    family = code_family(language)
    if family is not None:
        return lambda text, cursor: find_code_definition(text, cursor, family)
    return _indented_definition


_PYTHON_LANGUAGES = frozenset({"python", "py"})


def _indented_definition(text: str, cursor: int) -> Definition | None:
    block = enclosing_block(text, cursor)
    return Definition(block[0], block[1], "block") if block else None


@dataclass(frozen=True)
class InstructionComment:
    """A `refactor-lsp: <instruction>` comment line inside the region."""

    instruction: str
    start: int  # offsets of the whole comment line, terminator included
    end: int


def find_instruction_comment(text: str, region: Region) -> InstructionComment | None:
    if text.find(INSTRUCTION_MARKER, region.start, region.end) < 0:
        return None
    offset = region.start
    for line in split_lines(text[region.start : region.end]):
        match = _INSTRUCTION_COMMENT.match(line.rstrip("\r\n"))
        if match and match.group("text"):
            return InstructionComment(match.group("text"), offset, offset + len(line))
        offset += len(line)
    return None


def is_instruction_comment(line: str) -> bool:
    return bool(_INSTRUCTION_COMMENT.match(line.rstrip("\r\n")))
