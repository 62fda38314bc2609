"""Text: lines and positions as LSP counts them, the bottom layer under `regions` and `edits`; and text
made inert before an editor shows it (`neutralise_links`) or a terminal does (`on_terminal`, `Screen`).

LSP ends a line at \\n, \\r\\n or \\r, and nowhere else (not at a form feed or U+2028, where
str.splitlines() would). Offsets are Python string indices; `PositionMapper` turns them into LSP
(line, character) pairs in the negotiated encoding and back.

A `LineIndex` is one text's lines and where each starts. Nothing here keeps one between calls: the
owner of a document's `scope.ScopeCache` splits each version once and hands the index to
`PositionMapper`.
"""

from __future__ import annotations

import bisect
import codecs
import io
import re
from itertools import accumulate
from typing import Literal, TextIO

PositionEncoding = Literal["utf-16", "utf-8", "utf-32"]

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
# Characters str.splitlines() breaks at that LSP does not: text holding any is split by the regex.
_EXTRA_BREAKS = ("\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


# Link syntax an editor turns into something to click. VS Code makes `[label](command:id?args)` in a
# notification or a progress title a link that runs any command with its arguments; markdown
# renderers also read `<scheme:...>` autolinks and `[label]: target` definitions. Text that quotes
# a repository (a key name, an action title, an instruction comment), a backend or a model cannot
# be told from ours, so every message the server shows loses these shapes (server.RefactorProtocol).
_INLINE_LINK = "]("  # `[label](target)`: CommonMark and VS Code both need the two adjacent
_AUTOLINK = re.compile(r"<(?=[A-Za-z][A-Za-z0-9+.-]{1,31}:)")
_LINK_DEFINITION = re.compile(r"^( {0,3}\[[^\]\n]*\]):", re.MULTILINE)


def neutralise_links(text: str) -> str:
    """`text` with no link syntax left: `[a](b)` reads `[a] (b)`, `<b:c>` reads `< b:c>`, a `[a]: b`
    line reads `[a] : b`. Anything else, our own messages included, is left exactly as it is."""
    if _INLINE_LINK in text:
        text = text.replace(_INLINE_LINK, "] (")
    if "<" in text:
        text = _AUTOLINK.sub("< ", text)
    if "]:" in text:
        text = _LINK_DEFINITION.sub(r"\1 :", text)
    return text


# Names that identify something (a document's uri, a progress token): matched by the editor, never shown.
_IDENTIFIERS = frozenset({"uri", "token"})


def inert(value: object) -> object:
    """A JSON value as it may be shown: every string in it passed through `neutralise_links`, except
    the values of the keys that identify something (`uri`, `token`)."""
    if isinstance(value, str):
        return neutralise_links(value)
    if isinstance(value, dict):
        return {k: v if k in _IDENTIFIERS else inert(v) for k, v in value.items()}
    if isinstance(value, list):
        return [inert(v) for v in value]
    return value


# What a terminal acts on instead of showing, or shows as nothing: Unicode's controls (Cc: C0 and C1, DEL;
# an escape sequence moves the cursor, erases a line, makes a link, retitles the window; a lone carriage
# return writes over the line), format characters (Cf: the bidirectional controls that make a line read in
# another order than it runs (Trojan Source), zero-width spaces and joiners, a byte-order mark), the line
# and paragraph separators (Zl, Zp) and lone surrogates (Cs: a file name that is not UTF-8). The ranges
# are Unicode 15.1's (Python 3.13); tests/unit/test_shown_text.py checks them against this Python's
# unicodedata. A line break, a tab and a CRLF line end are shown as what they are.
_TERMINAL_CONTROLS = re.compile(
    r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2"
    r"\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ud800-\udfff\ufeff\ufff9-\ufffb"
    r"\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    r"\U000e0001\U000e0020-\U000e007f]|\r(?!\n)"
)
_SHORT_ESCAPES = {"\b": "\\b", "\f": "\\f", "\r": "\\r"}


def _spelt(found: re.Match[str]) -> str:
    return spell(found.group())


def spell(char: str) -> str:
    """A character as JSON spells it in a string (`\\u001b`, `\\r`, a pair of surrogates past U+FFFF): a
    `--json` object on a terminal is still the same JSON once its controls are spelt out."""
    if char in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[char]
    code = ord(char)
    if code > 0xFFFF:
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


def on_terminal(text: str) -> str:
    """`text` as a terminal may show it: each control character spelt out as JSON spells it (`\\u001b`,
    `\\u202e`, `\\r`), so what a repository, a backend or a model wrote is read, never obeyed (no link,
    no hidden line), and JSON stays the same JSON."""
    return _TERMINAL_CONTROLS.sub(_spelt, text)


