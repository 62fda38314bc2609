"""Fitting one attempt into its backend's context window: prompt tokens + the answer's cap
(max_tokens) + a safety margin within the window, in tokens.

Prompt tokens are estimated from characters with the backend's own characters per token, learned
from the prompt tokens it reported on earlier refactors (backend/memory.py), and a conservative
DEFAULT_PROMPT_CHARS_PER_TOKEN before it has reported any. A character outside ASCII counts more
(half a token for each UTF-8 byte past the first): a comment in Chinese takes about a token a
character whatever the code around it takes.

What gives way, in order:
1. the file around the region (`refactor.context_chars` as today, only smaller:
   `prompt.context_around`), sized by estimating the text kept, and the prompt built once;
2. when even the bare region, its instruction and the full cap do not fit, the cap, down to what
   rewriting the region needs (ANSWER_FLOOR_FACTOR times its tokens; a hunks answer writes only
   the changes, so it is let down to MIN_AUTO_MAX_TOKENS);
3. below that, nothing is sent: `WindowTooSmall`, whose message names the window, the region's size
   and what to do. Whether another format is asked then is the attempt's choice (attempt.py).
"""

from __future__ import annotations

import math

from ..backend.window import ContextWindow, WindowFit
from ..config.schema import MIN_AUTO_MAX_TOKENS
from ..formats.prompt import Prompt, context_around
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
# What to do when a window is too small for the region, whatever the format.
LARGER_WINDOW = (
    "use a model or server with a larger window (vLLM: --max-model-len, up to the model's own; llama.cpp: --ctx-size)"
)


class WindowTooSmall(RefactorError):
    """Even the region does not fit the backend's window; nothing was sent. Its parts (the backend,
    the window, what the region and its answer take) let a caller say it in its own words."""

    def __init__(
        self,
        backend: str,
        window: ContextWindow,
        region: str,
        prompt_tokens: int,
        answer_tokens: int,
        answer_for: str,
        advice: str,
    ) -> None:
        self.backend, self.window, self.region = backend, window, region
        self.prompt_tokens, self.answer_tokens = prompt_tokens, answer_tokens
        super().__init__(
            f"{region} does not fit the context window of the backend '{backend}', {window.describe()}: with its "
            f"instruction the prompt takes about {prompt_tokens:,} tokens, and the answer needs about "
            f"{answer_tokens:,} more ({answer_for}); nothing was sent — {advice}"
        )


def estimate_tokens(text: str, chars_per_token: float) -> float:
    extra = len(text.encode("utf-8", "surrogatepass")) - len(text)  # UTF-8 bytes past a character's first
    return len(text) / chars_per_token + extra / 2


def prompt_tokens(messages: list[dict[str, str]], chars_per_token: float) -> int:
    """The prompt's tokens as the backend will count them, estimated on the high side."""
    return _counted(sum(estimate_tokens(m.get("content", ""), chars_per_token) for m in messages), len(messages))


def _counted(text_tokens: float, messages: int) -> int:
    """The estimate of a prompt's text, with the headroom and what the chat template adds per message."""
    return math.ceil(text_tokens * ESTIMATE_HEADROOM) + TOKENS_PER_MESSAGE * (messages + 1)


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


def answer_floor(plan: Plan, edit_format: str, wanted: int, output_chars_per_token: float) -> int:
    """The least cap worth sending: room to write the region again (a hunks answer: its changes)."""
    if edit_format == "hunks":
        return min(wanted, MIN_AUTO_MAX_TOKENS)
    region_tokens = len(plan.original) / output_chars_per_token
    return min(wanted, math.ceil(region_tokens * ANSWER_FLOOR_FACTOR) + MIN_MARGIN)


