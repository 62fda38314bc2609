"""The context window: read from what backends say (their wordings as they write them), and an attempt
fitted into it (context shortened first, then the answer's cap, else refused with one message)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from lsp_server.backend.memory import Learned
from lsp_server.backend.window import ContextWindow, model_entry, window_of_entry, window_of_props, window_of_refusal
from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.pipeline.attempt import Attempt, cut_off_message, decide_format, make_attempt
from lsp_server.pipeline.context_fit import (
    DEFAULT_PROMPT_CHARS_PER_TOKEN,
    WindowTooSmall,
    chars_per_token_seen,
    estimate_tokens,
    fit_note,
    prompt_tokens,
    safety_margin,
)
from lsp_server.pipeline.plan import Plan, RefactorRequest, plan_refactor
from lsp_server.testing.context_limit import refusal
from tests.stdlib_targets import smallest_function_looping_over

# The refusals as each server writes them. vLLM's wording changed over the versions; each is quoted
# from its source: vllm/entrypoints/openai/serving_engine.py (`_validate_prompt_and_tokenize`, 2024),
# the form the demo's vLLM answered textwrap.py with (issue 22; vLLM stops counting one token past the
# window, hence "at least"), the `max_tokens` check of 2025, and vllm/renderers/params.py
# (`_token_len_check`, 2026). OpenAI: the `context_length_exceeded` error. llama.cpp: tools/server
# (`exceed_context_size_error`, which also carries `n_ctx` in the body).
REFUSALS = [
    (
        "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2000 in the "
        "messages, 100 in the completion). Please reduce the length of the messages or completion.",
        2048,
    ),
    (
        "This model's maximum context length is 4096 tokens. However, you requested 555 output tokens and your "
        "prompt contains at least 4097 input tokens, for a total of at least 4652 tokens. Please reduce the length "
        "of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=4097)",
        4096,
    ),
    (
        "'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 "
        "tokens and your request has 2778 input tokens (8000 > 4096 - 2778). None",
        4096,
    ),
    (
        "You passed 5000 input tokens and requested 100 output tokens. However, the model's context length is only "
        "8192 tokens, resulting in a maximum input length of 8092 tokens. Please reduce the length of the input "
        "prompt.",
        8192,
    ),
    (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130512 tokens. "
        "Please reduce the length of the messages.",
        128000,
    ),
    ("request (5012 tokens) exceeds the available context size (4096 tokens), try increasing it", 4096),
]


@pytest.mark.parametrize(("message", "window"), REFUSALS)
def test_each_servers_refusal_names_its_window(message: str, window: int) -> None:
    assert window_of_refusal(message) == window


def test_refusals_that_name_no_window_are_not_read_as_one() -> None:
    # OpenAI's cap on one answer is not the window; nor is a prediction refused, or a number out of range.
    assert (
        window_of_refusal("max_tokens is too large: 50000. This model supports at most 32768 completion tokens") is None
    )
    assert window_of_refusal("Unrecognized request argument supplied: prediction") is None
    assert window_of_refusal("This model's maximum context length is 12 tokens.") is None
    assert window_of_refusal("This model's maximum context length is 999999999 tokens.") is None


def test_llamacpps_body_is_read_before_its_words() -> None:
    body = {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9000, "n_ctx": 8192}
    assert window_of_refusal("the request exceeds the available context size, try increasing it", body) == 8192
    assert window_of_refusal("", {"n_ctx": "8192"}) is None  # a string is no window


def test_the_loopback_backend_refuses_in_each_servers_words() -> None:
    request = {"messages": [{"role": "user", "content": "word " * 3000}], "max_tokens": 555}  # 6,000 tokens
    for kind in ("vllm", "openai", "llamacpp"):
        body = refusal(kind, 4096, request)
        assert body is not None, kind
        assert window_of_refusal(body["error"]["message"], body) == 4096
    vllm = refusal("vllm", 4096, request)
    assert vllm == {
        "error": {"message": REFUSALS[1][0], "type": "BadRequestError", "param": "input_tokens", "code": 400}
    }
    assert refusal("vllm", 4096, {"messages": [{"role": "user", "content": "short"}], "max_tokens": 555}) is None


def test_window_reports_are_read_typed() -> None:
    models = {"data": [{"id": "other", "max_model_len": 1}, {"id": "m", "max_model_len": 4096}]}
    entry = model_entry(models, "m")
    assert entry is not None and window_of_entry(entry) == 4096
    assert model_entry(models, "absent") is None and model_entry(["not", "a", "list"], "m") is None
    for bad in (True, "4096", 4096.0, -1, 10, None):
        assert window_of_entry({"id": "m", "max_model_len": bad}) is None
    assert window_of_props({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}) == 8192
    assert window_of_props({"n_ctx": 8192}) is None and window_of_props("8192") is None


def test_estimates_count_more_for_text_outside_ascii() -> None:
    assert estimate_tokens("abcd" * 100, 4.0) == 100
    assert estimate_tokens("中文注释" * 25, 4.0) == 25 + 100  # a token a character at least
    messages = [{"role": "user", "content": "x" * 3000}]
    assert chars_per_token_seen(messages, 1000) == 3.0
    assert chars_per_token_seen(messages, None) is None and chars_per_token_seen(messages, 0) is None


# -- fitting an attempt -----------------------------------------------------------------------------

# 19 KB of real code (the file), and a small function in it, found by structure in any version.
TARGET = smallest_function_looping_over(Path(textwrap.__file__), "line")
SOURCE = TARGET.source


def plan_at(needle: str, *, lines: int | None = None, **refactor: object) -> Plan:
    config = build_config(
        [
            Layer(
                "test",
                {
                    "default_backend": "local",
                    "backends": {"local": {"type": "vllm", "base_url": "http://127.0.0.1:9/v1", "model": "m"}},
                    "refactor": dict(refactor),
                },
            )
        ]
    )
    start = SOURCE.index(needle)
    end = start if lines is None else SOURCE.index("\n", start) + 1
    for _ in range((lines or 1) - 1):
        end = SOURCE.index("\n", end) + 1
    request = RefactorRequest(path="textwrap.py", text=SOURCE, start=start, end=end, instruction="add type hints")
    return plan_refactor(request, config, lambda backend, override: ("prompt", ""))


def attempt(plan: Plan, window: ContextWindow | None = None, prompt_chars_per_token: float | None = None) -> Attempt:
    """The first attempt of `plan`, fitted to `window` (as planned when it is None)."""
    learned = Learned(prompt_chars_per_token=prompt_chars_per_token)
    return make_attempt(plan, "first", 0, decide_format(plan, None), window, learned)


def room(window: int) -> int:
    return window - safety_margin(window)


def test_an_attempt_that_fits_is_sent_as_planned() -> None:
    plan = plan_at(TARGET.header)
    planned, fitted = attempt(plan), attempt(plan, ContextWindow(131072, "models"))
    assert planned.fit is None
    assert fitted.prompt == planned.prompt and fitted.max_tokens == planned.max_tokens
    assert fitted.fit is not None and not fitted.fit.changed and fit_note(fitted.fit) is None


def test_the_file_around_the_region_gives_way_first() -> None:
    plan = plan_at(TARGET.header)
    planned = attempt(plan)
    window = ContextWindow(4096, "models")
    fitted = attempt(plan, window)
    estimate = prompt_tokens(fitted.prompt.messages, DEFAULT_PROMPT_CHARS_PER_TOKEN)
    assert estimate + fitted.max_tokens <= room(4096)
    assert fitted.max_tokens == planned.max_tokens  # the answer keeps its room
    assert fitted.prompt.prediction == planned.prompt.prediction == plan.original  # the region is whole
    assert TARGET.header in fitted.prompt.messages[1]["content"]
    assert "(shortened around the region)" in fitted.prompt.messages[1]["content"]
    assert fitted.fit is not None and 0 < (fitted.fit.context_chars or 0) < len(SOURCE)
    assert fitted.fit.prompt_tokens == estimate  # the fit's estimate is the prompt's as sent
    note = fit_note(fitted.fit)
    assert note is not None and "4,096 tokens (from /v1/models: max_model_len)" in note
    # A backend whose prompts were counted at more characters a token keeps more of the file.
    roomier = attempt(plan, window, 3.5)
    assert len(roomier.prompt.messages[1]["content"]) > len(fitted.prompt.messages[1]["content"])


def test_then_the_automatic_cap_down_to_what_rewriting_the_region_needs() -> None:
    plan = plan_at("class TextWrapper:", lines=100, edit_format="region")
    planned, fitted = attempt(plan), attempt(plan, ContextWindow(4096, "models"))
    assert fitted.fit is not None and fitted.fit.capped and fitted.fit.context_chars == 0
    assert len(plan.original) / 3.0 < fitted.max_tokens < planned.max_tokens
    assert prompt_tokens(fitted.prompt.messages, DEFAULT_PROMPT_CHARS_PER_TOKEN) + fitted.max_tokens <= room(4096)
    note = fit_note(fitted.fit)
    assert note is not None
    assert f"capped the answer at {fitted.max_tokens:,} tokens (not {planned.max_tokens:,})" in note
    # An answer cut off at that cap is said to be the window's doing, not the setting's.
    message = cut_off_message(plan, fitted, fitted.max_tokens)
    assert "4,096 tokens" in message and "--max-model-len" in message and "refactor.max_tokens" not in message


def test_a_region_that_cannot_fit_is_refused_with_what_to_do() -> None:
    plan = plan_at("class TextWrapper:", lines=300, edit_format="region")
    with pytest.raises(WindowTooSmall) as refused:
        attempt(plan, ContextWindow(4096, "error"))
    message = str(refused.value)
    assert "the backend 'local', 4,096 tokens (from its refusal of a prompt too long, HTTP 400)" in message
    assert "300 lines, about " in message and "nothing was sent" in message
    assert "select a smaller region" in message and "--max-model-len" in message
    assert "hunks" not in message  # the region alone is too large for any answer
    # A region whose rewrite does not fit but whose changes would: the hunks format is offered.
    mid = plan_at("class TextWrapper:", lines=180, edit_format="region")
    with pytest.raises(WindowTooSmall) as offered:
        attempt(mid, ContextWindow(4096, "models"))
    assert 'refactor.edit_format = "hunks"' in str(offered.value)


def test_auto_asks_for_the_changes_when_the_region_written_again_cannot_fit() -> None:
    plan = plan_at("class TextWrapper:", lines=60)  # `auto`: under 100 lines, the region format
    planned = attempt(plan)
    assert planned.edit_format.format == "region" and planned.edit_format.automatic
    window = ContextWindow(2560, "models")
    fitted = attempt(plan, window)
    assert fitted.edit_format.format == "hunks"
    assert fitted.edit_format.reason == (
        "auto, hunks: the region written again does not fit local's window of 2,560 tokens"
    )
    assert "SEARCH" in fitted.prompt.messages[0]["content"]  # the hunks prompt, not the region's
    assert fitted.prompt.prediction == planned.prompt.prediction
    assert prompt_tokens(fitted.prompt.messages, DEFAULT_PROMPT_CHARS_PER_TOKEN) + fitted.max_tokens <= room(2560)
    # Set by the user, the region format is refused instead, with the advice to ask for hunks.
    with pytest.raises(WindowTooSmall) as refused:
        attempt(plan_at("class TextWrapper:", lines=60, edit_format="region"), window)
    assert 'refactor.edit_format = "hunks"' in str(refused.value)


def test_a_hunks_answer_is_let_down_further_than_a_rewrite() -> None:
    plan = plan_at("class TextWrapper:", lines=180, edit_format="hunks")
    fitted = attempt(plan, ContextWindow(4096, "models"))
    assert fitted.fit is not None and fitted.fit.capped and fitted.max_tokens >= 256


def test_each_window_is_fitted_from_the_plan() -> None:
    """An attempt for another backend's window starts from the plan, not from an attempt fitted before."""
    plan = plan_at(TARGET.header)
    small = attempt(plan, ContextWindow(4096, "models"))
    large = attempt(plan, ContextWindow(131072, "models"))
    assert small.prompt != large.prompt
    assert large.prompt == attempt(plan).prompt and large.max_tokens == attempt(plan).max_tokens
