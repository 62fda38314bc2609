"""The diff `refactor` prints (cli/io.print_diff) is one git applies, whatever the file: its name as git
writes it (quoted when it holds a line break, a control character, a quote; a tab after one with a space),
so a name cannot forge a line of the diff; its lines split at \\n alone, as patch reads them, so a file
whose lines end in a lone \\r still gets a diff that applies. Run as a child: stdout's bytes as written."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.cli_harness import cli_env
from tests.conftest import write_config

SOURCE = "import os\n\n\ndef area(r):\n    return 3.14 * r * r\n\n\ndef name():\n    return 'area'\n"
AREA = "def area(r):\n    return 3.14159 * r * r\n"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git applies the diff")


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    return {"dir": tmp_path, "config": write_config(tmp_path, fake=fake_backend)}


def refactor(project: dict[str, Any], name: str, *args: str) -> bytes:
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "refactor", name, "-i", "more digits", *args],
        cwd=project["dir"],
        env=cli_env(project["config"]),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def git_apply(folder: Path, diff: bytes) -> None:
    subprocess.run(["git", "apply", "-"], cwd=folder, input=diff, check=True, capture_output=True, timeout=30)


@needs_git
@pytest.mark.parametrize(
    ("name", "header"),
    [
        ("my area.py", b"--- a/my area.py\t\n+++ b/my area.py\t\n"),
        ("2\n+++ evil.py\n@@ x.py", b'--- "a/2\\n+++ evil.py\\n@@ x.py"\t\n+++ "b/2\\n+++ evil.py\\n@@ x.py"\t\n'),
        ('say "hi"\\.py', b'--- "a/say \\"hi\\"\\\\.py"\t\n+++ "b/say \\"hi\\"\\\\.py"\t\n'),
        ("esc\x1b[2J\r.py", b'--- "a/esc\\033[2J\\r.py"\n+++ "b/esc\\033[2J\\r.py"\n'),
        ("caf\u00e9.py", b'--- "a/caf\\303\\251.py"\n+++ "b/caf\\303\\251.py"\n'),
    ],
)
def test_an_odd_file_name_is_quoted_as_git_quotes_it_and_the_diff_applies(
    project: dict[str, Any], fake_backend: FakeBackend, name: str, header: bytes
) -> None:
    path = project["dir"] / name
    path.write_text(SOURCE, encoding="utf-8")
    fake_backend.enqueue(Reply(text=AREA))
    diff = refactor(project, name, "--at", "4")
    assert diff.startswith(header), diff
    assert (diff.count(b"\n--- "), diff.count(b"\n+++ "), diff.count(b"\n@@ ")) == (0, 1, 1)  # one pair, one hunk
    git_apply(project["dir"], diff)
    assert path.read_text(encoding="utf-8") == SOURCE.replace("3.14 ", "3.14159 ")


CR_SOURCE = SOURCE.replace("\n", "\r")


@needs_git
def test_a_file_whose_lines_end_in_a_lone_cr_gets_a_diff_that_applies(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """patch and git apply end a line at \\n alone: to them the file is one line without a newline at its
    end, replaced whole; every \\r kept."""
    path = project["dir"] / "area.py"
    path.write_bytes(CR_SOURCE.encode())
    fake_backend.enqueue(Reply(text=AREA))
    diff = refactor(project, "area.py", "--at", "4")
    after = CR_SOURCE.replace("3.14 ", "3.14159 ")
    expected = (
        f"--- a/area.py\n+++ b/area.py\n@@ -1 +1 @@\n-{CR_SOURCE}\n\\ No newline at end of file\n"
        f"+{after}\n\\ No newline at end of file\n"
    )
    assert diff == expected.encode()
    git_apply(project["dir"], diff)
    assert path.read_bytes() == after.encode()


def test_apply_writes_a_lone_cr_file_with_its_own_line_ends(project: dict[str, Any], fake_backend) -> None:
    path = project["dir"] / "area.py"
    path.write_bytes(CR_SOURCE.encode())
    (project["dir"] / "snippet.py").write_bytes(AREA.replace("\n", "\r").encode())
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply", "area.py", "snippet.py", "--write"],
        cwd=project["dir"],
        env=cli_env(project["config"]),
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert path.read_bytes() == CR_SOURCE.replace("3.14 ", "3.14159 ").encode()
