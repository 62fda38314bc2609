"""BackendError, the one error a backend call raises, and what a backend's failure means for the
user: each message names what to fix (the URL, the environment variable, the setting), and never
shows the key."""

from __future__ import annotations

import ssl
from typing import Any
from urllib.parse import urlparse

from ..config.load import api_key, is_loopback_url
from ..config.schema import BackendConfig, ConfigError

# Of an error body that is not JSON, the part read for its words (a proxy's HTML page, a cut JSON).
_BODY_CHARS = 4000


class BackendError(Exception):
    """A backend problem, said so the user knows what to do. `fallback_ok`: another backend may serve."""

    def __init__(self, message: str, *, fallback_ok: bool = False, status: int | None = None) -> None:
        super().__init__(message)
        self.fallback_ok = fallback_ok
        self.status = status


class PredictionUnsupported(BackendError):
    pass


class ContextWindowExceeded(BackendError):
    """The backend refused the prompt as too long for its context window, which it named (`window`)."""

    def __init__(self, message: str, window: int) -> None:
        super().__init__(message, status=400)
        self.window = window


def redact(text: str, backend: BackendConfig) -> str:
    try:
        key = api_key(backend)
    except ConfigError:
        return text
    return text.replace(key, "***") if key else text


def server_message(exc: Any) -> str:
    """The server's own words in an SDK error: its JSON `message`, else the start of its body (not JSON,
    or cut at `clients.ERROR_BODY_MAX_BYTES`) on one line. Whole: the caller clips what it quotes. A
    redirect is never followed (the key would go with it): its words say where it points, and the fix."""
    if redirect := _redirect_words(exc):
        return redirect
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return inner["message"]
        if isinstance(body.get("message"), str):
            return body["message"]
    if isinstance(body, str) and body.strip():
        return " ".join(body[:_BODY_CHARS].split())
    message = getattr(exc, "message", None) or str(exc)
    return str(message)


def _redirect_words(exc: Any) -> str | None:
    """What a 3xx answer means to the user, naming only the origin it points to (scheme, host, port)."""
    status, response = getattr(exc, "status_code", None), getattr(exc, "response", None)
    if not isinstance(status, int) or not 300 <= status < 400 or response is None:
        return None
    location = str(response.headers.get("location", ""))[:2000]
    parsed = urlparse(location)
    where = f"{parsed.scheme}://{parsed.netloc}"[:200] if parsed.scheme and parsed.netloc else "another path"
    return (
        f"a redirect to {where}, not followed (the API key would go with it); set base_url to the "
        "address it points to if you trust it"
    )


def connection_problem(exc: BaseException) -> str:
    """What went wrong under an APIConnectionError, in words."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        text = str(cause).lower()
        if isinstance(cause, ssl.SSLError) or "certificate" in text or "ssl" in text or "tls" in text:
            return (
                "TLS failed (certificate or protocol); check the URL, or set verify_tls = false for a "
                "self-signed local server"
            )
        if (
            "name or service not known" in text
            or "nodename nor servname" in text
            or "getaddrinfo" in text
            or "temporary failure in name resolution" in text
            or "no address associated" in text
        ):
            return "the host name does not resolve"
        if "connection refused" in text or "connect call failed" in text or isinstance(cause, ConnectionRefusedError):
            return "connection refused — is the server running?"
        cause = cause.__cause__ or cause.__context__
    return "the connection failed"


def builtin_hint(backend: BackendConfig) -> str:
    """The built-in local backends are the demo's vLLM pair: say how to start it, or to configure another."""
    from ..config.schema import BUILTIN_BACKENDS

    builtin = BUILTIN_BACKENDS.get(backend.name)
    if builtin is None or builtin["base_url"] != backend.base_url or not is_loopback_url(backend.base_url):
        return ""
    return " (start the local pair with `make vllm-up` in a refactor-lsp checkout, or configure a backend)"


def is_prediction_refusal(message: str) -> bool:
    text = message.lower()
    return "prediction" in text and any(
        word in text
        for word in (
            "not supported",
            "unsupported",
            "not allowed",
            "unknown",
            "unrecognized",
            "extra",
            "invalid",
            "does not support",
            "not permitted",
        )
    )


def retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    value = headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def auth_message(backend: BackendConfig, status: int) -> str:
    where = (
        f"check the key in the environment variable {backend.api_key_env}"
        if backend.api_key_env
        else f"set backends.{backend.name}.api_key_env to the name of the environment variable that holds your key"
    )
    reason = "unauthorized" if status == 401 else "forbidden"
    return f"the backend '{backend.name}' at {backend.base_url} refused the request ({status} {reason}) — {where}"
