"""A snippet merge: code written elsewhere (a chat, an agent) as the targets of a request.

Not a pipeline of its own: `scope.placement` finds where each part of the snippet goes, and each
part is a refactor (`RefactorRequest.snippet`: the plan's instruction and prompt are the merge's,
its region the definition, so the prediction is that definition, not the file), run through the
one runner as a request applied whole (request.snippet_parts, outcome.settle).
"""

from __future__ import annotations

from dataclasses import replace

from ..formats.hygiene import UnusableOutput, strip_fence
from ..scope.placement import NotPlaced, SnippetTarget, place_snippet
from .plan import RefactorError, RefactorRequest
from .runner import MAX_TARGETS, Item, Source

__all__ = ["NotPlaced", "merge_items", "snippet_code"]


def snippet_code(snippet: str) -> str:
    """The snippet less a markdown fence around all of it (as a chat shows code). Raises NotPlaced."""
    try:
        return strip_fence(snippet, "")
    except UnusableOutput:
        raise NotPlaced(
            "the snippet holds text around its code block (a chat's explanation); give the code alone"
        ) from None


def merge_items(source: Source, snippet: str) -> list[Item]:
    """The parts of `snippet` as refactors of the source's document (its text, path, backend,
    prediction and edit format), one per region the snippet goes to, near the source's selection or
    cursor when it names nothing. Raises NotPlaced, RefactorError (a snippet over the bounds)."""
    config, request = source.config, source.request
    limit = config.refactor.max_region_chars
    if len(snippet) > limit:
        raise RefactorError(
            f"the snippet has {len(snippet):,} characters, over refactor.max_region_chars ({limit:,}); nothing was sent"
        )
    placed = place_snippet(request.text, snippet_code(snippet), source.language, source.selection, source.cache)
    if len(placed) > MAX_TARGETS:
        raise NotPlaced(f"the snippet names {len(placed)} definitions, more than one apply takes ({MAX_TARGETS})")
    return [Item(source.document, p.target, _request_for(request, p), config, source.cache) for p in placed]


def _request_for(request: RefactorRequest, placed: SnippetTarget) -> RefactorRequest:
    """The request whose scope chooses exactly the placed region, carrying its part of the snippet."""
    target = placed.target
    if placed.scope == "block":
        start = end = target.cursor
    elif placed.scope == "selection":
        start, end = target.start, target.end
    else:
        start = end = 0
    return replace(request, start=start, end=end, scope=placed.scope, snippet=placed.part, instruction=None)
