"""A batch: one instruction, many definitions, run at once through the one engine.

Each target (scope/targets.py: a definition the selection touches, or a top-level definition of a
file) is a refactor of its own: its own `RefactorRequest` with the cursor where the scope rules
choose exactly its region, its own `Plan` (prediction, edit format), its own stream, hygiene, edits
and stats (`Engine.plan`, `Engine.run`). Every prompt carries the document as it was when the batch
started, never another target's answer. At most `concurrency` run at once (`refactor.concurrency`,
`--jobs`); one failing target never stops the others. `BatchRun` runs them and is the live view the
progress reads; batch_stats.py sums them up (the batch's wall time against the sum of the targets'
latencies). Applying is the caller's: the server sends one workspace edit (apply.apply_parts), the
CLI writes each file once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, get_args

from .plan import Progress, RefactorError, RefactorRequest, RefactorResult
from .splice import splice_or_merge

if TYPE_CHECKING:
    from ..config.schema import Config
    from ..scope import ScopeCache
    from ..scope.targets import Target
    from ..stats.measured import RefactorStats
    from .engine import Engine

log = logging.getLogger(__name__)

MAX_TARGETS = 500  # refactors one batch may ask for: past it, select less (each is a model call)
MAX_CONCURRENCY = 32  # refactor.concurrency and --jobs above this count as this

# What became of one target. "edit": computed, not written (the CLI without --write); "stale": the
# user typed inside its region (the file changed, for the CLI); "rejected": the editor refused the
# batch's edit; "unconfirmed": sent, the editor never answered.
Outcome = Literal["applied", "edit", "unchanged", "refused", "error", "stale", "rejected", "unconfirmed"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
SUCCEEDED: frozenset[Outcome] = frozenset({"applied", "edit", "unchanged"})
UNCHANGED_REASON = "the model's answer equals the current text"


def shared_failure(outcomes: Sequence[TargetOutcome]) -> str | None:
    """The reason when every target failed for the same one before any answer came (an unknown
    backend, an unreachable server, a file too large): said once rather than once a target."""
    reasons = {o.reason for o in outcomes}
    if outcomes and len(reasons) == 1 and all(o.outcome == "error" and o.stats is None for o in outcomes):
        return reasons.pop()
    return None


def clamp_concurrency(value: int) -> int:
    """`0` and `1`: one at a time; at most MAX_CONCURRENCY."""
    return max(1, min(value, MAX_CONCURRENCY))


@dataclass(frozen=True, eq=False)
class BatchItem:
    """One target of a batch: where it is, and the refactor asked of it."""

    document: str  # the file as reported: its path (CLI) or URI (server)
    target: Target
    request: RefactorRequest
    config: Config
    cache: ScopeCache | None = None  # the document's, so every target's scope reads the same scan
    # The region's new text, when it is known without a model: a complete snippet's part (splice.py)
    splice: str | None = None

    @property
    def region(self) -> tuple[int, int]:
        return self.target.start, self.target.end


def batch_items(
    document: str,
    targets: Sequence[Target],
    request: RefactorRequest,
    config: Config,
    cache: ScopeCache | None = None,
) -> list[BatchItem]:
    """The targets of one document as refactors: `request` (its text, instruction, backend, prediction
    and edit format) with the cursor where the scope rules choose each target's region."""
    return [
        BatchItem(document, t, replace(request, start=t.cursor, end=t.cursor, scope="block"), config, cache)
        for t in targets
    ]


@dataclass(frozen=True)
class TargetOutcome:
    item: BatchItem
    outcome: Outcome
    reason: str | None = None
    result: RefactorResult | None = None  # the answer's edits, when one came and was usable
    stats: RefactorStats | None = None
    answer: str | None = None  # a refused target's answer: what the model wrote, for the user to judge

    @property
    def succeeded(self) -> bool:
        return self.outcome in SUCCEEDED

    def settled(self, outcome: Outcome, reason: str | None = None) -> TargetOutcome:
        """The same target once applying it ended."""
        return replace(self, outcome=outcome, reason=reason)

    def recorded(self, uri: str) -> TargetOutcome:
        """Its stats with the outcome, for the history and the reports: applied, not (False), or shown
        as a diff for the user to apply (None, as an edit an editor never confirmed)."""
        if self.stats is None:
            return self
        applied = True if self.outcome == "applied" else None if self.outcome in ("edit", "unconfirmed") else False
        return replace(self, stats=self.stats.with_outcome(uri, applied))

    def to_dict(self) -> dict[str, Any]:
        """The per-target record: `--json`'s `targets` and `refactorLsp/stats`' `batch.targets`."""
        target = self.item.target
        return {
            "file": self.item.document,
            "definition": target.name,
            "kind": target.definition.kind,
            "lines": [target.first_line + 1, target.last_line + 1],
            "outcome": self.outcome,
            "reason": self.reason,
            "stats": self.stats.to_dict() if self.stats is not None else None,
        }

    def line(self) -> str:
        """`app.py:8-11 function `load`: applied · refactor 0.4 s · 96 tok · ...`, for people."""
        from ..stats.words import summary

        target = self.item.target
        where = f"{self.item.document}:{target.first_line + 1}-{target.last_line + 1} {target.definition.describe()}"
        text = f"{where}: {self.outcome}"
        if self.reason and not self.succeeded:
            text += f" — {self.reason}"
        if self.stats is not None:
            text += f" · {summary(self.stats)}"
        return text


