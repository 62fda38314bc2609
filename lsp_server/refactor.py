"""The refactor pipeline, shared by the server, the CLI and `bench`:

request → scope → prompt + prediction → backend stream (progress) → output hygiene → edits → stats.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from . import backends, metrics
from .backends import BackendError, Completion, PredictionUnsupported, StreamRequest
from .config import (
    FIX_DIAGNOSTICS_ID,
    INSTRUCTION_COMMENT_ID,
    BackendConfig,
    Config,
    ConfigError,
    RefactorSettings,
    ScopeMode,
)
from .edits import Replacement, apply_replacements, region_replacements
from .hygiene import UnusableOutput, clean_output
from .prompt import Prompt, build_prompt
from .scope import InstructionComment, Region, choose_region, find_instruction_comment
from .stats import RefactorStats

log = logging.getLogger(__name__)

FIX_DIAGNOSTICS_INSTRUCTION = "Fix the problems listed below. Change only what is needed to fix them."
PROGRESS_INTERVAL_S = 0.25  # every report wakes the editor (and costs the server a switch): 4 a second is smooth


class RefactorError(Exception):
    """The refactor cannot go on; the message is for the user and says what to do."""

    def __init__(self, message: str, stats: RefactorStats | None = None, output: str | None = None) -> None:
        super().__init__(message)
        self.stats = stats
        self.output = output  # the model's raw answer, when it came but could not be applied


@dataclass
class RefactorRequest:
    path: str  # a file path or URI: names the file in the prompt and picks the language
    text: str  # the document as it was when the request was made
    start: int  # the selection, in offsets into `text`; start == end is a cursor
    end: int
    instruction: str | None = None
    action_id: str | None = None
    backend: str | None = None
    prediction: bool | None = None  # None: as the backend is configured
    diagnostics: list[str] = field(default_factory=list)
    language_id: str | None = None
    scope: ScopeMode | None = None  # None: the config's refactor.scope


@dataclass
class Plan:
    """Everything decided before the model is called."""

    region: Region
    instruction: str
    action: str
    comment: InstructionComment | None
    prompt: Prompt


@dataclass
class Progress:
    generated_chars: int
    predicted_chars: int
    elapsed_s: float
    tokens_per_s: float | None  # live estimate from the stream's chunks

    @property
    def fraction(self) -> float:
        """Characters generated ÷ characters predicted, capped below 100 % until the stream ends."""
        if self.predicted_chars <= 0:
            return 0.0
        return min(self.generated_chars / self.predicted_chars, 0.99)


ProgressCallback = Callable[[Progress], None]


@dataclass
class RefactorResult:
    plan: Plan
    new_region: str
    edits: list[Replacement]
    stats: RefactorStats
    text: str  # the document the edits were computed against

    @property
    def new_text(self) -> str:
        return apply_replacements(self.text, self.edits)


def resolve_action(
    request: RefactorRequest, config: Config, region: Region
) -> tuple[str, str, InstructionComment | None]:
    """(instruction, action label, instruction comment) for a request."""
    comment = find_instruction_comment(request.text, region)
    if request.instruction and request.instruction.strip():
        return request.instruction.strip(), request.action_id or "instruction", None
    action_id = request.action_id
    if action_id == INSTRUCTION_COMMENT_ID:
        if comment is None:
            raise RefactorError(
                "no `refactor-lsp: <instruction>` comment was found in the region; write one and try again"
            )
        return comment.instruction, INSTRUCTION_COMMENT_ID, comment
    if action_id == FIX_DIAGNOSTICS_ID:
        if not request.diagnostics:
            raise RefactorError("there are no diagnostics in the region to fix")
        return FIX_DIAGNOSTICS_INSTRUCTION, FIX_DIAGNOSTICS_ID, None
    for preset in config.presets():
        if preset.id == action_id:
            return preset.instruction, preset.id, None
    if action_id:
        known = ", ".join(p.id for p in config.presets())
        raise RefactorError(f"unknown action id {action_id!r} (known: {known}, {FIX_DIAGNOSTICS_ID})")
    raise RefactorError("say what to do: give an instruction or an action id")


def _check_text(text: str, what: str) -> None:
    """Text that cannot be sent as UTF-8 (a lone surrogate from a broken paste) is refused by name."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        raise RefactorError(
            f"{what} holds a character that is not valid Unicode (a lone surrogate, U+{ord(text[exc.start]):04X}, "
            f"on line {line}); nothing was sent — remove it and try again"
        ) from None


def plan_refactor(request: RefactorRequest, config: Config) -> Plan:
    settings = config.refactor
    _check_text(request.instruction or "", "the instruction")
    _check_text(request.text, "the document")
    _check_text("\n".join(request.diagnostics), "a diagnostic to fix")
    if len(request.text) > settings.max_file_chars:
        raise RefactorError(
            f"the file has {len(request.text):,} characters, over refactor.max_file_chars "
            f"({settings.max_file_chars:,}); nothing was sent"
        )
    region = choose_region(request.text, request.start, request.end, request.scope or settings.scope)
    if region.end - region.start > settings.max_region_chars:
        raise RefactorError(
            f"the region to rewrite has {region.end - region.start:,} characters, over "
            f"refactor.max_region_chars ({settings.max_region_chars:,}); nothing was sent — select less"
        )
    instruction, action, comment = resolve_action(request, config, region)
    prompt = build_prompt(
        text=request.text,
        start=region.start,
        end=region.end,
        instruction=instruction,
        path=request.path,
        language_id=request.language_id,
        diagnostics=request.diagnostics if action == FIX_DIAGNOSTICS_ID else None,
        context_chars=settings.context_chars,
        drop=(comment.start, comment.end) if comment else None,
    )
    return Plan(region, instruction, action, comment, prompt)


