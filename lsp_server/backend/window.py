"""A backend's context window (prompt + answer, in tokens), from where the backend says it: vLLM's
`/v1/models` (`max_model_len`), llama.cpp's `/props` (`default_generation_settings.n_ctx`), or its
refusal of a prompt that was too long (HTTP 400, "maximum context length is N tokens"). Read here
only: the refactor's budget (pipeline/context_fit.py), what is remembered (memory.py), `check` and
the bench's header all take it from these readers.

A probe is one bounded GET (a few seconds, a few hundred kilobytes, no redirects) that never
raises: a backend that does not tell, or cannot be reached, has an unknown window, and its 400
answer still teaches it. OpenAI's `/models` does not report a window, so it is never asked.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from ..config.load import api_key
from ..config.schema import BackendConfig, ConfigError
from .clients import get_capped, read_json

log = logging.getLogger(__name__)

# Where a window came from, as the messages and `check` name it.
SOURCES = {
    "models": "/v1/models: max_model_len",
    "props": "/props: n_ctx",
    "error": "its refusal of a prompt too long, HTTP 400",
}
# A window outside these is damage or a joke, not a model: a refactor needs a few hundred tokens.
MIN_WINDOW, MAX_WINDOW = 256, 1 << 24
PROBE_TIMEOUT_S = 3.0
# vLLM lists one entry per served name and LoRA adapter; llama.cpp's /props carries its chat template.
PROBE_MAX_BYTES = 1 << 20
# The wordings that name the window: OpenAI's and vLLM's ("This model's maximum context length is
# 4096 tokens. However, you requested 555 output tokens and your prompt contains at least 4097 input
# tokens, ..."), vLLM's newest ("... the model's context length is only 4096 tokens ..."), llama.cpp's
# ("request (5012 tokens) exceeds the available context size (4096 tokens), try increasing it").
_WINDOW_IN_WORDS = (
    re.compile(r"maximum context length is (\d{1,9}) tokens", re.I),
    re.compile(r"context length is only (\d{1,9}) tokens", re.I),
    re.compile(r"available context size \((\d{1,9}) tokens\)", re.I),
)


@dataclass(frozen=True)
class ContextWindow:
    tokens: int
    source: str  # a key of SOURCES

    def describe(self) -> str:
        """`4,096 tokens (from /v1/models: max_model_len)`."""
        return f"{self.tokens:,} tokens (from {SOURCES.get(self.source, self.source)})"


@dataclass(frozen=True)
class WindowFit:
    """How an attempt was fitted into its backend's window (pipeline/context_fit.py): the attempt carries it."""

    window: ContextWindow
    prompt_tokens: int  # the prompt sent, as estimated
    max_tokens_wanted: int  # the answer's cap before the window had its say
    max_tokens: int  # the cap sent
    context_chars: int | None  # the file kept around the region when the window shortened it, else None

    @property
    def capped(self) -> bool:
        """The answer's cap was lowered to fit."""
        return self.max_tokens < self.max_tokens_wanted

    @property
    def changed(self) -> bool:
        return self.capped or self.context_chars is not None


def valid_window(value: Any) -> int | None:
    """`value` as a window in tokens, or None (not an integer, or out of any model's range)."""
    return value if type(value) is int and MIN_WINDOW <= value <= MAX_WINDOW else None


def model_entry(payload: Any, model: str) -> dict[str, Any] | None:
    """The model's entry in a `/v1/models` answer, or None."""
    entries = payload.get("data") if isinstance(payload, Mapping) else None
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model:
            return entry
    return None


def window_of_entry(entry: Mapping[str, Any]) -> int | None:
    """vLLM's `max_model_len` in a model's entry (llama.cpp's `meta.n_ctx_train` is the training
    length, not what the server was started with: not read)."""
    return valid_window(entry.get("max_model_len"))


def window_of_props(payload: Any) -> int | None:
    """llama.cpp's `/props`: `default_generation_settings.n_ctx`, the context of one slot."""
    settings = payload.get("default_generation_settings") if isinstance(payload, Mapping) else None
    return valid_window(settings.get("n_ctx")) if isinstance(settings, Mapping) else None


def window_of_refusal(message: str, body: Any = None) -> int | None:
    """The window a 400 answer names: llama.cpp's `n_ctx` field, else the number in the wording."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and (window := valid_window(inner.get("n_ctx"))) is not None:
            return window
    for pattern in _WINDOW_IN_WORDS:
        if match := pattern.search(message[:4000]):
            return valid_window(int(match.group(1)))
    return None


def server_root(base_url: str) -> str:
    """The server's root URL: `base_url` less a trailing `/v1` (llama.cpp serves /props beside it)."""
    parsed = urlparse(base_url)
    path = parsed.path.rstrip("/")
    path = path[: -len("/v1")] if path.endswith("/v1") else path
    return f"{parsed.scheme}://{parsed.netloc}{path}"


async def fetch_json(
    url: str, backend: BackendConfig, timeout_s: float = PROBE_TIMEOUT_S, max_bytes: int = PROBE_MAX_BYTES
) -> Any:
    """GET `url` with the backend's key and headers and parse its JSON; bounded in time and size, no
    redirects (`clients.get_capped`). Raises on any failure."""
    headers = dict(backend.headers)
    try:
        key = api_key(backend)
    except ConfigError:
        key = None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    body, _ = await get_capped(url, headers, verify_tls=backend.verify_tls, timeout_s=timeout_s, max_bytes=max_bytes)
    return read_json(body, url)


def models_url(backend: BackendConfig) -> str:
    return backend.base_url.rstrip("/") + "/models"


async def probe_window(backend: BackendConfig) -> ContextWindow | None:
    """The window the backend reports, or None: it does not report one (OpenAI), or the probe failed
    (logged at debug, never raised)."""
    try:
        if backend.type == "llamacpp":
            tokens = window_of_props(await fetch_json(server_root(backend.base_url) + "/props", backend))
            return ContextWindow(tokens, "props") if tokens else None
        if backend.type in ("vllm", "openai-compatible"):  # a vLLM behind a gateway still reports it
            entry = model_entry(await fetch_json(models_url(backend), backend), backend.model)
            tokens = window_of_entry(entry) if entry is not None else None
            return ContextWindow(tokens, "models") if tokens else None
    except Exception as exc:  # a probe is best effort: the 400 answer is the fallback
        log.debug("the context window of %s is unknown: %s: %s", backend.base_url, type(exc).__name__, exc)
    return None
