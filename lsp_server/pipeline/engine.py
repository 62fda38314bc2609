"""The engine: runs a planned refactor's attempts, and owns everything that outlives one refactor.

One engine per server, CLI run or bench holds the HTTP clients, the backends that refused the
`prediction` field, what the vLLM metrics probes learned, what `auto` knows of each backend's edit
formats and prediction, and each backend's context window and characters per token (`backend.memory`).
A refactor goes plan → the attempt loop (`Engine.run`: an attempt made in `attempt`, sent with
progress, its outcome read, the next attempt made from it) → output hygiene → edits → stats.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import replace

from ..backend import chat as backends
from ..backend import metrics
from ..backend.clients import ClientPool
from ..backend.errors import BackendError, ContextWindowExceeded, PredictionUnsupported
from ..backend.memory import BackendMemory
from ..backend.proposer_probe import ProposerFound, ProposerProbes, Send, prediction_xargs
from ..backend.served import small_model_served, with_small_model_advice
from ..backend.stream import Completion, DeltaCallback, StreamRequest, answer_char_limit
from ..check.verify import LAZY_MARKER, MAX_REPAIRS, Problem, refused_message, verify_answer
from ..config.schema import BackendConfig, Config, PredictionVia, RefactorSettings
from ..formats.choice import FormatHistory
from ..formats.edits import Replacement
from ..formats.hunks import HunksError
from ..formats.hygiene import UnusableOutput
from ..formats.merged import LazyMarkerLeft
from ..regions import ScopeCache
from ..stats.history import HistoryRecord
from ..stats.measured import RefactorStats
from .answer import answer_stats, new_region
from .attempt import (
    Attempt,
    AttemptKind,
    Tries,
    attempt_on,
    cut_off_message,
    decide_format,
    refitted,
    region_retry_on,
    repair_on,
)
from .context_fit import WindowTooSmall, chars_per_token_seen, region_retry_refused
from .plan import Plan, Progress, ProgressCallback, RefactorError, RefactorRequest, RefactorResult, plan_refactor
from .prediction_guard import PredictionGuard

log = logging.getLogger(__name__)

PROGRESS_INTERVAL_S = 0.25  # every report wakes the editor (and costs the server a switch): 4 a second is smooth
# A region answer's post-processing (hygiene, the deletion guard, the diff) is linear in the document and
# the answer: up to this many characters it runs inline (~2 ms here), past it in a thread. A hunks answer
# always goes to the thread: locating its blocks may use its whole work budget (formats/hunks_match.py).
INLINE_POST_CHARS = 200_000
# Characters per output token before a backend's own ratio is known (code averages 3-4 in BPE vocabularies).
DEFAULT_CHARS_PER_TOKEN = 3.5


class Engine:
    """Plans and runs refactors; create one per server, CLI command or bench run, and `close()` it."""

    def __init__(
        self,
        formats: FormatHistory | None = None,
        prediction_guard: PredictionGuard | None = None,
        backend_memory: BackendMemory | None = None,
    ) -> None:
        """`formats`: what `auto` knows of how each edit format went, per backend and region size, and
        whether it may try the other one to learn (FormatHistory); its maker chooses: the server fills
        it from the history file and lets it try, the CLI learns without trying, the bench decides by
        size alone. None: a fresh memory that does not try. `prediction_guard`: whether `prediction =
        "auto"` sends the field, by each backend's recent refactors (the server's and the CLI's, learnt
        from the history: `from_history`); None: it is sent (the bench, `check`). `backend_memory`: each
        backend's context window and characters per token, kept in the state folder (the server's, made
        at its start so that it learns the window early; None: one of this engine's own)."""
        self.clients = ClientPool()
        self.formats = formats if formats is not None else FormatHistory(tries=False)
        self.prediction_guard = prediction_guard
        self.metrics = metrics.MetricsMemory()
        self._prediction_refused: set[tuple[str, str, str]] = set()
        self._small_models: dict[tuple[str, str], str | None] = {}  # (URL, model): the demo's model, or not
        self.backend_memory = backend_memory if backend_memory is not None else BackendMemory()
        self.proposers = ProposerProbes()  # which vLLM backends draft from the prediction (backend/proposer_probe.py)

    @classmethod
    def from_history(
        cls, records: list[HistoryRecord], try_formats: bool, backend_memory: BackendMemory | None = None
    ) -> Engine:
        """An engine whose `auto` choices (edit format, prediction) start from the refactor history,
        read once by its maker; each refactor it runs then teaches them in memory (`run`)."""
        return cls(FormatHistory(tries=try_formats).learn(records), PredictionGuard().learn(records), backend_memory)

    # -- the prediction policy ---------------------------------------------------------------------
    def prediction_mode(self, backend: BackendConfig, override: bool | None = None) -> PredictionVia:
        """ "field", "prompt" or "off" for this backend, knowing which backends refused the field."""
        return backends.prediction_mode(backend, override, self._refused_key(backend) in self._prediction_refused)

    def prediction_choice(self, backend: BackendConfig, override: bool | None = None) -> tuple[PredictionVia, str]:
        """How the prediction reaches this backend in a refactor, and why in words when the cost guard
        decided: only for the `prediction` field under `prediction = "auto"`, nothing asked of the request."""
        mode = self.prediction_mode(backend, override)
        if mode != "field" or self.prediction_guard is None or override is not None or backend.prediction != "auto":
            return mode, ""
        verdict = self.prediction_guard.decide(backend.name, backend.model)
        return ("field" if verdict.send else "off"), verdict.reason

    def remember_prediction_refused(self, backend: BackendConfig) -> None:
        self._prediction_refused.add(self._refused_key(backend))

    @staticmethod
    def _refused_key(backend: BackendConfig) -> tuple[str, str, str]:
        return backend.name, backend.base_url, backend.model

    # -- refactors ---------------------------------------------------------------------------------
    def plan(self, request: RefactorRequest, config: Config, scope_cache: ScopeCache | None = None) -> Plan:
        """What does not change between the refactor's attempts; `scope_cache` is the document's, when
        the caller keeps one (the server: one per open document). Raises RefactorError."""
        return plan_refactor(request, config, self.prediction_choice, scope_cache)

    async def refactor(
        self, request: RefactorRequest, config: Config, on_progress: ProgressCallback | None = None
    ) -> RefactorResult:
        """Plan and run, for callers with nothing to do in between (the CLI, bench, tests)."""
        return await self.run(self.plan(request, config), on_progress)

    def start_probes(self, plan: Plan) -> None:
        """Ask each backend of the chain for its context window in the background, if nothing did yet
        in this process (the server asks when it reads its config): the attempt loop's first step."""
        for route in plan.routes:
            self.backend_memory.start_probe(route.backend)

    async def run(self, plan: Plan, on_progress: ProgressCallback | None = None) -> RefactorResult:
        """Run a plan end to end. Raises RefactorError with a message for the user."""
        try:
            return await self._run(plan, on_progress)
        except RefactorError as exc:
            raise await self._refusal_of_a_small_model(plan, exc) from None

    async def _refusal_of_a_small_model(self, plan: Plan, exc: RefactorError) -> RefactorError:
        """A refused answer from the demo's small model gets advice that fits it (backend/served.py)."""
        route = next((r for r in plan.routes if exc.stats and r.backend.name == exc.stats.served_by), None)
        if exc.output is None or route is None or "the local demo's model" in str(exc):
            return exc
        key = (route.backend.base_url, route.backend.model)
        if key not in self._small_models:
            self._small_models[key] = await small_model_served(route.backend)
        label = self._small_models[key]
        return exc if label is None else RefactorError(with_small_model_advice(str(exc), label), exc.stats, exc.output)

    async def _run(self, plan: Plan, on_progress: ProgressCallback | None) -> RefactorResult:
        """The attempt loop: send an attempt, read its outcome, make the next attempt from it, until an
        answer applies or nothing is left to try (RefactorError, with a message for the user). The kinds
        of attempt are made in attempt.py; docs/how-it-works.md, "The attempt loop", lists them."""
        self.start_probes(plan)
        tries = Tries(decide_format(plan, self.formats))
        attempt = await self._attempt_from(plan, "first", 0, tries)
        while True:
            try:
                completion = await self._send(plan, attempt, on_progress)
            except BackendError as exc:
                attempt = await self._after_backend_error(plan, attempt, exc, tries)
                continue
            stats = self._measure(plan, attempt, completion, tries)
            if completion.finish_reason == "length":
                log.debug("the model's answer for %s hit its token cap:\n%s", plan.request.path, completion.text)
                message = cut_off_message(plan, attempt, completion.completion_tokens)
                raise RefactorError(_in_repair(message, tries), stats, completion.text)
            try:
                new_region, edits, applied_notes = await self._new_region(plan, attempt, completion)
            except HunksError as exc:
                attempt = await self._after_hunks_failed(plan, attempt, completion, stats, exc, tries)
                continue
            except LazyMarkerLeft as exc:  # a merge that copied a marker: asked again, the marker named
                first_line = plan.request.text.count("\n", 0, plan.region.start) + 1
                problem = Problem(first_line + exc.line - 1, f"`{exc.marker}` copied", LAZY_MARKER)
                attempt = await self._after_problem(plan, attempt, completion, stats, completion.text, problem, tries)
                continue
            except UnusableOutput as exc:
                # The log is the user's (user-only file, -vv): what the model wrote, so they can judge it.
                log.debug(
                    "the model's answer for %s was not applied (%s):\n%s", plan.request.path, exc, completion.text
                )
                raise RefactorError(_in_repair(str(exc), tries), stats, completion.text) from None
            if edits:  # an answer that changes nothing brings nothing
                start, end = plan.region.start, plan.region.end
                verified = await verify_answer(plan.request.text, start, end, new_region, plan.language, plan.settings)
                stats = replace(stats, checked=verified.checked).with_notes(*verified.notes)
                if verified.problem is not None:
                    attempt = await self._after_problem(
                        plan, attempt, completion, stats, new_region, verified.problem, tries
                    )
                    continue
            if tries.repairing is not None:
                stats = replace(stats, repaired=True)
            if plan.request.concurrency == 1:  # a latency measured under a batch's load compares with nothing
                waited = stats.latency_ms + (stats.repair_ms or 0.0)
                self.formats.record(attempt.backend.name, stats.edit_format, plan.region.lines, True, waited)
            return RefactorResult(plan, new_region, edits, stats.with_notes(*applied_notes))

    # -- the next attempt, from the outcome of the last ---------------------------------------------
    async def _attempt_from(self, plan: Plan, kind: AttemptKind, index: int, tries: Tries, why: str = "") -> Attempt:
        """The attempt on the plan's backend `index`, or on the first after it whose window the region
        fits (a `fallback`); RefactorError when none is left."""
        for at in range(index, len(plan.routes)):
            backend = plan.routes[at].backend
            kind = kind if at == index else "fallback"
            try:
                return await attempt_on(plan, kind, at, tries.choice, self.backend_memory, why, self._refused(backend))
            except WindowTooSmall as exc:  # nothing was sent to this backend
                tries.failures.append(str(exc))
                why = str(exc)
        raise RefactorError("; then ".join(tries.failures)) from None

    async def _after_backend_error(self, plan: Plan, attempt: Attempt, exc: BackendError, tries: Tries) -> Attempt:
        """The attempt after a backend's error: without the prediction field it refused, fitted to the
        window it named (once), or on the next backend; RefactorError when none is left."""
        backend = attempt.backend
        prediction_refused = isinstance(exc, PredictionUnsupported) and attempt.route.prediction == "field"
        if tries.repairing is not None and not prediction_refused:  # a repair goes to that backend or nowhere
            problem = tries.problems[-1]
            message = f"the model's answer has a {problem.kind} that the code did not have: {problem.describe()}, "
            message += f"and asking to fix it failed: {exc}; nothing was applied — run it again"
            raise RefactorError(message, tries.repairing, tries.repaired_answer) from None
        if prediction_refused:
            self.remember_prediction_refused(backend)
            note = f"the backend '{backend.name}' refused the prediction field ({exc}); ran without prediction"
            log.warning(note)
            tries.notes.append(note)
            return attempt.without_prediction(note)
        once = (attempt.index, attempt.edit_format.format)
        if isinstance(exc, ContextWindowExceeded) and once not in tries.refitted:
            tries.refitted.add(once)
            try:
                return refitted(plan, attempt, tries.choice, self.backend_memory, exc.window, self._refused(backend))
            except WindowTooSmall as too_small:  # the window it named is too small for the region
                return await self._fallback(plan, attempt, str(too_small), tries)
        if exc.fallback_ok:
            return await self._fallback(plan, attempt, str(exc), tries)
        raise RefactorError("; then ".join([*tries.failures, str(exc)])) from None

    async def _fallback(self, plan: Plan, attempt: Attempt, failure: str, tries: Tries) -> Attempt:
        """The attempt on the next backend of the chain, after `failure`; RefactorError when none is left."""
        tries.failures.append(failure)
        if attempt.index == len(plan.routes) - 1:
            raise RefactorError("; then ".join(tries.failures)) from None
        log.warning("%s; falling back to the next backend", failure)
        return await self._attempt_from(plan, "fallback", attempt.index + 1, tries, failure)

    async def _after_hunks_failed(
        self,
        plan: Plan,
        attempt: Attempt,
        completion: Completion,
        stats: RefactorStats,
        exc: HunksError,
        tries: Tries,
    ) -> Attempt:
        """The region retry after a hunks answer that did not apply, when `auto` chose hunks and the
        region fits the backend's window; else RefactorError, saying what became of the answer."""
        stats = replace(stats, edit_format_failed=True)
        if plan.request.concurrency == 1:
            self.formats.record(attempt.backend.name, "hunks", plan.region.lines, False, stats.latency_ms)
        log.debug("the model's hunks answer for %s did not apply (%s):\n%s", plan.request.path, exc, completion.text)
        if not attempt.edit_format.retry_in_region:
            raise RefactorError(str(exc), stats, completion.text) from None
        memory, refused = self.backend_memory, self._refused(attempt.backend)
        try:
            retry = await region_retry_on(plan, attempt, exc.problem, memory, refused)
        except WindowTooSmall as too_small:
            raise RefactorError(region_retry_refused(exc.problem, too_small), stats, completion.text) from None
        tries.choice, tries.retried_from, tries.first_attempt_ms = retry.edit_format, "hunks", stats.latency_ms
        tries.retry_note = f"the hunks answer did not apply ({exc.problem}); retried in the region format"
        return retry

    async def _after_problem(
        self,
        plan: Plan,
        attempt: Attempt,
        completion: Completion,
        stats: RefactorStats,
        answer: str,
        problem: Problem,
        tries: Tries,
    ) -> Attempt:
        """The repair of an answer whose region (`answer`) has `problem`, while `refactor.repairs` allows
        one more; else RefactorError, nothing applied. Any problem a repair may mend comes here: the
        check's syntax error, or another check's finding with a `kind` of its own."""
        log.debug(
            "the model's answer for %s has a %s (%s):\n%s", plan.request.path, problem.kind, problem, completion.text
        )
        first = tries.problems[0] if tries.problems else None
        allowed = min(plan.settings.repairs, MAX_REPAIRS)
        if len(tries.problems) >= allowed:
            raise RefactorError(refused_message(problem, first, allowed), stats, completion.text, problem) from None
        memory, refused = self.backend_memory, self._refused(attempt.backend)
        try:
            repair = await repair_on(plan, attempt, answer, problem, memory, refused)
        except WindowTooSmall as too_small:
            message = f"{refused_message(problem, first, allowed)} (a repair does not fit: {too_small})"
            raise RefactorError(message, stats, completion.text, problem) from None
        tries.problems.append(problem)
        tries.repairing, tries.repaired_answer = stats, completion.text
        return repair

    def _refused(self, backend: BackendConfig) -> bool:
        """The backend refused the prediction field (in this engine's lifetime)."""
        return self._refused_key(backend) in self._prediction_refused

    # -- an answer ---------------------------------------------------------------------------------
    def _measure(self, plan: Plan, attempt: Attempt, completion: Completion, tries: Tries) -> RefactorStats:
        """The answered attempt's stats; what it taught (the prediction guard, the backend's characters
        per token) is learnt now."""
        backend = attempt.backend
        stats = answer_stats(plan, attempt, completion, tries, backend.base_url in self.metrics.no_speculation)
        if self.prediction_guard is not None and tries.repairing is None:
            self.prediction_guard.record(HistoryRecord.of(stats))  # in memory: the next refactor decides by it
        useful = stats.useful_tokens()
        self.backend_memory.learn_usage(
            backend,
            chars_per_token_seen(attempt.prompt.messages, completion.prompt_tokens),
            stats.output_chars / useful if useful and stats.output_chars else None,  # the live rate's estimate
        )
        if tries.repairing is not None:  # a repair's answer: its figures join those of the answer it mends
            return tries.repairing.with_repair(stats, tries.problems[0].describe())
        return stats

    @staticmethod
    async def _new_region(
        plan: Plan, attempt: Attempt, completion: Completion
    ) -> tuple[str, list[Replacement], list[str]]:
        edit_format = attempt.edit_format.format
        if edit_format == "region" and len(plan.request.text) + len(completion.text) <= INLINE_POST_CHARS:
            # A millisecond or two, linear in the text: a thread hop would cost more than it saves.
            return new_region(plan, edit_format, completion)
        # Up to a bounded fraction of a second on a big document or a pathological hunks answer: in a
        # thread, so the server goes on answering the editor meanwhile.
        return await asyncio.to_thread(new_region, plan, edit_format, completion)

    # -- talking to backends -----------------------------------------------------------------------
    async def stream(
        self,
        backend: BackendConfig,
        settings: RefactorSettings,
        request: StreamRequest,
        on_delta: DeltaCallback | None = None,
    ) -> Completion:
        """One completion with bounded retries (for `check` and `bench`'s warm-up)."""
        return await backends.stream_completion(self.clients, backend, settings, request, on_delta)

    async def list_models(self, backend: BackendConfig, settings: RefactorSettings) -> list[str]:
        return await backends.list_models(self.clients, backend, settings)

    async def close(self) -> None:
        await self.proposers.close()
        await self.backend_memory.close()
        await self.clients.close()

    async def _send(self, plan: Plan, attempt: Attempt, on_progress: ProgressCallback | None) -> Completion:
        """The backend's answer to one attempt. Raises BackendError."""
        backend, prediction = attempt.backend, attempt.prompt.prediction
        if attempt.why:
            log.debug("%s attempt on '%s': %s", attempt.kind, backend.name, attempt.why)
        request = StreamRequest(
            messages=attempt.prompt.messages,
            prediction=prediction if attempt.route.prediction == "field" else None,
            max_tokens=attempt.max_tokens,
            temperature=plan.settings.temperature,
            live_usage=backend.type == "vllm",
            cache_salt=plan.request.cache_salt if backend.type in backends.LOCAL_SPECULATION_TYPES else None,
            max_answer_chars=answer_char_limit(attempt.max_tokens, len(prediction)),
        )
        # The live rate's estimate: characters per output token as this backend wrote them last.
        ratio = self.backend_memory.learned(backend).output_chars_per_token or DEFAULT_CHARS_PER_TOKEN
        tracker = _ProgressTracker(len(prediction), on_progress, ratio)
        if attempt.route.prediction == "prompt" and await self._has_proposer(backend, plan.settings):
            # An apply's merge is difflib's work over the region's lines: off the event loop.
            request.vllm_xargs = prediction_xargs(await asyncio.to_thread(plan.proposer_prediction, prediction))
        probe = (
            metrics.SpecDecodeProbe.for_backend(backend, self.metrics) if attempt.route.prediction == "prompt" else None
        )
        return await metrics.stream_measured(
            lambda: self.stream(backend, plan.settings, request, tracker), probe, self.metrics, backend
        )

    def _prober(self, backend: BackendConfig, settings: RefactorSettings) -> Send:
        """How the proposer probe sends a request: as a refactor does, its acceptance read back."""

        async def send(request: StreamRequest) -> Completion:
            probe = metrics.SpecDecodeProbe.for_backend(backend, self.metrics)
            return await metrics.stream_measured(
                lambda: self.stream(backend, settings, request), probe, self.metrics, backend
            )

        return send

    async def _has_proposer(self, backend: BackendConfig, settings: RefactorSettings) -> bool:
        """The backend drafts from the prediction sent in `vllm_xargs`: the first refactor on it waits for the
        probe (two 4-token requests; backend/proposer_probe.py), never beside it."""
        if backend.type != "vllm":
            return False
        found = await self.proposers.found(backend, self._prober(backend, settings), settings.first_token_timeout_s)
        return found is not None and found.present is True

    async def proposer_found(self, backend: BackendConfig, settings: RefactorSettings) -> ProposerFound | None:
        """The proposer probe's finding for this backend, waiting until it ends (`check`, the bench)."""
        return await self.proposers.found(backend, self._prober(backend, settings))


