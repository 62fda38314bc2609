"""One command for every kind of request (issue 37): `refactor`, `refactor --each definition` and
`apply` answer an agent in one JSON shape, every outcome included (a usage error too), with one table
of exit codes; and the command line's edges an agent and a person meet (issue 36, items 8, 11, 17, 19),
against the loopback backend over real HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lsp_server.cli.main import main
from lsp_server.stats.measured import RefactorStats
from lsp_server.stats.words import summary
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import write_config

SOURCE = "import os\n\n\ndef foo(radius):\n    return radius * 2\n\n\ndef describe(radius):\n    return str(radius)\n"
SNIPPET = (
    "def foo(radius):\n    return radius * 3\n\n\n"
    "def describe(radius):\n    # ... existing code ...\n    return repr(radius)\n"
)
KEYS = {
    "kind", "outcome", "reason", "new_text", "answer", "answer_file", "repaired", "error", "stats", "targets", "totals",
    "changes", "merged_by",
}  # fmt: skip


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "geometry.py"
    source.write_text(SOURCE, encoding="utf-8")
    (tmp_path / "snippet.py").write_text(SNIPPET, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": str(write_config(tmp_path, fake=fake_backend))}


def cli(project: dict[str, Any], *args: str) -> int:
    return main([*args, "--config", project["config"]])


def each_kind(project: dict[str, Any]) -> list[tuple[str, ...]]:
    source, snippet = str(project["source"]), str(project["dir"] / "snippet.py")
    return [
        ("refactor", source, "--at", "5", "-i", "rename radius to r"),
        ("refactor", source, "--each", "definition", "-i", "rename radius to r"),
        ("apply", source, snippet),
    ]


def test_every_kind_answers_in_one_json_shape(project: dict[str, Any], capsys: Any) -> None:
    for args in each_kind(project):
        assert cli(project, *args, "--json") == 0
        report = json.loads(capsys.readouterr().out)
        assert set(report) == KEYS, args
        assert report["outcome"] == "edit" and report["reason"] is None
        assert report["new_text"] != SOURCE and report["targets"] and report["totals"]["targets"] >= 1
    assert project["source"].read_text(encoding="utf-8") == SOURCE  # nothing written without --write


def test_a_refused_answer_exits_3_and_is_kept_in_every_kind(
    project: dict[str, Any], fake_backend: FakeBackend, capsys: Any
) -> None:
    for args in each_kind(project):
        fake_backend.enqueue(*[Reply(text="def foo(radius):\n    return (\n", finish_reason="length")] * 4)
        assert cli(project, *args, "--json", "--write") == 3, args
        report = json.loads(capsys.readouterr().out)
        assert set(report) == KEYS and report["outcome"] in ("refused", "partial")
        kept = [Path(t["answer_file"]) for t in report["targets"] if t["answer_file"]]
        assert kept and all(path.read_text(encoding="utf-8") == "def foo(radius):\n    return (\n" for path in kept)
        fake_backend.reset()
    assert project["source"].read_text(encoding="utf-8") == SOURCE


def test_usage_errors_are_said_before_any_work_and_print_the_json_object_too(
    project: dict[str, Any], fake_backend: FakeBackend, capsys: Any
) -> None:
    for args in each_kind(project):
        assert cli(project, *args, "--backend", "nosuch", "--json") == 2, args
        out, err = capsys.readouterr()
        report = json.loads(out)
        assert set(report) == KEYS and report["outcome"] == "usage" and "nosuch" in report["reason"]
        assert "merging into" not in err and "refactoring" not in err
    assert fake_backend.requests == []


def test_a_mistyped_flag_is_told_by_its_subcommand_with_the_closest_flag(project: dict[str, Any], capsys: Any):
    assert cli(project, "refactor", str(project["source"]), "-i", "x", "--jsn") == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: refactor-lsp refactor ")
    assert "unrecognized arguments: --jsn (did you mean --json?)" in err
    assert cli(project, "apply", str(project["source"]), "-", "--json", "--wirte") == 2
    out, err = capsys.readouterr()
    assert err.startswith("usage: refactor-lsp apply ") and "(did you mean --write?)" in err
    assert json.loads(out)["outcome"] == "usage"


def test_two_refused_parts_of_a_snippet_are_each_named_and_kept(
    project: dict[str, Any], fake_backend: FakeBackend, capsys: Any
) -> None:
    fake_backend.enqueue(*[Reply(text="def x(:\n", finish_reason="length")] * 2)
    assert cli(project, "apply", str(project["source"]), str(project["dir"] / "snippet.py"), "--json") == 3
    out, err = capsys.readouterr()
    targets = json.loads(out)["targets"]
    assert [t["outcome"] for t in targets] == ["refused", "refused"]
    files = {t["answer_file"] for t in targets}
    assert len(files) == 2 and all(name.endswith(".txt") for name in files)
    assert "function `foo`" in err and "function `describe`" in err  # stderr names both, with their files
    assert all(name in err for name in files)
    # The next request of several targets replaces them: nothing of this one is left to mislead.
    state = Path(next(iter(files))).parent
    assert cli(project, "refactor", str(project["source"]), "--each", "definition", "-i", "rename radius to r") == 0
    assert sorted(p.name for p in state.glob("refused-answer-*.txt")) == []


def test_at_a_line_of_a_definition_that_is_the_whole_file_says_so(tmp_path: Path, fake_backend: FakeBackend, capsys):
    source = tmp_path / "one.py"
    source.write_text("class A:\n" + "".join(f"    def m{i}(self):\n        return {i}\n" for i in range(15)))
    config = str(write_config(tmp_path, fake=fake_backend))
    assert main(["refactor", str(source), "--at", "1", "-i", "add docstrings", "--config", config]) == 0
    err = capsys.readouterr().err
    assert "(--at 1 is in class `A`, which spans the whole file)" in err
    assert "outside every definition" not in err


def test_the_speed_line_names_the_wait_for_the_first_token_when_it_is_most_of_the_time() -> None:
    slow_prompt = RefactorStats(latency_ms=17_000, ttft_ms=14_000, completion_tokens=256, tokens_per_s=85.0)
    assert summary(slow_prompt).startswith("refactor 17.0 s (first token after 14.0 s) · 256 tok")
    quick = RefactorStats(latency_ms=2_000, ttft_ms=300, completion_tokens=256, tokens_per_s=150.0)
    assert "first token" not in summary(quick)


def test_serve_accepts_stdio_and_ends_at_the_end_of_its_input(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    for args in (["serve", "--stdio"], ["--stdio"], ["serve"]):
        with open(os.devnull, "rb") as nothing:
            done = subprocess.run(
                [sys.executable, "-m", "lsp_server", *args],
                stdin=nothing, capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr


def test_stdin_over_the_limit_cut_mid_character_is_over_the_limit(project: dict[str, Any], fake_backend) -> None:
    limit = 1000
    config = write_config(project["dir"], fake=fake_backend, refactor={"max_region_chars": limit}, name="small.toml")
    data = ("é" * (3 * limit)).encode("utf-8")  # 6,000 bytes: the bound (4,001 bytes) falls inside a character
    done = subprocess.run(
        [sys.executable, "-m", "lsp_server", "apply", str(project["source"]), "-", "--config", str(config), "--json"],
        input=data, capture_output=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    stderr = done.stderr.decode()
    assert "the snippet on stdin is over 1,000 characters (refactor.max_region_chars)" in stderr
    assert "UTF-8" not in stderr
    assert json.loads(done.stdout)["outcome"] == "usage"
