"""Writing the `hunks` edit format: the answer a good model would give, in either form, that turns one
text into another: SEARCH/REPLACE blocks (`hunks_for`) or diff hunks (`diff_for`). Both are written from
the same computed hunks (`_hunks`), so the two forms say the same change with the same context. The
loopback test backend and the benchmark speak the format with them; the forms themselves, and how an
answer is read and applied, are in `hunks` and `hunks_diff`.
"""

from __future__ import annotations

from difflib import SequenceMatcher

from ..config.schema import HunksForm
from ..formats.hunks import DIFF_HUNK, DIVIDER, REPLACE_MARKER, SEARCH_MARKER, HunksError, TextLines, apply_hunks
from ..formats.hunks_diff import FORM_NAMES, parse_answer
from ..formats.hunks_match import Finder, Lines

# One hunk: its lines in order, each with its kind: " " (context), "-" (removed) or "+" (added).
Tagged = tuple[tuple[str, str], ...]


def format_hunks(blocks: list[tuple[Lines, Lines]]) -> str:
    """An answer in the SEARCH/REPLACE form: one block per (search, replace), each line ending with \\n."""
    out: list[str] = []
    for search, replace in blocks:
        out += [SEARCH_MARKER, *search, DIVIDER, *replace, REPLACE_MARKER]
    return "".join(line + "\n" for line in out)


def format_diff(hunks: list[Tagged]) -> str:
    """An answer in the diff form: a `@@` line, then each line after its kind; each line ending with \\n."""
    out: list[str] = []
    for hunk in hunks:
        out += [DIFF_HUNK, *(kind + line for kind, line in hunk)]
    return "".join(line + "\n" for line in out)


def search_replace(hunk: Tagged) -> tuple[Lines, Lines]:
    """A hunk as a block: its context and removed lines, and its context and added lines."""
    return tuple(line for kind, line in hunk if kind != "+"), tuple(line for kind, line in hunk if kind != "-")


def _format(hunks: list[Tagged], form: HunksForm) -> str:
    return format_diff(hunks) if form == "diff" else format_hunks([search_replace(h) for h in hunks])


def hunks_for(old: str, new: str, context: int = 1) -> str:
    """The answer a good model would give: SEARCH/REPLACE blocks turning `old` into `new`.

    Each change gets `context` unchanged lines on each side, more where that is needed to make
    its SEARCH unique in `old`; changes whose blocks would touch share one. Blocks cannot change
    the region's last line break (see `hunks`' docstring): `new`'s is taken to be `old`'s. Raises
    HunksError when the texts hold lines that read as block markers and no blocks can carry them.
    """
    return _answer(old, new, context, "search-replace")


def diff_for(old: str, new: str, context: int = 1) -> str:
    """The same answer as diff hunks (`hunks_diff`): the same hunks as `hunks_for`'s blocks, each line
    after its kind. Any line of code is safe after its kind; only a removed `-- a/x` and an added `++ a/x`
    line right above the next hunk would read as a header, and then, as blocks do with lines that read
    as markers, the answer is one hunk of the whole region."""
    return _answer(old, new, context, "diff")


def _answer(old: str, new: str, context: int, form: HunksForm) -> str:
    a, b = TextLines.of(old).lines, TextLines.of(new).lines
    if a == b:
        return ""
    whole: Tagged = (*(("-", line) for line in a), *(("+", line) for line in b))
    # Lines like `=======` in the code can make a small block read two ways; one block of the whole
    # region reads only one way.
    for hunks in ([_hunks(a, b, context)] if a else []) + [[whole]]:
        answer = _format(hunks, form)
        if _round_trips(old, answer, b, form):
            return answer
    raise HunksError(f"the text has lines that read as markers of {FORM_NAMES[form]}, so no hunks can carry the change")


def _count(a: list[str], s: int, e: int, finder: Finder) -> int:
    return len(finder.exact_hits(tuple(a[s:e])))


def _hunks(a: list[str], b: list[str], context: int) -> list[Tagged]:
    """The hunks turning lines `a` into lines `b`, `a` not empty: each change with `context` lines
    around it, grown until its context and removed lines occur once in `a`; touching hunks merged."""
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
    hunks: list[Tagged] = []
    for s, e, ops in groups:
        lines: list[tuple[str, str]] = []
        at = s
        for i1, i2, j1, j2 in sorted(ops):
            lines += [(" ", line) for line in a[at:i1]]
            lines += [("-", line) for line in a[i1:i2]] + [("+", line) for line in b[j1:j2]]
            at = i2
        lines += [(" ", line) for line in a[at:e]]
        hunks.append(tuple(lines))
    return hunks


def _round_trips(old: str, answer: str, want: list[str], form: HunksForm) -> bool:
    try:
        read = parse_answer(answer, form)
        return read.form == form and TextLines.of(apply_hunks(old, read.hunks, form=form).text).lines == want
    except HunksError:
        return False
