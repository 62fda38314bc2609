"""A mechanical merge of a lazy snippet into a region: what a good model writes for an apply, most of
the time. The loopback backend answers an apply with it (lsp_server/testing), and an apply to a vLLM
server with refactor-lsp's proposer sends it as the prediction (`placed_prediction`): the answer is
drafted from the region with the snippet's changes already placed, not from the region as it was.

The snippet's code lines are aligned with the region's by their text (difflib, blank lines left
out as anchors); between two aligned lines, a stretch of the snippet holding a lazy marker keeps the
region's lines there (the marker stands for them), and a stretch without one replaces them. Lines the
snippet adds are indented as the region is (the snippet may be pasted at another depth).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from ..placement.lazy import marker_lines
from ..text import split_lines

# The merge aligns the lines with difflib, quadratic at worst: past these many lines of region or snippet
# it is not tried for a prediction, and the region is predicted as it is.
MAX_MERGE_LINES = 2000  # 0.15 s for 2,000 lines of the same file, on the 2-core machine under load
# A merge that keeps less than this share of the region's lines has most likely misplaced the snippet (a
# part inside a class whose merge dropped the class): predicting the region as it is drafts more.
MIN_KEPT_SHARE = 0.5


def placed_prediction(region: str, snippet: str, language: str | None = None) -> str:
    """What an apply to a server that drafts from the prediction predicts: the region with the snippet
    merged in, or the region as it is where the merge is too dear or looks wrong. Never raises."""
    region_lines, snippet_lines = region.count("\n") + 1, snippet.count("\n") + 1
    if max(region_lines, snippet_lines) > MAX_MERGE_LINES:
        return region
    try:
        merged = lazy_merge(region, snippet, language)
    except (ValueError, IndexError):  # a snippet of a shape the merge does not follow
        return region
    return merged if merged.count("\n") + 1 >= MIN_KEPT_SHARE * region_lines else region


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def lazy_merge(region: str, snippet: str, language: str | None = None) -> str:
    """`region` with `snippet` merged in, every lazy marker replaced by the region's lines it stands for;
    the markers read as a model that knows `language` reads them (a stub's `...` is code)."""
    ours, theirs = split_lines(region), split_lines(snippet if snippet.endswith("\n") else snippet + "\n")
    markers = set(marker_lines(theirs, language, lenient=True))
    anchors = _anchors(theirs, ours, markers)
    shift = _shift(theirs, ours, anchors, markers)
    merged: list[str] = []
    previous_snippet, previous_region = -1, -1
    for snippet_at, region_at in [*anchors, (len(theirs), len(ours))]:
        stretch = list(range(previous_snippet + 1, snippet_at))
        kept = ours[previous_region + 1 : region_at]
        if previous_snippet >= 0:
            # A header's new body replaces its old body: the lines indented deeper than it, on both sides.
            body = _body(theirs, previous_snippet, stretch, markers)
            if body:
                merged += [shift(theirs[i]) for i in body]
                stretch = stretch[len(body) :]
                kept = kept[len(_body(ours, previous_region, range(previous_region + 1, region_at), set())) :]
        lazy = [i for i in stretch if i in markers]
        if lazy:
            before = [theirs[i] for i in stretch if i < lazy[0]]
            after = [theirs[i] for i in stretch if i > lazy[0] and i not in markers]
            # A changed line next to a marker takes the place of the line like it there.
            head = _alike(before, kept)
            tail = _alike(after[::-1], kept[head:][::-1])
            merged += [shift(line) for line in before]
            merged += kept[head : len(kept) - tail]
            merged += [shift(line) for line in after]
        elif previous_snippet < 0 and not stretch:
            merged += kept  # what the region has above the snippet's first line (a comment, a decorator)
        else:
            merged += [shift(theirs[i]) for i in stretch]
        if region_at < len(ours):
            merged.append(ours[region_at])
        previous_snippet, previous_region = snippet_at, region_at
    return "".join(_blank_runs(merged, ours))


_CLOSING = re.compile(r"[\s})\];,]*(?:end\b[\s;]*)?")


def _anchors(theirs: list[str], ours: list[str], markers: set[int]) -> list[tuple[int, int]]:
    """(snippet line, region line) pairs of the same text, in order: the distinctive lines (not blank,
    not a bare closing bracket, which would match any block's end), and the last lines when equal."""
    code = [i for i in range(len(theirs)) if i not in markers and not _CLOSING.fullmatch(theirs[i].strip())]
    last_theirs = next((i for i in range(len(theirs) - 1, -1, -1) if theirs[i].strip() and i not in markers), None)
    last_ours = next((i for i in range(len(ours) - 1, -1, -1) if ours[i].strip()), None)
    closing = None not in (last_theirs, last_ours) and theirs[last_theirs or 0].strip() == ours[last_ours or 0].strip()
    region = [line.strip() for line in ours[: last_ours if closing else len(ours)]]
    matcher = difflib.SequenceMatcher(None, [theirs[i].strip() for i in code], region, autojunk=False)
    anchors = [
        (code[block.a + k], block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
        if code[block.a + k] != last_theirs or not closing
    ]
    if closing and last_theirs is not None and last_ours is not None:
        anchors = [(a, b) for a, b in anchors if a < last_theirs] + [(last_theirs, last_ours)]
    return anchors


def _alike(lines: list[str], kept: list[str]) -> int:
    """How many of `kept`, from its start, the snippet's `lines` replace one for one (each much like it)."""
    taken = 0
    for line in lines:
        alike = taken < len(kept) and line.strip() and kept[taken].strip()
        if alike and difflib.SequenceMatcher(None, line.strip(), kept[taken].strip()).ratio() >= 0.6:
            taken += 1
            continue
        break
    return taken


def _depth(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _body(lines: list[str], header: int, after: Any, markers: set[int]) -> list[int]:
    """The lines right after `header` indented deeper than it (blank ones between them included, markers
    ending it): a header's body."""
    body: list[int] = []
    depth = _depth(lines[header])
    for i in after:
        if i in markers or (lines[i].strip() and _depth(lines[i]) <= depth):
            if body and i not in markers and _depth(lines[i]) == depth and _CLOSING.fullmatch(lines[i].strip()):
                body.append(i)  # the block's closing bracket
            break
        body.append(i)
    while body and not lines[body[-1]].strip():
        body.pop()
    return body


def _blank_runs(lines: list[str], region: list[str]) -> list[str]:
    """No run of blank lines longer than the region's longest (a marker's neighbours and the lines it
    stands for both bring theirs)."""
    longest = run = 0
    for line in region:
        run = run + 1 if not line.strip() else 0
        longest = max(longest, run)
    kept: list[str] = []
    run = 0
    for line in lines:
        run = run + 1 if not line.strip() else 0
        if run <= max(longest, 1):
            kept.append(line)
    return kept


def _shift(theirs: list[str], ours: list[str], anchors: list[tuple[int, int]], markers: set[int]) -> Any:
    """A function indenting a snippet line as the region is: by the first aligned pair's difference,
    else by the difference of the first code lines."""
    if anchors:
        snippet_line, region_line = theirs[anchors[0][0]], ours[anchors[0][1]]
    else:
        snippet_line = next((line for i, line in enumerate(theirs) if line.strip() and i not in markers), "")
        region_line = next((line for line in ours if line.strip()), "")
    have, want = _indent(snippet_line), _indent(region_line)

    def shift(line: str) -> str:
        if not line.strip():
            return line
        if len(want) >= len(have):
            return want[len(have) :] + line if line.startswith(have) else line
        return re.sub(rf"^{re.escape(have[: len(have) - len(want)])}", "", line)

    return shift
