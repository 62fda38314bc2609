"""A refactor, planned: the request → scope → instruction → prompt + prediction → backend chain.

A refactor is planned exactly once into an immutable `Plan`; `engine.Engine` runs it (backend
stream with progress → output hygiene → edits → stats). The server, the CLI and `bench` all go
through the same two steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..backend.window import WindowFit
from ..config.schema import (
    FIX_DIAGNOSTICS_ID,
    INSTRUCTION_COMMENT_ID,
    BackendConfig,
    Config,
    ConfigError,
    EditFormat,
    HunksForm,
    PredictionVia,
    RefactorSettings,
    ScopeMode,
)
from ..formats.choice import FormatChoice, FormatHistory, choose_format
from ..formats.edits import Replacement, apply_replacements
from ..formats.hygiene import asks_for_removal
from ..formats.prompt import Prompt, build_prompt
from ..scope import InstructionComment, Region, ScopeCache, choose_region, find_instruction_comment
from ..scope.file_language import language_of
from ..stats.measured import RefactorStats

FIX_DIAGNOSTICS_INSTRUCTION = "Fix the problems listed below. Change only what is needed to fix them."
TITLE_CHARS = 60


class RefactorError(Exception):
    """The refactor cannot go on; the message is for the user and says what to do."""

    def __init__(self, message: str, stats: RefactorStats | None = None, output: str | None = None) -> None:
        super().__init__(message)
        self.stats = stats
        self.output = output  # the model's raw answer, when it came but could not be applied


@dataclass(frozen=True)
class RefactorRequest:
    path: str  # a file path or URI: names the file in the prompt and picks the language
    text: str  # the document as it was when the request was made
    start: int  # the selection, in offsets into `text`; start == end is a cursor
    end: int
    instruction: str | None = None
    action_id: str | None = None
    backend: str | None = None
    # None: as the backend is configured; False: none; True: also with a hunks answer, which gets no
    # prediction field otherwise (benchmarks/README.md, "Edit formats": the bench measures both)
    prediction: bool | None = None
    diagnostics: tuple[str, ...] = ()
    language_id: str | None = None
    scope: ScopeMode | None = None  # None: the config's refactor.scope
    edit_format: EditFormat | None = None  # None: the action preset's, else refactor.edit_format
    # vLLM's `cache_salt` (llama.cpp: no prompt cache at all): requests with different salts share no
    # cached prompt. The bench gives each run its own, so no run reads a prompt another run left.
    cache_salt: str | None = None
    # What the user changes to raise the answer's token cap, for messages (the bench: --max-tokens).
    max_tokens_setting: str = "refactor.max_tokens"
    # How many refactors run at once with this one (a batch's): its latency and speed are measured
    # under that load, so what `auto` and the prediction guard learn of speed leaves it out.
    concurrency: int = 1


# (backend, override) → how the prediction is sent, and why in words when the cost guard decided ("" otherwise)
PredictionPolicy = Callable[[BackendConfig, "bool | None"], tuple[PredictionVia, str]]


@dataclass(frozen=True)
class Route:
    """One backend of the chain and how the prediction reaches it: "field", "prompt" or "off"."""

    backend: BackendConfig
    prediction: PredictionVia
    planned_prediction: PredictionVia = "off"  # before the edit format had its say (hunks sends no prediction field)
    prediction_reason: str = ""  # the cost guard's, for the planned prediction (prediction_guard)


@dataclass(frozen=True)
class Plan:
    """Everything decided before the model is called."""

    request: RefactorRequest
    region: Region
    instruction: str
    action: str
    title: str  # what the editor shows while it runs
    comment: InstructionComment | None
    prompt: Prompt
    routes: tuple[Route, ...]  # the requested backend first, then its fallbacks
    max_tokens: int
    settings: RefactorSettings
    edit_format: FormatChoice
    region_prompt: Prompt | None = None  # `auto` chose hunks: the prompt of a retry in the region format
    # The instruction asks for code to be removed (its preset says so, or the user's words do): the
    # deletion guard lets an answer that removes most of the region through.
    removes_code: bool = False
    # How `prompt` and `max_tokens` were fitted into the backend's context window (context_fit.py);
    # None: the window is unknown, or not fitted yet.
    fit: WindowFit | None = None

    @property
    def requested(self) -> BackendConfig:
        return self.routes[0].backend

    @property
    def original(self) -> str:
        """What the answer replaces: the region as sent (less the instruction comment)."""
        if self.comment is not None:
            return self.prompt.prediction
        return self.request.text[self.region.start : self.region.end]

    def in_region_format(self, why: str) -> Plan:
        """The same refactor asked again in the region format (a hunks answer that did not apply)."""
        assert self.region_prompt is not None
        return replace(
            self,
            prompt=self.region_prompt,
            region_prompt=None,
            edit_format=FormatChoice("region", why, automatic=False),
            routes=tuple(replace(r, prediction=r.planned_prediction) for r in self.routes),
            max_tokens=self.fit.max_tokens_wanted if self.fit else self.max_tokens,
            fit=None,  # fitted again, in its own format, when it runs
        )

    def in_hunks_format(self, why: str) -> Plan:
        """The same refactor asked in the hunks format: `auto` chose the region format, and the region
        written again does not fit the backend's context window (context_fit.py)."""
        prompt = _prompt(
            self.request,
            self.region,
            self.instruction,
            self.action,
            self.comment,
            self.settings.context_chars,
            "hunks",
            self.settings.hunks_form,
        )
        field_off = self.request.prediction is not True  # as planned: a hunks answer gets no prediction field
        return replace(
            self,
            prompt=prompt,
            region_prompt=None,
            edit_format=FormatChoice("hunks", why, automatic=False),
            routes=tuple(
                replace(r, prediction="off" if r.prediction == "field" and field_off else r.prediction)
                for r in self.routes
            ),
            max_tokens=default_max_tokens(len(prompt.prediction), self.settings, "hunks"),
            fit=None,
        )

    def prompt_with(self, context_chars: int) -> Prompt:
        """This plan's prompt with at most `context_chars` of the file around the region."""
        return _prompt(
            self.request,
            self.region,
            self.instruction,
            self.action,
            self.comment,
            context_chars,
            self.edit_format.format,
            self.settings.hunks_form,
        )


