"""Fitting a refactor into its backend's context window: prompt tokens + the answer's cap (max_tokens)
+ a safety margin within the window, in tokens.

Prompt tokens are estimated from characters with the backend's own characters per token, learned
from the prompt tokens it reported on earlier refactors (backend/memory.py), and a conservative
DEFAULT_PROMPT_CHARS_PER_TOKEN before it has reported any. A character outside ASCII counts more
(half a token for each UTF-8 byte past the first): a comment in Chinese takes about a token a
character whatever the code around it takes.

What gives way, in order:
1. the file around the region (`refactor.context_chars` as today, only smaller: `prompt._context`);
2. when even the bare region, its instruction and the full cap do not fit, the cap, down to what
   rewriting the region needs (ANSWER_FLOOR_FACTOR times its tokens; a hunks answer writes only
   the changes, so it is let down to MIN_AUTO_MAX_TOKENS);
3. below that, nothing is sent: one message names the window, the region's size and what to do.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..backend.memory import BackendMemory
from ..backend.window import ContextWindow, WindowFit
from ..config.schema import MIN_AUTO_MAX_TOKENS, BackendConfig
from ..text import count_of
from .plan import Plan, RefactorError

# Characters per prompt token before a backend has reported any: code in a BPE vocabulary takes 3-4,
# English 4; the low end leaves room for dense code and for a tokenizer worse than most.
DEFAULT_PROMPT_CHARS_PER_TOKEN = 2.5
# Output tokens of a region before its backend's ratio is known: default_max_tokens' own estimate.
DEFAULT_OUTPUT_CHARS_PER_TOKEN = 3.0
# Files differ from the one the ratio was learned on (more comments, longer names): 5 % more tokens.
ESTIMATE_HEADROOM = 1.05
# A chat template wraps each message in a few tokens of its own (role markers, separators).
TOKENS_PER_MESSAGE = 8
# The window's own slack: a few per cent, at least a few dozen tokens.
MARGIN_SHARE, MIN_MARGIN = 0.03, 32
# The least cap for an answer that rewrites the region: its tokens and a fifth more (a region that grows).
ANSWER_FLOOR_FACTOR = 1.2
SHRINK_STEPS = 8  # a context with more non-ASCII text than the estimate assumed is cut again, at most this often
# A refactor waits this long for its backend's first probe, and only while nothing is known of its window.
PROBE_WAIT_S = 1.0


class WindowTooSmall(RefactorError):
    """Even the region does not fit the backend's window; nothing was sent."""


def estimate_tokens(text: str, chars_per_token: float) -> float:
    extra = len(text.encode("utf-8", "surrogatepass")) - len(text)  # UTF-8 bytes past a character's first
    return len(text) / chars_per_token + extra / 2


def prompt_tokens(messages: list[dict[str, str]], chars_per_token: float) -> int:
    """The prompt's tokens as the backend will count them, estimated on the high side."""
    text_tokens = sum(estimate_tokens(m.get("content", ""), chars_per_token) for m in messages)
    return math.ceil(text_tokens * ESTIMATE_HEADROOM) + TOKENS_PER_MESSAGE * (len(messages) + 1)


def chars_per_token_seen(messages: list[dict[str, str]], reported_tokens: int | None) -> float | None:
    """The prompt's characters per token, from the prompt tokens the backend reported for it (its
    template's own tokens included: the ratio errs small, as the budget should)."""
    if not reported_tokens or reported_tokens <= 0:
        return None
    chars = sum(len(m.get("content", "")) for m in messages)
    extra = sum(len(m.get("content", "").encode("utf-8", "surrogatepass")) for m in messages) - chars
    ascii_tokens = reported_tokens - extra / 2
    return chars / ascii_tokens if chars and ascii_tokens > 0 else None


def safety_margin(window: int) -> int:
    return max(MIN_MARGIN, math.ceil(window * MARGIN_SHARE))


def answer_floor(plan: Plan, output_chars_per_token: float) -> int:
    """The least cap worth sending: room to write the region again (a hunks answer: its changes)."""
    if plan.edit_format.format == "hunks":
        return min(plan.max_tokens, MIN_AUTO_MAX_TOKENS)
    region_tokens = len(plan.prompt.prediction) / output_chars_per_token
    return min(plan.max_tokens, math.ceil(region_tokens * ANSWER_FLOOR_FACTOR) + MIN_MARGIN)


