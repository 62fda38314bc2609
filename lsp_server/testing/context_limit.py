"""The fake backend's context window (`FakeBackend(context_window=N)`, `--context-window N`): reported
where its kind's real server reports it, and enforced with that server's own refusal, counted with
the fake's own tokenizer (`speculation.tokenize`).

- "vllm": `max_model_len` in each `/v1/models` entry; a prompt whose tokens plus `max_tokens` pass
  the window gets HTTP 400 in vLLM's words. vLLM tokenizes at most one token past the window before
  it refuses, so it says "at least" (the demo's vLLM, refusing textwrap.py: "This model's maximum
  context length is 4096 tokens. However, you requested ... output tokens and your prompt contains at
  least 4097 input tokens, ...").
- "llamacpp": `default_generation_settings.n_ctx` on `/props`; a prompt that fills the window gets
  its 400 (`exceed_context_size_error`, with `n_prompt_tokens` and `n_ctx`), and an answer that
  would run past it stops there (`finish_reason` "length"), as llama-server does.
- "openai": reports nothing (OpenAI's `/models` has no window); refuses in OpenAI's words
  (`context_length_exceeded`).

`reports_window=False` keeps the report off: only the refusal tells (a gateway in front of vLLM).
"""

from __future__ import annotations

from typing import Any

from .speculation import tokenize


def prompt_tokens(request: dict[str, Any]) -> int:
    """The prompt's tokens as the fake counts them (its usage's `prompt_tokens`)."""
    return sum(len(tokenize(str(m.get("content", "")))) for m in request.get("messages", []))


def model_card(kind: str, window: int, reports: bool) -> dict[str, Any]:
    """What a `/v1/models` entry adds about the window."""
    return {"max_model_len": window} if kind == "vllm" and window and reports else {}


def props(kind: str, window: int, reports: bool) -> dict[str, Any] | None:
    """llama.cpp's `/props` (the part a client reads), or None where the server has no such route."""
    if kind != "llamacpp" or not window or not reports:
        return None
    return {"default_generation_settings": {"id": 0, "n_ctx": window, "speculative": False}, "total_slots": 1}


def refusal(kind: str, window: int, request: dict[str, Any]) -> dict[str, Any] | None:
    """The 400 body a request too long for the window gets, or None when it fits (or there is no window)."""
    if not window:
        return None
    prompt = prompt_tokens(request)
    wanted = int(request.get("max_tokens") or request.get("max_completion_tokens") or 0)
    if kind == "llamacpp":
        if prompt < window:
            return None
        message = f"request ({prompt} tokens) exceeds the available context size ({window} tokens), try increasing it"
        return {
            "error": {
                "code": 400,
                "message": message,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": prompt,
                "n_ctx": window,
            }
        }
    if prompt + wanted <= window:
        return None
    if kind == "vllm":
        seen = min(prompt, window + 1)  # vLLM stops counting one token past the window
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested {wanted} output "
            f"tokens and your prompt contains at least {seen} input tokens, for a total of at least "
            f"{seen + wanted} tokens. Please reduce the length of the input prompt or the number of requested "
            f"output tokens. (parameter=input_tokens, value={seen})"
        )
        return {"error": {"message": message, "type": "BadRequestError", "param": "input_tokens", "code": 400}}
    message = (
        f"This model's maximum context length is {window} tokens. However, your messages resulted in {prompt} "
        "tokens. Please reduce the length of the messages."
        if prompt > window
        else f"This model's maximum context length is {window} tokens. However, you requested {prompt + wanted} "
        f"tokens ({prompt} in the messages, {wanted} in the completion). Please reduce the length of the "
        "messages or completion."
    )
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def answer_cap(kind: str, window: int, request: dict[str, Any]) -> int | None:
    """llama.cpp stops an answer where the window is full: the tokens left for it, when that is fewer
    than the request's `max_tokens` (None otherwise)."""
    if kind != "llamacpp" or not window:
        return None
    left = window - prompt_tokens(request)
    wanted = request.get("max_tokens") or request.get("max_completion_tokens")
    return left if wanted is None or left < int(wanted) else None
