"""The instruction comment: a `refactor-lsp: <instruction>` comment line written inside the region."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..text import split_lines
from .region import Region

INSTRUCTION_MARKER = "refactor-lsp:"
# A comment opener followed by the marker: `# refactor-lsp: ...`, `// refactor-lsp: ...`, `-- ...`, `/* ... */`.
_INSTRUCTION_COMMENT = re.compile(
    r"^[ \t]*(?:#|//|--|;+|%|/\*+|\*|<!--|\(\*)[ \t]*refactor-lsp:[ \t]*(?P<text>.*?)[ \t]*(?:\*/|-->|\*\))?[ \t]*$"
)


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
