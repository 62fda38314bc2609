"""`refactor-lsp refactor FILE [FILE ...] --each definition`: a batch from the command line, against
the loopback backend over real HTTP (issue 23)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lsp_server.cli.main import main
from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.responders import region_of, rule_responder
from tests.conftest import write_config

RENAME = "rename total to result"


def function(number: int) -> str:
    return f"def f{number}(value):\n    total = value + {number}\n    return total\n"


SOURCE = "import os\n\n\n" + "\n\n".join(function(n) for n in range(12))
RENAMED = SOURCE.replace("total", "result")


@pytest.fixture
def fake(make_fake: Any) -> FakeBackend:
    return make_fake("openai", step_s=0.02)  # each answer streams for a while: the refactors in flight overlap


@pytest.fixture
def project(tmp_path: Path, fake: FakeBackend) -> dict[str, Any]:
    source = tmp_path / "module.py"
    source.write_text(SOURCE, encoding="utf-8")
    return {"dir": tmp_path, "source": source, "config": str(write_config(tmp_path, fake=fake))}


def each(project: dict[str, Any], *args: str, files: tuple[Path, ...] = ()) -> int:
    paths = [str(p) for p in files] or [str(project["source"])]
    return main(["refactor", *paths, "--each", "definition", "-i", RENAME, "--config", project["config"], *args])


def cut_off_in(name: str) -> Any:
    """A model whose answer for the definition `name` runs to the token cap (refused); the others renamed."""

    def respond(request: dict[str, Any]) -> str:
        region = region_of(request["messages"])
        return region * 80 if f"def {name}(" in region else rule_responder(request)

    return respond


def test_json_lists_every_target_and_the_totals(project: dict[str, Any], fake: FakeBackend, capsys: Any):
    assert each(project, "--jobs", "3", "--json") == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert [t["definition"] for t in report["targets"]] == [f"f{n}" for n in range(12)]
    first = report["targets"][0]
    assert set(first) == {
        "file", "definition", "kind", "lines", "outcome", "reason", "stats", "answer", "answer_file", "error"
    }  # fmt: skip
    assert first["answer"] is None and first["answer_file"] is None  # only a refused target has them
    assert (first["file"], first["kind"], first["lines"], first["outcome"]) == (
        str(project["source"]),
        "function",
        [4, 6],
        "edit",
    )
    assert first["stats"]["applied"] is None  # shown, not written: the user's to apply
    totals = report["totals"]
    assert totals["targets"] == 12 and totals["outcomes"] == {"edit": 12} and totals["concurrency"] == 3
    assert totals["latency_sum_ms"] > totals["wall_ms"] > 0
    assert totals["output_tokens"] > 0 and totals["tokens_per_s"] > 0
    # At most --jobs in flight, and that many at once; nothing written without --write.
    assert fake.peak_active_streams == 3 and len(fake.requests) == 12
    assert project["source"].read_text(encoding="utf-8") == SOURCE
    # A line per target as each ends, then the summary.
    assert err.count("module.py:") == 12 and "function `f11`: edit · refactor" in err
    assert err.rstrip().splitlines()[-1].startswith("12 definitions: 12 edit · ")


def test_write_writes_only_the_regions_that_succeeded(project: dict[str, Any], fake: FakeBackend, capsys: Any):
    fake.responder = cut_off_in("f3")
    assert each(project, "--write", "--json") == 3  # not every target applied: each that failed was refused
    written = project["source"].read_text(encoding="utf-8")
    assert written == RENAMED.replace(function(3).replace("total", "result"), function(3))
    out, err = capsys.readouterr()
    outcomes = {t["definition"]: t for t in json.loads(out)["targets"]}
    assert outcomes["f3"]["outcome"] == "refused" and "cut off" in outcomes["f3"]["reason"]
    assert {t["outcome"] for name, t in outcomes.items() if name != "f3"} == {"applied"}
    assert f"wrote {project['source']} (11 definitions)" in err


def test_several_files_a_diff_each_then_each_written_once(
    project: dict[str, Any], fake: FakeBackend, capsys: Any, tmp_path: Path
):
    other = tmp_path / "other.py"
    other.write_text(function(7) + "\n\n" + function(8), encoding="utf-8")
    files = (project["source"], other)
    assert each(project, files=files) == 0
    out, _ = capsys.readouterr()
    assert f"--- {project['source']}" in out and f"+++ {other}" in out and "+    result = value + 8" in out
    assert project["source"].read_text(encoding="utf-8") == SOURCE and "total" in other.read_text(encoding="utf-8")
    assert each(project, "--write", files=files) == 0
    assert project["source"].read_text(encoding="utf-8") == RENAMED
    assert other.read_text(encoding="utf-8") == (function(7) + "\n\n" + function(8)).replace("total", "result")
    _, err = capsys.readouterr()
    assert err.count("wrote ") == 2


def test_a_file_changed_meanwhile_is_not_written(project: dict[str, Any], fake: FakeBackend, capsys: Any):
    changed = SOURCE + "\n# the user was here\n"

    def respond(request: dict[str, Any]) -> str:
        project["source"].write_text(changed, encoding="utf-8")  # while the batch runs
        return rule_responder(request)

    fake.responder = respond
    assert each(project, "--write", "--json") == 5  # the file changed meanwhile: read it again
    assert project["source"].read_text(encoding="utf-8") == changed
    targets = json.loads(capsys.readouterr().out)["targets"]
    assert {t["outcome"] for t in targets} == {"stale"}
    assert "changed while the refactor ran; nothing was written to it" in targets[0]["reason"]


def test_lines_take_each_definition_they_touch(project: dict[str, Any], fake: FakeBackend, capsys: Any):
    # From f2's body to f3's first line: f2 and f3, nothing else.
    assert each(project, "--lines", "15:19", "--write") == 0
    expected = SOURCE
    for number in (2, 3):
        expected = expected.replace(function(number), function(number).replace("total", "result"))
    assert project["source"].read_text(encoding="utf-8") == expected
    assert len(fake.requests) == 2


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (("refactor", "a.py", "b.py", "-i", RENAME), "add --each definition"),
        (("refactor", "a.py", "--each", "definition", "--at", "3", "-i", RENAME), "--at picks one definition"),
        (("refactor", "a.py", "b.py", "--each", "definition", "--lines", "1:3", "-i", RENAME), "one file"),
        (("refactor", "a.py", "--each", "definition", "--jobs", "0", "-i", RENAME), "--jobs must be 1 or more"),
        (("refactor", "a.py", "a.py", "--each", "definition", "-i", RENAME), "named twice"),
    ],
)
def test_usage_errors_exit_2(
    project: dict[str, Any], capsys: Any, monkeypatch: Any, args: tuple[str, ...], problem: str
):
    monkeypatch.chdir(project["dir"])
    for name in ("a.py", "b.py"):
        (project["dir"] / name).write_text(SOURCE, encoding="utf-8")
    assert main([*args, "--config", project["config"]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("refactor-lsp: ") and problem in err and "Traceback" not in err


def test_one_file_named_twice_through_a_hard_link_is_refused_before_anything_is_sent(
    project: dict[str, Any], fake: FakeBackend, capsys: Any
):
    # Compared by resolved path, two hard links were two files: each definition sent (and billed) twice.
    link = project["dir"] / "same.py"
    link.hardlink_to(project["source"])
    assert each(project, files=(project["source"], link)) == 2
    err = capsys.readouterr().err
    assert f"same.py is named twice ({project['source']} is the same file): each file is refactored once" in err
    assert fake.requests == []


def test_a_file_without_definitions_fails(project: dict[str, Any], fake: FakeBackend, capsys: Any):
    project["source"].write_text("import os\nprint(os.sep)\n", encoding="utf-8")
    assert each(project) == 1
    assert "no definition found in the file (python)" in capsys.readouterr().err
    assert fake.requests == []
