"""The command's streams as a shell hands them over (cli/io.on_screen): the real console script run by
bash, stdout on a terminal, a pipe its reader leaves early, a stream closed (`>&-`), one open for reading
only; each ends in its exit code (docs/cli.md, "Exit codes"), and never in a traceback of ours."""

from __future__ import annotations

import json
import os
import pty
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.cli_harness import cli_env
from tests.conftest import write_config

SOURCE = "def area(r):\n    return 3.14 * r * r\n"
ANSWER = "def area(r):\n    return 3.14159 * r * r\n"
SCRIPT = Path(sys.executable).with_name("refactor-lsp")  # the console script pip installed beside python


def command_line() -> list[str]:
    return [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "lsp_server"]


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    (tmp_path / "area.py").write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "config": write_config(tmp_path, fake=fake_backend)}


def in_bash(
    project: dict[str, Any], args: list[str], redirect: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`refactor-lsp ARGS REDIRECT` as bash runs it; the exit status is refactor-lsp's, not a pipe's reader's."""
    line = f'{shlex.join([*command_line(), *args])} {redirect}; exit "${{PIPESTATUS[0]}}"'
    return subprocess.run(
        ["bash", "-c", line],
        cwd=project["dir"],
        env=cli_env(project["config"], env),
        capture_output=True,
        text=True,
        errors="replace",  # a terminal's encoding is not UTF-8: a test may ask for one
        timeout=60,
    )


REFACTOR = ["refactor", "area.py", "--at", "1", "-i", "more digits"]


def test_json_on_a_terminal_is_the_same_json_as_on_a_pipe(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    """stdout on a terminal spells out the answer's controls (a C1 CSI, a right-to-left override, a line
    separator, a lone carriage return): what it shows still reads as the JSON a pipe gets."""
    hostile = ANSWER.replace("3.14159", "3.14159  # \x9b2J \u202eevil\u2028\rhidden")
    fake_backend.enqueue(Reply(text=hostile), Reply(text=hostile))
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen(
            [*command_line(), *REFACTOR, "--json"],
            cwd=project["dir"],
            env=cli_env(project["config"]),
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.DEVNULL,
        )
        os.close(follower)
        shown = b""
        while chunk := _read(leader):
            shown += chunk
        assert child.wait(timeout=60) == 0
    finally:
        os.close(leader)
    on_a_pipe = json.loads(in_bash(project, [*REFACTOR, "--json"], "").stdout)
    assert not {"\x9b", "\u202e", "\u2028"} & set(shown.decode("utf-8"))
    on_a_terminal = json.loads(shown.decode("utf-8"))
    assert on_a_terminal["new_text"] == on_a_pipe["new_text"]
    assert "# \x9b2J \u202eevil" in on_a_terminal["new_text"]


WIDE = "def area(r):\n    return 3.14 * r * r  # café 中\n"


@pytest.mark.parametrize("encoding", ["latin-1", "ascii"])
def test_a_diff_on_a_pipe_is_the_files_own_utf8_whatever_the_encoding_asked(
    project: dict[str, Any], fake_backend: FakeBackend, encoding: str
) -> None:
    """A stdout in another encoding got a diff of other bytes (café in latin-1: a patch that does not
    apply) or one cut at the first 中 with a traceback, exit 1. A diff is the file's bytes; JSON is UTF-8."""
    (project["dir"] / "area.py").write_text(WIDE, encoding="utf-8")
    answer = WIDE.replace("3.14 ", "3.14159 ")
    fake_backend.enqueue(Reply(text=answer), Reply(text=answer))
    done = subprocess.run(
        [*command_line(), *REFACTOR],
        cwd=project["dir"],
        env=cli_env(project["config"], {"PYTHONIOENCODING": encoding}),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.endswith(f"-{WIDE.splitlines()[1]}\n+{answer.splitlines()[1]}\n".encode())
    subprocess.run(["patch", "-s", "area.py"], cwd=project["dir"], input=done.stdout, check=True, timeout=30)
    assert (project["dir"] / "area.py").read_text(encoding="utf-8") == answer
    (project["dir"] / "area.py").write_text(WIDE, encoding="utf-8")
    as_json = in_bash(project, [*REFACTOR, "--json"], "", {"PYTHONIOENCODING": encoding})
    assert json.loads(as_json.stdout)["new_text"] == answer


def test_a_terminal_that_cannot_show_a_character_is_shown_it_spelt_out_and_told(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """A latin-1 terminal shows café as it is and 中 as \\u4e2d, to the end of the diff, and one line says
    why and how to see it (it stopped at 中 with a traceback, exit 1)."""
    (project["dir"] / "area.py").write_text(WIDE, encoding="utf-8")
    fake_backend.enqueue(Reply(text=WIDE.replace("3.14 ", "3.14159 ")))
    shown, err, code = on_a_terminal(project, REFACTOR, {"PYTHONIOENCODING": "latin-1"})
    assert code == 0, err
    assert (
        shown.decode("latin-1")
        .replace("\r\n", "\n")
        .endswith("-    return 3.14 * r * r  # café \\u4e2d\n+    return 3.14159 * r * r  # café \\u4e2d\n")
    )
    assert "refactor-lsp: 2 characters of the output could not be shown in this terminal's encoding (iso8859-1)" in err


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_stderr_in_the_same_pipe_as_the_diff_is_utf8_too(
    project: dict[str, Any], fake_backend: FakeBackend, encoding: str
) -> None:
    """`2>&1 | less`, `> log 2>&1`: one stream of both. stderr kept the encoding asked for, so the speed
    line's `·` was a latin-1 byte (or UTF-16, a NUL after each letter) among the diff's UTF-8: the whole
    was no encoding at all. Now all of it is UTF-8, and the diff in it still applies."""
    (project["dir"] / "area.py").write_text(WIDE, encoding="utf-8")
    answer = WIDE.replace("3.14 ", "3.14159 ")
    fake_backend.enqueue(Reply(text=answer))
    done = subprocess.run(
        [*command_line(), *REFACTOR],
        cwd=project["dir"],
        env=cli_env(project["config"], {"PYTHONIOENCODING": encoding}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=60,
    )
    assert done.returncode == 0
    both = done.stdout.decode("utf-8")  # raised on the latin-1 · (0xb7) and on UTF-16's bytes
    diff, _, speed = both.partition("\nrefactor ")
    assert " tok · " in speed
    subprocess.run(["patch", "-s", "area.py"], cwd=project["dir"], input=f"{diff}\n".encode(), check=True, timeout=30)
    assert (project["dir"] / "area.py").read_text(encoding="utf-8") == answer


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8-sig"])
def test_a_terminal_is_never_sent_an_encoding_no_terminal_reads(
    project: dict[str, Any], fake_backend: FakeBackend, encoding: str
) -> None:
    """PYTHONIOENCODING=utf-16 sent the terminal a NUL after every letter, utf-8-sig a byte-order mark (a
    control a terminal shows as nothing): it gets the locale's encoding (here UTF-8) instead."""
    (project["dir"] / "area.py").write_text(WIDE, encoding="utf-8")
    fake_backend.enqueue(Reply(text=WIDE.replace("3.14 ", "3.14159 ")))
    shown, err, code = on_a_terminal(project, REFACTOR, {"PYTHONIOENCODING": encoding})
    assert code == 0, err
    assert b"\x00" not in shown and "\ufeff".encode() not in shown
    assert "+    return 3.14159 * r * r  # café 中\r\n".encode() in shown


def on_a_terminal(project: dict[str, Any], args: list[str], env: dict[str, str]) -> tuple[bytes, str, int]:
    """What a terminal on stdout is sent by `refactor-lsp ARGS`, its stderr, its exit status."""
    leader, follower = pty.openpty()
    try:
        child = subprocess.Popen(
            [*command_line(), *args],
            cwd=project["dir"],
            env=cli_env(project["config"], env),
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
        )
        os.close(follower)
        shown = b""
        while chunk := _read(leader):
            shown += chunk
        assert child.stderr is not None
        err = child.stderr.read().decode("utf-8", "replace")
        return shown, err, child.wait(timeout=60)
    finally:
        os.close(leader)


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the child closed the terminal
        return b""


def test_a_reader_that_leaves_early_ends_it_with_141_and_no_traceback(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """More output than a pipe holds (the whole file in `new_text`), read one byte of, on stdout alone and
    with stderr in the same pipe."""
    big = SOURCE + "".join(f"\n\ndef f{n}(x):\n    return x + {n}  # {'.' * 200}\n" for n in range(2000))
    (project["dir"] / "area.py").write_text(big, encoding="utf-8")
    for redirect in ("| head -c 1", "2>&1 | head -c 1"):
        fake_backend.enqueue(Reply(text=ANSWER))
        done = in_bash(project, [*REFACTOR, "--json"], redirect)
        assert done.returncode == 141, redirect
        assert "Traceback" not in done.stderr and "Error" not in done.stderr, redirect


@pytest.mark.parametrize("redirect", [">&-", "2>&-", ">&- 2>&-"])
def test_a_closed_stream_is_written_nowhere_without_a_traceback(
    project: dict[str, Any], fake_backend: FakeBackend, redirect: str
) -> None:
    fake_backend.enqueue(Reply(text=ANSWER))
    done = in_bash(project, [*REFACTOR, "--write"], redirect)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert (project["dir"] / "area.py").read_text(encoding="utf-8") == ANSWER


@pytest.mark.parametrize("redirect", [">&-", "2>&-"])
def test_a_usage_error_with_a_stream_closed_is_still_exit_2(project: dict[str, Any], redirect: str) -> None:
    done = in_bash(project, ["refactor", "area.py", "--json"], redirect)  # no -i
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr


def test_a_snippet_from_a_closed_stdin_is_an_empty_one(project: dict[str, Any]) -> None:
    done = in_bash(project, ["apply", "area.py", "-"], "<&-")
    assert (done.returncode, done.stderr) == (2, "refactor-lsp: the snippet (stdin) is empty: give the code to apply\n")


def test_stdout_open_for_reading_only_is_said_once_and_fails(project: dict[str, Any], fake_backend) -> None:
    fake_backend.enqueue(Reply(text=ANSWER))
    done = in_bash(project, REFACTOR, "1</dev/null")
    assert done.returncode == 1
    said = "refactor-lsp: could not write to stdout (Bad file descriptor): the output is incomplete\n"
    assert done.stderr.endswith(said)
    assert "Traceback" not in done.stderr


def test_ctrl_c_during_check_exits_130_without_a_traceback(project: dict[str, Any], make_fake) -> None:
    slow = make_fake("openai", step_s=0.5)
    config = write_config(project["dir"], name="slow.toml", slow=slow)
    child = subprocess.Popen(
        [*command_line(), "check"],
        cwd=project["dir"],
        env=cli_env(config),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline().startswith("config: ok")
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130
    assert "Traceback" not in err


def test_an_unexpected_error_is_shown_spelt_out_and_exits_1(project: dict[str, Any]) -> None:
    """A bug's traceback quotes what we did not write (a path, a message): it goes through the Screen too."""
    crash = (
        "import sys, lsp_server.cli.refactor as refactor\n"
        "async def broken(args): raise RuntimeError('\\x1b]0;owned\\x07 \\u202eevil')\n"
        "refactor.run_request = broken\n"
        "from lsp_server.cli.main import main\n"
        "sys.exit(main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", crash, *REFACTOR],
        cwd=project["dir"],
        env=cli_env(project["config"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback (most recent call last):")
    assert done.stderr.endswith("RuntimeError: \\u001b]0;owned\\u0007 \\u202eevil\n")
    assert "\x1b" not in done.stderr and "\u202e" not in done.stderr


def test_json_that_quotes_a_file_name_which_is_not_utf8_is_still_utf8_json(project: dict[str, Any]) -> None:
    """A name read as a lone surrogate was written as the byte it was (no UTF-8: no JSON reader takes it)
    or, under a strict stdout, a traceback; spelt `\\udce9`, it reads back as the same name."""
    name = os.fsdecode(b"caf\xe9.py")
    done = subprocess.run(
        [*command_line(), "refactor", name, "-i", "more digits", "--json"],
        cwd=project["dir"],
        env=cli_env(project["config"]),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 2
    said = json.loads(done.stdout.decode("utf-8"))
    assert said["outcome"] == "usage"
    assert said["reason"] == f"cannot read {name}: No such file or directory"


def test_a_reader_of_stderr_gone_takes_nothing_more_and_the_work_goes_on(project: dict[str, Any]) -> None:
    """`2>&1 >out.json | head -1`: the line each definition ends with met a reader gone, in a task of the
    run: an error of its own, exit 1, no file written, no `--json`. stderr is what the command says as it
    goes; the files and the JSON are the work."""
    names = [f"f{n}.py" for n in range(6)]
    for n, name in enumerate(names):
        (project["dir"] / name).write_text(f"def f{n}(x):\n    return x + {n}\n", encoding="utf-8")
    child = subprocess.Popen(
        [*command_line(), "refactor", *names, "--each", "definition", "-i", "rename x to y", "--write", "--json"],
        cwd=project["dir"],
        env=cli_env(project["config"]),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stderr is not None and child.stdout is not None
    child.stderr.close()  # gone before its first line
    said = json.loads(child.stdout.read())
    assert child.wait(timeout=60) == 0
    assert said["outcome"] == "applied"
    for n, name in enumerate(names):
        assert (project["dir"] / name).read_text(encoding="utf-8") == f"def f{n}(y):\n    return y + {n}\n"


def test_a_stderr_that_cannot_be_written_takes_nothing_and_the_work_goes_on(
    project: dict[str, Any], fake_backend
) -> None:
    """`2>/dev/full` (no space left) or a stderr open for reading only: the first line said ended the
    command, exit 1, saying nothing (it could not), no file written and no `--json`."""
    for redirect in ("2>/dev/full", "2</dev/null"):
        (project["dir"] / "area.py").write_text(SOURCE, encoding="utf-8")
        fake_backend.enqueue(Reply(text=ANSWER))
        done = in_bash(project, [*REFACTOR, "--write", "--json"], redirect)
        assert done.returncode == 0, redirect
        assert json.loads(done.stdout)["outcome"] == "applied", redirect
        assert (project["dir"] / "area.py").read_text(encoding="utf-8") == ANSWER, redirect
