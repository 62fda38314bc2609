"""Edits: old region → new region as minimal replacements (their LSP positions: `text.PositionMapper`).

Replacements are (start, end, text) in Python string offsets of the whole document. Lines are
compared by content (without their terminators), so an unchanged line keeps its own line ending
byte for byte, even in a file with mixed endings.

The line diff stays fast on big files and never goes quadratic. Runs of equal lines are skipped
with galloping slice comparisons (C speed); at a difference, the walk looks a few lines ahead for
the nearest point where both sides agree again, which handles the usual sparse edits in time
proportional to the changes. Where no such point is near, lines that occur once on each side
anchor the alignment (patience diff) and the gaps between anchors are solved the same way; small
gaps go to difflib, and a gap without any anchor is aligned line by line. The total work is
bounded by a budget proportional to the input: past it, a gap becomes one replacement (still
exact, only less minimal).
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from itertools import accumulate
from operator import lt

from ..text import plain_line_breaks, split_lines

# A gap of at most this many line pairs (old × new) goes to difflib, which is exact but quadratic.
_SMALL_GAP_CELLS = 2_500
# A bigger gap goes to difflib too when its lines repeat so little that difflib stays fast: at most
# this many pairs of equal lines (old, new), and at most _MATCHER_MAX_CELLS line pairs.
_MATCHER_MAX_PAIRS = 20_000
_MATCHER_MAX_CELLS = 1_000_000
# How far (in lines, on each side) the walk looks for the point where both sides agree again.
_RESYNC_LINES = 16
# Equal lines needed after a difference to call it over (fewer at the very end).
_RESYNC_RUN = 3
# Work budget (in line comparisons) per line of input, plus a constant: past it, gaps are replaced whole.
_BUDGET_PER_LINE = 12
_BUDGET_BASE = 100_000

Block = tuple[int, int, int, int]  # old lines [i1, i2) become new lines [j1, j2)


@dataclass(frozen=True)
class Replacement:
    start: int
    end: int
    text: str


def _common_run(a: Sequence[Hashable], i: int, b: Sequence[Hashable], j: int, limit: int) -> int:
    """Length of the common run of a[i:] and b[j:] (lists or strings), at most `limit`.

    Galloping, then binary search, with slice comparisons: the compares run at C speed, O(run) in all.
    """
    if limit <= 0 or a[i] != b[j]:
        return 0
    n, k = 1, 2
    while n < limit:
        k = k if k < limit - n else limit - n
        if a[i + n : i + n + k] != b[j + n : j + n + k]:
            break
        n += k
        k += k
    else:
        return n
    while k > 1:  # the first difference is in the next k
        h = k // 2
        if a[i + n : i + n + h] == b[j + n : j + n + h]:
            n += h
            k -= h
        else:
            k = h
    return n


def _common_run_back(a: Sequence[Hashable], i: int, b: Sequence[Hashable], j: int, limit: int) -> int:
    """Length of the common run ending at a[:i] and b[:j], at most `limit`."""
    if limit <= 0 or a[i - 1] != b[j - 1]:
        return 0
    n, k = 1, 2
    while n < limit:
        k = k if k < limit - n else limit - n
        if a[i - n - k : i - n] != b[j - n - k : j - n]:
            break
        n += k
        k += k
    else:
        return n
    while k > 1:  # the last difference is in the k before
        h = k // 2
        if a[i - n - h : i - n] == b[j - n - h : j - n]:
            n += h
            k -= h
        else:
            k = h
    return n


def _refine(old: str, new: str, base: int) -> Replacement | None:
    """One replacement for a changed block, narrowed to its differing characters."""
    if old == new:
        return None
    p = _common_run(old, 0, new, 0, min(len(old), len(new)))
    s = _common_run_back(old, len(old), new, len(new), min(len(old), len(new)) - p)
    # Never split a \r\n pair or a surrogate-free code point boundary: offsets are code points already.
    if p > 0 and old[p - 1] == "\r" and old[p : p + 1] == "\n":
        p -= 1
    end = len(old) - s
    if s > 0 and end > p and old[end - 1] == "\r" and old[end] == "\n":
        s -= 1  # an LSP position cannot fall between \r and \n: the edit would leave the \r behind
    return Replacement(base + p, base + len(old) - s, new[p : len(new) - s])


def _line_keys(text: str, lines: list[str], other: str) -> list[Hashable]:
    """What each line is for the diff: its content; the last line, when unterminated, as a 1-tuple
    (so it never equals a terminated line with the same content). The style of ending is kept.

    Without any \\r on either side, a line is its own key (content + \\n, or no \\n at the end)."""
    if "\r" not in text and "\r" not in other:
        same: list[Hashable] = list(lines)  # a copy: O(lines), nothing next to the diff
        return same
    keys: list[Hashable] = [*text.splitlines()] if plain_line_breaks(text) else [x.rstrip("\r\n") for x in lines]
    if lines and lines[-1][-1:] not in ("\n", "\r"):
        keys[-1] = (keys[-1],)
    return keys


def _unique_anchors(
    a: list[Hashable], alo: int, ahi: int, b: list[Hashable], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """(i, j) pairs of lines that occur exactly once in a[alo:ahi] and once in b[blo:bhi], in order:
    the longest increasing chain of them (patience diff)."""
    sa, sb = a[alo:ahi], b[blo:bhi]
    count_a, count_b = Counter(sa), Counter(sb)
    once_b = {key for key, n in count_b.items() if n == 1}
    both = [key for key, n in count_a.items() if n == 1 and key in once_b]
    if not both:
        return []
    pos_a = dict(zip(sa, range(alo, ahi), strict=True))
    pos_b = dict(zip(sb, range(blo, bhi), strict=True))
    js = sorted(pos_b[key] for key in both)
    is_ = [pos_a[b[j]] for j in js]
    if all(map(lt, is_, is_[1:])):
        return list(zip(is_, js, strict=True))
    # Longest increasing subsequence of the old positions (patience sorting), O(k log k).
    tails: list[int] = []  # old position ending the best chain of each length
    tail_at: list[int] = []  # index into is_ of that chain's end
    previous = [-1] * len(is_)
    for index, value in enumerate(is_):
        p = bisect.bisect_left(tails, value)
        if p == len(tails):
            tails.append(value)
            tail_at.append(index)
        else:
            tails[p] = value
            tail_at[p] = index
        previous[index] = tail_at[p - 1] if p else -1
    chain: list[tuple[int, int]] = []
    index = tail_at[-1]
    while index >= 0:
        chain.append((is_[index], js[index]))
        index = previous[index]
    chain.reverse()
    return chain


def _aligned(a: list[Hashable], alo: int, ahi: int, b: list[Hashable], blo: int, bhi: int, out: list[Block]) -> None:
    """A gap without anchors, aligned line by line; extra lines on one side go to the last block."""
    common = min(ahi - alo, bhi - blo)
    run = -1
    for k, (x, y) in enumerate(zip(a[alo : alo + common], b[blo : blo + common], strict=True)):
        if x != y:
            if run < 0:
                run = k
        elif run >= 0:
            out.append((alo + run, alo + k, blo + run, blo + k))
            run = -1
    if ahi - alo == bhi - blo:
        if run >= 0:
            out.append((alo + run, ahi, blo + run, bhi))
        return
    run = common if run < 0 else run
    out.append((alo + run, ahi, blo + run, bhi))


def _few_equal_pairs(a: list[Hashable], b: list[Hashable]) -> bool:
    """Whether difflib would stay fast: its work grows with the pairs of equal lines (old, new)."""
    count_b = Counter(b)
    pairs = 0
    for key, n in Counter(a).items():
        pairs += n * count_b.get(key, 0)
        if pairs > _MATCHER_MAX_PAIRS:
            return False
    return True


def _resync(a: list[Hashable], i: int, ahi: int, b: list[Hashable], j: int, bhi: int) -> tuple[int, int] | None:
    """(di, dj): the nearest point after a difference at (i, j) where both sides agree again.

    Nearest by max(di, dj), so a changed line (1, 1) ties with an inserted one (0, 1); agreement
    means _RESYNC_RUN equal lines (or equal to the end). Without one, a same-size replacement
    followed by at least one equal line will do: that is what every other line changed looks like.
    """
    for c in range(1, _RESYNC_LINES + 1):
        if i + c > ahi and j + c > bhi:
            break
        best: tuple[int, int] | None = None
        # (c, c) first: a same-size replacement reads best.
        x, y = i + c, j + c
        weak = False
        if x <= ahi and y <= bhi:
            if x == ahi and y == bhi:
                return c, c  # the rest of both sides is one block
            want = min(_RESYNC_RUN, ahi - x, bhi - y)
            if want and a[x] == b[y]:
                if want == 1 or a[x : x + want] == b[y : y + want]:
                    return c, c
                weak = True
        # Then the lopsided ones (c lines on one side, fewer on the other), fewest lines first.
        for d in range(c):
            for di, dj in ((d, c), (c, d)):
                x, y = i + di, j + dj
                if x > ahi or y > bhi:
                    continue
                if x == ahi and y == bhi:
                    return di, dj
                want = min(_RESYNC_RUN, ahi - x, bhi - y)
                if want and a[x] == b[y] and a[x : x + want] == b[y : y + want]:
                    best = (di, dj)
                    break
            if best is not None:
                return best
        if weak:
            return c, c
    return None


def _changed_blocks(a: list[Hashable], b: list[Hashable]) -> list[Block]:
    """The blocks of lines that differ between a and b, sorted; everything outside them is equal."""
    budget = _BUDGET_PER_LINE * (len(a) + len(b)) + _BUDGET_BASE
    out: list[Block] = []
    todo: list[Block] = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        n = _common_run(a, alo, b, blo, min(ahi - alo, bhi - blo))
        alo, blo = alo + n, blo + n
        n = _common_run_back(a, ahi, b, bhi, min(ahi - alo, bhi - blo))
        ahi, bhi = ahi - n, bhi - n
        if alo == ahi and blo == bhi:
            continue
        cells = (ahi - alo) * (bhi - blo)
        if cells <= 1 or budget <= 0:
            out.append((alo, ahi, blo, bhi))
            continue
        if cells <= _SMALL_GAP_CELLS or (cells <= _MATCHER_MAX_CELLS and _few_equal_pairs(a[alo:ahi], b[blo:bhi])):
            budget -= min(cells, _MATCHER_MAX_PAIRS + ahi - alo + bhi - blo)
            matcher = SequenceMatcher(None, a[alo:ahi], b[blo:bhi], autojunk=False)
            out.extend(
                (alo + i1, alo + i2, blo + j1, blo + j2)
                for tag, i1, i2, j1, j2 in matcher.get_opcodes()
                if tag != "equal"
            )
            continue
        # Walk: skip equal runs, and step over each difference to where both sides agree again.
        i, j = alo, blo
        while True:
            n = _common_run(a, i, b, j, min(ahi - i, bhi - j))
            i, j = i + n, j + n
            if i == ahi or j == bhi:
                if i != ahi or j != bhi:
                    out.append((i, ahi, j, bhi))
                break
            budget -= 2 * _RESYNC_LINES
            step = _resync(a, i, ahi, b, j, bhi) if budget > 0 else None
            if step is None:
                _anchored(a, i, ahi, b, j, bhi, out, todo)
                budget -= 4 * (ahi - i + bhi - j)
                break
            out.append((i, i + step[0], j, j + step[1]))
            i, j = i + step[0], j + step[1]
    out.sort()
    return out


def _anchored(
    a: list[Hashable], alo: int, ahi: int, b: list[Hashable], blo: int, bhi: int, out: list[Block], todo: list[Block]
) -> None:
    """Split a hard stretch at the lines unique on both sides; the gaps between them go back on `todo`."""
    anchors = _unique_anchors(a, alo, ahi, b, blo, bhi)
    if not anchors:
        _aligned(a, alo, ahi, b, blo, bhi, out)
        return
    i0, j0 = alo, blo
    for i, j in anchors:
        if (i != i0 or j != j0) and (i - i0 != j - j0 or a[i0:i] != b[j0:j]):
            todo.append((i0, i, j0, j))
        i0, j0 = i + 1, j + 1
    if i0 != ahi or j0 != bhi:
        todo.append((i0, ahi, j0, bhi))


def region_replacements(document: str, start: int, end: int, new_region: str) -> list[Replacement]:
    """Minimal replacements turning document[start:end] into new_region, in document offsets."""
    old_region = document[start:end]
    if old_region == new_region:
        return []
    old_lines = split_lines(old_region)
    new_lines = split_lines(new_region)
    blocks = _changed_blocks(
        _line_keys(old_region, old_lines, new_region), _line_keys(new_region, new_lines, old_region)
    )
    old_at = list(accumulate(map(len, old_lines), initial=start))
    new_at = list(accumulate(map(len, new_lines), initial=0))
    edits: list[Replacement] = []
    for i1, i2, j1, j2 in blocks:
        edit = _refine(document[old_at[i1] : old_at[i2]], new_region[new_at[j1] : new_at[j2]], old_at[i1])
        if edit is not None:
            edits.append(edit)
    return _merge_adjacent(edits)


def _merge_adjacent(edits: list[Replacement]) -> list[Replacement]:
    merged: list[Replacement] = []
    for edit in edits:
        if merged and merged[-1].end >= edit.start:
            prev = merged.pop()
            edit = Replacement(prev.start, max(prev.end, edit.end), prev.text + edit.text)
        merged.append(edit)
    return merged


def apply_replacements(document: str, edits: list[Replacement]) -> str:
    out: list[str] = []
    pos = 0
    for edit in sorted(edits, key=lambda e: e.start):
        out.append(document[pos : edit.start])
        out.append(edit.text)
        pos = edit.end
    out.append(document[pos:])
    return "".join(out)


@dataclass(frozen=True)
class Rebased:
    """Replacements moved onto the buffer the user has now, or None when their edits overlap."""

    edits: list[Replacement] | None


def rebase(snapshot: str, current: str, region: tuple[int, int], edits: list[Replacement]) -> Rebased:
    """Move edits computed on `snapshot` onto `current` when none of the user's changes touch the region.

    The region is whole lines: a line inserted right before or after it is outside it; a change
    to any of its lines is inside.
    """
    if snapshot == current:
        return Rebased(edits)
    return Rebased(_moved(region_replacements(snapshot, 0, len(snapshot), current), region, edits))


def rebase_each(
    snapshot: str, current: str, parts: Sequence[tuple[tuple[int, int], list[Replacement]]]
) -> list[Rebased]:
    """`rebase` for several regions of one document (a batch), the user's changes found once: each
    region's edits move on their own, and a change inside one region refuses that region alone."""
    if snapshot == current:
        return [Rebased(edits) for _, edits in parts]
    changes = region_replacements(snapshot, 0, len(snapshot), current)
    return [Rebased(_moved(changes, region, edits)) for region, edits in parts]


def _moved(changes: list[Replacement], region: tuple[int, int], edits: list[Replacement]) -> list[Replacement] | None:
    """The region's edits shifted by the user's `changes` before it; None when a change touches it."""
    region_start, region_end = region
    shift = 0
    for change in changes:
        inserted_line_before = (
            change.start == change.end == region_start
            and change.text.endswith(("\n", "\r"))
            and region_start < region_end
        )
        if (
            change.end < region_start
            or (change.end == region_start and change.start < region_start)
            or inserted_line_before
        ):
            shift += len(change.text) - (change.end - change.start)
        elif change.start >= region_end and region_end > region_start:
            continue
        else:
            return None
    return [Replacement(e.start + shift, e.end + shift, e.text) for e in edits]
