"""An apply: code written elsewhere (a chat, an agent) merged into the definitions it names.

Not a pipeline of its own: `scope.placement` finds where each part of the snippet goes, and each
part is a refactor (`RefactorRequest.snippet`: the plan's instruction and prompt are the apply's,
its region the definition, so the prediction is that definition, not the file), run as a batch
(`batch.BatchRun`) through the one engine. A complete snippet (no lazy marker, every definition
whole: `scope.splice`) is the merged code already: its parts carry their new text and are spliced
without a request (`splice.py`), unless the caller asks for the model's merge. Unlike a batch of
refactors, an apply is one change: its parts are applied together or not at all (`settle`), as one
edit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ..formats.hygiene import UnusableOutput, strip_fence
from ..scope.definition import Definition
from ..scope.file_language import language_of
from ..scope.placement import NotPlaced, SnippetTarget, Stopped, TooManyParts, place_snippet, read_parts
from ..scope.splice import NotComplete, splice_snippet
from ..scope.targets import Target
from ..text import split_lines
from .batch import MAX_TARGETS, BatchItem, TargetOutcome
from .plan import RefactorError, RefactorRequest

if TYPE_CHECKING:
    from ..config.schema import Config
    from ..scope import ScopeCache

log = logging.getLogger(__name__)

__all__ = ["NotPlaced", "Stopped", "apply_items", "settle", "snippet_code", "whole_file_item"]


def snippet_code(snippet: str) -> str:
    """The snippet less a markdown fence around all of it (as a chat shows code). Raises NotPlaced."""
    try:
        return strip_fence(snippet, "")
    except UnusableOutput:
        raise NotPlaced(
            "the snippet holds text around its code block (a chat's explanation); give the code alone"
        ) from None


def apply_items(
    document: str,
    request: RefactorRequest,
    snippet: str,
    selection: tuple[int, int] | None,
    config: Config,
    cache: ScopeCache | None = None,
    stop: Callable[[], bool] | None = None,
    merge_with_model: bool = False,
) -> list[BatchItem]:
    """The parts of `snippet` as refactors of `request`'s document (its text, path, backend, prediction
    and edit format), one per region the snippet goes to. A complete snippet (scope/splice.py) is
    spliced as written, each part's new text on its item, unless `merge_with_model`. `selection`: the
    user's selection or cursor (start == end), None for neither; `stop`: asked between the placement's
    steps, which end (Stopped) when it says so (a cancel). Raises NotPlaced, RefactorError (a snippet
    over the bounds, or naming more definitions than MAX_TARGETS, refused before any is looked for)."""
    limit = config.refactor.max_region_chars
    if len(snippet) > limit:
        raise RefactorError(
            f"the snippet has {len(snippet):,} characters, over refactor.max_region_chars ({limit:,}); nothing was sent"
        )
    language = language_of(request.path, request.language_id)
    try:
        read = read_parts(snippet_code(snippet), language, MAX_TARGETS, stop)
    except TooManyParts as exc:
        raise RefactorError(f"{exc}; nothing was sent — apply it in smaller pieces") from None
    if not merge_with_model:
        try:
            spliced = splice_snippet(request.text, read, language, selection, cache, stop)
        except NotComplete as exc:
            log.debug("the snippet goes to the model to merge: %s", exc)
        else:
            return [
                BatchItem(document, s.placed.target, _request_for(request, s.placed), config, cache, s.text)
                for s in spliced
            ]
    placed = place_snippet(request.text, read, language, selection, cache, MAX_TARGETS, stop)
    return [BatchItem(document, p.target, _request_for(request, p), config, cache) for p in placed]


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


def whole_file_item(document: str, request: RefactorRequest, snippet: str, config: Config) -> BatchItem:
    """The whole snippet merged into the whole file, as an editor that rewrites the file does (the
    bench's comparison)."""
    last = max(len(split_lines(request.text)) - 1, 0)
    target = Target(0, len(request.text), 0, last, Definition(0, last, "file"), 0)
    whole = replace(request, start=0, end=0, scope="file", snippet=snippet_code(snippet), instruction=None)
    return BatchItem(document, target, whole, config)


@dataclass(frozen=True)
class Settled:
    """What an apply comes to: its parts applied together, or none of them."""

    outcomes: list[TargetOutcome]
    ready: bool  # every part has its edit, or is unchanged: apply them all
    reason: str | None  # why not, naming the parts that failed

    @property
    def changed(self) -> list[TargetOutcome]:
        return [o for o in self.outcomes if o.outcome == "edit" and o.result is not None]

    @property
    def merged_by(self) -> str:
        """Who wrote the parts: "splice" (none asked a model), "model", or "splice and model"."""
        who = {o.stats.merged_by for o in self.outcomes if o.stats is not None} or {"model"}
        return who.pop() if len(who) == 1 else "splice and model"


def settle(outcomes: Sequence[TargetOutcome]) -> Settled:
    """All or nothing: a part that failed leaves the others unapplied too (a snippet is one change,
    half of it may not even run); they are then refused with the reason it failed."""
    failed = [o for o in outcomes if not o.succeeded]
    if not failed:
        return Settled(list(outcomes), True, None)
    named = "; ".join(f"{o.item.target.describe()}: {o.reason}" for o in failed[:3])
    more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
    reason = named + more
    if len(outcomes) > 1:
        reason += " — the snippet's other parts were not applied either (a snippet is applied whole)"
    held = [o if not o.succeeded else o.settled("refused", "another part of the snippet failed") for o in outcomes]
    return Settled(held, False, reason)
