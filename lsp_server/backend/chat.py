"""Backends: stream a chat completion from an OpenAI-compatible server, with the prediction.

Every failure becomes one BackendError (`errors`) whose message names what to fix (the URL,
the env var, the model). Retries are ours, bounded by count and by the refactor's total time; one
attempt's stream is read by `stream`, through the clients of `clients`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ..config.schema import BackendConfig, PredictionVia, RefactorSettings
from ..text import clip, listed
from .clients import BodyTooLarge, BodyUnreadable, ClientPool, read_capped, read_json
from .errors import (
    BackendError,
    ContextWindowExceeded,
    PredictionUnsupported,
    auth_message,
    builtin_hint,
    connection_problem,
    is_prediction_refusal,
    redact,
    retry_after,
    server_message,
)
from .stream import Completion, DeltaCallback, StreamRequest, stream_once
from .window import window_of_refusal

if TYPE_CHECKING:
    from openai import APIStatusError

log = logging.getLogger(__name__)

LOCAL_SPECULATION_TYPES = ("vllm", "llamacpp")
_RETRY_STATUSES = (429, 500, 502, 503, 504)
# A server lists one entry per model (and per LoRA adapter), a few hundred bytes each: past this the
# list is not read (an 89 MB one once cost `check` 391 MB).
MODEL_LIST_MAX_BYTES = 4 << 20


def prediction_mode(backend: BackendConfig, override: bool | None, refused: bool) -> PredictionVia:
    """How the prediction reaches the model: "field" (the request's `prediction`), "prompt" (local
    servers draft from the prompt by n-gram lookup) or "off". `refused`: this backend said no to the
    field earlier (the engine remembers that)."""
    if backend.type in LOCAL_SPECULATION_TYPES:
        # The region is in the prompt whatever we ask: a speculating server drafts from it by itself.
        return "field" if backend.prediction == "always" and override is not False else "prompt"
    if override is False or backend.prediction == "never":
        return "off"
    if backend.prediction == "always":
        return "field"
    return "off" if refused else "field"


async def list_models(clients: ClientPool, backend: BackendConfig, settings: RefactorSettings) -> list[str]:
    """The models the server offers (GET /models, read up to MODEL_LIST_MAX_BYTES); a BackendError says why not."""
    import openai

    client = clients.get(backend, settings)
    where = f"the backend '{backend.name}' at {backend.base_url}"
    try:
        async with asyncio.timeout(settings.connect_timeout_s + 5):
            async with client.models.with_streaming_response.list() as response:
                body = await read_capped(response.iter_bytes(), MODEL_LIST_MAX_BYTES, "GET /models")
    except TimeoutError:
        raise BackendError(f"{where} did not answer GET /models in time") from None
    except BodyTooLarge:
        raise BackendError(
            f"{where} answered GET /models with more than {MODEL_LIST_MAX_BYTES:,} bytes; it was not read"
        ) from None
    except openai.APIStatusError as exc:
        if exc.status_code in (401, 403):
            raise BackendError(auth_message(backend, exc.status_code), status=exc.status_code) from None
        raise BackendError(
            f"{where} answered GET /models with HTTP {exc.status_code}: {clip(redact(server_message(exc), backend))}",
            status=exc.status_code,
        ) from None
    except openai.APIConnectionError as exc:
        raise BackendError(f"cannot reach {where}: {connection_problem(exc)}{builtin_hint(backend)}") from None
    try:
        entries = read_json(body, "GET /models").get("data")
    except (BodyUnreadable, AttributeError):
        entries = None
    if not isinstance(entries, list):
        raise BackendError(f"{where} answered GET /models with something that is not a list of models")
    return [entry["id"] for entry in entries if isinstance(entry, dict) and isinstance(entry.get("id"), str)]


async def stream_completion(
    clients: ClientPool,
    backend: BackendConfig,
    settings: RefactorSettings,
    request: StreamRequest,
    on_delta: DeltaCallback | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Completion:
    """Stream one completion with bounded retries; every failure is a BackendError with a clear message."""
    import openai

    deadline = time.monotonic() + settings.timeout_s
    attempt = 0
    notes: list[str] = []
    where = f"the backend '{backend.name}' at {backend.base_url}"
    while True:
        try:
            async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                result = await stream_once(clients, backend, settings, request, on_delta)
            result.notes[:0] = notes
            return result
        except TimeoutError:
            raise BackendError(
                f"the refactor took longer than {settings.timeout_s:g} s (refactor.timeout_s) on {where}; nothing "
                "was applied — select less or raise the limit",
                fallback_ok=True,
            ) from None
        except openai.APIStatusError as exc:
            if exc.status_code not in _RETRY_STATUSES:
                raise await _status_error(exc, clients, backend, settings, request) from None
            attempt += 1
            wait = retry_after(exc)
            if wait is None:
                wait = min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.75 + random.random() / 2)
            if attempt > settings.max_retries or wait >= deadline - time.monotonic():
                raise _gave_up(exc, backend, attempt) from None
            notes.append(f"retried after HTTP {exc.status_code} (waited {wait:.1f} s)")
            log.info("backend %s answered %s; retry %d in %.1f s", backend.name, exc.status_code, attempt, wait)
            await sleep(wait)
        except openai.APITimeoutError:
            raise BackendError(
                f"{where} did not answer in time (refactor.connect_timeout_s / idle_timeout_s) — is it running and "
                "not overloaded?",
                fallback_ok=True,
            ) from None
        except openai.APIConnectionError as exc:
            raise BackendError(
                f"cannot reach {where}: {connection_problem(exc)}{builtin_hint(backend)}", fallback_ok=True
            ) from None


async def _status_error(
    exc: APIStatusError,
    clients: ClientPool,
    backend: BackendConfig,
    settings: RefactorSettings,
    request: StreamRequest,
) -> BackendError:
    """What an HTTP status that is not retried means, in words that say what to fix."""
    status = exc.status_code
    message = redact(server_message(exc), backend)
    quoted = clip(message)  # the server's words in our message, cut to a readable length
    if status == 400 and request.prediction is not None and is_prediction_refusal(message):
        if backend.prediction != "always":
            return PredictionUnsupported(quoted, status=400)
        return BackendError(
            f"the backend '{backend.name}' does not accept the `prediction` field ({quoted}) — set "
            f'backends.{backend.name}.prediction = "auto" or "never"',
            status=400,
        )
    if status in (401, 403):
        return BackendError(auth_message(backend, status), status=status)
    if status == 400 and (window := window_of_refusal(message, exc.body)) is not None:
        return ContextWindowExceeded(
            f"the backend '{backend.name}' at {backend.base_url} refused the prompt as too long for its "
            f"context window of {window:,} tokens ({quoted}); nothing was applied — select a smaller "
            "region, or lower refactor.context_chars",
            window,
        )
    if status == 404:
        return BackendError(await _unknown_model_message(clients, backend, settings), status=404)
    return BackendError(
        f"the backend '{backend.name}' at {backend.base_url} answered HTTP {status}: {quoted}", status=status
    )


def _gave_up(exc: APIStatusError, backend: BackendConfig, attempt: int) -> BackendError:
    """A retried status (429, 5xx) still there after the retries the settings and the deadline allow."""
    status = exc.status_code
    quoted = clip(redact(server_message(exc), backend))
    what = "is rate limiting us (429)" if status == 429 else f"failed with HTTP {status}"
    return BackendError(
        f"the backend '{backend.name}' at {backend.base_url} {what} after {attempt} "
        f"{'try' if attempt == 1 else 'tries'} ({quoted}); nothing was applied — try again later",
        fallback_ok=status in (502, 503, 504, 429),
        status=status,
    )


async def _unknown_model_message(clients: ClientPool, backend: BackendConfig, settings: RefactorSettings) -> str:
    try:
        models = await list_models(clients, backend, settings)
    except Exception:
        models = []
    offered = f" (it offers: {listed(models)})" if models else ""
    return (
        f"the backend '{backend.name}' at {backend.base_url} has no model '{backend.model}'{offered} — "
        f"set backends.{backend.name}.model"
    )
