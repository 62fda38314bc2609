"""Everything the CLI reads is bounded: the file it is given (only a regular file, up to
`refactor.max_file_chars`, never a wait on a FIFO) and the backend's answer (stopped and refused
once it is longer than max_tokens or the region allow)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.formats.hunks import DIVIDER, REPLACE_MARKER, SEARCH_MARKER
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.backends.test_cli import SOURCE, assert_clean_failure, refactor
from tests.cli_harness import run_cli
from tests.conftest import backend_table, write_config
from tests.lsp.test_faults import chunk, sse


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": write_config(tmp_path, fake=fake_backend)}


@pytest.mark.parametrize("one_line", [False, True], ids=["whitespace deltas", "one line that never ends"])
def test_a_backend_that_ignores_max_tokens_is_stopped_and_refused(
    project: dict[str, Any], fake_backend: FakeBackend, one_line: bool
) -> None:
    fake_backend.enqueue(Reply(flood_chunk_chars=256 * 1024, flood_one_line=one_line, flood_max_bytes=512 << 20))
    sent_before = fake_backend.flood_sent
    started = time.monotonic()
    result = refactor(project, "--at", "5", "-i", "rename foo to area", "--write")
    message = assert_clean_failure(result)
    assert "does not keep to max_tokens" in message and "nothing was applied" in message
    assert time.monotonic() - started < 30
    # The stream was closed after a few hundred kilobytes (and what the sockets buffer), not read to 512 MB.
    assert fake_backend.flood_sent - sent_before < 32 << 20, fake_backend.flood_sent - sent_before
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_the_bound_follows_the_region_not_only_a_raised_max_tokens(tmp_path: Path, fake_backend: FakeBackend) -> None:
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, fake=fake_backend, refactor={"max_tokens": 100_000})
    fake_backend.enqueue(Reply(flood_chunk_chars=64 * 1024, flood_max_bytes=512 << 20))
    sent_before = fake_backend.flood_sent
    result = run_cli("refactor", "geometry.py", "--at", "5", "-i", "x", config=config, cwd=tmp_path)
    assert "does not keep to max_tokens" in assert_clean_failure(result)
    # 100,000 tokens would allow 3.2 million characters; a two-line region allows about 20,000.
    assert fake_backend.flood_sent - sent_before < 32 << 20, fake_backend.flood_sent - sent_before


def test_a_fifo_is_refused_at_once(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    fifo = project["dir"] / "pipe.py"
    os.mkfifo(fifo)
    result = run_cli("refactor", "pipe.py", "-i", "x", config=project["config"], cwd=project["dir"])
    assert "pipe.py: it is a named pipe (FIFO), not a regular file" in assert_clean_failure(result, code=2)
    assert not [r for r in fake_backend.requests if "chat" in str(r)]


def test_a_device_is_refused_without_reading_it(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = run_cli("refactor", "/dev/zero", "-i", "x", config=project["config"], cwd=project["dir"])
    assert "/dev/zero: it is a device, not a regular file" in assert_clean_failure(result, code=2)
    assert not [r for r in fake_backend.requests if "chat" in str(r)]


def test_a_file_over_max_file_chars_is_refused_before_it_is_read_whole(tmp_path: Path, fake_backend: FakeBackend):
    big = tmp_path / "big.py"
    big.write_text("x = 1\n" * 2_000, encoding="utf-8")  # 12,000 characters
    config = write_config(tmp_path, fake=fake_backend, refactor={"max_file_chars": 10_000})
    result = run_cli("refactor", "big.py", "-i", "x", config=config, cwd=tmp_path)
    message = assert_clean_failure(result, code=2)
    assert "12,000 characters, more than refactor.max_file_chars (10,000)" in message
    # Larger than 4 bytes a character could hold: refused from its size, without reading it.
    big.write_bytes(b"x" * 40_001)
    message = assert_clean_failure(run_cli("refactor", "big.py", "-i", "x", config=config, cwd=tmp_path), code=2)
    assert "cannot read big.py: it is larger than 40,000 bytes" in message and "refactor.max_file_chars" in message
    assert not [r for r in fake_backend.requests if "chat" in str(r)]


def test_a_workspace_file_that_is_huge_or_a_fifo_is_refused_not_read(tmp_path: Path, fake_backend: FakeBackend):
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "home").mkdir()
    config = write_config(tmp_path / "home", fake=fake_backend)
    workspace_file = tmp_path / ".refactor-lsp.toml"
    workspace_file.write_text("# " + "x" * (2 << 20) + "\n", encoding="utf-8")
    result = run_cli("refactor", "geometry.py", "--at", "5", "-i", "rename foo to area", config=config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr  # the refactor goes on with your settings
    assert ".refactor-lsp.toml: this config file cannot be read: it is larger than 1,048,576 bytes" in result.stderr
    workspace_file.unlink()
    os.mkfifo(workspace_file)
    result = run_cli("refactor", "geometry.py", "--at", "5", "-i", "rename foo to area", config=config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_an_error_body_is_read_only_as_far_as_a_message_needs(project: dict[str, Any], fake_backend: FakeBackend):
    # A 400 whose JSON message was 128 MB: the SDK read it whole and the CLI peaked at about 700 MB.
    fake_backend.enqueue(Reply(status=400, error_body_bytes=64 << 20))
    result = refactor(project, "--at", "5", "-i", "rename foo to area")
    # The body was closed after 64 KB (and what the sockets buffer), not read to its end.
    assert fake_backend.flood_sent < 16 << 20, fake_backend.flood_sent
    message = assert_clean_failure(result)
    assert 'answered HTTP 400: {"error": {"message": "xxxx' in message and len(message) < 600, message[:600]


def test_a_model_list_is_read_only_up_to_its_bound(project: dict[str, Any], fake_backend: FakeBackend):
    # `check` against an 89 MB list once took 391 MB.
    fake_backend.models_padding_bytes = 64 << 20
    result = run_cli("check", config=project["config"], cwd=project["dir"])
    assert result.returncode == 1, result.stdout + result.stderr
    assert "answered GET /models with more than 4,194,304 bytes; it was not read" in result.stdout
    assert fake_backend.flood_sent < 16 << 20, fake_backend.flood_sent


def test_model_ids_in_a_message_are_few_and_clipped(tmp_path: Path) -> None:
    # A 404, then a list of 20 ids of 2 MB each, once made one 42-million-character line.
    ids = tuple(f"model-{i}-" + "x" * 100_000 for i in range(20))
    with FakeBackend("openai", models=ids) as fake:
        (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
        config = write_config(tmp_path, fake=backend_table(fake) | {"model": "fake-model"})  # not in the list
        failed = run_cli("refactor", "geometry.py", "--at", "5", "-i", "x", config=config, cwd=tmp_path)
        message = assert_clean_failure(failed)
        assert "has no model 'fake-model' (it offers: model-0-xxx" in message and "and 10 more)" in message
        assert len(message) < 1_500, len(message)
        checked = run_cli("check", config=config, cwd=tmp_path)
        assert "FAIL: the server has no model 'fake-model'; it offers: model-0-xxx" in checked.stdout
        assert len(checked.stdout) < 3_000, len(checked.stdout)


def test_a_block_of_thousands_of_dividers_is_refused_not_applied(tmp_path: Path, fake_backend: FakeBackend):
    # 15,000 divider lines in one block: 1.97 GB and 9 s to parse, then written into the file as code.
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, fake=fake_backend, refactor={"max_tokens": 4_000})
    block = f"{SEARCH_MARKER}\n    return math.pi * radius**2\n" + f"{DIVIDER}\n" * 1_500 + f"{REPLACE_MARKER}\n"
    fake_backend.enqueue(Reply(raw_body=sse(chunk(block, "stop"))))
    result = run_cli(
        "refactor",
        "geometry.py",
        "--at",
        "5",
        "-i",
        "x",
        "--edit-format",
        "hunks",
        "--write",
        config=config,
        cwd=tmp_path,
    )
    assert "edit block 1 has more than 5 ======= lines" in result.stderr, result.stderr
    assert source.read_text(encoding="utf-8") == SOURCE