class Screen(io.TextIOBase):
    """A terminal's stream (the CLI's stderr, stdout when it is a terminal) that shows every control
    character written to it as text (`on_terminal`), and every character its encoding cannot hold (a
    latin-1 or ASCII terminal's 中) spelt out the same way: never a crash halfway through the output.
    `unshowable` counts those, so the command can say so. `frame` writes our own controls: a progress
    bar's `\\r`."""

    def __init__(self, under: TextIO) -> None:
        self.under = under
        self.unshowable = 0
        encoding = getattr(under, "encoding", None)
        try:
            self._narrow = encoding is not None and codecs.lookup(encoding).name != "utf-8"
        except LookupError:
            self._narrow = False  # a codec this Python lacks: left to the stream, as before

    def write(self, text: str) -> int:
        shown = on_terminal(text)
        if self._narrow:
            shown = self._showable(shown)
        self.under.write(shown)
        return len(text)

    def _showable(self, text: str) -> str:
        encoding = self.under.encoding
        try:
            text.encode(encoding)
        except UnicodeEncodeError:
            pass
        else:
            return text
        shown = []
        for char in text:
            try:
                char.encode(encoding)
            except UnicodeEncodeError:
                self.unshowable += 1
                char = spell(char)
            shown.append(char)
        return "".join(shown)

    def frame(self, controls: str) -> None:
        self.under.write(controls)

    def flush(self) -> None:
        # Also called when this wrapper is collected, after the stream under it may have been closed
        # (a test's captured stderr): that said "Exception ignored ... I/O operation on closed file".
        if not self.under.closed:
            self.under.flush()

    def isatty(self) -> bool:
        return self.under.isatty()

    def fileno(self) -> int:
        return self.under.fileno()

    def writable(self) -> bool:
        return True

    @property
    def encoding(self) -> str:  # type: ignore[override]  # the stream's own, as print() and logging ask
        return self.under.encoding


# A quote of text we did not write (a backend's error, a model id, a line of the model's answer) is
# cut to this in a message: enough to recognise it, and a message stays a line a person can read.
QUOTE_CHARS = 200


def clip(text: str, limit: int = QUOTE_CHARS) -> str:
    """`text` as quoted in a message: at most `limit` characters, a cut one ending in `…`."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def listed(items: list[str], most: int = 10, each: int = 80) -> str:
    """`a, b, c and 17 more`: at most `most` items, each clipped to `each` characters, for messages."""
    shown = ", ".join(clip(item, each) for item in items[:most])
    return shown + (f" and {len(items) - most:,} more" if len(items) > most else "")


def shown_name(name: str) -> str:
    """A file name as text any UTF-8 consumer takes: a name the system gave as bytes that are not UTF-8
    (Python's surrogateescape, `\\udcff` for the byte 0xFF), or a URI's lone surrogate, is spelt with
    backslashes (`caf\\xff.py`) rather than failing whatever encodes it (a backend request, JSON)."""
    try:
        raw = name.encode("utf-8", "surrogateescape")  # the name's bytes, as the system gave them
    except UnicodeEncodeError:  # a surrogate no byte stands for (U+D800 to U+DC7F)
        return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def count_of(count: int, noun: str) -> str:
    """`1 line`, `2 lines`, `1,234 lines`: a count with its noun, for messages."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def plain_line_breaks(text: str) -> bool:
    """True when str.splitlines() splits `text` exactly where LSP does (at \\n, \\r\\n and \\r only)."""
    return not any(ch in text for ch in _EXTRA_BREAKS)


def split_lines(text: str) -> list[str]:
    """Lines with their terminators (\\n, \\r\\n or \\r), as LSP counts them."""
    if plain_line_breaks(text):
        return text.splitlines(keepends=True)
    return _LINE.findall(text)


class LineIndex:
    """The lines of one text (terminators kept) and the offset where each starts.

    Read-only once built: the lists are shared by every request on the same text.
    """

    __slots__ = ("_starts", "lines", "offsets", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = split_lines(text)
        # Where each line starts, then len(text): line i is text[offsets[i]:offsets[i + 1]].
        self.offsets = list(accumulate(map(len, self.lines), initial=0))
        self._starts: list[int] | None = None

    @property
    def starts(self) -> list[int]:
        """Where each line starts as LSP counts lines: after a final line break (or in an empty
        text) one more, empty, line starts at the very end; after an unterminated last line none does."""
        starts = self._starts
        if starts is None:
            text = self.text
            starts = self.offsets[:-1] if text and text[-1] not in "\r\n" else self.offsets
            self._starts = starts
        return starts


def line_starts(text: str) -> list[int]:
    """Offsets where each line starts, as LSP counts lines (see `LineIndex.starts`). Read-only."""
    return LineIndex(text).starts


class PositionMapper:
    """Document offsets ↔ LSP (line, character) in the negotiated encoding.

    `index`, when given, must be the `LineIndex` of this very text (from the document's
    `scope.ScopeCache`): then the document is not split again.
    """

    def __init__(self, text: str, encoding: PositionEncoding = "utf-16", index: LineIndex | None = None) -> None:
        self.text = text
        self.encoding = encoding
        self.line_starts = (index if index is not None and index.text is text else LineIndex(text)).starts

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
        content = self.text[start:end].rstrip("\r\n")
        if self.encoding == "utf-32" or content.isascii():
            return start + min(character, len(content))
        units = 0
        for i, ch in enumerate(content):
            if units >= character:
                return start + i
            units += self._units(ch)
        return start + len(content)
