"""The block scan: the blocks from one start line down, read as far as one cursor line needs.

The scan keeps the stack of open blocks, so it knows which blocks are open at the end of the
cursor's line, which closed on it, and (reading on) which block's header the line belongs to. Only
those few blocks are classified, by their language's rules (`Language.classify`, or the keyword
that opened them). A buffer in the middle of an edit (a `{` not yet closed) is resynchronised at
the next line that starts at column 0 with a definition keyword.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from itertools import chain

from ..languages.headers import Header, HeaderText, blank, collapse, skip_space, statement_start
from ..languages.lexers import CLOSE, OPEN, Event
from .cache import Snapshot
from .leading import leading_start
from .rules import Language


class Block:
    """A block on the scan's stack. Mutable: it closes, and its header is read once, when asked.

    A slotted class: the scan makes one per brace it reads, so it must cost little more than a list.
    """

    __slots__ = ("at", "end", "head", "kids", "up", "word")

    def __init__(self, at: int, up: Block | None, word: str) -> None:
        self.at = at  # offset of its opening token
        self.end = -1  # offset of its closing token; -1 while open
        self.up = up  # the block holding it; None at the scan's top
        self.head: Header | None = None  # what it is, once asked (see Scan.header)
        # Closing offsets of its child blocks: where a header of a later child may safely start reading.
        self.kids: list[int] = []
        self.word = word  # the keyword that opened it, for `end` languages


GONE = Block(-1, None, "")  # a holder ruled out (see Scan.find)
_HEADER_MAX_LINES = 200  # a header is never read from further up than this
_HEADER_MAX_CHARS = 20_000  # ... nor than this (minified code)
_HEADER_BLOCKS = 8  # blocks (decorator arguments, types) a header is read back over at most
_NON_BLANK = re.compile(r"\S")
_GOES_ON = frozenset(")]>.|&?:=[")
_HEADER_CHARS = 2000  # the most of a statement's end its header patterns are searched in
_HEADER_SEARCH_LINES = 16  # ... and the most lines (bracket groups emptied; a union return type takes one each)


def leading_blanks(line: str) -> int:
    """Leading blanks, a tab counting as one: a file indents with one or the other, and this is the
    count `code._shallow` matches."""
    return len(line) - len(line.lstrip(" \t"))


def depth_of(block: Block) -> int:
    """How many blocks hold `block`, within the scan."""
    depth = -1
    holder: Block | None = block
    while holder is not None:
        holder = holder.up
        depth += 1
    return depth


class Scan:
    """The blocks from one start line down, read as far as one cursor line needs."""

    def __init__(self, snapshot: Snapshot, language: Language, start_line: int) -> None:
        index = snapshot.index
        text = snapshot.text
        self.text = text
        self.lines = index.lines
        self.offsets = index.offsets
        self.language = language
        self.start = self.offsets[start_line]
        self.events = language.events(text, self.start, language.lexer)
        self.stack: list[Block] = []
        self.top_kids: list[int] = []
        self.around: list[Block] = []  # the blocks open at the end of the cursor's line, and closed on it
        self.found: Block | None = None  # the block `find` answered
        # What holds the blocks the scan starts among: from column 0, most likely the file itself.
        self.top = "top" if leading_blanks(self.lines[start_line]) == 0 else "any"

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.offsets, offset) - 1

    # -- the answer for one line --

    def find(self, cursor: int) -> Block | None:
        """The innermost definition block whose span holds line `cursor`, if it starts below the scan's
        start; its `end` is set (the end of the text when it never closes)."""
        closed_here, rest = self._read_line(cursor)
        self.around = [*self.stack, *closed_here]
        best, best_depth = self._innermost(closed_here)
        ahead, ahead_depth = self._definition_ahead(rest, cursor, best_depth)
        if ahead is not None and best_depth < ahead_depth:
            best = ahead
        if best is None:
            return None
        if best.end < 0:
            self._read_until_closed(best, rest)
        return best

    def _open(self, at: int, word: str) -> Block:
        stack = self.stack
        block = Block(at, stack[-1] if stack else None, word)
        stack.append(block)
        return block

    def _close(self, at: int) -> Block | None:
        """The block that ends at `at`, its end set and counted among its parent's kids; None for the
        end of a block opened above the scan's start."""
        stack = self.stack
        if not stack:
            self.top_kids.append(at)
            return None
        block = stack.pop()
        block.end = at
        (stack[-1].kids if stack else self.top_kids).append(at)
        return block

    def _read_line(self, cursor: int) -> tuple[list[Block], Iterator[Event]]:
        """Read the events up to the end of line `cursor`: the blocks closed on it, and the events after."""
        line_start, line_end = self.offsets[cursor], self.offsets[cursor + 1]
        closed_here: list[Block] = []
        events = self.events
        for event in events:
            at, what, word = event
            if at >= line_end:
                return closed_here, chain((event,), events)
            if what == OPEN:
                self._open(at, word)
            elif what == CLOSE:
                block = self._close(at)
                if block is not None and at >= line_start:
                    closed_here.append(block)
            else:
                self._resync(at)
        return closed_here, events

    def _innermost(self, closed_here: list[Block]) -> tuple[Block | None, int]:
        """The innermost definition holding the line, among the blocks open at its end and those closed
        on it, with its depth (-1: none)."""
        best: Block | None = None
        best_depth = -1
        for depth, block in enumerate(self.stack):
            if self.header(block).kind:
                best, best_depth = block, depth
        # Closed on the line: a deeper one (a method closing inside its class) holds it more closely.
        for block in closed_here:
            if self.header(block).kind:
                depth = depth_of(block)
                if depth > best_depth:
                    best, best_depth = block, depth
        return best, best_depth

    def _definition_ahead(self, rest: Iterator[Event], cursor: int, best_depth: int) -> tuple[Block | None, int]:
        """Read on while the line may belong to the header (or leading comments) of a block below: the
        statement holding the line lies in one of the blocks open here (or at the scan's top); a child
        block that starts a later statement rules its parent out, one that is a definition starting at
        or above the line is the answer. Children of blocks opened further down are parts of some
        header (a decorator's argument, a type), never what is looked for."""
        stack = self.stack
        holders: list[Block | None] = [None, *stack]
        # A definition found through a level at or above `best` would hold `best`: not more inner.
        holders[: best_depth + 1] = [GONE] * (best_depth + 1)
        alive = len(holders) - best_depth - 1
        for at, what, word in rest:
            if what == OPEN:
                parent = stack[-1] if stack else None
                block = self._open(at, word)
                level = len(stack) - 1  # the parent's index in holders
                if level >= len(holders) or holders[level] is not parent:
                    continue
                header = self.header(block)
                if header.kind and self.first_line(block) <= cursor:
                    return block, level
                if header.kind or self.leading_start(self.line_of(header.statement)) > cursor:
                    # A later statement in this block. If it holds statements (code, a definition's
                    # body), the cursor's statement is no header part of anything further out either.
                    holders[level] = GONE
                    alive -= 1
                    if parent is not None and (self.header(parent).kind or self.header(parent).inner == "code"):
                        for outer in range(level):
                            if holders[outer] is not GONE:
                                holders[outer] = GONE
                                alive -= 1
            elif what == CLOSE:
                closed = self._close(at)
                level = len(stack) + 1
                if closed is not None and level < len(holders) and holders[level] is closed:
                    holders[level] = GONE
                    alive -= 1
                elif closed is None and holders[0] is None:  # the block the scan started in has ended
                    holders[0] = GONE
                    alive -= 1
            else:
                self._resync(at)
                continue
            if alive <= 0:
                break
        return None, -1

    def _read_until_closed(self, block: Block, rest: Iterator[Event]) -> None:
        for at, what, word in rest:
            if what == OPEN:
                self._open(at, word)
            elif what == CLOSE:
                self._close(at)
            else:
                self._resync(at)
            if block.end >= 0:
                return
        block.end = len(self.text)  # never closed: to the end of the text

    def _resync(self, at: int) -> None:
        """A definition keyword at column 0 while nested: the blocks still open there were never closed
        (the buffer is mid-edit), unless they are wrappers whose content starts at column 0 too."""
        stack = self.stack
        if not stack or self._wrapper(stack[-1]):
            return
        keyword_line = self.line_of(at + 1)
        last = max(self.leading_start(keyword_line) - 1, 0)
        while last > 0 and not self.lines[last].strip():
            last -= 1
        end = self.offsets[last]
        while stack and not self._wrapper(stack[-1]):
            block = stack.pop()
            block.end = max(end, block.at)
            (stack[-1].kids if stack else self.top_kids).append(at)

    def _wrapper(self, block: Block) -> bool:
        lines = self.lines
        line = self.line_of(block.at)
        if lines[line][:1] in (" ", "\t"):
            return False
        for below in range(line + 1, min(line + 50, len(lines))):
            content = lines[below]
            if content.strip():
                return content[:1] not in (" ", "\t", "}")
        return False

    # -- headers --

    def header(self, block: Block) -> Header:
        header = block.head
        if header is None:
            header = block.head = self._classify(block)
        return header

    def _classify(self, block: Block) -> Header:
        parent = block.up
        parent_header = self.header(parent) if parent is not None else None
        ctx = parent_header.inner if parent_header is not None else self.top
        if self.language.word_header is not None:
            return self._classify_word(block, parent_header)
        at = block.at
        floor = parent.at + 1 if parent is not None else self.start
        kids = parent.kids if parent is not None else self.top_kids
        # Read from just after the last `}` above (a safe offset: code, no string), unless what follows
        # that `}` goes on with the same statement: `@Component({...})`, `f(): { a: 1 } {`.
        text = self.text
        i = bisect.bisect_left(kids, at) - 1
        for _ in range(_HEADER_BLOCKS):
            if i < 0 or kids[i] < floor:
                break
            after = _NON_BLANK.search(text, kids[i] + 1, at)
            if after is not None and after.group() not in _GOES_ON:
                gap = self.language.lexer.mask.sub(blank, text[kids[i] + 1 : at])
                if gap.count(")") <= gap.count("("):  # not inside a parameter list that opened above
                    floor = kids[i] + 1
                    break
            i -= 1
        floor = self._capped(floor, kids, at)
        masked = self.language.lexer.mask.sub(blank, self.text[floor:at])
        s = collapse(masked)
        st, outer = statement_start(s)
        # Without `;` (or after a long comment) the statement start says little: a header spans a few
        # lines once its groups are emptied, and the leading block finds the decorators above.
        newline = len(s)
        for _ in range(_HEADER_SEARCH_LINES):
            newline = s.rfind("\n", st, newline)
            if newline < 0:
                break
        st = max(st, newline + 1, len(s) - _HEADER_CHARS)
        language = self.language
        classify = language.classify
        assert classify is not None  # the `end` languages' blocks were classified by their keyword
        tail = s.rstrip()[-1:]
        if tail and tail in language.value_before:
            # The `{` of an object, a type or an initializer: `f(): Promise<{ ok: boolean }>`, `= {`.
            kind, name, rel, inner = None, None, st, language.value_body(s, st, ctx)
        else:
            header = HeaderText(s, st, ctx, parent_header, masked, lambda: self._masked_before(block))
            kind, name, rel, inner = classify(header)
        return Header(kind, name, floor + skip_space(s, rel), inner, floor + skip_space(s, outer))

    def _masked_before(self, block: Block) -> str:
        """The text from the start of the block holding `block` (or of the scan) to its `{`, strings
        and comments blanked: no more than a header's longest reach."""
        at = block.at
        parent = block.up
        floor = parent.at + 1 if parent is not None else self.start
        floor = self._capped(floor, parent.kids if parent is not None else self.top_kids, at)
        return self.language.lexer.mask.sub(blank, self.text[floor:at])

    def _capped(self, floor: int, kids: list[int], at: int) -> int:
        """`floor`, or where to read a header ending at `at` from when that is much further up: the
        first `}` below the cap, else the cap's line (which a multi-line string could hold: a header
        that long is rare enough to risk it)."""
        cap = max(self.offsets[max(0, self.line_of(at) - _HEADER_MAX_LINES)], at - _HEADER_MAX_CHARS)
        if floor >= cap:
            return floor
        j = bisect.bisect_left(kids, cap)
        return kids[j] + 1 if j < len(kids) and kids[j] < at else cap

    def _classify_word(self, block: Block, parent: Header | None) -> Header:
        """Ruby and Lua: the keyword that opened the block says what it is."""
        # The class or module around: through `class << self`, whose methods are the class's.
        holder = block.up
        while parent is not None and parent.kind is None and parent.inner == "class" and holder is not None:
            holder = holder.up
            parent = self.header(holder) if holder is not None else None
        owner = parent.name if parent is not None and parent.kind in ("class", "module") else None
        assert self.language.word_header is not None  # the `end` languages' records have one
        return self.language.word_header(self.text, block.at, block.word, owner)

    # -- spans --

    def first_line(self, block: Block) -> int:
        start = self.header(block).start
        line = self.line_of(start)
        before = self.text[self.offsets[line] : start].strip()
        if before.endswith("*/") and self.language.block_comments == "/*":
            # `*/ class Foo {`: the comment that ends on the header's line is the definition's too.
            opener = self.text.rfind("/*", 0, start)
            opener_line = self.line_of(opener)
            if opener < 0 or self.text[self.offsets[opener_line] : opener].strip():
                return line
            line = opener_line
        elif before:
            return line  # code before it on its line: the comments above belong to that code
        return self.leading_start(line)

    def leading_start(self, line: int) -> int:
        """`line`, moved up over the comment and decorator lines directly above it."""
        return leading_start(self.lines, line, self.language)

    def span(self, block: Block) -> tuple[int, int]:
        return self.first_line(block), self.line_of(block.end)
