"""What an apply predicts to a server that drafts from the prediction (formats/lazy_merge.py): the region
with the snippet merged in, or the region as it is where the merge is too dear or looks wrong; a wrong
guess costs speed only, never the answer (the model writes the answer; the prediction only drafts)."""

from __future__ import annotations

import inspect
import textwrap

import pytest

from lsp_server.formats import lazy_merge
from lsp_server.formats.lazy_merge import placed_prediction

REGION = textwrap.dedent(inspect.getsource(textwrap.TextWrapper._split))


def test_the_snippets_change_is_placed_and_the_lines_behind_its_markers_kept() -> None:
    lines = REGION.splitlines(keepends=True)
    snippet = lines[0] + "    # ... existing code ...\n" + lines[-1].replace("chunks", "list(chunks)")
    placed = placed_prediction(REGION, snippet)
    assert placed == REGION.replace(lines[-1], lines[-1].replace("chunks", "list(chunks)"))


def test_a_merge_that_drops_most_of_the_region_predicts_the_region_as_it_is() -> None:
    lines = REGION.splitlines(keepends=True)
    snippet = "".join(lines[:2])  # no marker: the snippet would replace the whole region with two lines
    assert placed_prediction(REGION, snippet) == REGION


def test_past_the_merges_bound_the_region_is_predicted_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lazy_merge, "MAX_MERGE_LINES", 5)
    snippet = REGION.replace("chunks", "pieces")
    assert placed_prediction(REGION, snippet) == REGION
