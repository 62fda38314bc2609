"""HTTP to a backend: one SDK client per backend, key and timeouts (`ClientPool`), so connections are
reused between refactors, and the bounds on every body a backend sends besides the answer's stream
(whose bounds are `stream`'s): an error's body is read only up to `ERROR_BODY_MAX_BYTES` (the SDK
reads it whole to make its exception), and a plain GET only up to the size its caller allows
(`get_capped`, `read_capped`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
import zlib
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from ..config.load import api_key
from ..config.schema import BackendConfig, ConfigError, RefactorSettings
from .errors import BackendError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

# An error's body is a message for a person: a few hundred bytes from vLLM, llama.cpp and OpenAI.
# Past this the rest is not read (the connection is closed): a 128 MB message once cost 700 MB.
ERROR_BODY_MAX_BYTES = 64 * 1024


class BodyTooLarge(ValueError):
    """A backend's answer to a GET ran past what its reader allows; what was read is dropped."""


class BodyUnreadable(ValueError):
    """A backend's answer to a GET came in a content encoding not read here, or a damaged one."""


def read_json(body: bytes, what: str) -> Any:
    """A backend's JSON body, parsed; BodyUnreadable when it is not JSON, not UTF-8, or nested past the
    parser's depth (RecursionError, which `except ValueError` misses: 20 KB of `[` is enough)."""
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        problem = "nested too deep" if isinstance(exc, RecursionError) else type(exc).__name__
        raise BodyUnreadable(f"{what} answered something that is not JSON ({problem})") from None


# The content encodings a GET's body is read in, one layer at most, as zlib's window bits.
_ZLIB_WBITS = {"gzip": 31, "x-gzip": 31, "deflate": 15}


async def _decoded(raw: AsyncIterator[bytes], encoding: str, max_bytes: int, what: str) -> AsyncIterator[bytes]:
    """The body of `raw` (bytes as they came) decoded, never more than `max_bytes + 1` bytes at a time:
    a kilobyte of gzip inside gzip is gigabytes once decoded, and httpx decodes a chunk whole (2 GB of
    memory for 1.8 KB on the wire), so the cap must hold while decoding, not after."""
    layers = [part.strip().lower() for part in encoding.split(",") if part.strip().lower() not in ("", "identity")]
    if not layers:
        async for chunk in raw:
            yield chunk
        return
    if len(layers) > 1 or layers[0] not in _ZLIB_WBITS:
        raise BodyUnreadable(f"{what} answered in an encoding not read here (Content-Encoding: {encoding[:80]})")
    decoder = zlib.decompressobj(_ZLIB_WBITS[layers[0]])
    try:
        async for chunk in raw:
            while chunk:
                yield decoder.decompress(chunk, max_bytes + 1)
                chunk = decoder.unconsumed_tail
        yield decoder.flush()
    except zlib.error as exc:
        raise BodyUnreadable(f"{what} answered a damaged {layers[0]} body ({exc})") from None


async def read_capped(chunks: AsyncIterator[bytes], max_bytes: int, what: str) -> bytes:
    """The body from `chunks` (decoded bytes), refused with BodyTooLarge once past `max_bytes`."""
    parts, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge(f"{what} answered more than {max_bytes:,} bytes")
        parts.append(chunk)
    return b"".join(parts)


async def get_capped(
    url: str, headers: Mapping[str, str], *, verify_tls: bool, timeout_s: float, max_bytes: int
) -> tuple[bytes, str]:
    """GET `url`: its body (BodyTooLarge past `max_bytes`, decoded or not; BodyUnreadable in an encoding
    other than one layer of gzip or deflate) and content type, bounded in time too, with no redirects
    (a redirect would carry the key elsewhere). Raises httpx's errors, an error status too, and
    TimeoutError naming the URL (a page trickled a byte a second is as late as one never sent)."""
    import httpx

    try:
        async with asyncio.timeout(timeout_s):
            return await _get(url, headers, verify_tls, timeout_s, max_bytes)
    except (TimeoutError, httpx.TimeoutException):
        raise TimeoutError(f"{url} did not answer within {timeout_s:g} s") from None