class _ProgressTracker:
    def __init__(self, predicted_chars: int, callback: ProgressCallback | None) -> None:
        self.predicted_chars = predicted_chars
        self.callback = callback
        self.started = time.perf_counter()
        self.first_at: float | None = None
        self.generated = 0
        self.last_report = 0.0

    def __call__(self, delta: str, chunks: int) -> None:
        now = time.perf_counter()
        self.generated += len(delta)
        if self.first_at is None:
            self.first_at = now
        if self.callback is None or (self.last_report and now - self.last_report < PROGRESS_INTERVAL_S):
            return
        self.last_report = now
        elapsed = now - self.first_at
        rate = (chunks - 1) / elapsed if elapsed > 0 and chunks > 1 else None
        self.callback(Progress(self.generated, self.predicted_chars, now - self.started, rate))


async def _complete(
    plan: Plan, request: RefactorRequest, config: Config, on_progress: ProgressCallback | None
) -> tuple[Completion, str, str, list[str]]:
    """(completion, backend that served, prediction mode, notes), trying fallbacks in order."""
    try:
        first = config.backend(request.backend)
    except ConfigError as exc:
        raise RefactorError(str(exc)) from None
    settings = config.refactor
    chain = [first.name, *first.fallback]
    notes: list[str] = []
    errors: list[str] = []
    for name in chain:
        backend = config.backends[name]
        mode = backends.uses_prediction(backend, request.prediction)
        stream_request = StreamRequest(
            messages=plan.prompt.messages,
            prediction=plan.prompt.prediction if mode == "field" else None,
            max_tokens=backends.default_max_tokens(len(plan.prompt.prediction), settings),
            temperature=settings.temperature,
        )
        tracker = _ProgressTracker(len(plan.prompt.prediction), on_progress)
        probe = metrics.SpecDecodeProbe.for_backend(backend) if mode == "prompt" else None
        try:
            try:
                completion = await _stream_with_probe(backend, settings, stream_request, tracker, probe)
            except PredictionUnsupported as exc:
                backends.remember_prediction_refused(backend)
                note = f"the backend '{backend.name}' refused the prediction field ({exc}); ran without prediction"
                log.warning(note)
                notes.append(note)
                mode = "off"
                stream_request.prediction = None
                tracker = _ProgressTracker(len(plan.prompt.prediction), on_progress)
                completion = await backends.stream_completion(backend, settings, stream_request, tracker)
        except BackendError as exc:
            if exc.fallback_ok and name != chain[-1]:
                errors.append(str(exc))
                log.warning("%s; falling back to the next backend", exc)
                continue
            if errors:
                raise RefactorError("; then ".join([*errors, str(exc)])) from None
            raise RefactorError(str(exc)) from None
        if errors:
            notes.append(f"served by fallback backend '{name}' because {'; '.join(errors)}")
        return completion, name, mode, notes
    raise AssertionError("unreachable: the chain always ends in a return or a raise")


async def _stream_with_probe(
    backend: BackendConfig,
    settings: RefactorSettings,
    request: StreamRequest,
    tracker: _ProgressTracker,
    probe: metrics.SpecDecodeProbe | None,
) -> Completion:
    """Stream the answer; a vLLM server that reported no per-request acceptance gets it from /metrics."""
    if probe is None:
        return await backends.stream_completion(backend, settings, request, tracker)
    await probe.start()
    try:
        completion = await backends.stream_completion(backend, settings, request, tracker)
    except BaseException:
        probe.abandon()
        raise
    if completion.acceptance is not None:
        probe.abandon()
        metrics.remember_per_request_metrics(backend)
        return completion
    completion.acceptance = await probe.finish()
    note = metrics.note_for(completion.acceptance) if completion.acceptance else None
    if note:
        completion.notes.append(note)
    return completion


async def run_refactor(
    request: RefactorRequest, config: Config, on_progress: ProgressCallback | None = None
) -> RefactorResult:
    """Run one refactor end to end. Raises RefactorError with a message for the user."""
    plan = plan_refactor(request, config)
    completion, served_by, mode, notes = await _complete(plan, request, config, on_progress)
    requested = config.backend(request.backend)
    served = config.backends[served_by]
    stats = RefactorStats(
        backend=requested.name,
        model=served.model,
        prediction=mode != "off",
        prediction_via=mode,
        scope=plan.region.kind,
        latency_ms=completion.latency_ms,
        ttft_ms=completion.ttft_ms,
        completion_tokens=completion.completion_tokens,
        prompt_tokens=completion.prompt_tokens,
        output_chars=len(completion.text),
        predicted_chars=len(plan.prompt.prediction),
        action=plan.action,
        served_by=served_by,
        notes=[*notes, *completion.notes],
    )
    if completion.acceptance is not None:
        stats.accepted_prediction_tokens = completion.acceptance.accepted
        stats.rejected_prediction_tokens = completion.acceptance.rejected
        stats.acceptance_source = completion.acceptance.source
    stats.finish()
    original = request.text[plan.region.start : plan.region.end]
    try:
        new_region = clean_output(
            completion.text,
            plan.prompt.prediction if plan.comment else original,
            completion.finish_reason,
            before=request.text[: plan.region.start],
            after=request.text[plan.region.end :],
            drop_instruction_comments=plan.comment is not None,
        )
    except UnusableOutput as exc:
        raise RefactorError(str(exc), stats, completion.text) from None
    edits = region_replacements(request.text, plan.region.start, plan.region.end, new_region)
    return RefactorResult(plan, new_region, edits, stats, request.text)
