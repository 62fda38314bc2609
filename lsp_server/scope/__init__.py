"""Scope: which part of the document a refactor rewrites.

Less output is faster and cheaper, so we rewrite as little as the request needs: the selected
lines, else the innermost definition around the cursor, else the whole file, said so (`region`).
The definition comes from Python's syntax tree (`python`), from a header-aware scan of brackets,
strings and comments for the other languages (`code`, one record of rules per language in
`languages`), and from indentation for the rest (`indentation`); each finder returns a `Definition`
(`definition`). The language is the editor's languageId, else a guess from the file name
(`file_language`). All offsets are Python string indices.

Code actions ask for a region on every cursor move, so the work stays near the cursor, and what
one version of a document taught (its lines, parsed Python, definitions found) is kept in the
`ScopeCache` that the caller owns for that document (`cache`); without one, every call computes
afresh.

`code` (the scan for other languages) is imported on the first document that needs it: compiling
its lexers costs ~25 ms of start-up otherwise. Import its entry points from `scope.code`.
"""

from __future__ import annotations

from ..text import split_lines
from .cache import ScopeCache
from .indentation import enclosing_block
from .instruction import INSTRUCTION_MARKER, InstructionComment, find_instruction_comment, is_instruction_comment
from .python import find_python_definition
from .region import OVERSIZED_RATIO, SHORT_FILE_LINES, Region, choose_region, definition_at, line_span, selection_lines

__all__ = [
    "INSTRUCTION_MARKER",
    "OVERSIZED_RATIO",
    "SHORT_FILE_LINES",
    "InstructionComment",
    "Region",
    "ScopeCache",
    "choose_region",
    "definition_at",
    "enclosing_block",
    "find_instruction_comment",
    "find_python_definition",
    "is_instruction_comment",
    "line_span",
    "selection_lines",
    "split_lines",
]
