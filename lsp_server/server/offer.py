"""A review in the editor: a request's changes offered to a plugin, or ticked in the editor's preview.

Two ways, by the request's `review` (docs/protocol.md, "Reviewing changes"):
- `"changes"`: the answers are not applied. The reply (status `review`) holds every change (its id,
  label, range, new text, the changes it needs) and the review's id; the request stays open on its
  document (another refactor there is refused as busy) until the plugin answers
  `refactorLsp.applyChanges {uri, review, keep}` or cancels; then what is kept is checked and applied
  as one versioned edit, with today's rule for a document you changed meanwhile.
- `"preview"` (and `refactor.preview`): the edit goes with one change annotation per change that needs
  confirmation, so the editor's preview (VS Code's Refactor Preview) has a checkbox per change; the
  document then says what was kept, and a kept subset that brings an error is undone at once.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .wire import RefactorReply, RefactorStatus

if TYPE_CHECKING:
    from ..pipeline.outcome import Settled
    from ..pipeline.request import Request
    from ..pipeline.review import Review
    from .edit import PartsOutcome

# A review left open holds its document: past this it is dropped, and the document free again.
REVIEW_OPEN_S = 30 * 60.0


@dataclass
class Pending:
    """A review offered to a plugin and not answered yet: what ran, settled, and its changes."""

    request: Request
    settled: Settled
    review: Review
    wall_ms: float
    concurrency: int
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    opened: float = field(default_factory=time.monotonic)

    def expired(self) -> bool:
        return time.monotonic() - self.opened > REVIEW_OPEN_S


def offered(pending: Pending, position: Callable[[int], dict[str, int]]) -> RefactorReply:
    """The reply that offers the changes: status `review`, a message, and the changes themselves."""
    review, settled = pending.review, pending.settled
    changes = [c.to_dict(settled.outcomes[c.target], position) for c in review.changes]
    count = len(changes)
    message = (
        f"{count} change{'' if count == 1 else 's'} to review; keep or drop each, then apply "
        "(refactorLsp.applyChanges) or cancel"
    )
    payload: dict[str, Any] = {"id": pending.id, "changes": changes}
    return RefactorReply(RefactorStatus.REVIEW, message, review=payload)


def kept_in_preview(review: Review, settled: Settled, applied: PartsOutcome) -> list[int]:
    """The ids of the changes the editor applied: those of the parts that went (not stale, not left
    out), less those unticked in its preview."""
    edited = settled.edited()
    kept = []
    for change in review.changes:
        part = edited.index(change.target)
        if part in applied.stale or part in applied.left_out:
            continue
        if (part, change.change.number) in applied.dropped:
            continue
        kept.append(change.id)
    return kept
