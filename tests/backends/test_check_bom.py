"""A file that starts with a byte-order mark is checked like any other (issue 36 item 1): the check
reads the text Python's parser reads (the mark is the file's, not code), so a broken answer is
refused, nothing written, through `refactor --at`, a whole-file refactor and `apply` alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from lsp_server.testing.responders import SlippingResponder
from tests.backends.test_cli import run_cli
from tests.conftest import write_config

BOM = "\ufeff"
SOURCE = "def load(path):\n    data = open(path).read()\n    return len(data)\n\n\ndef main():\n    return load('x')\n"


def broken_model(make_fake: Any) -> Any:
    """A model that drops a closing bracket in every answer, and again when asked to repair it."""
    return make_fake("openai", responder=SlippingResponder(slip="dropped closing bracket", fixes=False, seed=5))


def run(tmp_path: Path, fake: Any, text: str, *args: str) -> tuple[Any, Path]:
    path = tmp_path / "loader.py"
    path.write_bytes(text.encode("utf-8"))
    done = run_cli(*args, "--write", "--json", config=write_config(tmp_path, fake=fake), cwd=tmp_path)
    return done, path


def assert_refused(done: Any, path: Path, text: str) -> None:
    assert done.returncode != 0, done.stderr
    assert path.read_bytes() == text.encode("utf-8")  # untouched, its mark included
    report = json.loads(done.stdout)
    assert report["outcome"] == "refused" and report["stats"]["checked"] == "python", report
    assert "the code did not have" in done.stderr and "nothing was applied" in done.stderr


def test_a_broken_answer_in_a_files_first_definition_is_refused_after_a_byte_order_mark(
    tmp_path: Path, make_fake: Any
) -> None:
    text = BOM + SOURCE
    done, path = run(
        tmp_path, broken_model(make_fake), text, "refactor", "loader.py", "-i", "rename data to content", "--at", "2"
    )
    assert_refused(done, path, text)


def test_a_broken_whole_file_refactor_is_refused_after_a_byte_order_mark(tmp_path: Path, make_fake: Any) -> None:
    text = BOM + SOURCE
    done, path = run(tmp_path, broken_model(make_fake), text, "refactor", "loader.py", "-i", "rename data to content")
    assert_refused(done, path, text)


def test_a_broken_merge_is_refused_after_a_byte_order_mark(tmp_path: Path, make_fake: Any) -> None:
    text = BOM + SOURCE
    snippet = "def load(path):\n    # ... existing code ...\n    return len(data) + 1\n"  # a marker: the model merges
    (tmp_path / "snippet.py").write_text(snippet, encoding="utf-8")
    args = ("apply", "loader.py", "snippet.py")
    done, path = run(tmp_path, broken_model(make_fake), text, *args)
    assert_refused(done, path, text)


def test_a_valid_answer_keeps_the_byte_order_mark_and_is_checked(tmp_path: Path, make_fake: Any) -> None:
    text = BOM + SOURCE
    done, path = run(
        tmp_path, make_fake("openai"), text, "refactor", "loader.py", "-i", "rename data to content", "--at", "2"
    )
    assert done.returncode == 0, done.stderr
    assert path.read_bytes() == (BOM + SOURCE.replace("data", "content")).encode("utf-8")
    assert json.loads(done.stdout)["stats"]["checked"] == "python"