class BatchRun:
    """Runs a batch's refactors, at most `concurrency` at once, and is its live view for progress:
    `on_change()` after every report of a running target and every finished one, `on_done(outcome)`
    as each finishes. Cancelling `run()` cancels every refactor in flight."""

    def __init__(
        self,
        engine: Engine,
        items: Sequence[BatchItem],
        concurrency: int,
        on_change: Callable[[], None] | None = None,
        on_done: Callable[[TargetOutcome], None] | None = None,
    ) -> None:
        self.engine = engine
        self.concurrency = clamp_concurrency(concurrency)
        # Each refactor says how many run beside it: what is learnt of speed leaves such runs out.
        at_once = min(self.concurrency, len(items))
        self.items = [replace(item, request=replace(item.request, concurrency=at_once)) for item in items]
        self.on_change = on_change
        self.on_done = on_done
        self.started = time.perf_counter()
        self.wall_ms = 0.0
        self.running: list[int] = []  # items streaming now, in the order they started
        self.live: dict[int, Progress] = {}  # their last progress report
        self.outcomes: dict[int, TargetOutcome] = {}

    async def run(self) -> list[TargetOutcome]:
        """Every target's outcome, in the items' order."""
        self.started = time.perf_counter()
        slots = asyncio.Semaphore(self.concurrency)
        try:
            async with asyncio.TaskGroup() as group:
                for index in range(len(self.items)):
                    group.create_task(self._one(index, slots))
        finally:
            self.wall_ms = (time.perf_counter() - self.started) * 1000
        return [self.outcomes[index] for index in range(len(self.items))]

    async def _one(self, index: int, slots: asyncio.Semaphore) -> None:
        item = self.items[index]
        async with slots:
            # Planned when its turn comes: only the running ones hold a plan and their attempts' prompts.
            try:
                plan = self.engine.plan(item.request, item.config, item.cache)
            except RefactorError as exc:
                self._finish(index, TargetOutcome(item, "error", str(exc)))
                return
            if (plan.region.start, plan.region.end) != item.region:  # the same rules on the same text: never
                wrong = f"the region chosen ({plan.region.describe()}) is not the definition's; nothing was sent"
                self._finish(index, TargetOutcome(item, "error", wrong))
                return
            self.running.append(index)
            self._changed()
            try:
                if item.splice is not None:
                    result = await splice_or_merge(self.engine, plan, item.splice, partial(self._progress, index))
                else:
                    result = await self.engine.run(plan, partial(self._progress, index))
            except RefactorError as exc:
                # An answer that came but could not be applied is refused; no answer at all is an error.
                failed: Outcome = "refused" if exc.output is not None else "error"
                finished = TargetOutcome(item, failed, str(exc), stats=exc.stats, answer=exc.output)
            except Exception as exc:  # a fault in one refactor must not end the others: it is that target's
                log.exception("the refactor of %s in %s failed", item.target.describe(), item.document)
                finished = TargetOutcome(item, "error", f"internal error: {exc}; see the log")
            else:
                if result.edits:
                    finished = TargetOutcome(item, "edit", None, result, result.stats)
                else:
                    finished = TargetOutcome(item, "unchanged", UNCHANGED_REASON, result, result.stats)
            finally:
                self.running.remove(index)
                self.live.pop(index, None)
        self._finish(index, finished)

    def _progress(self, index: int, progress: Progress) -> None:
        self.live[index] = progress
        self._changed()

    def _finish(self, index: int, outcome: TargetOutcome) -> None:
        self.outcomes[index] = outcome
        if self.on_done is not None:
            self.on_done(outcome)
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            self.on_change()

    # -- the live view -------------------------------------------------------------------------
    @property
    def total(self) -> int:
        return len(self.items)

    @property
    def done(self) -> int:
        return len(self.outcomes)

    def running_names(self) -> list[str]:
        return [self.items[index].target.name for index in self.running]

    def fraction(self) -> float:
        """Finished targets plus the running ones' share (characters ÷ predicted), below 100 % until the end."""
        if not self.items:
            return 0.0
        share = self.done + sum(p.fraction for p in self.live.values())
        return min(share / self.total, 0.99)

    def live_rate(self) -> tuple[float | None, bool]:
        """(the running targets' live rates added up, whether any was estimated): output tokens per
        second since each one's first token, as a single refactor's progress shows, all of them together."""
        rates = [p for p in self.live.values() if p.tokens_per_s]
        if not rates:
            return None, False
        return sum(p.tokens_per_s or 0.0 for p in rates), any(p.tokens_estimated for p in rates)

    def chars(self) -> tuple[int, int]:
        """(characters generated, characters predicted) over the finished and running targets."""
        generated = predicted = 0
        for outcome in self.outcomes.values():
            if outcome.stats is not None:
                generated += outcome.stats.output_chars
                predicted += outcome.stats.predicted_chars
        for progress in self.live.values():
            generated += progress.generated_chars
            predicted += progress.predicted_chars
        return generated, predicted

    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started
