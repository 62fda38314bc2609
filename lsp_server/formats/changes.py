"""An answer's changes: the groups of changed lines a person reads as one, each theirs to keep or drop.

A region's minimal edits (edits.region_replacements) are grouped by line: edits whose lines are at
most JOIN_LINES apart are one change, so a change is a stretch of lines a reader takes in at once
(a guard and its `return`, a call and its argument, not each token). Each change has a label made
from its own text, never from the model's words: `lines 42-47: add `if timeout is None:``. A change
that uses a name another change brings (an import, a definition, an assignment) and the code did
not have says so (`needs`): keeping it alone would leave the name undefined.

Keeping some changes is applying their edits only (`kept_text`): the edits of a change never
overlap another's, so any subset applies exactly, and what it leaves is checked as a whole answer
is (check/verify.py) before anything is applied.
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..text import clip, line_starts, split_lines
from .edits import Replacement, apply_replacements

# Edits a line apart (at most this many unchanged lines between them) are one change, unless that line is
# blank: a blank line is where people end a paragraph of code, and where they read a new change begin.
JOIN_LINES = 1
LABEL_CHARS = 60  # of the words a label quotes
SIDE_CHARS = 40  # of each side of a line changed in place (`before` → `after`)
SIMILAR = 0.6  # difflib's ratio past which two lines are one line changed in place

_WORD = re.compile(r"[A-Za-z_$][\w$]*")
# Names a line brings into scope, in the languages people refactor most: an import (Python, JS/TS,
# Go's single import), a definition (def, class, function, fn, func, const/let/var). Not a plain
# assignment: it may as well rebind a name the code had (a parameter, a global).
_DEFINES = (
    re.compile(r"^\s*import\s+([\w., ]+?)\s*(?:#.*)?$"),
    re.compile(r"^\s*from\s+[\w.]+\s+import\s+\(?([\w, ]+(?:\s+as\s+\w+)?[\w, ]*)\)?"),
    re.compile(r"^\s*import\s+(?:type\s+)?\{([^}]*)\}\s*from\b"),
    re.compile(r"^\s*import\s+(?:\*\s+as\s+)?([A-Za-z_$][\w$]*)\s*(?:,|from\b)"),
    re.compile(
        r"^\s*(?:export\s+)?(?:async\s+)?(?:def|class|function\*?|fn|func|const|let|var|type|interface)\s+([A-Za-z_$][\w$]*)"
    ),
)


@dataclass(frozen=True)
class Change:
    """One change of an answer: its number (1-based, in document order within its region), the lines it
    touches in the document as it was (1-based, inclusive), its edits, its label, and the changes it
    needs (by number) because it uses a name they bring."""

    number: int
    first_line: int
    last_line: int
    edits: tuple[Replacement, ...]
    label: str
    needs: tuple[int, ...] = ()
    brings: tuple[str, ...] = ()  # names it brings that the code did not have

    def describe(self) -> str:
        """`change 2 (lines 42-47: add ...)`."""
        return f"change {self.number} ({self.label})"


def split_changes(document: str, edits: Sequence[Replacement]) -> list[Change]:
    """The changes of one region's minimal `edits` on `document`, in order."""
    if not edits:
        return []
    starts = _line_starts(document)
    groups: list[list[Replacement]] = []
    last_line = 0
    for edit in sorted(edits, key=lambda e: e.start):
        first = _line_of(starts, edit.start)
        if groups and _joined(document, starts, last_line, first):
            groups[-1].append(edit)
        else:
            groups.append([edit])
        last_line = _line_of(starts, max(edit.end - 1, edit.start))
    changes = []
    for number, group in enumerate(groups, 1):
        first = _line_of(starts, group[0].start)
        last = max(first, _line_of(starts, max(group[-1].end - 1, group[-1].start)))
        old, new = _texts(document, starts, first, last, group)
        changes.append(Change(number, first + 1, last + 1, tuple(group), _label(first, last, old, new)))
    return _with_needs(document, changes)


def kept_text(document: str, changes: Iterable[Change], kept: Iterable[int]) -> str:
    """`document` with the edits of the kept changes (by number) only."""
    return apply_replacements(document, kept_edits(changes, kept))


def change_lines(document: str, change: Change) -> tuple[str, str]:
    """The whole lines of `change` as they were, and as it leaves them (what a review shows)."""
    return _texts(document, _line_starts(document), change.first_line - 1, change.last_line - 1, list(change.edits))


def kept_edits(changes: Iterable[Change], kept: Iterable[int]) -> list[Replacement]:
    wanted = set(kept)
    return [e for c in changes if c.number in wanted for e in c.edits]


def unmet_needs(changes: Sequence[Change], kept: Iterable[int]) -> list[tuple[Change, Change]]:
    """(a kept change, a dropped change it needs) for each such pair: what keeping some but not all
    leaves undefined."""
    wanted = set(kept)
    by_number = {c.number: c for c in changes}
    return [
        (change, by_number[need])
        for change in changes
        if change.number in wanted
        for need in change.needs
        if need not in wanted
    ]


def _line_starts(text: str) -> list[int]:
    """The offsets where lines start, as LSP and the editor count lines (\\n, \\r\\n or a lone \\r ends
    one): a label's line numbers are the editor's, and a review shows the changed lines, not a whole file
    whose lines end in \\r."""
    return line_starts(text)


def _line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