def _in_repair(reason: str, tries: Tries) -> str:
    """Why an answer was refused, said of the repair when it answered one."""
    if not tries.problems:
        return reason
    problem = tries.problems[0]
    return f"the model's answer had a {problem.kind} ({problem.describe()}), and its repair was refused: {reason}"


class _ProgressTracker:
    """Turns stream deltas into throttled Progress reports, with the live rate defined as the final
    one: output tokens ÷ time since the first token."""

    def __init__(self, predicted_chars: int, callback: ProgressCallback | None, chars_per_token: float) -> None:
        self.predicted_chars = predicted_chars
        self.callback = callback
        self.chars_per_token = chars_per_token
        self.started = time.perf_counter()
        self.first_at: float | None = None
        self.generated = 0
        self.tokens: int | None = None  # as the server counts them, when it does
        self.last_report = 0.0

    def __call__(self, delta: str, tokens_so_far: int | None) -> None:
        now = time.perf_counter()
        self.generated += len(delta)
        if tokens_so_far is not None:
            self.tokens = tokens_so_far
        if self.first_at is None:
            self.first_at = now
        if self.callback is None or (self.last_report and now - self.last_report < PROGRESS_INTERVAL_S):
            return
        self.last_report = now
        elapsed = now - self.first_at
        estimated = self.tokens is None
        tokens = self.generated / self.chars_per_token if estimated else self.tokens
        rate = tokens / elapsed if elapsed > 0 and tokens else None
        self.callback(Progress(self.generated, self.predicted_chars, now - self.started, rate, estimated))
