"""What a request comes to, said once for every kind: its targets settled, then recorded.

1. `settle`: each target on its own, or all or none (`Request.whole`: a snippet is one change); and
   the one reason when the request failed as a whole (every target for the same reason before any
   answer came, or a part of a snippet), said once rather than once a target.
2. The caller writes or applies the settled edits (the CLI: each file once, checked unchanged; the
   server: one versioned workspace edit) and marks each target with what became of it.
3. `end_request`: every target's stats with its outcome go to the history, the refused answers are
   kept (files.state), and the `Ended` request makes the words and shapes every surface shows: the
   summary line, the message, the stats record (`refactorLsp/stats`, a reply's `stats`) and the
   `--json` object, one shape for every kind.

A request of one target (`Request.one`) reports as a refactor does (its stats, its line); one of
several as a batch does (totals.py: the totals and every target's record).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..backend.served import without_small_model_advice
from ..files.state import keep_refused_answers
from ..stats.measured import RefactorStats
from .request import Request
from .runner import TargetOutcome
from .totals import BatchTotals, batch_record, batch_summary, batch_totals

if TYPE_CHECKING:
    from ..stats.history import History

LISTED_FAILURES = 3  # failures named in a message; the stats record and --json list every one
WHOLE_FAILED = "another part of the snippet failed"
NOT_APPLIED_EITHER = " — the snippet's other parts were not applied either (a snippet is applied whole)"


@dataclass(frozen=True)
class Settled:
    """A request's targets once run: each with its outcome, and why the request failed as a whole."""

    outcomes: list[TargetOutcome]
    failure: str | None = None  # the one reason nothing is applied, said once; None: each target says its own

    def edited(self) -> list[int]:
        """The targets with an edit to write or apply, by index."""
        return [i for i, o in enumerate(self.outcomes) if o.outcome == "edit" and o.result is not None]

    def by_document(self) -> dict[str, list[int]]:
        """The edited targets of each document, in order."""
        found: dict[str, list[int]] = {}
        for index in self.edited():
            found.setdefault(self.outcomes[index].item.document, []).append(index)
        return found


def settle(request: Request, outcomes: Sequence[TargetOutcome]) -> Settled:
    """Each on its own; or, for a request applied whole, none once one failed (half a snippet may not
    even run): they are then refused with the reason, which names each part that failed."""
    outcomes = list(outcomes)
    failed = [o for o in outcomes if not o.succeeded]
    if not failed:
        return Settled(outcomes)
    if request.one:
        return Settled(outcomes, failed[0].reason or "the refactor failed")
    if request.whole:
        held = [o if not o.succeeded else o.ended("refused", WHOLE_FAILED) for o in outcomes]
        return Settled(held, listed_reasons(failed, "; and {} more") + NOT_APPLIED_EITHER)
    reasons = {o.reason for o in outcomes}
    if len(reasons) == 1 and all(o.outcome == "error" and o.stats is None for o in outcomes):
        return Settled(outcomes, reasons.pop())  # an unknown backend, an unreachable server: once
    return Settled(outcomes)


def listed_reasons(failed: Sequence[TargetOutcome], more: str) -> str:
    """The first failures, each with why (and where its refused answer was kept), `more` (a format for
    the count of the rest) when there are more; advice about the backend that every reason carries (the
    demo's model) said once, at the end, not on every definition's line."""
    split = [without_small_model_advice(o.reason or "") for o in failed]
    advice = {a for _, a in split}
    once = advice.pop() if len(advice) == 1 else None
    listed = "; ".join(
        f"{o.item.target.describe()}: {reason if once else o.reason}"
        + (f" (the model's answer: {o.answer_file})" if o.answer_file else "")
        for o, (reason, _) in zip(failed[:LISTED_FAILURES], split, strict=False)
    )
    rest = len(failed) - LISTED_FAILURES
    return listed + (more.format(rest) if rest > 0 else "") + (f" — {once}" if once else "")


