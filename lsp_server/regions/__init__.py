"""Regions: which part of the document a refactor rewrites, as a cursor, a selection or a definition means it.

Less output is faster and cheaper, so we rewrite as little as the request needs: the selected
lines, else the innermost definition around the cursor, else the whole file, said so (`region`).
All offsets are Python string indices.

- `region`: the entry points (`choose_region`, `definition_at`, `line_span`, `selection_lines`);
- `definition`: a `Definition`, what every finder returns;
- `python`: Python's definition from its syntax tree (the package's one locked parse, `parse_python`);
- `code`: the other languages' definition, by the block scan (`scan`) over one record of rules per family
  (`rules`: the record; `table`: the records), with what sits above a definition (`leading`), Ruby's and
  Lua's `end` blocks (`end_blocks`) and JavaScript's arrows without a block (`js_arrows`);
- `indentation`: the rest, by indentation alone;
- `targets`: the definitions a selection touches, or every top-level one of a file (each definition);
- `instruction`: the `refactor-lsp: <instruction>` comment;
- `cache`: what one version of a document taught (its lines, parsed Python, definitions found), kept in
  the `ScopeCache` the caller owns for that document; without one, every call computes afresh.

How each language's text is lexed and its headers read is `languages/`'s; where a snippet goes is
`placement/`'s; the check before an edit is `check/`'s.

`code` (the scan for other languages) is imported on the first document that needs it: compiling its
lexers costs ~25 ms of start-up otherwise. Import its entry points from `regions.code`.
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