def fit_plan(
    plan: Plan,
    backend: str,
    window: ContextWindow,
    prompt_chars_per_token: float | None,
    output_chars_per_token: float | None,
) -> Plan:
    """`plan` with a prompt and a cap that fit `window`, the window of the backend named `backend`,
    and how (`Plan.fit`); raises WindowTooSmall. A plan fitted before is fitted afresh (another
    backend of the chain, a window learned since)."""
    if plan.fit is not None:
        planned = plan.prompt_with(plan.settings.context_chars)
        plan = replace(plan, prompt=planned, max_tokens=plan.fit.max_tokens_wanted, fit=None)
    ratio = prompt_chars_per_token or DEFAULT_PROMPT_CHARS_PER_TOKEN
    room = window.tokens - safety_margin(window.tokens)
    wanted = plan.max_tokens
    full = prompt_tokens(plan.prompt.messages, ratio)
    if full + wanted <= room:
        return replace(plan, fit=WindowFit(window, full, wanted, wanted, None))
    bare_prompt = plan.prompt_with(0)
    bare = prompt_tokens(bare_prompt.messages, ratio)
    floor = answer_floor(plan, output_chars_per_token or DEFAULT_OUTPUT_CHARS_PER_TOKEN)
    if bare + floor > room:
        if plan.edit_format.format == "region" and plan.edit_format.automatic:
            why = f"auto, hunks: the region written again does not fit {backend}'s window of {window.tokens:,} tokens"
            try:
                return fit_plan(
                    plan.in_hunks_format(why), backend, window, prompt_chars_per_token, output_chars_per_token
                )
            except WindowTooSmall:
                pass  # the region's own refusal says more
        raise WindowTooSmall(_too_small(plan, backend, window, bare, floor, ratio))
    cap = min(wanted, room - bare)
    context_chars = min(plan.settings.context_chars, int((room - cap - bare) * ratio / ESTIMATE_HEADROOM))
    prompt = plan.prompt_with(context_chars) if context_chars > 0 else bare_prompt
    estimate = prompt_tokens(prompt.messages, ratio)
    for _ in range(SHRINK_STEPS):
        if estimate + cap <= room or context_chars <= 0:
            break
        context_chars = int(context_chars * (room - cap - bare) / max(estimate - bare, 1) * 0.9)
        prompt = plan.prompt_with(context_chars) if context_chars > 0 else bare_prompt
        estimate = prompt_tokens(prompt.messages, ratio)
    if estimate + cap > room:
        prompt, context_chars, estimate = bare_prompt, 0, bare
    shortened = context_chars if context_chars < plan.settings.context_chars else None
    return replace(plan, prompt=prompt, max_tokens=cap, fit=WindowFit(window, estimate, wanted, cap, shortened))


async def fitted_for(plan: Plan, backend: BackendConfig, memory: BackendMemory) -> Plan:
    """`plan` fitted to the backend's window when it is known, as planned when it is not. Known, it
    costs no wait; unknown, the backend's first probe may still be on its way (PROBE_WAIT_S).

    Refused before sending only by a window the backend said in this process: one an earlier process
    heard may have grown since (the user followed the advice and restarted the server with more), so
    the backend is asked again, by its probe or else by sending, and its refusal settles it."""
    window = await memory.window_soon(backend, PROBE_WAIT_S)
    if window is None:
        return plan
    learned = memory.learned(backend)
    try:
        return fit_plan(plan, backend.name, window, learned.prompt_chars_per_token, learned.output_chars_per_token)
    except WindowTooSmall:
        fresh = await memory.confirmed_window(backend, PROBE_WAIT_S)
        if fresh is None:
            return plan
        if fresh == window:
            raise
    return fit_plan(plan, backend.name, fresh, learned.prompt_chars_per_token, learned.output_chars_per_token)


def refitted_after_refusal(plan: Plan, sent: Plan, backend: BackendConfig, memory: BackendMemory, window: int) -> Plan:
    """`plan` fitted to the window the backend named when it refused `sent` as too long (remembered).
    When the estimate finds that `sent` fits it, the estimate was short: it counts more tokens a
    character from now on, and the plan is fitted again with that."""
    learned_window = ContextWindow(window, "error")
    memory.remember_window(backend, learned_window)
    for _ in range(2):
        learned = memory.learned(backend)
        refit = fit_plan(
            plan, backend.name, learned_window, learned.prompt_chars_per_token, learned.output_chars_per_token
        )
        if refit.prompt.messages != sent.prompt.messages or refit.max_tokens != sent.max_tokens:
            break
        memory.distrust_prompt_ratio(backend, learned.prompt_chars_per_token or DEFAULT_PROMPT_CHARS_PER_TOKEN)
    return refit


def fit_note(fit: WindowFit, after_refusal: bool = False) -> str | None:
    """What the window changed, for the stats' notes; None when it changed nothing. `after_refusal`:
    the backend had refused the prompt as planned, and named its window then."""
    if after_refusal:
        lead = (
            f"the backend refused the first attempt as too long for its context window of {fit.window.tokens:,} "
            "tokens (HTTP 400); sent again, fitted to it"
        )
    else:
        lead = f"fitted to the backend's context window of {fit.window.describe()}"
    if not fit.changed:
        return lead if after_refusal else None
    changes = []
    if fit.context_chars is not None:
        changes.append(
            "sent the region without the file around it"
            if fit.context_chars == 0
            else f"kept {fit.context_chars:,} characters of the file around the region"
        )
    if fit.capped:
        changes.append(f"capped the answer at {fit.max_tokens:,} tokens (not {fit.max_tokens_wanted:,})")
    return f"{lead}: " + " and ".join(changes)


def _too_small(plan: Plan, backend: str, window: ContextWindow, bare: int, floor: int, ratio: float) -> str:
    """The refusal: the window, what the region needs, and what to do."""
    region_tokens = math.ceil(len(plan.prompt.prediction) / ratio * ESTIMATE_HEADROOM)
    lines = count_of(plan.region.lines, "line")
    answer = "to write the region again" if plan.edit_format.format == "region" else "for its changes"
    advice = ["select a smaller region"]
    room = window.tokens - safety_margin(window.tokens)
    hunks_tried = plan.edit_format.automatic  # `auto` asked hunks already (fit_plan)
    if (
        plan.edit_format.format == "region"
        and not hunks_tried
        and bare + min(plan.max_tokens, MIN_AUTO_MAX_TOKENS) <= room
    ):
        advice.append(
            'use the hunks edit format (refactor.edit_format = "hunks", or --edit-format hunks): its answer '
            "holds only the changes"
        )
    advice.append(
        "or use a model or server with a larger window (vLLM: --max-model-len, up to the model's own; "
        "llama.cpp: --ctx-size)"
    )
    return (
        f"the region ({lines}, about {region_tokens:,} tokens) does not fit the context window of the backend "
        f"'{backend}', {window.describe()}: with its instruction the prompt takes about {bare:,} "
        f"tokens, and the answer needs about {floor:,} more ({answer}); nothing was sent — " + ", ".join(advice)
    )
