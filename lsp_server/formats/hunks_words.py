"""The words of the `hunks` format's messages and notes, for each of its forms (`TERMS`: a SEARCH/REPLACE
"block" or a diff "hunk"), and the notes on an answer's blocks (`BlockNotes`), which stay short
whatever the answer holds: past `LISTED` notes of one kind, they are counted in one note.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import ClassVar

from ..config.schema import HunksForm
from ..text import count_of, listed

# Notes of one kind listed one by one; more are counted in one note (an answer of 100,000 empty hunks
# once gave an 8 MB message).
LISTED = 3


@dataclass(frozen=True)
class Terms:
    """How messages name a form's parts: its blocks, and the lines that find them and replace them."""

    block: str  # in a message: "the model's edit block 2"
    note: str  # in a note: "block 2"
    shifted: str  # the end of a note on indentation: "...indented 4 spaces more {shifted}"
    first: str  # how `hunks._which` names a block by the first line it finds: "{}" is that line
    blank: str  # the same when every one of those lines is blank
    only_added: str  # a block that finds nothing, in a region that is not empty
    same: str  # why a block changes nothing
    none: str  # the note on an answer without blocks
    notes: str  # a note's plural: "blocks"


TERMS: dict[HunksForm, Terms] = {
    "search-replace": Terms(
        "edit block",
        "block",
        "than its SEARCH, so its REPLACE was shifted the same way",
        "SEARCH starts with `{}`",
        "its SEARCH is blank",
        "has an empty SEARCH, which only an empty region allows",
        "its SEARCH and REPLACE are the same",
        "the model answered with no SEARCH/REPLACE blocks: it made no change",
        "blocks",
    ),
    "diff": Terms(
        "hunk",
        "hunk",
        "than its context and '-' lines, so its '+' lines were shifted the same way",
        "its first context or '-' line is `{}`",
        "its context and '-' lines are blank",
        "has only '+' lines (no line of the code to say where they go), which only an empty region allows",
        "it has no '-' or '+' lines, or they are the same",
        "the model answered with no diff hunks: it made no change",
        "hunks",
    ),
}


class BlockNotes:
    """The notes on an answer's blocks, in order; a kind with more than LISTED is counted in one note."""

    # What the blocks of a kind did, in a note that counts them: "12 blocks {changed nothing: skipped}".
    PLURAL: ClassVar[dict[str, str]] = {
        "same": "change nothing, so they were skipped",
        "repeat": "repeat an earlier one, so each was applied once",
        "shifted": "matched only once indentation or whitespace at line ends was let off",
        "divider": f"have several {'=' * 7} lines: each was read at the one whose SEARCH matches",
    }

    def __init__(self, terms: Terms) -> None:
        self.terms = terms
        self.notes: list[tuple[str, int, str]] = []  # (kind, block number, note)

    def add(self, kind: str, number: int, note: str) -> None:
        self.notes.append((kind, number, note))

    def summary(self) -> list[str]:
        """The notes in order; a kind with more than LISTED is one note where its first stood."""
        counts = Counter(kind for kind, _, _ in self.notes)
        out: list[str] = []
        said: set[str] = set()
        for kind, _, note in self.notes:
            if counts[kind] <= LISTED:
                out.append(note)
            elif kind not in said:
                said.add(kind)
                numbers = [str(number) for k, number, _ in self.notes if k == kind]
                out.append(
                    f"{count_of(len(numbers), self.terms.note)} {self.PLURAL[kind]} "
                    f"({self.terms.notes} {listed(numbers, most=5)})"
                )
        return out
