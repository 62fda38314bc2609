"""`refactor --review` and `apply --review` (issue 38): each change asked about on a real terminal (a
pseudo-terminal), as `git add -p` asks about hunks; only the kept changes written, checked first; refused
without a terminal; `--json` lists every change and whether it was kept."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import write_config

SOURCE = """import os


def fetch(url, retries):

    data = None

    for attempt in range(retries):
        data = get(url)

    total = len(data)

    return total
"""
ANSWER = (
    SOURCE[SOURCE.index("def fetch") :]
    .replace("data = None", "data = {}")
    .replace("data = get(url)", "data = get(url, timeout=10)")
    .replace("total = len(data)", "total = len(data or [])")
)


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "fetch.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": write_config(tmp_path, fake=fake_backend)}


def on_terminal(
    project: dict[str, Any], answers: str | bytes, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    """The CLI with a pseudo-terminal as stdin, `answers` typed into it; (exit code, stdout, stderr)."""
    leader, follower = pty.openpty()
    try:
        os.write(leader, answers if isinstance(answers, bytes) else answers.encode())
        done = subprocess.run(
            [sys.executable, "-m", "lsp_server", *args, "--config", str(project["config"])],
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=90,
            cwd=project["dir"],
            env={**os.environ, "REFACTOR_LSP_CONFIG": str(project["config"]), **(env or {})},
        )
    finally:
        os.close(follower)
        os.close(leader)
    return done.returncode, done.stdout, done.stderr


def test_review_keeps_and_drops_changes_as_answered_on_the_terminal(project: dict[str, Any], fake_backend) -> None:
    fake_backend.enqueue(Reply(text=ANSWER))
    code, out, err = on_terminal(
        project, "y\nn\ny\n", "refactor", "fetch.py", "--at", "6", "-i", "harden it", "--review", "--write", "--json"
    )
    assert code == 0, err
    assert err.count("Keep this change [y,n,a,d,q,?]? ") == 3
    assert "change 1 of 3" in err and "line 6: `data = None` → `data = {}`" in err
    assert "-     data = None" in err and "+     data = {}" in err
    written = project["source"].read_text(encoding="utf-8")
    assert written == SOURCE.replace("data = None", "data = {}").replace("total = len(data)", "total = len(data or [])")
    report = json.loads(out)
    assert [(c["id"], c["kept"]) for c in report["changes"]] == [(1, True), (2, False), (3, True)]
    assert [c["label"] for c in report["changes"]][1] == "line 9: `data = get(url)` → `data = get(url, timeout=10)`"
    assert "kept 2 of 3 changes" in err


def test_help_then_keep_the_rest_of_the_file(project: dict[str, Any], fake_backend) -> None:
    fake_backend.enqueue(Reply(text=ANSWER))
    code, _, err = on_terminal(
        project, "?\nn\na\n", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review", "--write"
    )
    assert code == 0, err
    assert "a - keep this change and every later one of this file" in err
    assert err.count("Keep this change") == 3  # the help, then n, then a: the third change is not asked
    assert project["source"].read_text(encoding="utf-8") == SOURCE.replace(
        "data = get(url)", "data = get(url, timeout=10)"
    ).replace("total = len(data)", "total = len(data or [])")


def test_a_kept_subset_that_breaks_the_code_is_refused_and_nothing_is_written(
    project: dict[str, Any], fake_backend
) -> None:
    source = "def build(items):\n    data = None\n\n    size = 1\n    return data, size\n"
    project["source"].write_text(source, encoding="utf-8")
    fake_backend.enqueue(Reply(text="def build(items):\n    data = dict(\n\n    size=1)\n    return data, size\n"))
    code, _, err = on_terminal(project, "y\nn\n", "refactor", "fetch.py", "--at", "2", "-i", "x", "--review", "--write")
    assert code == 1, err
    assert "keeping change 1 without change 2 leaves an error: '(' was never closed" in err
    assert project["source"].read_text(encoding="utf-8") == source


def test_quit_keeps_nothing_and_writes_nothing(project: dict[str, Any], fake_backend) -> None:
    fake_backend.enqueue(Reply(text=ANSWER))
    code, _, err = on_terminal(project, "q\n", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review", "--write")
    assert code == 0, err
    assert err.count("Keep this change") == 1
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_an_answer_that_is_not_text_in_the_terminals_encoding_is_asked_again(
    project: dict[str, Any], fake_backend
) -> None:
    """A byte UTF-8 does not hold (a latin-1 terminal's é, a paste) ended the review in a traceback, exit 1."""
    fake_backend.enqueue(Reply(text=ANSWER))
    code, _, err = on_terminal(
        project, b"\xe9\ny\nn\nn\n", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review", "--write",
        env={"PYTHONIOENCODING": "utf-8"},  # a strict stdin, as under en_US.UTF-8
    )  # fmt: skip
    assert code == 0, err
    assert "Traceback" not in err
    assert err.count("Keep this change") == 4 and "y - keep this change" in err
    assert project["source"].read_text(encoding="utf-8") == SOURCE.replace("data = None", "data = {}")


def test_review_without_a_terminal_is_refused_before_anything_is_sent(project: dict[str, Any], fake_backend) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review", "--json",
         "--config", str(project["config"])],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60, cwd=project["dir"],
        start_new_session=True,  # no controlling terminal: /dev/tty cannot be opened either
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--review asks about each change on a terminal, and there is none here" in done.stderr
    assert json.loads(done.stdout)["outcome"] == "usage"
    assert fake_backend.requests == []


