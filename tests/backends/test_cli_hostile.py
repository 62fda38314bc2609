"""The one path as a hostile user meets it, through real child processes: a Ctrl-C in flight under
`--json`, the file swapped for a link while the model runs, a snippet that starts with a byte-order
mark, against the loopback backend over real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.backends.test_cli_one_path import KEYS, SNIPPET, SOURCE, each_kind
from tests.cli_harness import cli_env
from tests.conftest import write_config


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    (tmp_path / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": write_config(tmp_path, fake=fake_backend)}


def _child(project: dict[str, Any], *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "lsp_server", *args, "--config", str(project["config"])],
        cwd=project["dir"], env=cli_env(None), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _in_flight(fake: FakeBackend, child: subprocess.Popen[bytes]) -> None:
    """Until the child's first chat request reached the backend."""
    deadline = time.monotonic() + 30
    while not any("messages" in r for r in fake.requests):
        assert child.poll() is None and time.monotonic() < deadline, "the request never reached the backend"
        time.sleep(0.05)


def test_ctrl_c_in_flight_prints_the_one_json_object_and_exits_130_in_every_kind(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    for args in each_kind(project):
        fake_backend.reset()
        fake_backend.enqueue(*[Reply(delay_headers_s=30)] * 4)  # the model never answers in time
        child = _child(project, *args, "--json", "--write")
        _in_flight(fake_backend, child)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 130, (args, err)
        report = json.loads(out)  # one object, nothing else on stdout
        assert set(report) == KEYS and report["outcome"] == "interrupted", args
        assert "interrupted (Ctrl-C)" in err.decode() and "nothing was written" in report["reason"]
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_the_file_swapped_for_a_link_while_the_model_runs_is_not_written_nor_its_target(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    source, other = project["source"], project["dir"] / "other.py"
    for args in each_kind(project):
        fake_backend.reset()
        fake_backend.enqueue(*[Reply(delay_headers_s=1.5)] * 4)
        child = _child(project, *args, "--json", "--write")
        _in_flight(fake_backend, child)
        other.write_text(SOURCE, encoding="utf-8")  # the same text, another file: `git checkout` made it a link
        source.unlink()
        source.symlink_to(other)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 5, (args, err)
        report = json.loads(out)
        assert report["outcome"] == "stale" and "is now a link to" in err.decode(), args
        assert other.read_text(encoding="utf-8") == SOURCE, args  # the file never named is not written
        source.unlink()
        source.write_text(SOURCE, encoding="utf-8")


def test_a_snippet_that_starts_with_a_byte_order_mark_is_placed_as_without_it(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """A snippet saved by an editor that writes the mark (or piped from one): the mark is no code."""
    snippet = "def foo(radius):\r\n    return radius * 3\r\n"
    for name, data in (("file", "\ufeff" + snippet), ("stdin", "\ufeff" + snippet.replace("\r\n", "\n"))):
        path = project["dir"] / "bom-snippet.py"
        path.write_bytes(data.encode("utf-8"))
        spec = str(path) if name == "file" else "-"
        done = subprocess.run(
            [sys.executable, "-m", "lsp_server", "apply", str(project["source"]), spec, "--json", "--write",
             "--config", str(project["config"])],
            input=path.read_bytes(), capture_output=True, env=cli_env(None), cwd=project["dir"], timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, (name, done.stderr)
        assert json.loads(done.stdout)["merged_by"] == "splice"
        written = project["source"].read_text(encoding="utf-8")
        assert "\ufeff" not in written and "    return radius * 3\n" in written, name
        project["source"].write_text(SOURCE, encoding="utf-8")
    assert fake_backend.requests == []


def test_a_file_deleted_or_made_unreadable_while_the_model_runs_is_stale_not_a_failure(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Exit 5 tells an agent to read the file again: it changed, whether into other text or into
    something that can no longer be read as the text was (gone, no longer UTF-8)."""
    source = project["source"]
    for change in (source.unlink, lambda: source.write_bytes(b"\xff\xfe not text any more\n")):
        fake_backend.reset()
        fake_backend.enqueue(Reply(delay_headers_s=1.5))
        child = _child(project, "refactor", str(source), "--at", "5", "-i", "rename radius to r", "--json", "--write")
        _in_flight(fake_backend, child)
        change()
        out, err = child.communicate(timeout=30)
        assert child.returncode == 5, err
        assert json.loads(out)["outcome"] == "stale" and "changed while the refactor ran" in err.decode()
        source.write_text(SOURCE, encoding="utf-8")


def test_ctrl_c_at_a_review_question_stops_at_once_and_writes_nothing(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """The question waits on the terminal: asyncio's Ctrl-C only cancels the task, which that read never
    sees, so the first Ctrl-C was lost and the second ended it with nothing said (no --json object)."""
    import pty
    import select

    terminal, child_side = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "lsp_server", "refactor", str(project["source"]), "--at", "5", "-i",
         "rename radius to r", "--review", "--write", "--json", "--config", str(project["config"])],
        cwd=project["dir"], env=cli_env(None), stdin=child_side, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(child_side)
    try:
        assert child.stderr is not None
        said, deadline = b"", time.monotonic() + 30
        while b"Keep this change" not in said:
            assert time.monotonic() < deadline and child.poll() is None, said
            if select.select([child.stderr], [], [], 0.1)[0]:
                said += os.read(child.stderr.fileno(), 4096)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=5)  # the first Ctrl-C ends it
    finally:
        os.close(terminal)
        if child.poll() is None:
            child.kill()
    assert child.returncode == 130, err
    assert json.loads(out)["outcome"] == "interrupted"
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_a_backends_error_with_escape_sequences_is_shown_spelt_out_never_obeyed(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """stderr is a person's screen: a backend's (or a repository's) text quoted in a message could
    otherwise make a link, erase the line above, or retitle the terminal."""
    fake_backend.enqueue(Reply(status=400, error="\x1b]8;;https://evil.example/\x07upgrade here\x1b]8;;\x07\x1b[1A"))
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "refactor", str(project["source"]), "--at", "2", "-i", "x",
         "--config", str(project["config"])],
        capture_output=True, env=cli_env(None), cwd=project["dir"], timeout=60, text=True,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert r"\u001b]8;;https://evil.example/\u0007upgrade here\u001b]8;;\u0007\u001b[1A" in done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


def test_a_file_name_that_is_not_utf8_is_refactored_written_and_reported_in_json(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """A name the system gives as bytes that are not UTF-8 (Python's surrogateescape): the prompt shows
    it escaped (the request failed as an internal error), and the `--json` object names it with the
    JSON escape the name decodes back from, on a stdout that takes only UTF-8 (a desktop's UTF-8 locale:
    the object failed after the file was written, a traceback and no report)."""
    name = os.fsdecode(b"caf\xff.py")
    source = project["dir"] / name
    source.write_text(SOURCE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "refactor", str(source), "--at", "5", "-i", "rename radius to r",
         "--json", "--write", "--config", str(project["config"])],
        capture_output=True, env=cli_env(None, {"PYTHONIOENCODING": "utf-8:strict"}), cwd=project["dir"], timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.decode("utf-8"))
    assert report["outcome"] == "applied" and report["targets"][0]["file"] == str(source.resolve())
    assert "def foo(r):\n    return r * 2\n" in source.read_text(encoding="utf-8")
    assert "File: caf\\xff.py\n" in fake_backend.requests[-1]["messages"][1]["content"]


def test_a_write_waits_for_another_refactor_lsp_writing_the_file_and_then_finds_its_edit(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Two `--write`s on one file that read the same text: each checked the file unchanged, then wrote,
    and in the moment between the two steps the later wrote over the earlier, both saying `wrote`, exit 0
    (2 runs in 20 here). Another refactor-lsp between its check and its write holds the file (flock): this
    one waits, then finds that one's edit, writes nothing, exit 5."""
    import fcntl

    source = project["source"]
    theirs = SOURCE.replace("radius", "r")
    fake_backend.enqueue(Reply(text=SOURCE[SOURCE.index("def ") :].replace("radius", "rad")))
    held = os.open(source, os.O_RDONLY)
    try:
        fcntl.flock(held, fcntl.LOCK_EX)  # the other refactor-lsp, between its check and its write
        child = _child(project, "refactor", str(source), "--at", "5", "-i", "x", "--json", "--write")
        _in_flight(fake_backend, child)
        with pytest.raises(subprocess.TimeoutExpired):
            child.wait(timeout=2)  # it waits; before, it wrote at once over what the other was writing
        other = source.with_name(".theirs")
        other.write_text(theirs, encoding="utf-8")
        other.replace(source)  # the other's write, as safe_write makes one: a rename
    finally:
        os.close(held)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 5, err
    assert json.loads(out)["outcome"] == "stale" and "changed while the refactor ran" in err.decode()
    assert source.read_text(encoding="utf-8") == theirs


def test_one_ctrl_c_while_waiting_for_the_files_lock_ends_it_at_once_nothing_written(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """asyncio's first Ctrl-C only cancels the run, and the wait for the lock has no await to see it: the
    press did nothing, and once the other refactor-lsp let go the file was written ('wrote'), then exit
    130 with no --json object. One press ends the wait: exit 130, the interrupted object, nothing written."""
    import fcntl

    source = project["source"]
    for args in each_kind(project):
        fake_backend.reset()
        fake_backend.enqueue(Reply(text=SOURCE[SOURCE.index("def ") :].replace("radius", "rad")), *[Reply()] * 3)
        held = os.open(source, os.O_RDONLY)
        try:
            fcntl.flock(held, fcntl.LOCK_EX)  # another refactor-lsp, between its check and its write
            child = _child(project, *args, "--json", "--write")
            _in_flight(fake_backend, child)
            with pytest.raises(subprocess.TimeoutExpired):
                child.wait(timeout=2)  # waiting on the lock
            child.send_signal(signal.SIGINT)
            out, err = child.communicate(timeout=5)  # the lock still held: the press alone ended it
        finally:
            os.close(held)
        assert child.returncode == 130, (args, err)
        assert json.loads(out)["outcome"] == "interrupted", args
        assert "interrupted (Ctrl-C); nothing was written" in err.decode() and b"wrote" not in err, args
        assert source.read_text(encoding="utf-8") == SOURCE, args