@dataclass(frozen=True)
class Ended:
    """A request once its edits were written or applied (or not), recorded."""

    request: Request
    outcomes: list[TargetOutcome]  # each with its stats' outcome and its refused answer's file
    wall_ms: float
    concurrency: int
    failure: str | None = None  # Settled.failure
    applied_note: str | None = None  # what applying said, once for the whole edit (a rebase, a dismissed preview)

    @property
    def one(self) -> TargetOutcome | None:
        """The target, for a request reported as one refactor."""
        return self.outcomes[0] if self.request.one else None

    @property
    def totals(self) -> BatchTotals:
        return batch_totals(self.outcomes, self.wall_ms, self.concurrency)

    @property
    def stats(self) -> RefactorStats | None:
        """A request of one target: its stats."""
        return self.one.stats if self.one is not None else None

    @property
    def succeeded(self) -> bool:
        return self.failure is None and all(o.succeeded for o in self.outcomes)

    @property
    def changed(self) -> bool:
        return any(o.outcome in ("applied", "edit", "unconfirmed") for o in self.outcomes)

    @property
    def merged_by(self) -> str:
        """Who wrote the new text: "model"; "splice" (a complete snippet, no model asked); or "splice and model"."""
        who = {o.stats.merged_by for o in self.outcomes if o.stats is not None} or {"model"}
        return who.pop() if len(who) == 1 else "splice and model"

    def outcome(self) -> str:
        """The request's outcome in one word, as `--json` names it: a target's outcome when they all
        share one (`applied`, `edit`, `unchanged`, `refused`, `error`, `stale`, ...), `partial` when
        some succeeded and some did not, `failed` when they failed in different ways."""
        names = {o.outcome for o in self.outcomes}
        if names <= {"applied", "edit", "unchanged"}:
            return next(n for n in ("applied", "edit", "unchanged") if n in names)
        if any(o.succeeded for o in self.outcomes):
            return "partial"
        if self.request.whole and "refused" in names:
            return "refused" if any(o.answer is not None for o in self.outcomes) else "error"
        return names.pop() if len(names) == 1 else "failed"

    # -- words -------------------------------------------------------------------------------------
    def line(self) -> str | None:
        """The speed line: one target's summary, or the request's totals; None when nothing was measured."""
        from ..stats.words import summary

        if self.request.one:
            return summary(self.stats) if self.stats is not None else None
        return batch_summary(self.totals)

    def refusal(self) -> str:
        """Why nothing was applied, with where the model's answer was kept: `the answer ... (the
        model's answer: ~/.local/state/refactor-lsp/refused-answer.txt)`."""
        reason = self.failure or ""
        kept = next((o.answer_file for o in self.outcomes if o.answer_file), None)
        if kept and (self.request.one or not self.listed_failures()):
            reason += f" (the model's answer: {kept})"
        return reason

    def listed_failures(self) -> list[TargetOutcome]:
        """The targets that failed: refused, errors, typed inside (and, for a request applied whole, the
        parts held back because another failed)."""
        return [o for o in self.outcomes if o.outcome in ("refused", "error", "stale")]

    def message(self, outcome_note: str | None = None) -> str:
        """The one message the user reads: the speed line, what happened (`outcome_note`: "no changes:
        ...", or what applying said), the refactor's notes; for several targets, each that failed and why."""
        if self.request.one:
            stats = self.stats
            line = self.line() or ""
            note = outcome_note or self.applied_note
            notes = "; ".join(stats.notes) if stats is not None else ""
            return line + (f" — {note}" if note else "") + (f" ({notes})" if notes else "")
        text = self.line() or ""
        if self.applied_note:
            text += f" — {self.applied_note}"
        failed = self.listed_failures()
        if failed:
            text += " — not applied: " + listed_reasons(failed, "; and {} more (the stats list them)")
        return text

    # -- shapes ------------------------------------------------------------------------------------
    def record(self, uri: str) -> dict[str, Any] | None:
        """The stats record an editor gets (`refactorLsp/stats`, a reply's `stats`): one target's, with
        its texts ready-made; for several, the request's totals and every target's record."""
        if self.request.one:
            return stats_payload(self.stats) if self.stats is not None else None
        return batch_record(uri, self.outcomes, self.totals, self.message())

    def to_json(self, uri: str, new_text: str | None = None) -> dict[str, Any]:
        """`--json`'s one object, the same keys for every kind: the outcome and its reason, the new
        text (one file), the refused answer and its file, the repair, the check's finding, the stats
        (one target's, or the request's record), every target's record and the totals."""
        one = self.one
        refused = next((o for o in self.outcomes if o.answer is not None), None)
        problem = one.problem if one is not None else None
        return {
            "kind": self.request.kind,
            "outcome": self.outcome(),
            "reason": self.failure,
            "new_text": new_text,
            "answer": refused.answer if refused is not None else None,
            "answer_file": refused.answer_file if refused is not None else None,
            # True: a syntax error was brought and its repair applied; False: the repair still had one.
            "repaired": one.stats.repaired if one is not None and one.stats is not None else None,
            "error": dataclasses.asdict(problem) if problem is not None else None,
            "stats": (self.stats.to_dict() if self.stats is not None else None)
            if self.request.one
            else self.record(uri),
            "targets": [o.to_dict() for o in self.outcomes],
            "totals": self.totals.to_dict(),
            "merged_by": self.merged_by,
        }


def refused_json(kind: str, outcome: str, reason: str) -> dict[str, Any]:
    """`--json`'s object for a request that sent nothing (bad usage, nothing to rewrite, a snippet that
    cannot be placed): the keys of every outcome's, empty."""
    return {
        "kind": kind,
        "outcome": outcome,
        "reason": reason,
        "new_text": None,
        "answer": None,
        "answer_file": None,
        "repaired": None,
        "error": None,
        "stats": None,
        "targets": [],
        "totals": None,
        "merged_by": None,
        "changes": [],
    }


def stats_payload(stats: RefactorStats) -> dict[str, Any]:
    """One refactor's record as an editor gets it: its fields, plus its texts ready-made."""
    from ..stats.words import status_text, summary

    return {**stats.to_dict(), "summary": summary(stats), "status_text": status_text(stats)}


def end_request(
    request: Request,
    settled: Settled,
    outcomes: Sequence[TargetOutcome],
    wall_ms: float,
    concurrency: int,
    history: History | None,
    uri_of: Callable[[str], str],
    applied_note: str | None = None,
) -> Ended:
    """The request recorded: `outcomes` (settled, then marked with what writing or applying did) with
    their stats' outcome, added to `history` (None: the bench's, unless it records), each refused
    answer kept in a file of its own (one target: `refused-answer.txt`; several: numbered, the earlier
    request's numbered ones removed)."""
    recorded = [o.recorded(uri_of(o.item.document)) for o in outcomes]
    answers = [o.answer if o.answer is not None and o.outcome == "refused" else None for o in recorded]
    if any(a is not None for a in answers) or not request.one:
        kept = keep_refused_answers(answers, numbered=not request.one)
        recorded = [replace(o, answer_file=str(k) if k else None) for o, k in zip(recorded, kept, strict=True)]
    if history is not None:
        for outcome in recorded:
            if outcome.stats is not None:
                history.append(outcome.stats)  # never raises: a failure is logged
    return Ended(request, recorded, wall_ms, concurrency, settled.failure, applied_note)
