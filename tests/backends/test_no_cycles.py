"""A finished refactor is freed when its last reference goes, not at the next full collection: a
reference cycle through it kept its document, prompt and answer alive for hundreds of refactors
(tens of megabytes over a day of use, more with big files). What the cycle collector would find after
one refactor is what a long session keeps between its collections."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.request import Source, at_cursor
from lsp_server.pipeline.runner import Runner
from lsp_server.regions import ScopeCache
from lsp_server.testing.fake_backend import FakeBackend
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
