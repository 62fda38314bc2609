"""Shutdown with refactors in flight, a long run of refactors, and secrets kept out of every output."""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import time
from pathlib import Path

from pytest_lsp import LanguageClient

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.cli_harness import run_cli
from tests.conftest import editor_settings, fake_fixture
from tests.lsp_harness import Editor, server_setup, start_session

SETUP = server_setup()
STATE_DIR, SERVER_ENV = SETUP.state_dir, SETUP.env

WORKSPACE = STATE_DIR / "lifecycle-workspace"
SOURCE = "def load(path):\n    data = open(path).read()\n    return data\n"
SECRET = "sk-test-lifecycle-SECRET-abcdef0123456789"


async def start(
    backend: FakeBackend, *extra_args: str, env: dict[str, str] | None = None
) -> tuple[LanguageClient, Editor]:
    settings = editor_settings(backend, keys={"api_key_env": "TEST_KEY"})
    editor = await start_session(SETUP, WORKSPACE, settings, args=extra_args, env=env)
    return editor.client, editor


def server_pid(client: LanguageClient) -> int:
    return client._server.pid  # type: ignore[union-attr]


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def open_sockets(pid: int) -> int:
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            count += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
    return count


backend = fake_fixture(scope="function")


async def test_shutdown_with_refactors_in_flight(backend: FakeBackend):
    client, editor = await start(backend, env={"TEST_KEY": SECRET})
    uris = [editor.open(WORKSPACE / f"inflight_{i}.py", SOURCE) for i in range(3)]
    backend.enqueue(*[Reply(stall_after_chars=0, stall_s=30) for _ in uris])
    pending = [
        asyncio.create_task(
            editor.execute(
                "refactorLsp.refactor",
                {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": "rename data to x"},
            )
        )
        for uri in uris
    ]
    while len(backend.requests) < len(uris):
        await asyncio.sleep(0.01)
    started = time.monotonic()
    await asyncio.wait_for(client.shutdown_async(None), 2)
    client.exit(None)
    await asyncio.wait_for(client._server.wait(), 2)  # type: ignore[union-attr]
    assert time.monotonic() - started < 2.0
    assert client._server.returncode == 0  # type: ignore[union-attr]
    for _ in range(100):  # the HTTP streams were closed, not abandoned
        if backend.disconnects >= len(uris):
            break
        await asyncio.sleep(0.01)
    assert backend.disconnects == len(uris)
    assert all(editor.buffers[uri] == SOURCE for uri in uris)
    for task in pending:
        task.cancel()
    await client.stop()


async def test_two_hundred_refactors_do_not_grow_memory_or_sockets(backend: FakeBackend):
    client, editor = await start(backend, env={"TEST_KEY": SECRET})
    pid = server_pid(client)
    uri = editor.open(WORKSPACE / "soak.py", SOURCE)
    names = ["data", "content"]

    async def one(i: int) -> None:
        old, new = names[i % 2], names[(i + 1) % 2]
        result = await editor.execute(
            "refactorLsp.refactor",
            {"uri": uri, "range": editor.cursor_at(uri, "= open"), "instruction": f"rename {old} to {new}"},
        )
        assert result["status"] == "applied", result

    for i in range(20):
        await one(i)
    baseline_rss, baseline_sockets = rss_kb(pid), open_sockets(pid)
    for i in range(20, 200):
        await one(i)
    grown_kb = rss_kb(pid) - baseline_rss
    assert editor.buffers[uri] == SOURCE
    assert grown_kb < 12_000, f"RSS grew by {grown_kb} kB over 180 refactors"
    assert open_sockets(pid) <= baseline_sockets + 2
    await client.shutdown_session()
    await client.stop()


async def test_api_key_never_appears_in_any_output(backend: FakeBackend, tmp_path: Path):
    log_file = tmp_path / "server.log"
    client, editor = await start(backend, "--log-file", str(log_file), "-vv", env={"TEST_KEY": SECRET})
    uri = editor.open(WORKSPACE / "secret.py", SOURCE)
    args = {"uri": uri, "range": editor.cursor_at(uri, "data ="), "instruction": "rename data to x"}
    assert (await editor.execute("refactorLsp.refactor", args))["status"] == "applied"
    assert backend.headers_seen[-1]["authorization"] == f"Bearer {SECRET}"  # the key was used...
    backend.enqueue(Reply(status=401, error="Incorrect API key provided"))
    editor.change(uri, SOURCE)
    assert (await editor.execute("refactorLsp.refactor", args))["status"] == "error"
    await editor.execute("refactorLsp.showStats")
    await client.shutdown_session()
    await client.stop()
    history = Path(SERVER_ENV["XDG_STATE_HOME"]) / "refactor-lsp" / "history.jsonl"
    outputs = {
        "messages": "\n".join(m.message for m in client.messages),
        "log messages": "\n".join(m.message for m in client.log_messages),
        "stats notifications": repr(editor.stats),
        "log file": log_file.read_text(encoding="utf-8"),
        "history": history.read_text(encoding="utf-8"),
    }
    assert "TEST_KEY" in outputs["messages"]  # ...and the 401 message named the variable
    for name, text in outputs.items():
        assert text, f"{name} is empty: the check would prove nothing"
        assert SECRET not in text, f"the API key leaked into the {name}"
    # The files are the user's alone.
    assert stat.S_IMODE(log_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    assert stat.S_IMODE(history.parent.stat().st_mode) == 0o700
    # `check` says what is wrong without the key.
    config = tmp_path / "config.toml"
    config.write_text(
        f'default_backend = "fake"\n[backends.fake]\ntype = "openai"\nbase_url = "{backend.url}"\n'
        f'model = "fake-model"\napi_key_env = "TEST_KEY"\n',
        encoding="utf-8",
    )
    backend.enqueue(Reply(status=401, error="Incorrect API key provided"))
    checked = run_cli("check", config=config, cwd=tmp_path, env={**SERVER_ENV, "TEST_KEY": SECRET})
    assert "TEST_KEY" in checked.stdout + checked.stderr
    assert SECRET not in checked.stdout + checked.stderr
