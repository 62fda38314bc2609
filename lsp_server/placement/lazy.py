"""Lazy markers: the comments a snippet written in a chat or by an agent puts where it leaves code out.

`# ... existing code ...`, `// ...`, `/* ... */`, `# ... rest of the class ...`, `<!-- unchanged -->`:
a line that is only a comment, in the comment syntax of the file's language, saying that something
is left out (an ellipsis, or words such as "existing code", "rest of", "unchanged"). Each stands for
the original code at its place. A line holding only `...` (or `…`) is one too, except in Python
where it is code: the whole body of a `def` or `class` (a stub, after its docstring or not), or
inside brackets.

A marker is a comment where the language's lexer says a comment is (`literals`): text that only
looks like one inside a string (a docstring quoting `# ... existing code ...`, a doctest's `...`
line, a template literal's `// ...`) is the string's. Chat models also write another language's
comment (`// ...` in a Python snippet): in a snippet that is no code of the file's language either,
so every common opener is read as a comment there; `marker_lines` says which lines of a text are
markers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .literals import lexed

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


def marker_lines(lines: Sequence[str], language: str | None, lenient: bool = False) -> list[int]:
    """The indexes of the lines that are lazy markers. `lenient`: a comment in any common syntax
    counts (a snippet, which chat models write with another language's comments at times)."""
    ellipses = {i for i, line in enumerate(lines) if _ELLIPSIS.fullmatch(line.strip())}
    candidates = [i for i, line in enumerate(lines) if i in ellipses or is_marker_comment(line, language, lenient)]
    if not candidates:
        return []
    python = (language or "").lower() in ("python", "py")
    read = lexed(lines, language, python, [i for i in candidates if i not in ellipses])
    code = read.stubs | read.bracketed if python else set()
    return [i for i in candidates if i not in read.in_literal and not (i in ellipses and i in code)]
