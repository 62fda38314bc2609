"""The command line's subcommands agree with each other and with docs/cli.md: exit codes, the options
a message names, combinations refused rather than one silently dropped, nothing sent that cannot be
refactored, and what a cursor outside every definition gets (issue 28, item 16)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from json import decoder
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import region_of
from tests.backends.test_cli import SOURCE, assert_clean_failure, refactor
from tests.cli_harness import run_cli, run_process
from tests.conftest import write_config
from tests.stdlib_targets import module_docstring_lines, top_level_assignment


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": write_config(tmp_path, fake=fake_backend)}


def test_a_reader_that_stops_early_gets_no_traceback(project: dict[str, Any], make_fake) -> None:
    """`check | head -1`: the first line read, the pipe closed, the rest of the output has nowhere to go."""
    fake = make_fake("openai", step_s=0.01)  # the check's completion takes a while: its lines come after
    config = write_config(project["dir"], name="slow.toml", slow=fake)
    environment = dict(os.environ, REFACTOR_LSP_CONFIG=str(config))
    process = subprocess.Popen(
        [sys.executable, "-u", "-m", "lsp_server", "check"],  # -u: each line goes out as printed, as on a terminal
        cwd=project["dir"],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    process.stdout.close()  # what `head -1` does once it has its line
    stderr = process.stderr.read()
    code = process.wait(timeout=60)
    assert first.startswith("config: ok")
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
    assert code == 141  # as a shell reports a tool that SIGPIPE ended (docs/cli.md, exit codes)


def test_an_unknown_backend_is_a_usage_error_in_every_subcommand(project: dict[str, Any], fake_backend) -> None:
    for args in (
        ("refactor", "geometry.py", "-i", "rename foo to area", "--backend", "nosuch"),
        ("refactor", "geometry.py", "--each", "definition", "-i", "rename foo to area", "--backend", "nosuch"),
        ("check", "--backend", "nosuch"),
    ):
        result = run_cli(*args, config=project["config"], cwd=project["dir"])
        if args[0] == "check":
            assert result.returncode == 2 and "unknown backend 'nosuch'" in result.stderr, result.stderr
        else:
            assert "unknown backend 'nosuch'" in assert_clean_failure(result, code=2)
    assert fake_backend.requests == []


@pytest.mark.parametrize("each", [(), ("--each", "definition")], ids=["one", "each"])
def test_an_empty_instruction_names_the_option_to_give(project: dict[str, Any], fake_backend, each) -> None:
    result = run_cli("refactor", "geometry.py", *each, "-i", " ", config=project["config"], cwd=project["dir"])
    message = assert_clean_failure(result, code=2)
    assert '-i/--instruction is empty: say what to do in words, e.g. -i "add type hints"' in message
    assert "action id" not in message  # the command line has no option for one
    assert fake_backend.requests == []


def test_at_and_lines_together_are_refused(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    message = assert_clean_failure(refactor(project, "--at", "5", "--lines", "8:9", "-i", "rename foo to area"), 2)
    assert "--at and --lines do not go together" in message
    assert fake_backend.requests == []


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank"])
def test_an_empty_file_is_not_sent(project: dict[str, Any], fake_backend: FakeBackend, text: str) -> None:
    project["source"].write_text(text, encoding="utf-8")
    message = assert_clean_failure(refactor(project, "-i", "add type hints"))
    assert "the file is empty: there is no code to rewrite, so nothing was sent" in message
    assert fake_backend.requests == []


@pytest.mark.parametrize("command", ["check", "refactor"])
def test_a_config_file_that_cannot_be_read_is_named_as_a_file(
    project: dict[str, Any], tmp_path: Path, command: str
) -> None:
    missing = tmp_path / "nonexistent.toml"
    args = ("refactor", "geometry.py", "-i", "x") if command == "refactor" else ("check",)
    result = run_cli(*args, "--config", str(missing), config=None, cwd=project["dir"])
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"refactor-lsp: {missing}: this config file cannot be read: No such file or directory\n" in result.stderr
    assert "(file)" not in result.stderr


# -- a cursor outside every definition, on a file no one here wrote ------------------------------------

DECODER = Path(decoder.__file__)


@pytest.fixture
def stdlib_file(project: dict[str, Any]) -> Path:
    copy = project["dir"] / "decoder.py"
    shutil.copyfile(DECODER, copy)
    return copy


def sent_region(fake: FakeBackend) -> str:
    (request,) = [r for r in fake.requests if region_of(r["messages"])]
    return region_of(request["messages"])


def test_a_cursor_on_a_one_line_statement_gets_the_whole_file_said_before_sending(
    project: dict[str, Any], fake_backend: FakeBackend, stdlib_file: Path
) -> None:
    """docs/how-it-works.md ("Scope"): outside every definition and every statement of several lines,
    the whole file, and a file this large is named before the wait, in every output mode."""
    text = stdlib_file.read_text(encoding="utf-8")
    at = top_level_assignment(DECODER, "__all__")
    result = run_cli(
        "refactor", "decoder.py", "--at", str(at), "-i", "x", "--json", config=project["config"], cwd=project["dir"]
    )
    assert result.returncode == 0, result.stderr
    lines = text.count("\n")
    warning = f"refactor-lsp: rewriting the whole file, {lines} lines (--at {at} is outside every definition)"
    assert result.stderr.startswith(warning + "; --lines START:END rewrites less\n"), result.stderr
    assert sent_region(fake_backend) == text


def test_a_cursor_in_a_statement_of_several_lines_gets_that_statement(
    project: dict[str, Any], fake_backend: FakeBackend, stdlib_file: Path
) -> None:
    text = stdlib_file.read_text(encoding="utf-8")
    first, last = module_docstring_lines(DECODER)
    args = ("refactor", "decoder.py", "--at", str(first), "-i", "x")
    result = run_cli(*args, config=project["config"], cwd=project["dir"])
    assert result.returncode == 0, result.stderr
    assert "rewriting" not in result.stderr
    assert sent_region(fake_backend) == "".join(text.splitlines(keepends=True)[first - 1 : last])


# -- a batch's JSON names each refused answer's file, as one refactor's does -------------------------------


def test_a_batch_keeps_each_refused_answer_and_names_its_file(project: dict[str, Any], fake_backend) -> None:
    answers = ["def foo(radius):\n    return (\n", 'def describe(radius):\n    return f"area {\n']
    fake_backend.enqueue(*(Reply(text=answer, finish_reason="length") for answer in answers))  # cut off: refused
    args = ("refactor", "geometry.py", "--each", "definition", "--jobs", "1", "-i", "x", "--json")
    result = run_process(*args, config=project["config"], cwd=project["dir"])  # a batch's real exit 3 and pipes
    assert result.returncode == 3, result.stderr  # every failure a refused answer
    targets = json.loads(result.stdout)["targets"]
    assert [t["outcome"] for t in targets] == ["refused", "refused"]
    files = [Path(t["answer_file"]) for t in targets]
    assert len(set(files)) == 2  # one file each: the second does not replace the first
    for target, path in zip(targets, files, strict=True):
        assert path.read_text(encoding="utf-8") == target["answer"]
        assert f"(the model's answer: {path})" in result.stderr
    assert [t["answer"] for t in targets] == answers
