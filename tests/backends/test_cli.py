"""The command line, end to end: `python -m lsp_server refactor|check` against the loopback fake."""

from __future__ import annotations

import errno
import json
import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.formats.choice import DEFAULT_HUNKS_MIN_LINES
from lsp_server.formats.hunks import SEARCH_MARKER
from lsp_server.stats.history import History
from lsp_server.stats.measured import RefactorStats
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.cli_harness import Completed, run_cli, run_process
from tests.conftest import backend_table, closed_port_url, write_config

SOURCE = """import math


def foo(radius):
    return math.pi * radius**2


def describe(radius):
    return f"area {foo(radius)}"
"""
SECRET = "sk-test-9c1f3e7a0b2d4c6e8f"
STATS_LINE = re.compile(
    r"^refactor \d+\.\d s · \d+ tok · \d+ tok/s · prediction \d+% accepted \(\d+ accepted, \d+ rejected\)"
    r" · region \(auto, \d+ lines < \d+ \(hunks_min_lines with a prediction field\)\)$",
    re.M,
)


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    """A folder with a source file and a config whose only backend is the fake."""
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": write_config(tmp_path, fake=fake_backend)}


def refactor(project: dict[str, Any], *args: str, run: Any = run_cli, **kwargs: Any) -> Completed:
    """`refactor geometry.py ARGS` in the project, in this process (`run=run_process`: as a child)."""
    return run("refactor", "geometry.py", *args, config=project["config"], cwd=project["dir"], **kwargs)


def assert_clean_failure(result: Completed, code: int = 1) -> str:
    """A failure is one readable line on stderr, a non-zero exit, and never a traceback."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert result.stderr.startswith("refactor-lsp: ")
    return result.stderr


# -- refactor ------------------------------------------------------------------------------------------


def test_refactor_prints_the_diff_and_the_stats(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = refactor(project, "--instruction", "rename foo to bar", run=run_process)  # exit 0 and pipes, as in a shell
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "--- a/geometry.py\n"
        "+++ b/geometry.py\n"
        "@@ -1,9 +1,9 @@\n"
        " import math\n"
        " \n"
        " \n"
        "-def foo(radius):\n"
        "+def bar(radius):\n"
        "     return math.pi * radius**2\n"
        " \n"
        " \n"
        " def describe(radius):\n"
        '-    return f"area {foo(radius)}"\n'
        '+    return f"area {bar(radius)}"\n'
    )
    assert STATS_LINE.search(result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    assert project["source"].read_text(encoding="utf-8") == SOURCE  # only --write writes
    (request,) = fake_backend.requests
    assert request["prediction"] == {"type": "content", "content": SOURCE}
    assert "Instruction: rename foo to bar" in request["messages"][1]["content"]


def test_lines_are_one_based_and_inclusive(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = refactor(project, "--instruction", "rename foo to bar", "--lines", "4:5", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["new_text"] == SOURCE.replace("def foo(", "def bar(")  # the call on line 9 is outside
    assert out["stats"]["scope"] == "selection"
    assert fake_backend.requests[0]["prediction"]["content"] == "def foo(radius):\n    return math.pi * radius**2\n"


# A form feed and a line separator inside lines: str.splitlines() would count 5 lines, LSP counts 3.
ODD_BREAKS = "foo = 1  # page\f break\nlabel = 'a\u2028b' + str(foo)\nfoo += 1\n"


def test_lines_count_as_lsp_does_not_at_form_feeds(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    project["source"].write_text(ODD_BREAKS, encoding="utf-8", newline="")
    result = refactor(project, "--instruction", "rename foo to bar", "--lines", "3:3", "--json")
    assert result.returncode == 0, result.stderr
    assert fake_backend.requests[0]["prediction"]["content"] == "foo += 1\n"
    assert json.loads(result.stdout)["new_text"] == ODD_BREAKS.replace("foo += 1", "bar += 1")
    # Line 5 by str.splitlines() does not exist: refused, never the last line rewritten instead.
    message = assert_clean_failure(refactor(project, "--instruction", "rename foo to bar", "--lines", "5:5"), 2)
    assert "--lines 5:5 is outside the file's 3 lines" in message
    assert len(fake_backend.requests) == 1


def test_diff_keeps_form_feeds_inside_their_line(project: dict[str, Any]) -> None:
    project["source"].write_text(ODD_BREAKS, encoding="utf-8", newline="")
    result = refactor(project, "--instruction", "rename foo to bar", "--lines", "2:2")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "--- a/geometry.py\n"
        "+++ b/geometry.py\n"
        "@@ -1,3 +1,3 @@\n"
        " foo = 1  # page\f break\n"
        "-label = 'a\u2028b' + str(foo)\n"
        "+label = 'a\u2028b' + str(bar)\n"
        " foo += 1\n"
    )


def test_at_a_cursor_line_rewrites_the_enclosing_function(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = refactor(project, "--instruction", "rename radius to r", "--at", "9", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    describe = 'def describe(radius):\n    return f"area {foo(radius)}"\n'
    assert fake_backend.requests[0]["prediction"]["content"] == describe
    assert out["new_text"] == SOURCE.replace(describe, describe.replace("radius", "r"))
    assert out["stats"]["scope"] == "block"


BLACK_CLASS = """class Shape:
    sides = 0

    @register(
        "area",
    )
    def area(
        self,
        radius: float,
    ) -> float:
        return radius * radius

    def name(self):
        return "shape"
