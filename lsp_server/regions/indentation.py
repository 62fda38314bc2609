"""Scope by indentation alone, for the languages no finder knows (YAML, shell, plain text...): the
innermost definition-like block around the cursor, else its outermost block."""

from __future__ import annotations

import re
from collections.abc import Iterator

from .cache import ScopeCache, Snapshot, snapshot_of
from .definition import Definition

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


def _indent(line: str) -> int:
    expanded = line.expandtabs(4)
    return len(expanded) - len(expanded.lstrip())


def _blank(line: str) -> bool:
    return not line.strip()


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


def enclosing_block(text: str, cursor: int, cache: ScopeCache | None = None) -> tuple[int, int] | None:
    """Lines (first, last) of the innermost definition-like block around line `cursor`, else its
    outermost block; None when the cursor is on a blank or top-level line that belongs to no block."""
    return _enclosing_block(snapshot_of(text, cache).index.lines, cursor)


def _enclosing_block(lines: list[str], cursor: int) -> tuple[int, int] | None:
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


def indented_definition(snapshot: Snapshot, cursor: int) -> Definition | None:
    block = _enclosing_block(snapshot.index.lines, cursor)
    return Definition(block[0], block[1], "block") if block else None
