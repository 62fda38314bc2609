"""A refactor, planned: the request → scope → instruction → backend chain, and the edit format asked.

A `Plan` holds what does not change between the requests a refactor may send: the request, its
region, instruction and action, the backends in order and how the prediction may reach each, the
settings. Each request is an attempt (`attempt.py`): its own format, prompt and cap, made from the
plan by the engine's attempt loop (`engine.Engine.run`). The server, the CLI and `bench` all go
through the same two steps: `Engine.plan`, then `Engine.run`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

from ..check.verify import Problem
from ..config.schema import (
    APPLY_ID,
    FIX_DIAGNOSTICS_ID,
    INSTRUCTION_COMMENT_ID,
    MIN_AUTO_MAX_TOKENS,
    BackendConfig,
    Config,
    ConfigError,
    EditFormat,
    PredictionVia,
    RefactorSettings,
    ScopeMode,
)
from ..formats.edits import Replacement, apply_replacements
from ..formats.hygiene import asks_for_removal
from ..formats.lazy_merge import placed_prediction
from ..formats.prompt import APPLY_INSTRUCTION, Prompt, build_prompt, region_text
from ..languages.identify import language_of
from ..regions import InstructionComment, Region, ScopeCache, choose_region, find_instruction_comment
from ..stats.measured import RefactorStats

FIX_DIAGNOSTICS_INSTRUCTION = "Fix the problems listed below. Change only what is needed to fix them."
APPLY_TITLE = "apply the snippet"
TITLE_CHARS = 60


class RefactorError(Exception):
    """The refactor cannot go on; the message is for the user and says what to do."""

    def __init__(
        self,
        message: str,
        stats: RefactorStats | None = None,
        output: str | None = None,
        problem: Problem | None = None,
    ) -> None:
        super().__init__(message)
        self.stats = stats
        self.output = output  # the model's raw answer, when it came but could not be applied
        self.problem = problem  # what the check before the edit found in it, when that refused it


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
    # The code to merge into the region (an apply: `refactor-lsp apply`, `refactorLsp.applySnippet`): its
    # part for this region, found by placement.where. The instruction is then the apply's own.
    snippet: str | None = None
    # A complete snippet (no lazy marker, its definitions whole) is spliced as written; this asks the
    # model to merge it all the same (`apply --merge-with-model`, `mergeWithModel`; the bench).
    merge_with_model: bool = False


# (backend, override) → how the prediction is sent, and why in words when the cost guard decided ("" otherwise)
PredictionPolicy = Callable[[BackendConfig, "bool | None"], tuple[PredictionVia, str]]


@dataclass(frozen=True)
class Route:
    """One backend of the chain and how the prediction reaches it: "field", "prompt" or "off". In a
    plan, as its policy says; in an attempt, as that request sends it (attempt.py)."""

    backend: BackendConfig
    prediction: PredictionVia
    prediction_reason: str = ""  # the cost guard's, for the planned prediction (prediction_guard)


@dataclass(frozen=True)
class Plan:
    """What does not change between a refactor's attempts, decided before the model is called."""

    request: RefactorRequest
    region: Region
    instruction: str
    action: str
    title: str  # what the editor shows while it runs
    comment: InstructionComment | None
    original: str  # what the answer replaces: the region less the instruction comment
    routes: tuple[Route, ...]  # the requested backend first, then its fallbacks
    settings: RefactorSettings
    format_asked: EditFormat  # the request's, else its action preset's, else refactor.edit_format
    format_asked_by: str  # which of those, in words ("the request", "action 'rename'", ...)
    # The instruction asks for code to be removed (its preset says so, or the user's words do): the
    # deletion guard lets an answer that removes most of the region through.
    removes_code: bool = False
    snippet: str | None = None  # the request's: the code merged into the region

    @property
    def requested(self) -> BackendConfig:
        return self.routes[0].backend

    @property
    def language(self) -> str:
        """The document's languageId: the editor's, else a guess from the file name."""
        return language_of(self.request.path, self.request.language_id)

    def proposer_prediction(self, prediction: str) -> str:
        """What a vLLM server that drafts from the prediction gets in `vllm_xargs`: for an apply, the region
        with the snippet merged in as a mechanical merge places it (formats/lazy_merge.py; replayed on the
        apply tasks: benchmarks/recorded/2026-12-05-prediction-proposer.md); else the attempt's prediction."""
        if self.snippet is None or self.action != APPLY_ID:
            return prediction
        return placed_prediction(prediction, self.snippet, self.language)

    def with_answer(self, answer: str, instruction: str) -> Plan:
        """This plan with `answer` in place of the region, asked `instruction` of it: what a repair shows
        the model (the answer between the markers) and predicts (the answer). Its document is not the
        user's: a repair's answer is read, and its edits made, by the plan it repairs for."""
        start, end, text = self.region.start, self.region.end, self.request.text
        request = replace(
            self.request,
            text=text[:start] + answer + text[end:],
            instruction=instruction,
            action_id=None,
            diagnostics=(),
        )
        region = replace(self.region, end=start + len(answer))
        return replace(
            self,
            request=request,
            region=region,
            instruction=instruction,
            comment=None,
            original=answer,
            action="repair",
        )

    def prompt_in(self, edit_format: str, context_chars: int) -> Prompt:
        """The prompt asking for this refactor in `edit_format`, with at most `context_chars` of the
        file around the region; its prediction is `original`."""
        return build_prompt(
            text=self.request.text,
            start=self.region.start,
            end=self.region.end,
            instruction=self.instruction,
            path=self.request.path,
            language_id=self.request.language_id,
            diagnostics=list(self.request.diagnostics) if self.action == FIX_DIAGNOSTICS_ID else None,
            context_chars=context_chars,
            drop=(self.comment.start, self.comment.end) if self.comment else None,
            edit_format=edit_format,
            hunks_form=self.settings.hunks_form,
            snippet=self.snippet,
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
    return max(MIN_AUTO_MAX_TOKENS, math.ceil(predicted_chars / 3.0 * (3 if edit_format == "hunks" else 2)) + 128)


def action_title(action: str, instruction: str, config: Config) -> str:
    if action == APPLY_ID:
        return APPLY_TITLE
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
    if request.snippet is not None:
        return APPLY_INSTRUCTION, APPLY_ID, None
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
    request: RefactorRequest, config: Config, policy: PredictionPolicy, scope_cache: ScopeCache | None = None
) -> Plan:
    """Plan a refactor; `policy` says how the prediction reaches each backend, `scope_cache` is the
    document's (the server keeps one per open document). Raises RefactorError."""
    settings = config.refactor
    _check_text(request.instruction or "", "the instruction")
    _check_text(request.text, "the document")
    _check_text("\n".join(request.diagnostics), "a diagnostic to fix")
    if request.snippet is not None:
        _check_text(request.snippet, "the snippet")
        if len(request.snippet) > settings.max_region_chars:
            raise RefactorError(
                f"the snippet has {len(request.snippet):,} characters, over refactor.max_region_chars "
                f"({settings.max_region_chars:,}); nothing was sent"
            )
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
    format_asked, format_asked_by = _format_asked(request, config, action)
    return Plan(
        request=request,
        region=region,
        instruction=instruction,
        action=action,
        title=action_title(action, instruction, config)
        + (f" ({region.describe()})" if region.oversized_note() else ""),
        comment=comment,
        original=region_text(request.text, region.start, region.end, (comment.start, comment.end) if comment else None),
        routes=tuple(Route(backend, *policy(backend, request.prediction)) for backend in chain),
        settings=settings,
        format_asked=format_asked,
        format_asked_by=format_asked_by,
        removes_code=removes_code,
        snippet=request.snippet,
    )


def _format_asked(request: RefactorRequest, config: Config, action: str) -> tuple[EditFormat, str]:
    """The request's format, else its action preset's, else refactor.edit_format; and which, in words."""
    preset = next((p for p in config.presets() if p.id == action), None)
    if request.edit_format:
        return request.edit_format, "the request"
    if preset is not None and preset.edit_format:
        return preset.edit_format, f"action {preset.id!r}"
    return config.refactor.edit_format, "refactor.edit_format"