"""


def test_at_in_a_black_formatted_method_rewrites_that_method_and_its_decorator(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    project["source"].write_text(BLACK_CLASS, encoding="utf-8")
    result = refactor(project, "--instruction", "rename radius to r", "--at", "11", "--json")
    assert result.returncode == 0, result.stderr
    method = BLACK_CLASS[BLACK_CLASS.index("    @register") : BLACK_CLASS.index("\n    def name")]
    assert fake_backend.requests[0]["prediction"]["content"] == method
    assert json.loads(result.stdout)["new_text"] == BLACK_CLASS.replace("radius", "r")


def test_edit_format_hunks_from_the_command_line(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = refactor(project, "--instruction", "rename radius to r", "--at", "9", "--edit-format", "hunks", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["stats"]["edit_format"] == "hunks" and "<<<<<<< SEARCH" in str(fake_backend.requests[0]["messages"])
    describe = 'def describe(radius):\n    return f"area {foo(radius)}"\n'
    assert out["new_text"] == SOURCE.replace(describe, describe.replace("radius", "r"))
    assert " · hunks (set by the request)" in result.stderr


@pytest.mark.parametrize("at", ["0", "10", "-3"])
def test_at_outside_the_file_is_a_usage_error(project: dict[str, Any], fake_backend: FakeBackend, at: str) -> None:
    message = assert_clean_failure(refactor(project, "--instruction", "rename foo to bar", "--at", at), 2)
    assert f"--at {at} is outside the file's 9 lines" in message
    assert fake_backend.requests == []


def test_lines_outside_the_file_is_a_usage_error(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = refactor(project, "--instruction", "rename foo to bar", "--lines", "8:40")
    message = assert_clean_failure(result, 2)
    assert "--lines 8:40 is outside the file's 9 lines" in message
    assert fake_backend.requests == []


def test_json_output(project: dict[str, Any]) -> None:
    result = refactor(project, "--instruction", "rename foo to bar", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["new_text"] == SOURCE.replace("foo", "bar")
    stats = out["stats"]
    for key in (
        "backend",
        "model",
        "prediction",
        "scope",
        "latency_ms",
        "ttft_ms",
        "completion_tokens",
        "accepted_prediction_tokens",
        "rejected_prediction_tokens",
        "acceptance_rate",
        "tokens_per_s",
    ):
        assert key in stats, key
    assert (stats["backend"], stats["model"], stats["scope"]) == ("fake", "fake-model", "file")
    assert stats["prediction"] is True
    assert stats["completion_tokens"] > 0
    accepted, rejected = stats["accepted_prediction_tokens"], stats["rejected_prediction_tokens"]
    assert stats["acceptance_rate"] == pytest.approx(accepted / (accepted + rejected))
    assert stats["latency_ms"] >= stats["ttft_ms"] > 0
    assert stats["tokens_per_s"] > 0
    assert stats["applied"] is None  # shown as a diff, not written: yours to apply, not known to be applied


def test_write_rewrites_the_file_and_keeps_its_mode(project: dict[str, Any]) -> None:
    source: Path = project["source"]
    source.chmod(0o640)
    result = refactor(project, "--instruction", "rename foo to bar", "--write")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert source.read_text(encoding="utf-8") == SOURCE.replace("foo", "bar")
    assert stat.S_IMODE(source.stat().st_mode) == 0o640
    assert STATS_LINE.search(result.stderr)
    assert [p.name for p in project["dir"].iterdir() if p.name.endswith(".tmp")] == []


def test_write_keeps_crlf_line_endings(project: dict[str, Any]) -> None:
    source: Path = project["source"]
    source.write_bytes(SOURCE.replace("\n", "\r\n").encode())
    result = refactor(project, "--instruction", "rename foo to bar", "--write")
    assert result.returncode == 0, result.stderr
    assert source.read_bytes() == SOURCE.replace("foo", "bar").replace("\n", "\r\n").encode()


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def test_write_never_follows_a_planted_temporary_file(project: dict[str, Any], tmp_path_factory) -> None:
    """A repository that ships the old fixed temporary name as a symlink cannot make us write elsewhere."""
    victim = tmp_path_factory.mktemp("home") / ".bashrc"
    victim.write_text("export PATH=/usr/bin\n", encoding="utf-8")
    victim.chmod(0o644)
    planted = project["dir"] / ".geometry.py.refactor-lsp.tmp"
    planted.symlink_to(victim)
    before = files_in(project["dir"])
    result = refactor(project, "--instruction", "rename foo to bar", "--write")
    assert result.returncode == 0, result.stderr
    assert victim.read_text(encoding="utf-8") == "export PATH=/usr/bin\n"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    source: Path = project["source"]
    assert not source.is_symlink() and source.is_file()
    assert source.read_text(encoding="utf-8") == SOURCE.replace("foo", "bar")
    assert planted.is_symlink() and planted.resolve() == victim  # left alone
    assert files_in(project["dir"]) == before  # no temporary file left behind


def test_write_through_a_symlink_edits_the_file_it_points_to(project: dict[str, Any]) -> None:
    real = project["dir"] / "src" / "real_geometry.py"
    real.parent.mkdir()
    real.write_text(SOURCE, encoding="utf-8")
    real.chmod(0o640)
    link: Path = project["source"]
    link.unlink()
    link.symlink_to(Path("src") / "real_geometry.py")
    before, before_src = files_in(project["dir"]), files_in(real.parent)
    result = refactor(project, "--instruction", "rename foo to bar", "--write")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(Path("src") / "real_geometry.py")
    assert real.read_text(encoding="utf-8") == SOURCE.replace("foo", "bar")
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    assert (files_in(project["dir"]), files_in(real.parent)) == (before, before_src)


def test_write_refuses_a_read_only_file(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    source: Path = project["source"]
    source.chmod(0o444)
    before = files_in(project["dir"])
    message = assert_clean_failure(refactor(project, "--instruction", "rename foo to bar", "--write"))
    expected = "geometry.py is read-only; nothing was written (make it writable, or drop --write)"
    assert message == f"refactor-lsp: {expected}\n"
    assert source.read_text(encoding="utf-8") == SOURCE
    assert stat.S_IMODE(source.stat().st_mode) == 0o444
    assert files_in(project["dir"]) == before
    assert fake_backend.requests == []  # refused before the model ran


def test_a_failed_write_leaves_the_file_and_no_temporary_file(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process, so the disk can fail: fsync reports an I/O error after the bytes went out."""
    from lsp_server.cli.main import main

    def failing_fsync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.chdir(project["dir"])
    monkeypatch.setattr(os, "fsync", failing_fsync)
    before = files_in(project["dir"])
    code = main(["refactor", "geometry.py", "-i", "rename foo to bar", "--write", "--config", str(project["config"])])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err == "refactor-lsp: cannot write geometry.py: Input/output error; the file is unchanged\n"
    assert project["source"].read_text(encoding="utf-8") == SOURCE
    assert files_in(project["dir"]) == before


