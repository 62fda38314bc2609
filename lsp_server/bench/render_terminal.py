"""The bench report on a terminal: every line within `WIDTH` columns. Headers wrap over lines, the
columns a narrow terminal cannot hold are left out in a set order (and named in a note: `--markdown`
and `--json` have them all), the first column is shortened last; header and footer lines wrap."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

WIDTH = 120  # a terminal's columns
GAP = "  "


def wrap(lines: Sequence[str], width: int = WIDTH) -> list[str]:
    """Each line wrapped to `width`, its continuations indented."""
    out: list[str] = []
    for line in lines:
        out += textwrap.wrap(line, width, subsequent_indent="  ", break_on_hyphens=False) or [""]
    return out


def _header_width(name: str) -> int:
    return max((len(word) for word in name.split()), default=0)


def _widths(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[int]:
    return [max([_header_width(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]


def _shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def fit_table(
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    left: int,
    tail: int,
    drop: Sequence[str] = (),
    width: int = WIDTH,
) -> tuple[list[str], list[str]]:
    """The table's lines within `width`, and the columns left out to get there.

    The first `left` columns are aligned left, the others right; a rule sits under the header and above
    the last `tail` rows (the totals). `drop`: the columns that may be left out, first to go first.
    """
    keep = list(range(len(columns)))
    dropped: list[str] = []
    for name in drop:
        total = sum(_widths([columns[i] for i in keep], [[r[i] for i in keep] for r in rows])) + len(GAP) * (
            len(keep) - 1
        )
        if total <= width:
            break
        if name in columns and columns.index(name) in keep:
            keep.remove(columns.index(name))
            dropped.append(name)
    names = [columns[i] for i in keep]
    cells = [[r[i] for i in keep] for r in rows]
    widths = _widths(names, cells)
    over = sum(widths) + len(GAP) * (len(widths) - 1) - width
    if over > 0:  # the first column (task names) gives way last
        widths[0] = max(widths[0] - over, 8)
        cells = [[_shorten(r[0], widths[0]), *r[1:]] for r in cells]
    heads = [
        textwrap.wrap(name, max(w, 1), break_on_hyphens=False) or [""] for name, w in zip(names, widths, strict=True)
    ]
    height = max(len(h) for h in heads)
    heads = [[""] * (height - len(h)) + h for h in heads]  # headers sit on the rule

    def line(row: Sequence[str]) -> str:
        padded = [c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        return GAP.join(padded).rstrip()

    rule = GAP.join("-" * w for w in widths)
    body = [line(r) for r in cells]
    out = [line([h[k] for h in heads]) for k in range(height)] + [rule]
    out += [*body[: len(body) - tail], rule, *body[len(body) - tail :]] if tail else body
    return out, dropped


def dropped_note(dropped: Sequence[str]) -> list[str]:
    if not dropped:
        return []
    return [f"(left out to fit {WIDTH} columns: {'; '.join(dropped)}; --markdown and --json have every column)"]