def test_apply_review_reads_the_snippet_from_stdin_and_asks_on_the_terminal(
    project: dict[str, Any], fake_backend
) -> None:
    snippet = project["dir"] / "snippet.py"
    snippet.write_text(ANSWER, encoding="utf-8")
    code, out, err = on_terminal(project, "n\ny\nn\n", "apply", "fetch.py", "snippet.py", "--review", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert [c["kept"] for c in report["changes"]] == [False, True, False]
    assert report["new_text"] == SOURCE.replace("data = get(url)", "data = get(url, timeout=10)")


def test_ctrl_c_at_a_question_ends_the_review_at_once_and_writes_nothing(project: dict[str, Any], fake_backend) -> None:
    """Ctrl-C while a question waits: before, asyncio.run took it as a cancel the blocked read never saw,
    so the question stayed, and the answers typed after it were written before the exit (130)."""
    fake_backend.enqueue(Reply(text=ANSWER))
    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "lsp_server", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review"]
    process = subprocess.Popen(
        [*command, "--write", "--config", str(project["config"])],
        stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project["dir"],
    )  # fmt: skip
    try:
        assert process.stderr is not None
        err = b""
        while b"Keep this change" not in err:  # the first question is on the terminal
            ready, _, _ = select.select([process.stderr], [], [], 60)
            assert ready, err
            err += os.read(process.stderr.fileno(), 65536)
        process.send_signal(signal.SIGINT)
        _, rest = process.communicate(timeout=15)  # no answer typed: it must not wait for one
        os.write(leader, b"a\n")  # an answer typed after Ctrl-C reaches nothing
    finally:
        process.kill()
        os.close(follower)
        os.close(leader)
    assert process.returncode == 130
    assert "interrupted (Ctrl-C); nothing was written" in rest.decode()
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def _reading_stdin(pid: int, within_s: float = 20.0) -> None:
    """Wait until the process sits in a read of its stdin (Linux's /proc/PID/syscall: read is 0, fd 0),
    so that what happens to the terminal next happens to that read, not before it."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/syscall").read_text().split()
            if fields[:2] == ["0", "0x0"]:
                return
        time.sleep(0.01)


def test_a_terminal_that_goes_away_mid_review_writes_nothing_and_says_so(project: dict[str, Any], fake_backend) -> None:
    """The terminal hangs up after one answer: nothing kept, nothing written, exit 1, `--json` says why
    (before: a traceback of the read's EIO and no JSON object)."""
    fake_backend.enqueue(Reply(text=ANSWER))
    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "lsp_server", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review"]
    process = subprocess.Popen(
        [*command, "--write", "--json", "--config", str(project["config"])],
        stdin=follower, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=project["dir"],
    )  # fmt: skip
    try:
        assert process.stderr is not None
        err, answered = b"", False
        while err.count(b"Keep this change") < 2:
            if b"Keep this change" in err and not answered:
                os.write(leader, b"y\n")
                answered = True
            ready, _, _ = select.select([process.stderr], [], [], 60)
            assert ready, err
            err += os.read(process.stderr.fileno(), 65536)
        _reading_stdin(process.pid)  # at the second question, waiting on the terminal: it hangs up
        os.close(leader)
        leader = -1
        out, rest = process.communicate(timeout=30)
    finally:
        process.kill()
        os.close(follower)
        if leader >= 0:
            os.close(leader)
    assert process.returncode == 1, rest
    assert "Traceback" not in rest.decode()
    assert "the terminal went away during the review (Input/output error); nothing was written" in rest.decode()
    report = json.loads(out)
    assert "the terminal went away during the review" in report["reason"]
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_each_of_several_files_d_drops_the_rest_of_its_file_only(project: dict[str, Any], fake_backend) -> None:
    """`--each` over two files: `d` on the first file's first change drops that file's later ones and
    asks on into the second, whose answers are its own."""
    from lsp_server.testing.responders import rule_responder

    fake_backend.responder = rule_responder
    two = "def f(value):\n    total = value\n\n    return total\n"
    for name in ("a.py", "b.py"):
        (project["dir"] / name).write_text(two, encoding="utf-8")
    code, out, err = on_terminal(
        project, "d\ny\nn\n", "refactor", "a.py", "b.py", "--each", "definition", "-i", "rename total to result",
        "--review", "--write", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert err.count("Keep this change") == 3  # a.py's second change is not asked
    assert (project["dir"] / "a.py").read_text(encoding="utf-8") == two
    assert (project["dir"] / "b.py").read_text(encoding="utf-8") == two.replace("total = value", "result = value")
    assert [c["kept"] for c in json.loads(out)["changes"]] == [False, False, True, False]


# Escape sequences a model could write into its answer: a hyperlink (OSC 8), erase-the-line-above, and a
# right-to-left override (Trojan Source). On the terminal they would make a link, hide a line, reorder one.
HOSTILE = "\x1b]8;;https://evil.example/\x07click\x1b]8;;\x07\x1b[1A\x1b[2K \u202eevil"


def test_a_change_is_shown_on_the_terminal_as_written_never_as_escape_sequences(
    project: dict[str, Any], fake_backend
) -> None:
    fake_backend.enqueue(Reply(text=ANSWER.replace("data = {}", f'data = "{HOSTILE}"')))
    code, out, err = on_terminal(project, "y\ny\ny\n", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review")
    assert code == 0, err
    assert "\x1b" not in err and "\u202e" not in err and "\x07" not in err
    shown = r"\u001b]8;;https://evil.example/\u0007click\u001b]8;;\u0007\u001b[1A\u001b[2K \u202eevil"
    assert f'+     data = "{shown}"' in err
    assert f'+    data = "{HOSTILE}"' in out  # stdout is a pipe here: the patch keeps the code's own bytes


def test_a_file_whose_lines_end_in_a_lone_cr_is_reviewed_line_by_line_as_the_editor_counts(
    project: dict[str, Any], fake_backend
) -> None:
    """Lines end at \\r too (LSP): the change is its own line, numbered as an editor numbers it, not the
    whole file as one line; the kept change written with the file's own line ends."""
    project["source"].write_bytes(SOURCE.replace("\n", "\r").encode())
    fake_backend.enqueue(Reply(text=ANSWER.replace("\n", "\r")))
    code, out, err = on_terminal(
        project, "y\nn\nn\n", "refactor", "fetch.py", "--at", "6", "-i", "x", "--review", "--write", "--json"
    )
    assert code == 0, err
    assert "  line 6: `data = None` → `data = {}`\n-     data = None\n+     data = {}\nKeep this change" in err
    assert [c["lines"] for c in json.loads(out)["changes"]] == [[6, 6], [9, 9], [11, 11]]
    assert project["source"].read_bytes() == SOURCE.replace("data = None", "data = {}").replace("\n", "\r").encode()