def fit_prompt(
    plan: Plan,
    edit_format: str,
    wanted: int,
    backend: str,
    window: ContextWindow,
    prompt_chars_per_token: float | None,
    output_chars_per_token: float | None,
    offer_hunks: bool = False,
) -> tuple[Prompt, WindowFit]:
    """The prompt asking for `plan` in `edit_format`, and how it and the answer's cap (`wanted`
    before the window has its say) fit `window`, the window of the backend named `backend`. Raises
    WindowTooSmall; its advice offers the hunks format when `offer_hunks` and that answer would fit."""
    ratio = prompt_chars_per_token or DEFAULT_PROMPT_CHARS_PER_TOKEN
    room = window.tokens - safety_margin(window.tokens)
    full_prompt = plan.prompt_in(edit_format, plan.settings.context_chars)
    full = prompt_tokens(full_prompt.messages, ratio)
    if full + wanted <= room:
        return full_prompt, WindowFit(window, full, wanted, wanted, None)
    bare_prompt = plan.prompt_in(edit_format, 0)
    bare_text = sum(estimate_tokens(m.get("content", ""), ratio) for m in bare_prompt.messages)
    bare = _counted(bare_text, len(bare_prompt.messages))
    floor = answer_floor(plan, edit_format, wanted, output_chars_per_token or DEFAULT_OUTPUT_CHARS_PER_TOKEN)
    if bare + floor > room:
        hunks_fit = offer_hunks and edit_format == "region" and bare + min(wanted, MIN_AUTO_MAX_TOKENS) <= room
        raise _too_small(plan, edit_format, backend, window, bare, floor, ratio, hunks_fit)

    def with_context(context_chars: int) -> int:
        """The prompt's tokens with `context_chars` of the file around the region, from the text kept."""
        if context_chars <= 0:
            return bare
        text, start, end = plan.request.text, plan.region.start, plan.region.end
        before, after, _ = context_around(text, start, end, context_chars)
        kept = estimate_tokens(before, ratio) + estimate_tokens(after, ratio)
        return _counted(bare_text + kept, len(bare_prompt.messages))

    cap = min(wanted, room - bare)
    context_chars = min(plan.settings.context_chars, int((room - cap - bare) * ratio / ESTIMATE_HEADROOM))
    estimate = with_context(context_chars)
    for _ in range(SHRINK_STEPS):
        if estimate + cap <= room or context_chars <= 0:
            break
        context_chars = int(context_chars * (room - cap - bare) / max(estimate - bare, 1) * 0.9)
        estimate = with_context(context_chars)
    prompt = plan.prompt_in(edit_format, context_chars) if context_chars > 0 else bare_prompt
    estimate = prompt_tokens(prompt.messages, ratio)  # the prompt as built
    if estimate + cap > room:
        prompt, context_chars, estimate = bare_prompt, 0, bare
    shortened = context_chars if context_chars < plan.settings.context_chars else None
    return prompt, WindowFit(window, estimate, wanted, cap, shortened)


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


def _too_small(
    plan: Plan,
    edit_format: str,
    backend: str,
    window: ContextWindow,
    bare: int,
    floor: int,
    ratio: float,
    hunks_fit: bool,
) -> WindowTooSmall:
    """The refusal: the window, what the region needs, and what to do."""
    region_tokens = math.ceil(len(plan.original) / ratio * ESTIMATE_HEADROOM)
    region = f"the region ({count_of(plan.region.lines, 'line')}, about {region_tokens:,} tokens)"
    answer = "to write the region again" if edit_format == "region" else "for its changes"
    advice = ["select a smaller region"]
    if hunks_fit:
        advice.append(
            'use the hunks edit format (refactor.edit_format = "hunks", or --edit-format hunks): its answer '
            "holds only the changes"
        )
    advice.append(f"or {LARGER_WINDOW}")
    return WindowTooSmall(backend, window, region, bare, floor, answer, ", ".join(advice))


def region_retry_refused(problem: str, refused: WindowTooSmall) -> str:
    """`auto` asked for hunks, the answer's blocks did not apply (`problem`), and the region format it
    would ask again in does not fit the window (`refused`): what happened, and what to do."""
    return (
        f"the hunks answer could not be applied ({problem}), and the region format, in which it would be asked "
        f"again, does not fit the context window of the backend '{refused.backend}', {refused.window.describe()}: "
        f"{refused.region} with its instruction takes about {refused.prompt_tokens:,} tokens, and writing it again "
        f"about {refused.answer_tokens:,} more; nothing was applied — select a smaller region, or {LARGER_WINDOW}"
    )
