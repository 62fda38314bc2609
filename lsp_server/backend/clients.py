"""One SDK client per backend, key and timeouts (`ClientPool`), so connections are reused between
refactors."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from ..config.load import api_key
from ..config.schema import BackendConfig, ConfigError, RefactorSettings
from .errors import BackendError

if TYPE_CHECKING:
    from openai import AsyncOpenAI


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
            http_client = DefaultAsyncHttpx2Client(verify=backend.verify_tls, timeout=timeout, follow_redirects=False)
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
