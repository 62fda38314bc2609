"""The engine: runs a planned refactor, and owns everything that outlives one refactor.

State that used to live in module globals lives here, one engine per server, CLI run or bench:
the HTTP clients, the backends that refused the `prediction` field, what the vLLM metrics probes
learned, what `auto` knows of each backend's edit formats and prediction, and each backend's context
window and characters per token (`backend.memory`). A refactor goes plan → fitted to the backend's
window (`context_fit`) → backend stream (progress) → output hygiene → edits → stats.
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
from ..backend.served import small_model_served, with_small_model_advice
from ..backend.stream import Completion, DeltaCallback, StreamRequest, answer_char_limit
from ..config.schema import BackendConfig, Config, PredictionVia, RefactorSettings
from ..formats.choice import FormatHistory
from ..formats.edits import Replacement, region_replacements
from ..formats.hunks import HunksError
from ..formats.hygiene import UnusableOutput, clean_hunks_output, clean_output, refuse_mass_deletion
from ..scope import ScopeCache
from ..stats.history import HistoryRecord
from ..stats.measured import RefactorStats, measured
from .context_fit import WindowTooSmall, chars_per_token_seen, fit_note, fitted_for, refitted_after_refusal
from .plan import (
    Plan,
    Progress,
    ProgressCallback,
    RefactorError,
    RefactorRequest,
    RefactorResult,
    Route,
    cut_off_message,
    plan_refactor,
)
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
        """The one plan of a refactor; `scope_cache` is the document's, when the caller keeps one (the
        server: one per open document). Raises RefactorError."""
        plan = plan_refactor(request, config, self.prediction_choice, self.formats, scope_cache)
        for route in plan.routes:  # learning a backend's window starts now, if nothing did yet (once)
            self.backend_memory.start_probe(route.backend)
        return plan

    async def refactor(
        self, request: RefactorRequest, config: Config, on_progress: ProgressCallback | None = None
    ) -> RefactorResult:
        """Plan and run, for callers with nothing to do in between (the CLI, bench, tests)."""
        return await self.run(self.plan(request, config), on_progress)

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
        completion, route, notes, plan = await self._complete(plan, on_progress)  # the plan as sent: fitted
        backend = route.backend
        speculation = None
        if route.prediction == "prompt":
            speculation = completion.speculation
            if speculation is None and completion.acceptance is not None:
                speculation = True  # read from /metrics: the server drafted
            elif speculation is None and backend.base_url in self.metrics.no_speculation:
                speculation = False
        acceptance = completion.acceptance
        stats = measured(
            RefactorStats(
                backend=plan.requested.name,
                model=backend.model,
                prediction=route.prediction == "field" or (route.prediction == "prompt" and speculation is not False),
                prediction_via=route.prediction,
                # The guard's verdict on the region as a prediction; a hunks answer gets none anyway.
                prediction_reason=route.prediction_reason if plan.edit_format.format == "region" else "",
                server_speculation=speculation,
                speculation_always_on=route.prediction == "prompt"
                and speculation is not False
                and (plan.request.prediction is False or backend.prediction == "never"),
                scope=plan.region.kind,
                region_lines=plan.region.lines,
                concurrency=plan.request.concurrency,
                edit_format=plan.edit_format.format,
                format_reason=plan.edit_format.reason,
                latency_ms=completion.latency_ms,
                ttft_ms=completion.ttft_ms,
                completion_tokens=completion.completion_tokens,
                prompt_tokens=completion.prompt_tokens,
                accepted_prediction_tokens=acceptance.accepted if acceptance else None,
                rejected_prediction_tokens=acceptance.rejected if acceptance else None,
                acceptance_source=acceptance.source if acceptance else None,
                output_chars=len(completion.text),
                predicted_chars=len(plan.prompt.prediction),
                action=plan.action,
                served_by=route.backend.name,
                notes=(*([note] if (note := plan.region.oversized_note()) else []), *notes, *completion.notes),
            ),
            backend.price_input_per_mtok,
            backend.price_output_per_mtok,
        )
        if self.prediction_guard is not None:
            self.prediction_guard.record(HistoryRecord.of(stats))  # in memory: the next refactor decides by it
        useful = stats.useful_tokens()
        self.backend_memory.learn_usage(
            backend,
            chars_per_token_seen(plan.prompt.messages, completion.prompt_tokens),
            stats.output_chars / useful if useful and stats.output_chars else None,  # the live rate's estimate
        )
        if completion.finish_reason == "length":
            log.debug("the model's answer for %s hit its token cap:\n%s", plan.request.path, completion.text)
            raise RefactorError(cut_off_message(plan, completion.completion_tokens), stats, completion.text)
        try:
            if (
                plan.edit_format.format == "region"
                and len(plan.request.text) + len(completion.text) <= INLINE_POST_CHARS
            ):
                # A millisecond or two, linear in the text: a thread hop would cost more than it saves.
                new_region, edits, applied_notes = _new_region(plan, completion)
            else:
                # Up to a bounded fraction of a second on a big document or a pathological hunks answer:
                # in a thread, so the server goes on answering the editor meanwhile.
                new_region, edits, applied_notes = await asyncio.to_thread(_new_region, plan, completion)
        except HunksError as exc:
            stats = replace(stats, edit_format_failed=True)
            if plan.request.concurrency == 1:  # a latency measured under a batch's load compares with nothing
                self.formats.record(route.backend.name, "hunks", plan.region.lines, False, stats.latency_ms)
            log.debug(
                "the model's hunks answer for %s did not apply (%s):\n%s", plan.request.path, exc, completion.text
            )
            if plan.region_prompt is None:
                raise RefactorError(str(exc), stats, completion.text) from None
            retried = await self.run(plan.in_region_format(f"retry after: {exc}"), on_progress)
            note = f"the hunks answer did not apply ({exc}); retried in the region format"
            retried_stats = replace(retried.stats, retried_from="hunks", first_attempt_ms=stats.latency_ms)
            return replace(retried, stats=retried_stats.with_notes(note, first=True))
        except UnusableOutput as exc:
            # The log is the user's (user-only file, -vv): what the model wrote, so they can judge it.
            log.debug("the model's answer for %s was not applied (%s):\n%s", plan.request.path, exc, completion.text)
            raise RefactorError(str(exc), stats, completion.text) from None
        if plan.request.concurrency == 1:
            self.formats.record(route.backend.name, plan.edit_format.format, plan.region.lines, True, stats.latency_ms)
        return RefactorResult(plan, new_region, edits, stats.with_notes(*applied_notes))

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
        await self.backend_memory.close()
        await self.clients.close()

    async def _complete(
        self, plan: Plan, on_progress: ProgressCallback | None
    ) -> tuple[Completion, Route, list[str], Plan]:
        """(completion, the route that served, notes, the plan as sent: fitted to that backend's context
        window when it is known), trying the fallbacks in order."""
        notes: list[str] = []
        errors: list[str] = []
        for index, route in enumerate(plan.routes):
            backend = route.backend
            refused = False
            try:
                sent = await fitted_for(plan, backend, self.backend_memory)
                try:
                    completion, route = await self._send(sent, route, on_progress, notes)
                except ContextWindowExceeded as exc:
                    # Once a refactor: the refusal names the window; fitted to it, the prompt goes again.
                    sent = refitted_after_refusal(plan, sent, backend, self.backend_memory, exc.window)
                    refused = True
                    completion, route = await self._send(sent, route, on_progress, notes)
            except WindowTooSmall as exc:  # nothing was sent to this backend
                if index < len(plan.routes) - 1:
                    errors.append(str(exc))
                    continue
                raise RefactorError("; then ".join([*errors, str(exc)])) from None
            except BackendError as exc:
                if exc.fallback_ok and index < len(plan.routes) - 1:
                    errors.append(str(exc))
                    log.warning("%s; falling back to the next backend", exc)
                    continue
                if errors:
                    raise RefactorError("; then ".join([*errors, str(exc)])) from None
                raise RefactorError(str(exc)) from None
            if errors:
                notes.append(f"served by fallback backend '{backend.name}' because {'; '.join(errors)}")
            if sent.fit is not None and (note := fit_note(sent.fit, refused)):
                notes.append(note)
            return completion, route, notes, sent
        raise AssertionError("unreachable: the chain always ends in a return or a raise")

    async def _send(
        self, plan: Plan, route: Route, on_progress: ProgressCallback | None, notes: list[str]
    ) -> tuple[Completion, Route]:
        """One backend's answer to the plan, and the route as it served (without the prediction field
        when the backend refused it: said in `notes`). Raises BackendError."""
        backend = route.backend
        request = StreamRequest(
            messages=plan.prompt.messages,
            prediction=plan.prompt.prediction if route.prediction == "field" else None,
            max_tokens=plan.max_tokens,
            temperature=plan.settings.temperature,
            live_usage=backend.type == "vllm",
            cache_salt=plan.request.cache_salt if backend.type in backends.LOCAL_SPECULATION_TYPES else None,
            max_answer_chars=answer_char_limit(plan.max_tokens, len(plan.prompt.prediction)),
        )
        tracker = self._tracker(plan, backend, on_progress)
        probe = metrics.SpecDecodeProbe.for_backend(backend, self.metrics) if route.prediction == "prompt" else None
        try:
            return await self._stream_with_probe(backend, plan.settings, request, tracker, probe), route
        except PredictionUnsupported as exc:
            self.remember_prediction_refused(backend)
            note = f"the backend '{backend.name}' refused the prediction field ({exc}); ran without prediction"
            log.warning(note)
            notes.append(note)
            request.prediction = None
            tracker = self._tracker(plan, backend, on_progress)
            return await self.stream(backend, plan.settings, request, tracker), Route(backend, "off")

    def _tracker(self, plan: Plan, backend: BackendConfig, on_progress: ProgressCallback | None) -> _ProgressTracker:
        # The live rate's estimate: characters per output token as this backend wrote them last.
        ratio = self.backend_memory.learned(backend).output_chars_per_token or DEFAULT_CHARS_PER_TOKEN
        return _ProgressTracker(len(plan.prompt.prediction), on_progress, ratio)

    async def _stream_with_probe(
        self,
        backend: BackendConfig,
        settings: RefactorSettings,
        request: StreamRequest,
        tracker: _ProgressTracker,
        probe: metrics.SpecDecodeProbe | None,
    ) -> Completion:
        """Stream the answer; a vLLM server that reported no per-request acceptance gets it from /metrics."""
        if probe is None:
            return await self.stream(backend, settings, request, tracker)
        await probe.start()
        try:
            completion = await self.stream(backend, settings, request, tracker)
        except BaseException:
            probe.abandon()
            raise
        if completion.acceptance is not None:
            probe.abandon()
            self.metrics.remember_per_request_metrics(backend)
            return completion
        completion.acceptance = await probe.finish()
        note = metrics.note_for(completion.acceptance) if completion.acceptance else None
        if note:
            completion.notes.append(note)
        return completion


def _new_region(plan: Plan, completion: Completion) -> tuple[str, list[Replacement], list[str]]:
    """The region's new text from the answer, the edits that make it, and the notes on how (a hunks
    answer's). Raises HunksError (blocks that do not apply) or UnusableOutput (an answer to refuse).

    Both formats end in the same deletion guard: an emptied region is one answer, however written.
    """
    text = plan.request.text
    notes: list[str] = []
    if plan.edit_format.format == "hunks":
        applied = clean_hunks_output(
            completion.text,
            plan.original,
            completion.finish_reason,
            drop_instruction_comments=plan.comment is not None,
            form=plan.settings.hunks_form,
        )
        new_region = applied.text
        notes = applied.notes
    else:
        new_region = clean_output(
            completion.text,
            plan.original,
            completion.finish_reason,
            before=text[: plan.region.start],
            after=text[plan.region.end :],
            drop_instruction_comments=plan.comment is not None,
        )
    refuse_mass_deletion(plan.original, new_region, removal_asked=plan.removes_code)
    return new_region, region_replacements(text, plan.region.start, plan.region.end, new_region), notes


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
