"""Writing the `hunks` edit format: the answer a good model would give (`hunks_for`), SEARCH/REPLACE
blocks that turn one text into another. The loopback test backend and the benchmark speak the format
with it; the format itself, and how an answer is read and applied, are in `hunks`.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from .hunks import DIVIDER, REPLACE_MARKER, SEARCH_MARKER, HunksError, TextLines, apply_hunks, parse_hunks
from .hunks_match import Finder, Lines


def format_hunks(blocks: list[tuple[Lines, Lines]]) -> str:
    """An answer in the format: one block per (search, replace), each line ending with \\n."""
    out: list[str] = []
    for search, replace in blocks:
        out += [SEARCH_MARKER, *search, DIVIDER, *replace, REPLACE_MARKER]
    return "".join(line + "\n" for line in out)


def _count(a: list[str], s: int, e: int, finder: Finder) -> int:
    return len(finder.exact_hits(tuple(a[s:e])))


def hunks_for(old: str, new: str, context: int = 1) -> str:
    """The answer a good model would give: SEARCH/REPLACE blocks turning `old` into `new`.

    Each change gets `context` unchanged lines on each side, more where that is needed to make
    its SEARCH unique in `old`; changes whose blocks would touch share one. Blocks cannot change
    the region's last line break (see the module docstring): `new`'s is taken to be `old`'s. Raises
    HunksError when the texts hold lines that read as block markers and no blocks can carry them.
    """
    a, b = TextLines.of(old).lines, TextLines.of(new).lines
    if a == b:
        return ""
    if not a:
        return format_hunks([((), tuple(b))])
    finder = Finder(a, budget=None)
    changes = [op[1:] for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]
    # Each group: old lines [s, e) and the changes inside them.
    groups: list[tuple[int, int, list[tuple[int, int, int, int]]]] = []
    for i1, i2, j1, j2 in changes:
        s, e = max(0, i1 - context), min(len(a), i2 + context)
        if s == e:  # no context asked for, and a pure insertion: a SEARCH needs one line
            s, e = (s - 1, e) if s > 0 else (s, e + 1)
        groups.append((s, e, [(i1, i2, j1, j2)]))
    while True:
        merged: list[tuple[int, int, list[tuple[int, int, int, int]]]] = []
        for s, e, ops in sorted(groups, key=lambda g: g[0]):
            if merged and s <= merged[-1][1]:
                ps, pe, pops = merged.pop()
                merged.append((min(ps, s), max(pe, e), pops + ops))
            else:
                merged.append((s, e, ops))
        grown = False
        groups = []
        for s, e, ops in merged:
            before = True
            while _count(a, s, e, finder) > 1:
                # Alternate sides so the block stays centred on its change.
                if (before and s > 0) or e == len(a):
                    s -= 1
                else:
                    e += 1
                before = not before
                grown = True
            groups.append((s, e, ops))
        if not grown:
            break
    blocks: list[tuple[Lines, Lines]] = []
    delta = 0  # new line index minus old line index, before the current group
    for s, e, ops in groups:
        growth = sum((j2 - j1) - (i2 - i1) for i1, i2, j1, j2 in ops)
        blocks.append((tuple(a[s:e]), tuple(b[s + delta : e + delta + growth])))
        delta += growth
    answer = format_hunks(blocks)
    if _round_trips(old, answer, b):
        return answer
    # Lines like `=======` in the code can make a small block read two ways; one block of the whole
    # region reads only one way.
    answer = format_hunks([(tuple(a), tuple(b))])
    if _round_trips(old, answer, b):
        return answer
    raise HunksError("the text has lines that read as SEARCH/REPLACE markers, so no blocks can carry the change")


def _round_trips(old: str, answer: str, want: list[str]) -> bool:
    try:
        return TextLines.of(apply_hunks(old, parse_hunks(answer)).text).lines == want
    except HunksError:
        return False