@dataclass(frozen=True)
class Progress:
    generated_chars: int
    predicted_chars: int
    elapsed_s: float
    # Output tokens ÷ seconds since the first token: the final figure's definition, live. Counted by
    # the server when it reports tokens per chunk (vLLM), else estimated from the characters.
    tokens_per_s: float | None
    tokens_estimated: bool = False

    @property
    def fraction(self) -> float:
        """Characters generated ÷ characters predicted, capped below 100 % until the stream ends."""
        if self.predicted_chars <= 0:
            return 0.0
        return min(self.generated_chars / self.predicted_chars, 0.99)


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class RefactorResult:
    plan: Plan
    new_region: str
    edits: list[Replacement]
    stats: RefactorStats

    @property
    def text(self) -> str:
        """The document the edits were computed against."""
        return self.plan.request.text

    @property
    def new_text(self) -> str:
        return apply_replacements(self.text, self.edits)


def default_max_tokens(predicted_chars: int, settings: RefactorSettings, edit_format: str = "region") -> int:
    """Room for the region to grow: about twice its tokens, at least 256, unless configured. A hunks
    answer that rewrites most of the region writes it twice (SEARCH, REPLACE), so it gets three times."""
    if settings.max_tokens:
        return settings.max_tokens
    return max(256, math.ceil(predicted_chars / 3.0 * (3 if edit_format == "hunks" else 2)) + 128)


def cut_off_message(plan: Plan, completion_tokens: int | None = None) -> str:
    """Why an answer was cut off (finish_reason "length"), with the advice that fits: a server that
    stopped well before our cap has a limit of its own (its context window); a cap that already gave
    the region room to double was not too small (the model repeats itself, or writes past the
    region); a tighter cap the user set is raised, or the region made smaller."""
    cap, setting = plan.max_tokens, plan.request.max_tokens_setting
    if plan.fit is not None and plan.fit.capped and (completion_tokens is None or completion_tokens >= 0.9 * cap):
        return (
            f"the model's answer was cut off at {cap:,} tokens, all that the backend's context window "
            f"({plan.fit.window.tokens:,} tokens) leaves after the prompt, so nothing was applied — select a "
            "smaller region, or use a model or server with a larger window (vLLM: --max-model-len, llama.cpp: "
            "--ctx-size)"
        )
    if completion_tokens is not None and completion_tokens < 0.9 * cap:
        return (
            f"the backend cut the answer off after {completion_tokens:,} tokens, before the {cap:,} this refactor "
            "allows: a limit of the server's own (its context window, or its maximum answer length) is too small, "
            "so nothing was applied — select a smaller region, or raise the server's limit"
        )
    region = f"{plan.region.lines:,}-line"
    if cap >= default_max_tokens(len(plan.original), RefactorSettings(), "region"):  # the automatic cap: twice
        return (
            f"the model's answer was cut off at {cap:,} tokens, more than twice what the {region} region takes: "
            "it was probably repeating itself or writing more than the region, so nothing was applied — run it "
            f"again or try another model (if the change really adds that much, raise {setting})"
        )
    smaller = " or select a smaller region" if plan.region.lines > 1 else ""
    return (
        f"the model's answer was cut off at its token limit ({cap:,} tokens, {setting}) before the end of the "
        f"{region} region, so nothing was applied — raise {setting}{smaller}"
    )


