"""Lazy markers: the comments a snippet written in a chat or by an agent puts where it leaves code out.

`# ... existing code ...`, `// ...`, `/* ... */`, `# ... rest of the class ...`, `<!-- unchanged -->`:
a line that is only a comment, in the comment syntax of the file's language, saying that something
is left out (an ellipsis, or words such as "existing code", "rest of", "unchanged"). Each stands for
the original code at its place. A line holding only `...` (or `…`) is one too, except in Python
where it is the whole body of a `def` or `class` (a stub, which is code).

Chat models also write another language's comment (`// ...` in a Python snippet): in a snippet that
is no code of the file's language either, so every common opener is read as a comment there;
`marker_lines` says which lines of a text are markers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# Comment openers by language: the line (stripped) starts with one, and a block form ends with its closer.
_HASH = ("#",)
_SLASH = ("//", "/*")
_DASH = ("--",)
_OPENERS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(("python", "py", "ruby", "shellscript", "yaml", "toml", "r", "elixir", "perl"), _HASH),
    **dict.fromkeys(("lua", "sql", "haskell"), _DASH),
    **dict.fromkeys(("html", "xml", "markdown", "vue", "svelte"), ("<!--",)),
    "php": ("//", "/*", "#"),
    "ocaml": ("(*",),
}
_ALL_OPENERS = ("#", "//", "/*", "--", "<!--", "(*", ";", "%")
_CLOSERS = {"/*": "*/", "<!--": "-->", "(*": "*)"}
# What a marker comment says: it opens or ends with an ellipsis, or in a few words that code is left out
# ("existing code here", "rest of the file unchanged", "(unchanged)"); a comment that only mentions
# changes ("# return early if there are no changes") is about the code.
_ELLIPSIS_AT_AN_END = re.compile(r"^(?:\.\.\.|…)|(?:\.\.\.|…)$")
_OPENS_LEFT_OUT = re.compile(
    r"^(?:existing|rest of|remaining|unchanged|same as|keep (?:the )?(?:rest|existing)|(?:previous|original|old) "
    r"code|other (?:methods|functions|code|fields|members|properties|imports)|omitted|no changes)\b"
)
_ENDS_LEFT_OUT = re.compile(r"\b(?:unchanged|omitted|as before|stays the same|remains the same|for brevity)$")
_MARKER_MAX_WORDS = 8
_MARKER_MAX_CHARS = 120  # a marker is a short remark; a longer comment is prose about the code
_ELLIPSIS = re.compile(r"(?:\.\.\.|…)\s*(?:(?:#|//).*)?")
_PYTHON_HEADER = re.compile(r"\s*(?:async\s+)?(?:def|class)\b.*:\s*(?:#.*)?$")


def _comment_text(stripped: str, openers: Sequence[str]) -> str | None:
    """What a comment-only line says, without its opener and closer; None when it is no comment."""
    for opener in openers:
        if stripped.startswith(opener):
            body = stripped[len(opener) :]
            closer = _CLOSERS.get(opener)
            if closer is not None and body.rstrip().endswith(closer):
                body = body.rstrip()[: -len(closer)]
            return body.strip(" \t*#/-;%")
    return None


def comment_openers(language: str | None, lenient: bool = False) -> tuple[str, ...]:
    """The line-comment openers of a language (C-like ones by default); every common one when
    `lenient` or the language is unknown."""
    if lenient or not language:
        return _ALL_OPENERS
    return _OPENERS.get(language.lower(), _SLASH)


def is_marker_comment(line: str, language: str | None, lenient: bool = False) -> bool:
    """The line is a comment alone that says code is left out (the ellipsis lines aside)."""
    stripped = line.strip()
    if not stripped or len(stripped) > _MARKER_MAX_CHARS:
        return False
    said = _comment_text(stripped, comment_openers(language, lenient))
    if said is None:
        return False
    if _ELLIPSIS_AT_AN_END.search(said):
        return True
    words = said.lower().strip("()[]{}.,:;!- \t")
    return len(words.split()) <= _MARKER_MAX_WORDS and bool(
        _OPENS_LEFT_OUT.search(words) or _ENDS_LEFT_OUT.search(words)
    )


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _python_stub(lines: Sequence[str], index: int) -> bool:
    """`...` on line `index` is the whole body of the `def` or `class` above it: a stub, not a marker."""
    above = next((i for i in range(index - 1, -1, -1) if lines[i].strip()), None)
    if above is None or not _PYTHON_HEADER.match(lines[above]):
        return False
    below = next((i for i in range(index + 1, len(lines)) if lines[i].strip()), None)
    return below is None or _indent(lines[below]) <= _indent(lines[above])


def marker_lines(lines: Sequence[str], language: str | None, lenient: bool = False) -> list[int]:
    """The indexes of the lines that are lazy markers. `lenient`: a comment in any common syntax
    counts (a snippet, which chat models write with another language's comments at times)."""
    python = (language or "").lower() in ("python", "py")
    found = []
    for index, line in enumerate(lines):
        stripped = line.strip()
        if _ELLIPSIS.fullmatch(stripped):
            if not (python and _python_stub(lines, index)):
                found.append(index)
        elif is_marker_comment(stripped, language, lenient):
            found.append(index)
    return found
