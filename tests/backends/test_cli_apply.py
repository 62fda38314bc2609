"""`refactor-lsp apply FILE SNIPPET` end to end against the loopback fake: a lazy snippet, as chat models
write them, merged into a method of CPython's difflib.py (2,000+ lines) and a function of domutils'
JavaScript; the prediction the backend received is that definition, not the file; the code behind
each marker is kept; every outcome its own exit code."""

from __future__ import annotations

import difflib
import inspect
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.backends.test_cli import assert_clean_failure
from tests.cli_harness import Completed, run_cli, run_process
from tests.conftest import write_config

DIFFLIB = Path(inspect.getsourcefile(difflib) or "")
DOMUTILS = Path(__file__).resolve().parents[2] / "benchmarks/tasks/js-domutils-batch-jsdoc-types/source.js"

# As a chat model writes it: the class for context, markers for the docstring and everything around.
SET_SEQ2 = """```python
class SequenceMatcher:
    # ... existing code ...

    def set_seq2(self, b):
        # ... existing docstring ...
        if b is self.b:
            return
        self.b = list(b)
        # ... existing code ...

    # ... rest of the class ...
```
"""


def method_text(text: str, function: object) -> str:
    """The lines of a function, as inspect finds them: what the prediction must be."""
    source, start = inspect.getsourcelines(function)  # type: ignore[arg-type]
    lines = text.splitlines(keepends=True)
    return "".join(lines[start - 1 : start - 1 + len(source)])


@pytest.fixture
def project(tmp_path: Path, fake_backend: FakeBackend) -> dict[str, Any]:
    shutil.copy(DIFFLIB, tmp_path / "difflib.py")
    shutil.copy(DOMUTILS, tmp_path / "traversal.js")
    (tmp_path / "snippet.py").write_text(SET_SEQ2, encoding="utf-8")
    return {"dir": tmp_path, "config": write_config(tmp_path, fake=fake_backend)}


def apply(project: dict[str, Any], *args: str, stdin: str | None = None, run: Any = run_cli) -> Completed:
    """`apply ARGS` in the project, in this process (`run=run_process`: as a child, `stdin` on a pipe)."""
    return run("apply", *args, config=project["config"], cwd=project["dir"], stdin=stdin)


