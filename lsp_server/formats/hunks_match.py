"""Where a SEARCH block occurs in the region, for `hunks.apply_hunks`: exactly, else with a constant
indentation shift.

The work stays near-linear in the region's size whatever the answer holds. The region's lines are
indexed by content (and by content without indentation, for the shifted comparison); a SEARCH's
candidate starts come from its rarest line, each candidate is compared as a whole slice (in C, not
line by line in Python), and the search stops once it has seen enough matches to refuse. A region of
thousands of identical lines (a table, a data literal) with a SEARCH made of them would otherwise
cost the region's lines × the SEARCH's lines per block. What is left (a SEARCH whose every line is
common and that fails late at each candidate) is bounded by a budget of line comparisons per
answer: past it the answer is refused (`MatchBudgetExceeded`) rather than keep the CPU for seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

Lines = tuple[str, ...]  # line contents, without their line breaks
Shift = tuple[str, str]  # ("+", "    "): the code is indented that much more than the SEARCH; ("-", ...): less
NO_SHIFT: Shift = ("+", "")

# Line comparisons one answer may cost: an ordinary answer needs about its SEARCH lines, once or twice
# each; 20 million is about a second on a slow core, and only a pathological answer gets there.
MATCH_BUDGET = 20_000_000


class MatchBudgetExceeded(Exception):
    """Locating the answer's blocks would take too long; the caller refuses the answer."""


def _indent(trimmed: str, core: str) -> str | None:
    """A line's leading whitespace; None for a blank line (which any indentation matches)."""
    return trimmed[: len(trimmed) - len(core)] if core else None


class Finder:
    """Where a SEARCH occurs in the region's lines; one per answer, which shares its budget."""

    def __init__(self, lines: list[str], budget: int | None = MATCH_BUDGET) -> None:
        self.lines = lines
        self.budget = budget
        trimmed = [line.rstrip() for line in lines]
        # Whitespace at line ends and on blank lines never counts in the shifted comparison; a line
        # is then its indentation plus its core, which starts with something visible.
        self.cores = [line.lstrip() for line in trimmed]
        self.indents = [_indent(t, c) for t, c in zip(trimmed, self.cores, strict=True)]
        self.exact: defaultdict[str, list[int]] = defaultdict(list)
        self.by_core: defaultdict[str, list[int]] = defaultdict(list)
        for i, (line, core) in enumerate(zip(lines, self.cores, strict=True)):
            self.exact[line].append(i)
            self.by_core[core].append(i)

    def exact_hits(self, search: Lines, limit: int = 2) -> list[int]:
        """The lines where `search` starts, up to `limit` of them."""
        want = list(search)
        hits: list[int] = []
        for i in self._candidates(want, self.exact):
            self._spend(len(want))
            if self.lines[i : i + len(want)] == want:
                hits.append(i)
                if len(hits) == limit:
                    break
        return hits

    def shifted_hits(self, search: Lines, limit: int = 2) -> list[tuple[int, Shift]]:
        """Where `search` matches with one constant indentation shift, and the shift; up to `limit`.

        A SEARCH line matches a code line indented by a constant amount more or less (ignoring
        whitespace at line ends); blank lines match blank lines only.
        """
        trimmed = [line.rstrip() for line in search]
        cores = [line.lstrip() for line in trimmed]
        indents = [_indent(t, c) for t, c in zip(trimmed, cores, strict=True)]
        first = next((f for f, core in enumerate(cores) if core), None)
        expected: dict[Shift, list[str | None] | None] = {}  # the code's indentation each shift needs
        hits: list[tuple[int, Shift]] = []
        k = len(search)
        for i in self._candidates(cores, self.by_core):
            self._spend(k)
            if self.cores[i : i + k] != cores:
                continue
            if first is None:
                shift = NO_SHIFT
            else:
                found = _shift_of(indents[first], self.indents[i + first])
                if found is None:
                    continue
                shift = found
                if shift not in expected:
                    expected[shift] = _shifted(indents, shift)
                want = expected[shift]
                self._spend(k)
                if want is None or self.indents[i : i + k] != want:
                    continue
            hits.append((i, shift))
            if len(hits) == limit:
                break
        return hits

    def _candidates(self, search: Sequence[str], index: defaultdict[str, list[int]]) -> list[int]:
        """The starts where `search` could occur: from its rarest line's occurrences, in order."""
        k, n = len(search), len(self.lines)
        if not k or k > n:
            return []
        rarest, places = 0, None
        for j, line in enumerate(search):
            found = index.get(line)
            if not found:
                return []
            if places is None or len(found) < len(places):
                rarest, places = j, found
                if len(found) == 1:
                    break
        assert places is not None
        return [p - rarest for p in places if 0 <= p - rarest <= n - k]

    def _spend(self, comparisons: int) -> None:
        if self.budget is None:
            return
        self.budget -= comparisons
        if self.budget < 0:
            raise MatchBudgetExceeded


def _shift_of(search_indent: str | None, code_indent: str | None) -> Shift | None:
    """The shift that turns one SEARCH line's indentation into its code line's, if one does."""
    assert search_indent is not None and code_indent is not None  # non-blank lines, whose cores matched
    if code_indent.endswith(search_indent):
        return "+", code_indent[: len(code_indent) - len(search_indent)]
    if search_indent.endswith(code_indent):
        return "-", search_indent[: len(search_indent) - len(code_indent)]
    return None


def _shifted(indents: list[str | None], shift: Shift) -> list[str | None] | None:
    """The code's indentation, line by line, if the SEARCH lines are shifted by `shift`; None when a
    SEARCH line is not indented enough to be shifted less."""
    sign, by = shift
    if sign == "+":
        return [None if indent is None else by + indent for indent in indents]
    if any(indent is not None and not indent.startswith(by) for indent in indents):
        return None
    return [None if indent is None else indent[len(by) :] for indent in indents]


def reindent(line: str, shift: Shift) -> str:
    """A REPLACE line shifted as its SEARCH was."""
    sign, indent = shift
    if not indent or not line.strip():
        return line
    if sign == "+":
        return indent + line
    return line[len(indent) :] if line.startswith(indent) else line.lstrip(" \t")


def describe(indent: str) -> str:
    counts = ((indent.count("\t"), "tab"), (indent.count(" "), "space"))
    return " and ".join(f"{n} {unit}{'s' if n != 1 else ''}" for n, unit in counts if n)
