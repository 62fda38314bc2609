"""What backends taught (window, characters per token), kept in the state folder: read back by the
next process, bounded and checked, and a damaged, oversized or linked file ignored safely."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from lsp_server.backend.memory import FILE_NAME, MAX_ENTRIES, MAX_FILE_BYTES, BackendMemory, read_learned
from lsp_server.backend.window import ContextWindow
from lsp_server.config.schema import BackendConfig

BACKEND = BackendConfig(name="gpu", type="vllm", base_url="http://gpu-box:8000/v1", model="qwen")


@pytest.fixture
def path(isolated_env: dict[str, Path]) -> Path:
    return isolated_env["XDG_STATE_HOME"] / "refactor-lsp" / FILE_NAME


def test_what_one_process_learns_the_next_one_knows(path: Path) -> None:
    first = BackendMemory()
    first.remember_window(BACKEND, ContextWindow(4096, "error"))
    first.learn_usage(BACKEND, prompt_chars_per_token=3.1, output_chars_per_token=3.6)
    assert path.exists() and oct(path.stat().st_mode & 0o777) == "0o600"
    later = BackendMemory().learned(BACKEND)
    assert later.window == ContextWindow(4096, "error")
    assert later.prompt_chars_per_token == pytest.approx(3.1) and later.output_chars_per_token == pytest.approx(3.6)
    # Per URL and model: the same server with another model knows nothing yet.
    other = BackendConfig(name="gpu", type="vllm", base_url=BACKEND.base_url, model="llama")
    assert BackendMemory().window(other) is None


def test_the_prompt_ratio_falls_at_once_and_rises_slowly(path: Path) -> None:
    memory = BackendMemory()
    memory.learn_usage(BACKEND, prompt_chars_per_token=3.0)
    memory.learn_usage(BACKEND, prompt_chars_per_token=4.0)  # one roomy prompt does not make every prompt roomy
    assert memory.learned(BACKEND).prompt_chars_per_token == pytest.approx(3.25)
    memory.learn_usage(BACKEND, prompt_chars_per_token=2.5)  # a dense one counts at once
    assert memory.learned(BACKEND).prompt_chars_per_token == pytest.approx(2.5)
    memory.distrust_prompt_ratio(BACKEND, 2.5)
    assert BackendMemory().learned(BACKEND).prompt_chars_per_token == pytest.approx(2.0)


def test_a_small_change_is_not_written_again(path: Path) -> None:
    memory = BackendMemory()
    memory.learn_usage(BACKEND, output_chars_per_token=3.50)
    written = path.read_bytes()
    memory.learn_usage(BACKEND, output_chars_per_token=3.70)  # half way: 3.60, under 5 %: in memory only
    assert path.read_bytes() == written
    assert memory.learned(BACKEND).output_chars_per_token == pytest.approx(3.60)
    memory.learn_usage(BACKEND, output_chars_per_token=4.6)
    assert path.read_bytes() != written


def test_another_processs_entries_are_kept(path: Path) -> None:
    other = BackendConfig(name="cpu", type="llamacpp", base_url="http://127.0.0.1:8080/v1", model="gguf")
    BackendMemory().remember_window(other, ContextWindow(8192, "props"))
    mine = BackendMemory()
    mine.window(BACKEND)  # read before the other process wrote again: the write still merges
    BackendMemory().learn_usage(other, prompt_chars_per_token=2.8)
    mine.remember_window(BACKEND, ContextWindow(32768, "models"))
    fresh = BackendMemory()
    assert fresh.window(other) == ContextWindow(8192, "props") and fresh.window(BACKEND) == ContextWindow(
        32768, "models"
    )
    assert fresh.learned(other).prompt_chars_per_token == pytest.approx(2.8)


def test_entries_are_bounded_in_number_and_size(path: Path) -> None:
    memory = BackendMemory()
    for n in range(MAX_ENTRIES + 10):
        memory.remember_window(BackendConfig(base_url=f"http://h{n}:8000/v1", model="m"), ContextWindow(4096, "models"))
    entries = json.loads(path.read_text())["backends"]
    assert len(entries) == MAX_ENTRIES
    huge = BackendConfig(base_url="http://h/" + "x" * 5000, model="m")
    memory.remember_window(huge, ContextWindow(4096, "models"))
    assert memory.window(huge) is not None  # this process knows it...
    assert "x" * 5000 not in path.read_text()  # ...but the file does not grow for it
    assert path.stat().st_size <= MAX_FILE_BYTES


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        json.dumps({"v": 2, "backends": []}).encode(),
        json.dumps({"v": True, "backends": []}).encode(),
        json.dumps({"v": 1, "backends": {"a": 1}}).encode(),
        b" " * (MAX_FILE_BYTES + 1),
    ],
    ids=["not-json", "not-utf8", "not-an-object", "newer-version", "version-not-int", "not-a-list", "oversized"],
)
def test_a_damaged_file_is_ignored_and_replaced(path: Path, content: bytes, caplog: pytest.LogCaptureFixture) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_bytes(content)
    memory = BackendMemory()
    assert memory.window(BACKEND) is None
    assert any("ignoring" in r.getMessage() for r in caplog.records)
    memory.remember_window(BACKEND, ContextWindow(4096, "models"))
    assert BackendMemory().window(BACKEND) == ContextWindow(4096, "models")


def test_damaged_entries_are_skipped_alone(path: Path) -> None:
    good = {"base_url": BACKEND.base_url, "model": BACKEND.model, "window": 4096, "window_source": "models", "seen": 1}
    bad = [
        {**good, "model": "a", "window": "4096"},
        {**good, "model": "b", "window": 10**12},
        {**good, "model": "c", "window_source": "a rumour"},
        {**good, "model": "d", "prompt_chars_per_token": float("nan")},
        {**good, "model": "e", "prompt_chars_per_token": 400.0},
        {**good, "model": "f", "seen": -1},
        {**good, "base_url": 7},
        "an entry",
    ]
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(json.dumps({"v": 1, "backends": [*bad, good]}, allow_nan=True))
    learned = read_learned(path)
    assert list(learned) == [(BACKEND.base_url, BACKEND.model)]


def test_a_link_in_place_of_the_file_is_not_followed(path: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(
        json.dumps(
            {
                "v": 1,
                "backends": [{"base_url": BACKEND.base_url, "model": "qwen", "window": 300, "window_source": "models"}],
            }
        )
    )
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.symlink(target, path)
    memory = BackendMemory()
    assert memory.window(BACKEND) is None  # not read through the link
    memory.remember_window(BACKEND, ContextWindow(4096, "models"))
    assert not path.is_symlink()  # replaced by a file of ours...
    assert json.loads(target.read_text())["backends"][0]["window"] == 300  # ...and the target left alone
