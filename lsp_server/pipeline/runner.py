"""The runner: a request's targets run through the one engine, at most `concurrency` at once.

Every request is a list of targets (request.py: a cursor's region, each definition of a selection or
files, the parts a snippet names), and each target is a refactor of its own: its own `RefactorRequest`
with the cursor where the scope rules choose exactly its region (or the plan made for it, for a
cursor's), its own `Plan`, stream, hygiene, check, edits and stats (`Engine.plan`, `Engine.run`).
Every prompt carries the document as it was when the request started, never another target's answer.
One failing target never stops the others. `Runner` runs them and is the live view the progress
reads; what the request comes to (settled, applied, recorded) is outcome.py's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal, get_args

from ..backend.served import without_small_model_advice
from ..languages.identify import language_of
from .plan import Plan, Progress, RefactorError, RefactorRequest, RefactorResult
from .splice import splice_or_merge

if TYPE_CHECKING:
    from ..check.verify import Problem
    from ..config.schema import Config
    from ..regions import ScopeCache
    from ..regions.targets import Target
    from ..stats.measured import RefactorStats
    from .engine import Engine

log = logging.getLogger(__name__)

MAX_TARGETS = 500  # refactors one request may ask for: past it, select less (each is a model call)
MAX_CONCURRENCY = 32  # refactor.concurrency and --jobs above this count as this

# What became of one target. "edit": computed, not written (the CLI without --write); "stale": the
# user typed inside its region (the file changed, for the CLI); "rejected": the editor refused the
# request's edit; "unconfirmed": sent, the editor never answered.
Outcome = Literal["applied", "edit", "unchanged", "refused", "error", "stale", "rejected", "unconfirmed"]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)
SUCCEEDED: frozenset[Outcome] = frozenset({"applied", "edit", "unchanged"})
UNCHANGED_REASON = "the model's answer equals the current text"


def clamp_concurrency(value: int) -> int:
    """`0` and `1`: one at a time; at most MAX_CONCURRENCY."""
    return max(1, min(value, MAX_CONCURRENCY))


@dataclass(frozen=True)
class Source:
    """One document a request reads: how it is named (a path for the CLI, a URI for the server), the
    request on it (its text, instruction, backend, prediction, edit format), its config and scope cache,
    and the user's selection or cursor in it (start == end), None for neither."""

    document: str
    request: RefactorRequest
    config: Config
    cache: ScopeCache | None = None
    selection: tuple[int, int] | None = None
    # Asked between the steps of finding the targets line by line, which end (placement.Stopped) when it
    # says so: a cancel reaches a worker thread this way.
    stop: Callable[[], bool] | None = None

    @property
    def language(self) -> str:
        return language_of(self.request.path, self.request.language_id)


@dataclass(frozen=True, eq=False)
class Item:
    """One target of a request: where it is, and the refactor asked of it."""

    document: str  # the file as reported: its path (CLI) or URI (server)
    target: Target
    request: RefactorRequest
    config: Config
    cache: ScopeCache | None = None  # the document's, so every target's scope reads the same scan
    plan: Plan | None = None  # made ahead (a cursor's request: its plan chose the region); else when its turn comes
    # The region's new text, when it is known without a model: a complete snippet's part (splice.py)
    splice: str | None = None

    @property
    def region(self) -> tuple[int, int]:
        return self.target.start, self.target.end


@dataclass(frozen=True)
class TargetOutcome:
    item: Item
    outcome: Outcome
    reason: str | None = None
    result: RefactorResult | None = None  # the answer's edits, when one came and was usable
    stats: RefactorStats | None = None
    answer: str | None = None  # a refused target's answer: what the model wrote, for the user to judge
    answer_file: str | None = None  # where that answer was kept (files.state), once the request ended
    problem: Problem | None = None  # what the check before the edit found in a refused answer

    @property
    def succeeded(self) -> bool:
        return self.outcome in SUCCEEDED

    def ended(self, outcome: Outcome, reason: str | None = None) -> TargetOutcome:
        """The same target once writing or applying its edit ended."""
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
            "answer": self.answer,
            "answer_file": self.answer_file,
            "error": dataclasses.asdict(self.problem) if self.problem is not None else None,
        }

    def line(self) -> str:
        """`app.py:8-11 function `load`: applied · refactor 0.4 s · 96 tok · ...`, for people."""
        from ..stats.words import summary

        target = self.item.target
        where = f"{self.item.document}:{target.first_line + 1}-{target.last_line + 1} {target.definition.describe()}"
        text = f"{where}: {self.outcome}"
        if self.reason and not self.succeeded:
            # Advice about the backend is said once, in the request's message (outcome.listed_reasons).
            text += f" — {without_small_model_advice(self.reason)[0]}"
        if self.answer_file:
            text += f" (the model's answer: {self.answer_file})"
        if self.stats is not None:
            text += f" · {summary(self.stats)}"
        return text


class Runner:
    """Runs a request's targets, at most `concurrency` at once, and is its live view for progress:
    `on_change()` after every report of a running target and every finished one, `on_done(outcome)`
    as each finishes. Cancelling `run()` cancels every refactor in flight."""

    def __init__(
        self,
        engine: Engine,
        items: Sequence[Item],
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
        except asyncio.CancelledError as exc:
            # Python 3.11's TaskGroup raises a cancel from a frame that keeps it in a local: the error's
            # traceback holds that frame, a cycle that kept this runner (every target's document) until a
            # full collection. The frames it has left are done: their locals go.
            traceback.clear_frames(exc.__traceback__)
            raise
        finally:
            self.wall_ms = (time.perf_counter() - self.started) * 1000
            # The callbacks' owners hold this runner (a progress reads its live view): a cycle that
            # kept every target's document until a full collection, megabytes over a day of refactors.
            self.on_change = self.on_done = None
        return [self.outcomes[index] for index in range(len(self.items))]

    async def _one(self, index: int, slots: asyncio.Semaphore) -> None:
        item = self.items[index]
        async with slots:
            # Planned when its turn comes: only the running ones hold a plan and their attempts' prompts.
            try:
                plan = item.plan or self.engine.plan(item.request, item.config, item.cache)
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
                finished = TargetOutcome(
                    item, failed, str(exc), stats=exc.stats, answer=exc.output, problem=exc.problem
                )
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
