"""A snippet merge: code written elsewhere (a chat, an agent) as the targets of a request.

Not a pipeline of its own: `placement.where` finds where each part of the snippet goes, and each
part is a refactor (`RefactorRequest.snippet`: the plan's instruction and prompt are the merge's,
its region the definition, so the prediction is that definition, not the file), run through the
one runner as a request applied whole (request.snippet_parts, outcome.settle).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from ..formats.hygiene import UnusableOutput, strip_fence
from ..placement.complete import NotComplete, splice_snippet
from ..placement.where import NotPlaced, SnippetTarget, Stopped, TooManyParts, place_snippet, read_parts
from .plan import RefactorError, RefactorRequest
from .runner import MAX_TARGETS, Item, Source

__all__ = ["NotPlaced", "Stopped", "merge_items", "snippet_code"]

log = logging.getLogger(__name__)


def snippet_code(snippet: str) -> str:
    """The snippet less a byte-order mark (an editor's, or a pipe's from one: no code, and before `def` it
    hides the definition) and a markdown fence around all of it (as a chat shows code). Raises NotPlaced."""
    try:
        return strip_fence(snippet.removeprefix("\ufeff"), "")
    except UnusableOutput:
        raise NotPlaced(
            "the snippet holds text around its code block (a chat's explanation); give the code alone"
        ) from None


def merge_items(source: Source, snippet: str) -> list[Item]:
    """The parts of `snippet` as refactors of the source's document (its text, path, backend,
    prediction and edit format), one per region the snippet goes to, near the source's selection or
    cursor when it names nothing. A complete snippet (placement/complete.py) is spliced as written, each
    part's new text on its item, unless the request asks the model to merge it. The source's `stop`
    is asked between the placement's steps (Stopped when it says so). Raises NotPlaced, RefactorError
    (a snippet over the bounds, or naming more definitions than MAX_TARGETS, refused before any is
    looked for)."""
    config, request = source.config, source.request
    limit = config.refactor.max_region_chars
    if len(snippet) > limit:
        raise RefactorError(
            f"the snippet has {len(snippet):,} characters, over refactor.max_region_chars ({limit:,}); nothing was sent"
        )
    language, cache, stop = source.language, source.cache, source.stop
    try:
        read = read_parts(snippet_code(snippet), language, MAX_TARGETS, stop)
    except TooManyParts as exc:
        raise RefactorError(f"{exc}; nothing was sent — apply it in smaller pieces") from None
    if not request.merge_with_model:
        try:
            spliced = splice_snippet(request.text, read, language, source.selection, cache, stop)
        except NotComplete as exc:
            log.debug("the snippet goes to the model to merge: %s", exc)
        else:
            return [
                Item(source.document, s.placed.target, _request_for(request, s.placed), config, cache, splice=s.text)
                for s in spliced
            ]
    placed = place_snippet(request.text, read, language, source.selection, cache, MAX_TARGETS, stop)
    return [Item(source.document, p.target, _request_for(request, p), config, cache) for p in placed]


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