def _joined(document: str, starts: list[int], last: int, first: int) -> bool:
    """Whether an edit starting on line `first` joins the change that ended on line `last` (0-based)."""
    between = range(last + 1, first)
    if len(between) > JOIN_LINES:
        return False
    ends = [*starts[1:], len(document)]
    return all(document[starts[line] : ends[line]].strip() for line in between)


def _texts(document: str, starts: list[int], first: int, last: int, edits: list[Replacement]) -> tuple[str, str]:
    """The lines first..last (0-based) as they were, and as the change leaves them."""
    begin = starts[first]
    end = starts[last + 1] if last + 1 < len(starts) else len(document)
    end = max(end, max(e.end for e in edits))
    old = document[begin:end]
    new = apply_replacements(old, [Replacement(e.start - begin, e.end - begin, e.text) for e in edits])
    return old, new


def _shown(lines: Sequence[str], chars: int = LABEL_CHARS) -> str:
    """The first line that says something (not blank, not a lone bracket), quoted for a label."""
    for line in lines:
        text = line.strip()
        if text and not re.fullmatch(r"[\s()\[\]{};,]*", text):
            return "`" + clip(text, chars).replace("`", "'") + "`"
    return "blank lines"


def _label(first: int, last: int, old: str, new: str) -> str:
    """`lines 42-47: add ...`, `line 12: `total` → `result``, in the words of the change itself: what it
    adds, removes, renames or changes in place, the first two of them."""
    where = f"line {first + 1}" if first == last else f"lines {first + 1}-{last + 1}"
    old_lines = [line.strip() for line in split_lines(old) if line.strip()]
    new_lines = [line.strip() for line in split_lines(new) if line.strip()]
    if old_lines == new_lines:
        return f"{where}: {'reindent' if old_lines else 'blank lines'}"
    added: list[str] = []
    removed: list[str] = []
    changed: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            _pair(old_lines[i1:i2], new_lines[j1:j2], added, removed, changed)
    parts = [f"add {_shown(added)}"] if added else []
    rename = _renamed([a for a, _ in changed], [b for _, b in changed]) if changed else None
    if rename is not None:
        parts.append(rename)
    elif changed:
        before, after = changed[0]
        parts.append(f"{_shown([before], SIDE_CHARS)} → {_shown([after], SIDE_CHARS)}")
    if removed:
        parts.append(f"remove {_shown(removed)}")
    return f"{where}: " + ", ".join(parts[:2]) + (" and more" if len(parts) > 2 else "")


def _alike(old: str, new: str) -> bool:
    """One line changed in place: the same shape with other names, or mostly the same characters."""
    if _WORD.sub("", old) == _WORD.sub("", new) and len(_WORD.findall(old)) == len(_WORD.findall(new)):
        return True
    return difflib.SequenceMatcher(None, old, new).ratio() >= SIMILAR


def _pair(old: list[str], new: list[str], added: list[str], removed: list[str], changed: list[tuple[str, str]]) -> None:
    """Lines of a replaced stretch told apart: each old line and the alike new line after the last one
    paired (a line changed in place), the new lines left over added, the old ones removed."""
    at = 0
    for line in old:
        match = next((k for k in range(at, len(new)) if _alike(line, new[k])), None)
        if match is None:
            removed.append(line)
            continue
        added += new[at:match]
        changed.append((line, new[match]))
        at = match + 1
    added += new[at:]


def _renamed(removed: list[str], added: list[str]) -> str | None:
    """``total` → `result`` when the lines differ by one word replaced by another, everywhere."""
    if len(removed) != len(added):
        return None
    pairs: set[tuple[str, str]] = set()
    for old, new in zip(removed, added, strict=True):
        old_words, new_words = _WORD.findall(old), _WORD.findall(new)
        if len(old_words) != len(new_words) or _WORD.sub("", old) != _WORD.sub("", new):
            return None
        pairs |= {(a, b) for a, b in zip(old_words, new_words, strict=True) if a != b}
    if len(pairs) != 1:
        return None
    ((old_word, new_word),) = pairs
    return f"`{old_word}` → `{new_word}`"


def _brought(text: str) -> set[str]:
    """The names `text`'s lines define or import."""
    names: set[str] = set()
    for line in split_lines(text):
        for pattern in _DEFINES:
            found = pattern.match(line)
            if found:
                names |= {
                    part.split(" as ")[-1].strip()
                    for part in found.group(1).split(",")
                    if part.strip() and _WORD.fullmatch(part.split(" as ")[-1].strip())
                }
    return names


def _with_needs(document: str, changes: list[Change]) -> list[Change]:
    """Each change with the names it brings that the document did not have, and the changes whose
    names it uses."""
    had = set(_WORD.findall(document))
    starts = _line_starts(document)
    news: list[str] = []
    brings: list[set[str]] = []
    for change in changes:
        _, new = _texts(document, starts, change.first_line - 1, change.last_line - 1, list(change.edits))
        news.append(new)
        brings.append(_brought(new) - had)
    done = []
    for index, change in enumerate(changes):
        used = set(_WORD.findall(news[index]))
        needs = tuple(
            other.number
            for other_index, other in enumerate(changes)
            if other_index != index and brings[other_index] & used - brings[index]
        )
        done.append(
            Change(
                change.number,
                change.first_line,
                change.last_line,
                change.edits,
                change.label,
                needs,
                tuple(sorted(brings[index])),
            )
        )
    return done