def test_write_keeps_hard_links_on_the_new_contents(project: dict[str, Any]) -> None:
    """A rename would leave the other name on the old text: a file with hard links is rewritten in place."""
    source: Path = project["source"]
    linked = project["dir"] / "geometry_copy.py"
    os.link(source, linked)
    inode = source.stat().st_ino
    before = files_in(project["dir"])
    result = refactor(project, "--instruction", "rename foo to bar", "--write")
    assert result.returncode == 0, result.stderr
    assert source.read_text(encoding="utf-8") == linked.read_text(encoding="utf-8") == SOURCE.replace("foo", "bar")
    assert source.stat().st_ino == linked.stat().st_ino == inode and source.stat().st_nlink == 2
    assert files_in(project["dir"]) == before  # the saved old contents are gone again


def _fail_ftruncate(monkeypatch: pytest.MonkeyPatch, times: int) -> None:
    """The disk fails the first `times` truncations (the write of the new text, then putting back the old)."""
    real, calls = os.ftruncate, []

    def ftruncate(fd: int, length: int) -> None:
        calls.append(length)
        if len(calls) <= times:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(fd, length)

    monkeypatch.setattr(os, "ftruncate", ftruncate)


def _write_in_process(project: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from lsp_server.cli.main import main

    code = main(["refactor", "geometry.py", "-i", "rename foo to bar", "--write", "--config", str(project["config"])])
    return code, capsys.readouterr().err


def test_a_failed_write_in_place_puts_the_old_contents_back(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    linked = project["dir"] / "geometry_copy.py"
    os.link(project["source"], linked)
    monkeypatch.chdir(project["dir"])
    before = files_in(project["dir"])
    _fail_ftruncate(monkeypatch, times=1)
    code, err = _write_in_process(project, capsys)
    assert code == 1, err
    assert err == "refactor-lsp: cannot write geometry.py: No space left on device; the file is unchanged\n"
    assert project["source"].read_text(encoding="utf-8") == linked.read_text(encoding="utf-8") == SOURCE
    assert files_in(project["dir"]) == before


def test_when_the_old_contents_cannot_be_put_back_the_message_says_where_they_are(
    project: dict[str, Any], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    os.link(project["source"], project["dir"] / "geometry_copy.py")
    monkeypatch.chdir(project["dir"])
    before = files_in(project["dir"])
    _fail_ftruncate(monkeypatch, times=2)
    code, err = _write_in_process(project, capsys)
    assert code == 1, err
    [saved] = files_in(project["dir"]) - before
    assert err == (
        "refactor-lsp: cannot write geometry.py: No space left on device, and its old contents could not be put "
        f"back: they are in {project['dir'] / saved}\n"
    )
    assert saved.startswith(".geometry.py.") and saved.endswith(".refactor-lsp.bak")
    assert (project["dir"] / saved).read_text(encoding="utf-8") == SOURCE


def test_the_cli_never_tries_the_other_format_it_could_not_learn_from(
    tmp_path: Path, fake_backend: FakeBackend
) -> None:
    """Near its threshold the server's `auto` tries hunks after three region runs; a one-off CLI refactor
    keeps to the size rule (its refactors reach the history all the same, for the server to learn from)."""
    for _ in range(3):
        History().append(RefactorStats(served_by="fake", edit_format="region", region_lines=9, applied=True))
    project = {"dir": tmp_path, "config": write_config(tmp_path, fake=fake_backend, refactor={"hunks_min_lines": 20})}
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    result = refactor(project, "--instruction", "rename foo to bar")
    assert result.returncode == 0, result.stderr
    assert " · region (auto, 9 lines < hunks_min_lines 20)" in result.stderr
    assert SEARCH_MARKER not in fake_backend.requests[0]["messages"][0]["content"]


def test_a_damaged_history_does_not_stop_a_refactor(tmp_path: Path, fake_backend: FakeBackend) -> None:
    """Damaged records where `auto` takes its medians (9 lines: this file) are skipped; the good ones decide."""
    history = Path(os.environ["XDG_STATE_HOME"]) / "refactor-lsp" / "history.jsonl"
    history.parent.mkdir(mode=0o700)

    def line(**fields: Any) -> bytes:
        base = {"backend": "fake", "served_by": "fake", "region_lines": 9, "applied": True, "latency_ms": 900.0}
        return json.dumps({"v": 1, **base, **fields}).encode() + b"\n"

    good = [line(edit_format="region"), line(edit_format="hunks", latency_ms=5000.0)] * 3
    damaged = [
        line(edit_format="region", latency_ms="slow"),
        line(edit_format="hunks", region_lines="3"),
        line(edit_format="region", region_lines=True),
        line(edit_format="region", model="MODEL").replace(b"MODEL", b"\xff"),
    ]
    history.write_bytes(b"".join(good + damaged))
    project = {"dir": tmp_path, "config": write_config(tmp_path, fake=fake_backend)}
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    result = refactor(project, "--instruction", "rename foo to bar")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert "+def bar(radius):" in result.stdout
    assert " · region (auto, by fake's history for 1-50 lines: hunks 5.0 s" in result.stderr


def test_no_prediction_sends_no_prediction_field(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    result = refactor(project, "--instruction", "rename foo to bar", "--no-prediction", "--json")
    assert result.returncode == 0, result.stderr
    assert "prediction" not in fake_backend.requests[0]
    out = json.loads(result.stdout)
    assert out["new_text"] == SOURCE.replace("foo", "bar")
    assert out["stats"]["prediction"] is False
    assert out["stats"]["accepted_prediction_tokens"] is None
    assert " · no prediction · region (" in result.stderr


def test_unchanged_answer_says_so(project: dict[str, Any]) -> None:
    result = refactor(project, "--instruction", "keep it as it is")
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""
    assert "no changes: the model's answer equals the region" in result.stderr


def test_backend_option_picks_another_backend(tmp_path: Path, fake_backend: FakeBackend, make_fake) -> None:
    other = make_fake(models=("other-model",))
    config = write_config(tmp_path, fake=fake_backend, other=other)
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    args = ["refactor", "geometry.py", "-i", "rename foo to bar", "--backend", "other", "--json"]
    result = run_cli(*args, config=config, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["stats"]["model"] == "other-model"
    assert fake_backend.requests == [] and len(other.requests) == 1


# -- check ---------------------------------------------------------------------------------------------


def test_check_reports_ok(project: dict[str, Any]) -> None:
    result = run_process("check", config=project["config"], cwd=project["dir"])  # exit 0 and pipes, as a shell sees
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "config: ok"
    assert lines[1].startswith("backend: fake (openai) at http://127.0.0.1:")
    assert "models: fake-model" in lines
    assert any(re.fullmatch(r"completion: ok \(\d+ ms for 1 token\)", line) for line in lines)
    assert lines[-1] == "prediction: accepted (the `prediction` field is sent)"
    assert "FAIL" not in result.stdout


def test_check_reads_editor_settings_from_stdin_and_the_workspace_named(
    tmp_path: Path, fake_backend: FakeBackend, make_fake
) -> None:
    """`:checkhealth` passes setup()'s settings (a token in `headers`) on stdin, never on a command line
    other users can read, and runs from the plugin's folder, naming the repository's instead."""
    other = make_fake()
    workspace = tmp_path / "repo"
    workspace.mkdir()
    # Untrusted: its attempt to move your backend elsewhere is named, which shows the file was read.
    (workspace / ".refactor-lsp.toml").write_text('[backends.mine]\nbase_url = "http://127.0.0.1:9/v1"\n', "utf-8")
    settings = {
        "defaultBackend": "mine",
        "backends": {
            "mine": {
                "type": "openai",
                "baseUrl": other.url,
                "model": "fake-model",
                "headers": {"Authorization": "Bearer tok-123"},
            }
        },
    }
    args = ("check", "--settings", "-", "--workspace", str(workspace))
    config = write_config(tmp_path, fake=fake_backend)
    result = run_process(*args, config=config, cwd=tmp_path, stdin=json.dumps(settings))  # a real pipe on stdin
    assert f"backend: mine (openai) at {other.url}" in result.stdout, result.stderr + result.stdout
    assert other.headers_seen[-1]["authorization"] == "Bearer tok-123" and fake_backend.requests == []
    assert f"{workspace / '.refactor-lsp.toml'}: ignored backends.mine.base_url" in result.stderr
    assert result.returncode == 2  # a setting not applied as written fails the check


def test_check_says_when_prediction_is_not_accepted(tmp_path: Path, make_fake) -> None:
    fake = make_fake(reject_prediction=True)
    result = run_cli("check", config=write_config(tmp_path, fake=fake), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "prediction: NOT accepted by this backend" in result.stdout
    assert 'fix: set backends.fake.prediction = "never"' in result.stdout


def test_check_on_a_vllm_backend_explains_prompt_drafting(tmp_path: Path, make_fake) -> None:
    fake = make_fake("vllm")
    result = run_cli("check", config=write_config(tmp_path, local=fake), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "speculative decoding" in next(line for line in result.stdout.splitlines() if line.startswith("prediction:"))
    assert "prediction" not in fake.requests[0]


def test_check_fails_on_an_unknown_model_and_says_what_to_fix(tmp_path: Path, make_fake) -> None:
    fake = make_fake(models=("coder-7b", "coder-1b"))
    config = write_config(tmp_path, fake=backend_table(fake, model="coder-70b"))
    result = run_cli("check", config=config, cwd=tmp_path)
    assert result.returncode == 1
    assert "FAIL: the server has no model 'coder-70b'; it offers: coder-7b, coder-1b" in result.stdout
    assert "fix: set backends.fake.model to one of those" in result.stdout
    assert "Traceback" not in result.stderr


def test_check_fails_when_the_backend_is_unreachable(tmp_path: Path) -> None:
    url = closed_port_url()
    config = write_config(tmp_path, down={"type": "openai", "base_url": url, "model": "m"})
    result = run_cli("check", config=config, cwd=tmp_path)
    assert result.returncode == 1
    assert f"FAIL: cannot reach the backend 'down' at {url}: connection refused" in result.stdout
    assert "Traceback" not in result.stderr


def test_check_with_an_unset_key_variable_names_it(tmp_path: Path, fake_backend: FakeBackend) -> None:
    config = write_config(tmp_path, name="keyed.toml", fake=backend_table(fake_backend, api_key_env="FAKE_API_KEY"))
    result = run_cli("check", config=config, cwd=tmp_path)
    message = assert_clean_failure(result, 2)
    assert "FAKE_API_KEY" in message and "not set" in message


# -- errors: one line, a non-zero exit, no traceback ---------------------------------------------------


def test_unreachable_backend_names_the_url(tmp_path: Path) -> None:
    url = closed_port_url()
    config = write_config(tmp_path, down={"type": "openai", "base_url": url, "model": "m"})
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    result = run_cli("refactor", "geometry.py", "-i", "rename foo to bar", config=config, cwd=tmp_path)
    message = assert_clean_failure(result)
    assert f"cannot reach the backend 'down' at {url}: connection refused" in message


def test_unauthorized_names_the_variable_never_the_key(tmp_path: Path, fake_backend: FakeBackend) -> None:
    config = write_config(tmp_path, fake=backend_table(fake_backend, api_key_env="FAKE_API_KEY"))
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    fake_backend.enqueue(Reply(status=401, error=f"Incorrect API key provided: {SECRET}"))
    result = run_cli(
        "refactor", "geometry.py", "-i", "rename foo to bar", config=config, cwd=tmp_path, env={"FAKE_API_KEY": SECRET}
    )
    message = assert_clean_failure(result)
    assert "401 unauthorized" in message
    assert "FAKE_API_KEY" in message
    assert SECRET not in message
    assert fake_backend.headers_seen[0]["authorization"] == f"Bearer {SECRET}"


def test_unknown_model_lists_the_models(tmp_path: Path, make_fake) -> None:
    fake = make_fake(models=("coder-7b", "coder-1b"))
    config = write_config(tmp_path, fake=backend_table(fake, model="coder-70b"))
    (tmp_path / "geometry.py").write_text(SOURCE, encoding="utf-8")
    result = run_cli("refactor", "geometry.py", "-i", "rename foo to bar", config=config, cwd=tmp_path)
    message = assert_clean_failure(result)
    assert "has no model 'coder-70b' (it offers: coder-7b, coder-1b)" in message


def test_invalid_toml_names_the_file(project: dict[str, Any]) -> None:
    config: Path = project["config"]
    config.write_text('default_backend = "fake"\n[backends.fake\n', encoding="utf-8")
    message = assert_clean_failure(refactor(project, "-i", "rename foo to bar", run=run_process), 2)  # a real exit 2
    assert str(config) in message
    assert "not valid TOML" in message
    assert message.count("\n") == 1


def test_missing_config_file_names_it(project: dict[str, Any], tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    result = run_cli("refactor", "geometry.py", "-i", "x", config=missing, cwd=project["dir"])
    message = assert_clean_failure(result, 2)
    assert str(missing) in message


def test_unknown_backend_name(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    message = assert_clean_failure(refactor(project, "-i", "rename foo to bar", "--backend", "nope"), 2)
    assert "unknown backend 'nope'" in message
    assert "fake" in message  # the configured ones are listed
    assert fake_backend.requests == []


def test_non_utf8_file(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    project["source"].write_bytes(b"x = 'caf\xe9'\n")
    message = assert_clean_failure(refactor(project, "-i", "rename x to y"), 2)
    assert "geometry.py is not UTF-8 text" in message
    assert message.count("\n") == 1
    assert fake_backend.requests == []


def test_missing_source_file(project: dict[str, Any]) -> None:
    result = run_cli("refactor", "nope.py", "-i", "x", config=project["config"], cwd=project["dir"])
    message = assert_clean_failure(result, 2)
    assert "cannot read nope.py" in message


def test_unusable_answer_is_not_written(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(text="Sure! I renamed foo to bar in both places."))
    result = refactor(project, "-i", "rename foo to bar", "--write", run=run_process)  # exit 3, as a shell sees
    assert result.returncode == 3  # a refused answer: exit 3, every subcommand alike
    assert "Traceback" not in result.stderr
    assert "explanation instead of code" in result.stderr
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_stream_that_breaks_is_reported(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    fake_backend.enqueue(Reply(drop_after_chars=5))
    message = assert_clean_failure(refactor(project, "-i", "rename foo to bar"))
    assert "broke mid-answer" in message


def test_unreachable_builtin_local_backend_says_how_to_start_it(tmp_path: Path) -> None:
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", 8000)) == 0:
            pytest.skip("something listens on 127.0.0.1:8000 (the local vLLM pair?)")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "none"), "XDG_STATE_HOME": str(tmp_path / "state")}
    done = run_cli("check", config=None, cwd=tmp_path, env=env)
    assert done.returncode == 1
    assert "http://127.0.0.1:8000/v1: connection refused" in done.stdout
    assert "make vllm-up" in done.stdout


def test_logging_flags_work_before_and_after_the_subcommand(project: dict[str, Any], fake_backend: FakeBackend):
    source, cwd, config = project["source"], project["dir"], project["config"]
    log = cwd / "refactor.log"
    fake_backend.enqueue(Reply(status=503, error="busy", headers={"Retry-After": "0"}))
    # Before the subcommand: not overwritten by the subcommand's defaults.
    done = run_cli(
        "-v", "--log-file", str(log), "refactor", str(source), "-i", "rename foo to area", config=config, cwd=cwd
    )
    assert done.returncode == 0, done.stderr
    assert "retry" in log.read_text(encoding="utf-8") and "retry" in done.stderr  # -v: info on stderr too
    assert stat.S_IMODE(log.stat().st_mode) == 0o600
    # After the subcommand: accepted.
    fake_backend.enqueue(Reply(status=503, error="busy", headers={"Retry-After": "0"}))
    done = run_cli("refactor", str(source), "-i", "rename foo to area", "-v", config=config, cwd=cwd)
    assert done.returncode == 0, done.stderr
    assert "retry" in done.stderr
    # Without -v: no info lines, only the outcome.
    fake_backend.enqueue(Reply(status=503, error="busy", headers={"Retry-After": "0"}))
    done = run_cli("refactor", str(source), "-i", "rename foo to area", config=config, cwd=cwd)
    assert done.returncode == 0 and "INFO" not in done.stderr


PROSE = "Sure! I renamed foo to area everywhere, as you asked, and nothing else changed.\n"


@pytest.mark.parametrize(
    ("reply", "reason", "answer"),
    [
        (Reply(finish_reason="length"), "cut the answer off", None),
        (Reply(text=PROSE), "explanation instead of code", PROSE),
        (Reply(text=""), "leaves no code in the region", ""),
    ],
    ids=["truncated", "explanation", "empty"],
)
def test_json_reports_a_refusal_with_its_reason_answer_and_stats(
    project: dict[str, Any], fake_backend: FakeBackend, reply: Reply, reason: str, answer: str | None
):
    fake_backend.enqueue(reply)
    done = run_cli(
        "refactor", str(project["source"]), "-i", "rename foo to area", "--json",
        config=project["config"], cwd=project["dir"],
    )  # fmt: skip
    assert done.returncode == 3  # refused: exit 3
    report = json.loads(done.stdout)
    assert report["outcome"] == "refused" and reason in report["reason"]
    assert report["stats"]["backend"] == "fake" and report["stats"]["completion_tokens"] is not None
    if answer is not None:
        assert report["answer"] == answer
    else:
        assert report["answer"] and report["answer"] in SOURCE.replace("foo", "area")  # the part that came
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_json_reports_an_error_without_an_answer(project: dict[str, Any], fake_backend: FakeBackend):
    fake_backend.enqueue(*[Reply(status=500, error="boom")] * 3)
    done = run_cli(
        "refactor", str(project["source"]), "-i", "x", "--json", config=project["config"], cwd=project["dir"]
    )
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["outcome"] == "error" and "HTTP 500" in report["reason"] and report["answer"] is None


def test_very_verbose_logs_the_refused_answer(project: dict[str, Any], fake_backend: FakeBackend):
    fake_backend.enqueue(Reply(text=PROSE))
    done = run_cli("refactor", str(project["source"]), "-i", "x", "-vv", config=project["config"], cwd=project["dir"])
    assert done.returncode == 3  # refused: exit 3
    assert "was not applied" in done.stderr and PROSE.strip() in done.stderr
    fake_backend.enqueue(Reply(text=PROSE))
    quiet = run_cli("refactor", str(project["source"]), "-i", "x", config=project["config"], cwd=project["dir"])
    assert "was not applied" not in quiet.stderr  # without -vv: the message alone


@pytest.mark.parametrize(
    ("kind", "speculation", "flags", "label"),
    [
        ("openai", True, (), re.compile(r"· prediction \d+% accepted \(\d+ accepted, \d+ rejected\)$")),
        ("openai", True, ("--no-prediction",), re.compile(r"· no prediction$")),
        ("vllm", True, (), re.compile(r"· server-side speculation: \d+% accepted \(\d+ accepted, \d+ rejected\)$")),
        (
            "vllm",
            True,
            ("--no-prediction",),
            re.compile(r"· server-side speculation, cannot be turned off per request: \d+% accepted"),
        ),
        ("vllm", False, (), re.compile(r"· no prediction \(the server does not speculate\)$")),
        ("llamacpp", True, (), re.compile(r"· server-side speculation: \d+% accepted")),
        ("llamacpp", False, (), re.compile(r"· no prediction \(the server does not speculate\)$")),
    ],
    ids=["openai", "openai-off", "vllm", "vllm-off", "vllm-plain", "llamacpp", "llamacpp-plain"],
)
def test_the_label_says_exactly_what_happened_to_the_prediction(
    tmp_path: Path, make_fake, kind: str, speculation: bool, flags: tuple[str, ...], label: re.Pattern[str]
):
    fake = make_fake(kind, speculation=speculation)
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    config = write_config(tmp_path, fake=fake)
    done = run_cli("refactor", str(source), "-i", "rename foo to area", *flags, config=config, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = done.stderr.strip().splitlines()[-1]
    # The edit format, and why: the threshold without history depends on what would draft a hunks answer.
    drafted_by = (
        ("no prediction" if flags else "a prediction field")
        if kind == "openai"
        else "a server that drafts from the prompt"
    )
    threshold = DEFAULT_HUNKS_MIN_LINES["prompt" if kind != "openai" else "off" if flags else "field"]
    reason = f" · region (auto, 9 lines < {threshold} (hunks_min_lines with {drafted_by}))"
    assert summary.endswith(reason), summary
    assert label.search(summary.removesuffix(reason)), summary
    sent = fake.requests[-1]
    assert ("prediction" in sent) is (kind == "openai" and not flags)  # the field goes only where it is used


# -- trust ---------------------------------------------------------------------------------------------


def test_a_cloned_repository_cannot_send_the_code_and_key_to_a_backend_you_never_configured(
    tmp_path: Path, fake_backend: FakeBackend
) -> None:
    """Issue 20: your only backend is the loopback fake; the repository's file asks for OpenAI, o1-pro and
    100,000 tokens, and OPENAI_API_KEY happens to be set. The fake serves, with your model and your cap."""
    config = write_config(tmp_path, fake=fake_backend, refactor={"max_tokens": 4096})
    repo = tmp_path / "cloned-repo"
    repo.mkdir()
    (repo / "geometry.py").write_text(SOURCE, encoding="utf-8")
    (repo / ".refactor-lsp.toml").write_text(
        'default_backend = "openai"\n[backends.openai]\nmodel = "o1-pro"\n[refactor]\nmax_tokens = 100000\n',
        encoding="utf-8",
    )
    # Were OpenAI tried by mistake, it would go through a proxy nobody listens on, never off this machine.
    trap = closed_port_url().removesuffix("/v1")
    env = {"OPENAI_API_KEY": SECRET, "HTTPS_PROXY": trap, "HTTP_PROXY": trap, "ALL_PROXY": trap}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    args = ["refactor", "geometry.py", "-i", "rename foo to bar", "--json"]

    result = run_cli(*args, config=config, cwd=repo, env=env)

    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["new_text"] == SOURCE.replace("foo", "bar")
    assert (out["stats"]["backend"], out["stats"]["model"]) == ("fake", "fake-model")  # no other backend tried
    (request,) = fake_backend.requests
    assert (request["model"], request["max_tokens"]) == ("fake-model", 4096)
    assert SECRET not in json.dumps(fake_backend.headers_seen)
    (warning,) = [line for line in result.stderr.splitlines() if "ignored" in line]
    assert warning.startswith(f"refactor-lsp: {repo / '.refactor-lsp.toml'}: ignored default_backend ('openai': ")
    assert "backends.openai.model ('o1-pro', yours is 'gpt-4.1-mini')" in warning
    assert "refactor.max_tokens (100000, yours is 4096)" in warning
    assert f"add trusted_workspaces = [{str(repo)!r}] to {config}" in warning


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        # 1.2 MB of two-byte characters: 600,000 characters, over the 1 MiB a config may take
        (('{"a": "' + "é" * 600_000 + '"}').encode(), "is over 1,048,576 bytes"),
        (b'{"a": "\xff"}', "is not UTF-8 text (byte 7)"),
    ],
)
def test_check_refuses_settings_on_stdin_over_the_bound_or_not_utf8_by_name(
    tmp_path: Path, fake_backend: FakeBackend, data: bytes, problem: str
) -> None:
    """Issue 36 item 6: stdin's bound is in bytes, decided before decoding; bytes that are no UTF-8 are one
    usage error (exit 2), not a traceback."""
    environment = dict(os.environ) | {"REFACTOR_LSP_CONFIG": str(write_config(tmp_path, fake=fake_backend))}
    result = subprocess.run(
        [sys.executable, "-m", "lsp_server", "check", "--settings", "-"],
        input=data,
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        timeout=60,
    )
    stderr = result.stderr.decode()
    assert result.returncode == 2, stderr
    assert problem in stderr and "Traceback" not in stderr
    assert fake_backend.requests == []
