"""A review: a request's answers as changes, each yours to keep or drop, and what is kept checked.

Once a request has settled (outcome.settle), each edited target's answer is split into its changes
(formats/changes.py), numbered across the request (`id` 1..N, in document order), so that an editor
or the command line shows them, you keep some, and `keep` turns the settled targets into those with
only the kept changes' edits: a target with none kept ends `rejected` ("dropped in the review").

What is kept is checked as a whole answer is (check/verify.py: the syntax it brings, your checker),
target by target: a kept subset that brings an error is refused, nothing applied, and the message
names the change whose absence caused it where one does ("keeping change 2 without change 3: '(' was
never closed at line 44"). A kept change that uses a name a dropped change brings is named too (a
note: Python's parser cannot see it, your checker may).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..check.verify import verify_answer
from ..formats.changes import Change, kept_edits, kept_text, split_changes, unmet_needs
from ..text import count_of
from .outcome import Settled
from .runner import TargetOutcome

DROPPED = "every change dropped in the review"


@dataclass(frozen=True)
class ReviewChange:
    """One change of a request: its id across the request, the target (by index in the settled
    outcomes) and the change itself (its number within the target, lines, label, edits, needs)."""

    id: int
    target: int
    change: Change
    needs: tuple[int, ...]  # ids of the changes this one needs

    def to_dict(self, outcome: TargetOutcome, position: Any = None) -> dict[str, Any]:
        """As the wire and `--json` carry it; `position` maps an offset to what the caller shows."""
        change = self.change
        start, end = change.edits[0].start, change.edits[-1].end
        record: dict[str, Any] = {
            "id": self.id,
            "definition": outcome.item.target.describe(),
            "label": change.label,
            "lines": [change.first_line, change.last_line],
            "needs": list(self.needs),
            "brings": list(change.brings),
            "edits": [{"start": e.start, "end": e.end, "text": e.text} for e in change.edits],
        }
        if position is not None:
            record["range"] = {"start": position(start), "end": position(end)}
        return record


@dataclass(frozen=True)
class Review:
    """Every change of a request's settled answers."""

    changes: tuple[ReviewChange, ...]

    @property
    def ids(self) -> list[int]:
        return [c.id for c in self.changes]

    def of_target(self, target: int) -> list[ReviewChange]:
        return [c for c in self.changes if c.target == target]

    def kept_counts(self, kept: Iterable[int]) -> tuple[int, int]:
        wanted = set(kept)
        return sum(1 for c in self.changes if c.id in wanted), len(self.changes)


def review_of(settled: Settled) -> Review:
    """The changes of every edited target of `settled`, each on the document its prompt carried."""
    changes: list[ReviewChange] = []
    for index in settled.edited():
        result = settled.outcomes[index].result
        assert result is not None  # an edited target has its result
        first_id = len(changes) + 1
        for change in split_changes(result.text, result.edits):
            needs = tuple(first_id + n - 1 for n in change.needs)
            changes.append(ReviewChange(first_id + change.number - 1, index, change, needs))
    return Review(tuple(changes))


def kept_settled(settled: Settled, review: Review, kept: Iterable[int]) -> Settled:
    """The settled targets with only the kept changes' edits; a target whose changes were all dropped
    ends `rejected`. Each target's stats say how many of its changes were kept."""
    wanted = set(kept)
    outcomes = list(settled.outcomes)
    for index in settled.edited():
        ours = review.of_target(index)
        numbers = [c.change.number for c in ours if c.id in wanted]
        outcome = outcomes[index]
        assert outcome.result is not None
        stats = outcome.stats
        if stats is not None:
            stats = replace(stats, changes=len(ours), changes_kept=len(numbers))
        if not numbers:
            outcomes[index] = replace(outcome, outcome="rejected", reason=DROPPED, stats=stats)
            continue
        edits = kept_edits([c.change for c in ours], numbers)
        result = replace(outcome.result, edits=edits)
        outcomes[index] = replace(outcome, result=result, stats=stats)
    return replace(settled, outcomes=outcomes)


async def kept_problem(settled: Settled, review: Review, kept: Iterable[int]) -> str | None:
    """Why the kept changes may not be applied (the caller says what became of them): the first error
    a kept subset brings that the whole answer did not, with the change whose absence causes it when
    adding one back mends it; None when every target's kept changes check."""
    wanted = set(kept)
    for index in settled.edited():
        ours = review.of_target(index)
        numbers = [c.change.number for c in ours if c.id in wanted]
        if not numbers or len(numbers) == len(ours):
            continue  # all or nothing of an answer that was checked whole
        outcome = settled.outcomes[index]
        problem = await _problem(outcome, [c.change for c in ours], numbers)
        if problem is None:
            continue
        missing = [c for c in ours if c.change.number not in numbers]
        culprit = None
        for candidate in missing:
            if await _problem(outcome, [c.change for c in ours], [*numbers, candidate.change.number]) is None:
                culprit = candidate
                break
        kept_ids = [c.id for c in ours if c.change.number in numbers]
        keeping = "keeping " + _listed("change", kept_ids)
        without = f" without change {culprit.id}" if culprit is not None else ""
        return f"{keeping}{without} leaves an error: {problem}"
    return None


def needs_notes(review: Review, kept: Iterable[int]) -> list[str]:
    """`change 4 uses `time`, which change 1 (dropped) brings`, for each kept change that needs a dropped one."""
    wanted = set(kept)
    notes = []
    for index in sorted({c.target for c in review.changes}):
        ours = review.of_target(index)
        ids = {c.change.number: c.id for c in ours}
        numbers = [c.change.number for c in ours if c.id in wanted]
        for user, giver in unmet_needs([c.change for c in ours], numbers):
            names = ", ".join(f"`{n}`" for n in giver.brings)
            notes.append(f"change {ids[user.number]} uses {names}, which change {ids[giver.number]} (dropped) brings")
    return notes


def kept_summary(kept: int, total: int) -> str:
    """`kept 4 of 5 changes`."""
    return f"kept {kept} of {count_of(total, 'change')}"


async def _problem(outcome: TargetOutcome, changes: Sequence[Change], numbers: list[int]) -> str | None:
    """What the check before an edit finds in the target's region with only the changes `numbers`."""
    result = outcome.result
    if result is None:
        return None
    text, plan = result.text, result.plan
    start, end = outcome.item.region
    subset = kept_text(text, changes, numbers)
    # The region's new text: the kept edits all lie inside [start, end).
    new_region = subset[start : end + len(subset) - len(text)]
    verified = await verify_answer(text, start, end, new_region, plan.language, plan.settings)
    return verified.problem.describe() if verified.problem is not None else None


def _listed(word: str, ids: list[int]) -> str:
    if len(ids) == 1:
        return f"{word} {ids[0]}"
    return f"{word}s " + ", ".join(map(str, ids[:-1])) + f" and {ids[-1]}"