def test_a_lazy_method_merges_into_difflib_with_only_that_method_as_the_prediction(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    original = DIFFLIB.read_text(encoding="utf-8")
    result = apply(project, "difflib.py", "snippet.py", "--write")
    assert result.returncode == 0, result.stderr
    assert original.count("        self.b = b\n") == 1
    assert (project["dir"] / "difflib.py").read_text(encoding="utf-8") == original.replace(
        "        self.b = b\n", "        self.b = list(b)\n"
    )  # the docstring and the lines after the change, which markers stood for, kept
    (request,) = fake_backend.requests
    assert request["prediction"]["content"] == method_text(original, difflib.SequenceMatcher.set_seq2)
    assert "merging into method `SequenceMatcher.set_seq2` (lines " in result.stderr
    assert "wrote difflib.py (1 definition)" in result.stderr and result.stderr.count("apply ") >= 1


def test_a_snippet_on_stdin_prints_the_diff_or_the_json_of_refactor_shape(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    diff = apply(project, "difflib.py", "-", stdin=SET_SEQ2, run=run_process)  # a real pipe each way, exit 0
    assert diff.returncode == 0, diff.stderr
    changed = [line for line in diff.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == ["-        self.b = b", "+        self.b = list(b)"]
    result = apply(project, "difflib.py", "-", "--json", stdin=SET_SEQ2, run=run_process)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert out["outcome"] == "edit" and "self.b = list(b)" in out["new_text"]
    assert out["stats"]["action"] == "apply" and out["stats"]["scope"] == "block"
    assert out["stats"]["prediction"] is True and out["stats"]["predicted_chars"] < 1500
    assert [t["definition"] for t in out["targets"]] == ["SequenceMatcher.set_seq2"]
    assert (project["dir"] / "difflib.py").read_text(encoding="utf-8") == DIFFLIB.read_text(encoding="utf-8")


def test_a_lazy_javascript_function_merges_into_domutils(project: dict[str, Any], fake_backend: FakeBackend) -> None:
    original = DOMUTILS.read_text(encoding="utf-8")
    snippet = (
        "// ... existing code ...\n\n"
        "export function getName(elem) {\n"
        "    return elem.name.toLowerCase();\n"
        "}\n\n"
        "// ... rest of the file ...\n"
    )
    old = "export function getName(elem) {\n    return elem.name;\n}\n"
    assert original.count(old) == 1
    result = apply(project, "traversal.js", "-", "--write", "--json", stdin=snippet)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["outcome"] == "applied"
    assert (project["dir"] / "traversal.js").read_text(encoding="utf-8") == original.replace(
        old, old.replace("elem.name;", "elem.name.toLowerCase();")
    )
    (request,) = fake_backend.requests
    prediction = request["prediction"]["content"]
    assert (
        prediction.endswith(old) and prediction.startswith("/**") and len(prediction) < 400
    )  # its JSDoc, not the file


def test_two_methods_are_one_write_and_a_refused_part_leaves_the_file_whole(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    original = DIFFLIB.read_text(encoding="utf-8")
    two = SET_SEQ2.replace(
        "    # ... rest of the class ...\n",
        "    def real_quick_ratio(self):\n        # ... existing code ...\n"
        "        return _calculate_ratio(min(la, lb), la + lb + 1)\n\n"
        "    # ... rest of the class ...\n",
    )
    result = apply(project, "difflib.py", "-", "--json", stdin=two)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [t["definition"] for t in out["targets"]] == ["SequenceMatcher.set_seq2", "SequenceMatcher.real_quick_ratio"]
    assert "la + lb + 1)" in out["new_text"] and "self.b = list(b)" in out["new_text"]
    assert out["stats"]["batch"]["totals"]["targets"] == 2
    # The second part's answer copies a marker: nothing of the snippet is written, the reason names it.
    project["config"].write_text(
        project["config"].read_text(encoding="utf-8") + "\n[refactor]\nconcurrency = 1\n", encoding="utf-8"
    )
    quick = method_text(original, difflib.SequenceMatcher.real_quick_ratio)
    lazy = quick.replace("        la, lb = len(self.a), len(self.b)\n", "        # ... existing code ...\n")
    fake_backend.enqueue(Reply(), Reply(text=lazy), Reply(text=lazy))  # asked again, it copies it again
    refused = apply(project, "difflib.py", "-", "--write", "--json", stdin=two)
    assert refused.returncode == 3, refused.stderr
    out = json.loads(refused.stdout)
    assert out["outcome"] == "refused" and "had a lazy marker" in out["reason"]
    assert "`# ... existing code ...` copied" in out["reason"]
    assert "applied whole" in out["reason"] and out["answer"] == lazy and out["answer_file"]
    assert (project["dir"] / "difflib.py").read_text(encoding="utf-8") == original


def test_a_snippet_that_cannot_be_placed_exits_4_and_sends_nothing(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    unplaced = apply(project, "difflib.py", "-", stdin="self.b = list(b)\n", run=run_process)  # a real exit 4
    message = assert_clean_failure(unplaced, 4)
    assert "names no definition" in message and "--lines" in message
    out = json.loads(apply(project, "difflib.py", "-", "--json", stdin="self.b = list(b)\n").stdout)
    assert out["outcome"] == "not placed"
    assert fake_backend.requests == []
    line = inspect.getsourcelines(difflib.SequenceMatcher.set_seq2)[1] + 22  # inside set_seq2's body
    pointed = apply(project, "difflib.py", "-", "--lines", str(line), "--json", stdin="        self.b = list(b)\n")
    assert pointed.returncode == 0, pointed.stderr
    assert json.loads(pointed.stdout)["targets"][0]["definition"] == "SequenceMatcher.set_seq2"


def test_usage_errors_exit_2(project: dict[str, Any]) -> None:
    message = assert_clean_failure(apply(project, "difflib.py", "missing.py"), 2)
    assert "missing.py" in message
