"""The deletion guard end to end against the loopback backend: a hunks answer that deletes the region
is refused as the region format's empty answer is, with the same message and the file untouched,
unless the instruction or the action's preset asks for removal. And the answer's post-processing
runs off the event loop, so the server keeps answering while it runs."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.config.layers import Layer
from lsp_server.config.load import build_config
from lsp_server.config.schema import Config
from lsp_server.formats.hunks import DIVIDER, REPLACE_MARKER, SEARCH_MARKER
from lsp_server.pipeline import answer as answer_module
from lsp_server.pipeline.engine import Engine
from lsp_server.pipeline.plan import RefactorError, RefactorRequest
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.cli_harness import run_cli
from tests.conftest import backend_table, write_config

FUNCTION = (
    "def total(orders):\n"
    "    result = 0\n"
    "    for order in orders:\n"
    "        if order.cancelled:\n"
    "            continue\n"
    "        for line in order.lines:\n"
    "            result += line.price * line.quantity\n"
    "    if result < 0:\n"
    "        raise ValueError(result)\n"
    "    return result\n"
)  # 10 non-blank lines
SOURCE = f"import math\n\n\n{FUNCTION}\n\ndef main():\n    return total([])\n"
DELETE_ALL = f"{SEARCH_MARKER}\n{FUNCTION}{DIVIDER}\n{REPLACE_MARKER}\n"
GUT = f"{SEARCH_MARKER}\n{FUNCTION[FUNCTION.index('    result = 0') :]}{DIVIDER}\n    return 0\n{REPLACE_MARKER}\n"
EMPTIED = "the model's answer leaves no code in the region (it deletes all 10 of its non-blank lines)"
GUTTED = "the model's answer deletes 8 of the region's 10 non-blank lines"
NOT_ASKED = (
    ", which the instruction does not ask for; nothing was applied — run it again, or say in the instruction that "
    "the code should be removed"
)


def config(fake: FakeBackend, actions: list[dict[str, Any]] | None = None) -> Config:
    table: dict[str, Any] = {"default_backend": "fake", "backends": {"fake": backend_table(fake)}}
    if actions:
        table["actions"] = actions
    return build_config([Layer("test config", table)])


def request(
    edit_format: str, instruction: str | None = "rename result to acc", action: str | None = None
) -> RefactorRequest:
    offset = SOURCE.index("    result = 0")
    return RefactorRequest(
        path="orders.py",
        text=SOURCE,
        start=offset,
        end=offset,
        instruction=instruction,
        action_id=action,
        edit_format=edit_format,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize(
    ("edit_format", "answer", "message"),
    [
        ("hunks", DELETE_ALL, EMPTIED),
        ("region", "", EMPTIED),
        ("hunks", GUT, GUTTED),
        ("region", "def total(orders):\n    return 0\n", GUTTED),
    ],
    ids=["hunks-empties", "region-empty", "hunks-guts", "region-guts"],
)
async def test_both_formats_refuse_a_deletion_the_instruction_does_not_ask_for(
    engine: Engine, fake_backend: FakeBackend, edit_format: str, answer: str, message: str
) -> None:
    fake_backend.enqueue(Reply(text=answer))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request(edit_format), config(fake_backend))
    assert str(info.value) == message + NOT_ASKED
    assert info.value.output == answer  # kept for the user to see
    assert len(fake_backend.requests) == 1  # a deliberate answer, not a format failure: no retry


@pytest.mark.parametrize("edit_format", ["hunks", "region"])
async def test_an_instruction_asking_for_removal_deletes_the_function(
    engine: Engine, fake_backend: FakeBackend, edit_format: str
) -> None:
    fake_backend.enqueue(Reply(text=DELETE_ALL if edit_format == "hunks" else ""))
    result = await engine.refactor(request(edit_format, "delete this function"), config(fake_backend))
    assert result.new_text == SOURCE.replace(FUNCTION, "")


async def test_a_preset_declaring_removes_code_may_delete_and_simplify_may_not(
    engine: Engine, fake_backend: FakeBackend
) -> None:
    prune = {"id": "prune", "title": "Prune", "instruction": "Keep only what the callers use.", "removes_code": True}
    fake_backend.enqueue(Reply(text=GUT))
    result = await engine.refactor(request("hunks", None, "prune"), config(fake_backend, [prune]))
    assert result.new_text == SOURCE.replace(FUNCTION, "def total(orders):\n    return 0\n")
    # The built-in "simplify" says "remove duplication", which is not a licence to delete the code.
    fake_backend.enqueue(Reply(text=GUT))
    with pytest.raises(RefactorError) as info:
        await engine.refactor(request("hunks", None, "simplify"), config(fake_backend, [prune]))
    assert str(info.value) == GUTTED + NOT_ASKED


def test_the_cli_refuses_a_hunks_deletion_and_leaves_the_file(tmp_path: Path, fake_backend: FakeBackend) -> None:
    source = tmp_path / "orders.py"
    source.write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, fake=fake_backend)
    fake_backend.enqueue(Reply(text=DELETE_ALL))
    command = ["refactor", "orders.py", "-i", "rename result to acc", "--at", "5", "--edit-format", "hunks", "--write"]
    done = run_cli(*command, config=config, cwd=tmp_path)
    assert done.returncode == 3, done.stderr  # refused
    assert done.stderr.startswith("refactor-lsp: " + EMPTIED + NOT_ASKED)
    assert source.read_text(encoding="utf-8") == SOURCE


async def test_the_event_loop_keeps_running_while_an_answer_is_post_processed(
    engine: Engine, fake_backend: FakeBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Post-processing as slow as a pathological answer on a big region once made it (seconds of CPU).
    # Other requests (code actions, hovers) are served by the same loop: it must keep turning.
    real = answer_module.clean_hunks_output

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(1.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(answer_module, "clean_hunks_output", slow)
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        result = await engine.refactor(request("hunks"), config(fake_backend))
    finally:
        ticking.cancel()
    assert result.new_text == SOURCE.replace("result", "acc")
    assert sum(gaps) > 1.0 and max(gaps) < 0.5  # a blocked loop would show one gap of a second