async def _get(
    url: str, headers: Mapping[str, str], verify_tls: bool, timeout_s: float, max_bytes: int
) -> tuple[bytes, str]:
    import httpx

    async with (
        httpx.AsyncClient(verify=verify_tls, timeout=timeout_s, follow_redirects=False) as client,
        client.stream("GET", url, headers=dict(headers)) as response,
    ):
        response.raise_for_status()
        encoding = response.headers.get("content-encoding", "")
        body = await read_capped(_decoded(response.aiter_raw(), encoding, max_bytes, url), max_bytes, url)
        return body, response.headers.get("content-type", "")


def cap_body(response: Any, max_bytes: int) -> None:
    """Make `response` (httpx's, not read yet) end after `max_bytes` of its decoded body: what reads it
    (the SDK's `aread` too) gets that much, and the connection is closed, not read to its end. The capped
    reader, kept on the response, holds it weakly: a strong hold is a cycle that kept every error's
    request (its prompt, the document) until a full collection."""
    own = weakref.ref(response)
    read = type(response).aiter_bytes

    async def capped(*args: Any, **kwargs: Any) -> AsyncIterator[bytes]:
        owner = own()
        if owner is None:  # nothing can read a response that is gone
            return
        left = max_bytes
        async with contextlib.aclosing(read(owner, *args, **kwargs)) as chunks:
            async for chunk in chunks:
                if len(chunk) >= left:
                    if left:
                        yield chunk[:left]
                    break
                left -= len(chunk)
                yield chunk
        await owner.aclose()

    response.aiter_bytes = capped


async def _cap_error_body(response: Any) -> None:
    """The SDK client's response hook: an error's body is read only up to ERROR_BODY_MAX_BYTES."""
    if response.status_code >= 400:
        cap_body(response, ERROR_BODY_MAX_BYTES)


class ClientPool:
    """One SDK client per backend, key and timeouts, so connections are reused between refactors.

    Its connections belong to the event loop that made them: close the pool before that loop ends.
    """

    def __init__(self) -> None:
        self._clients: dict[tuple[Any, ...], AsyncOpenAI] = {}

    def get(self, backend: BackendConfig, settings: RefactorSettings) -> AsyncOpenAI:
        try:
            key = api_key(backend)
        except ConfigError as exc:
            raise BackendError(str(exc)) from None
        identity = (
            backend.base_url,
            backend.verify_tls,
            tuple(sorted(backend.headers.items())),
            hash(key),
            settings.connect_timeout_s,
            settings.first_token_timeout_s,
            settings.idle_timeout_s,
        )
        client = self._clients.get(identity)
        if client is None:
            from openai import AsyncOpenAI, DefaultAsyncHttpx2Client, Timeout

            # Our own loop enforces the first-token and idle timeouts precisely; the socket's read timeout
            # is only a backstop above both, so the user gets the message that names the right setting.
            read = max(settings.first_token_timeout_s, settings.idle_timeout_s) + 5.0
            timeout = Timeout(connect=settings.connect_timeout_s, read=read, write=30.0, pool=30.0)
            http_client = DefaultAsyncHttpx2Client(
                verify=backend.verify_tls,
                timeout=timeout,
                follow_redirects=False,
                event_hooks={"response": [_cap_error_body]},
            )
            client = AsyncOpenAI(
                api_key=key or "no-key",
                base_url=backend.base_url,
                max_retries=0,
                timeout=timeout,
                default_headers=backend.headers or None,
                http_client=http_client,
            )
            self._clients[identity] = client
        return client

    async def close(self) -> None:
        clients = list(self._clients.values())
        self._clients.clear()
        for client in clients:
            with contextlib.suppress(Exception):
                await client.close()
