"""A finished refactor is freed when its last reference goes, not at the next full collection: a
reference cycle through it kept its document, prompt and answer alive for hundreds of refactors
(tens of megabytes over a day of use, more with big files). What the cycle collector would find after
one refactor is what a long session keeps between its collections."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import Iterator

import pytest

from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import Config
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.request import Source, at_cursor
from lsp_server.pipeline.runner import Runner
from lsp_server.regions import ScopeCache
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.backends.test_backends import SOURCE, config_with, file_request
from tests.conftest import backend_table


@pytest.fixture
def garbage() -> Iterator[list[object]]:
    """What the cycle collector finds unreachable while the test runs, kept to be looked at."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _ours(objects: list[object]) -> list[str]:
    """The objects of the package and of the HTTP stack among `objects` (the fake backend's aside)."""
    names = []
    for obj in objects:
        module = type(obj).__module__ or ""
        if module.startswith(("lsp_server", "httpx", "httpcore", "openai")) and not module.startswith(
            "lsp_server.testing"
        ):
            names.append(f"{module}.{type(obj).__qualname__}")
    return sorted(set(names))


async def test_a_finished_refactor_leaves_no_cycle_behind(
    fake_backend: FakeBackend, engine: Engine, garbage: list[object]
) -> None:
    outcome, told = await _one_refactor(fake_backend, engine)
    assert outcome == "edit" and told
    gc.collect()  # the refactor's references are gone: whatever is left, only a cycle holds
    assert _ours(garbage) == []


# Timeouts short enough for a test; a retry after a 503 at once (Retry-After: 0).
QUICK = {"first_token_timeout_s": 2.0, "idle_timeout_s": 0.3, "timeout_s": 10.0, "max_retries": 1}
BUSY = Reply(status=503, error="busy", headers={"Retry-After": "0"})
SECOND_CHOICE = (
    b'data: {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [{"index": 1, '
    b'"delta": {"content": "a"}, "finish_reason": null}]}\n\n'
)
FAILURES = {
    "an HTTP error": ([Reply(status=400, error="no such thing")], "answered HTTP 400: no such thing"),
    "a 503 retried, then refused": ([BUSY, BUSY], "failed with HTTP 503 after 2 tries"),
    "a stall mid-answer": ([Reply(text="x = 1\n" * 40, stall_after_chars=6, stall_s=5)], "stalled for 0.3 s"),
    "a malformed stream": ([Reply(raw_body=SECOND_CHOICE)], "a second choice (index 1)"),
    # The retry's stream is bounded as the first attempt's would be.
    "a line without end after a 503": (
        [BUSY, Reply(flood_chunk_chars=1000, flood_one_line=True)],
        "one line of the stream ran past",
    ),
}


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_a_failed_refactor_leaves_no_cycle_behind(
    failure: str, fake_backend: FakeBackend, engine: Engine, garbage: list[object]
) -> None:
    # Before: an HTTP error's capped body reader held its response (the request, the prompt): a cycle.
    replies, said = FAILURES[failure]
    for reply in replies:
        fake_backend.enqueue(reply)
    outcome, reason = await _refactor_at_cursor(fake_backend, engine, build_config(_quick_layers(fake_backend)))
    assert outcome == "error" and said in reason, reason
    gc.collect()
    assert _ours(garbage) == []


async def test_a_refactor_cancelled_mid_answer_leaves_no_cycle_behind(
    fake_backend: FakeBackend, engine: Engine, garbage: list[object]
) -> None:
    # Before: the idle timer's asyncio.Timeout held the task, the cancelled task its CancelledError, and
    # the error's traceback the frame that held the timer.
    fake_backend.enqueue(Reply(text="x = 1\n" * 40, stall_after_chars=6, stall_s=5))
    config = build_config(_quick_layers(fake_backend, idle_timeout_s=10.0))
    task = asyncio.ensure_future(_refactor_at_cursor(fake_backend, engine, config))
    while not fake_backend.first_content_sent_at:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)  # the first characters read: the stream is mid-answer
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    del task
    gc.collect()
    assert _ours(garbage) == []
    assert await _hung_up(fake_backend)  # the stream was closed, not left to the server


async def test_refactors_cancelled_at_any_moment_leave_no_cycle_behind(
    fake_backend: FakeBackend, engine: Engine, garbage: list[object]
) -> None:
    # Before: a cancel landing while the runner's task group waited for its refactor (here, one on a new
    # connection after a first-token timeout) left the runner in a cycle: Python 3.11's TaskGroup keeps
    # the CancelledError in the frame that raised it.
    config = build_config(_quick_layers(fake_backend, first_token_timeout_s=0.05))
    for delay_ms in range(0, 40, 4):
        fake_backend.enqueue(Reply(delay_headers_s=1), Reply(raw_body=SECOND_CHOICE))
        assert (await _refactor_at_cursor(fake_backend, engine, config))[0] == "error"
        task = asyncio.ensure_future(_refactor_at_cursor(fake_backend, engine, config))
        await asyncio.sleep(delay_ms / 1000)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        del task
        fake_backend.reset()
    gc.collect()
    assert _ours(garbage) == []


async def _hung_up(fake: FakeBackend) -> bool:
    for _ in range(100):
        if fake.disconnects:
            return True
        await asyncio.sleep(0.01)
    return False


def _quick_layers(fake: FakeBackend, **refactor: float) -> list[Layer]:
    return [
        Layer(
            "test", {"default_backend": "fake", "backends": {"fake": backend_table(fake)}, "refactor": QUICK | refactor}
        )
    ]


async def _refactor_at_cursor(fake: FakeBackend, engine: Engine, config: Config) -> tuple[str, str]:
    """One refactor at a cursor, as a runner runs it: its outcome and why."""
    request = file_request(scope="block", start=SOURCE.index("result"), end=SOURCE.index("result"))
    targets = at_cursor(engine, [Source("shapes.py", request, config, ScopeCache())])
    (outcome,) = await Runner(engine, targets.items, 1).run()
    return outcome.outcome, outcome.reason or ""


async def _one_refactor(fake: FakeBackend, engine: Engine) -> tuple[str, int]:
    """One refactor at a cursor, watched as a progress watches it (it reads the runner's live view):
    its outcome and how often the progress was told."""
    config = config_with(fake=backend_table(fake))
    request = file_request(scope="block", start=SOURCE.index("result"), end=SOURCE.index("result"))
    targets = at_cursor(engine, [Source("shapes.py", request, config, ScopeCache())])
    run = Runner(engine, targets.items, 1)
    told: list[int] = []
    run.on_change = lambda: told.append(len(run.live))
    (outcome,) = await run.run()
    return outcome.outcome, len(told)