def action_title(action: str, instruction: str, config: Config) -> str:
    for preset in config.presets():
        if preset.id == action:
            return preset.title
    if action == FIX_DIAGNOSTICS_ID:
        return "fix diagnostics"
    return instruction if len(instruction) <= TITLE_CHARS else instruction[: TITLE_CHARS - 3] + "..."


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


def plan_refactor(
    request: RefactorRequest,
    config: Config,
    policy: PredictionPolicy,
    history: FormatHistory | None = None,
    scope_cache: ScopeCache | None = None,
) -> Plan:
    """Plan a refactor once; `policy` says how the prediction reaches each backend, `history` how
    each edit format went on it, `scope_cache` is the document's (the server keeps one per open
    document). Raises RefactorError."""
    settings = config.refactor
    _check_text(request.instruction or "", "the instruction")
    _check_text(request.text, "the document")
    _check_text("\n".join(request.diagnostics), "a diagnostic to fix")
    if not request.text.strip():
        raise RefactorError("the file is empty: there is no code to rewrite, so nothing was sent")
    if len(request.text) > settings.max_file_chars:
        raise RefactorError(
            f"the file has {len(request.text):,} characters, over refactor.max_file_chars "
            f"({settings.max_file_chars:,}); nothing was sent"
        )
    try:
        first = config.backend(request.backend)
    except ConfigError as exc:
        raise RefactorError(str(exc)) from None
    region = choose_region(
        request.text,
        request.start,
        request.end,
        request.scope or settings.scope,
        language_of(request.path, request.language_id),
        scope_cache,
    )
    if region.end - region.start > settings.max_region_chars:
        raise RefactorError(
            f"the region to rewrite has {region.end - region.start:,} characters, over "
            f"refactor.max_region_chars ({settings.max_region_chars:,}); nothing was sent — select less"
        )
    instruction, action, comment = resolve_action(request, config, region)
    preset = next((p for p in config.presets() if (p.id, p.instruction) == (action, instruction)), None)
    removes_code = preset.removes_code if preset is not None else asks_for_removal(instruction)
    chain = [first, *(config.backends[name] for name in first.fallback)]
    decided = [policy(backend, request.prediction) for backend in chain]
    choice = _edit_format(request, config, action, region, first, decided[0][0], history)

    def prompt_in(edit_format: str) -> Prompt:
        return _prompt(
            request, region, instruction, action, comment, settings.context_chars, edit_format, settings.hunks_form
        )

    prompt = prompt_in(choice.format)
    routes = []
    for backend, (mode, reason) in zip(chain, decided, strict=True):
        # A hunks answer is mostly new text: a whole-region prediction would be rejected, and OpenAI
        # bills rejected prediction tokens (benchmarks/README.md, "Edit formats", has the figures).
        sent = "off" if choice.format == "hunks" and mode == "field" and request.prediction is not True else mode
        routes.append(Route(backend, sent, mode, reason))
    return Plan(
        request=request,
        region=region,
        instruction=instruction,
        action=action,
        title=action_title(action, instruction, config)
        + (f" ({region.describe()})" if region.oversized_note() else ""),
        comment=comment,
        prompt=prompt,
        routes=tuple(routes),
        max_tokens=default_max_tokens(len(prompt.prediction), settings, choice.format),
        settings=settings,
        edit_format=choice,
        region_prompt=prompt_in("region") if choice.retry_in_region else None,
        removes_code=removes_code,
    )


def _prompt(
    request: RefactorRequest,
    region: Region,
    instruction: str,
    action: str,
    comment: InstructionComment | None,
    context_chars: int,
    edit_format: str,
    hunks_form: HunksForm,
) -> Prompt:
    return build_prompt(
        text=request.text,
        start=region.start,
        end=region.end,
        instruction=instruction,
        path=request.path,
        language_id=request.language_id,
        diagnostics=list(request.diagnostics) if action == FIX_DIAGNOSTICS_ID else None,
        context_chars=context_chars,
        drop=(comment.start, comment.end) if comment else None,
        edit_format=edit_format,
        hunks_form=hunks_form,
    )


def _edit_format(
    request: RefactorRequest,
    config: Config,
    action: str,
    region: Region,
    backend: BackendConfig,
    prediction_via: str,
    history: FormatHistory | None,
) -> FormatChoice:
    """The request's format, else its action preset's, else refactor.edit_format; `auto` decided."""
    preset = next((p for p in config.presets() if p.id == action), None)
    if request.edit_format:
        requested, by = request.edit_format, "the request"
    elif preset is not None and preset.edit_format:
        requested, by = preset.edit_format, f"action {preset.id!r}"
    else:
        requested, by = config.refactor.edit_format, "refactor.edit_format"
    return choose_format(
        requested, by, region.lines, config.refactor.hunks_min_lines, backend.name, history, prediction_via
    )
