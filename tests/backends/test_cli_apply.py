"""`refactor-lsp apply FILE SNIPPET` end to end against the loopback fake: a lazy snippet, as chat models
write them, merged into a method of CPython's difflib.py (2,000+ lines) and a function of domutils'
JavaScript; the prediction the backend received is that definition, not the file; the code behind
each marker is kept; every outcome its own exit code."""

from __future__ import annotations

import ast
import difflib
import importlib.resources.abc
import inspect
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from lsp_server.stats.history import History, summarize_history
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


def test_a_snippet_on_stdin_over_the_limit_is_over_the_limit_wherever_the_bound_cuts_a_character(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Issue 36 item 6: 1,001 two-byte characters past a 1,000-character limit: the read stops at 4 × 1,000 + 1
    bytes, inside a character; that is the limit, not "not UTF-8 text (byte 4000)"."""
    project["config"].write_text(
        project["config"].read_text(encoding="utf-8") + "\n[refactor]\nmax_region_chars = 1000\n", encoding="utf-8"
    )
    over = "é" * 2001  # 4,002 bytes: more than any 1,000 characters can take
    message = assert_clean_failure(apply(project, "difflib.py", "-", stdin=over), 2)
    assert "over 1,000 characters (refactor.max_region_chars)" in message and "UTF-8" not in message
    fewer_bytes = "é" * 1001  # 2,002 bytes, all read: over the limit in characters
    message = assert_clean_failure(apply(project, "difflib.py", "-", stdin=fewer_bytes), 2)
    assert "over 1,000 characters" in message
    assert fake_backend.requests == []


@pytest.mark.parametrize("snippet", ["", "\n\n", "\ufeff  \r\n"])
def test_an_empty_snippet_is_a_usage_error(project: dict[str, Any], fake_backend: FakeBackend, snippet: str) -> None:
    """Nothing to place is the command's mistake (exit 2), not a snippet placed nowhere (exit 4, whose advice
    is --lines); nothing is sent."""
    message = assert_clean_failure(apply(project, "difflib.py", "-", stdin=snippet), 2)
    assert "the snippet (stdin) is empty" in message
    assert fake_backend.requests == []


RESOURCES_ABC = Path(inspect.getsourcefile(importlib.resources.abc) or "")
# A Protocol's new abstract method, as a chat writes it: its docstring's example ends in a doctest-style
# `...` line, and its body is the docstring then `...`, as Python stubs are written.
NEW_PROTOCOL_METHOD = '''class Traversable(Protocol):
    # ... existing code ...

    @abc.abstractmethod
    def walk(self) -> Iterator["Traversable"]:
        """
        Yield self and every Traversable below it, as in:

            for item in root.walk():
                ...
        """
        ...

    # ... rest of the class ...
'''


def test_a_protocol_method_whose_body_is_a_docstring_then_an_ellipsis_merges(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Issue 36 items 4 and 5: the `...` after the docstring is the stub's body and the one inside the
    docstring is its text, not lazy markers: the model's merge that holds both applies, where it was
    refused ("`...` copied", asked again, refused again)."""
    original = RESOURCES_ABC.read_text(encoding="utf-8")
    (project["dir"] / "abc_resources.py").write_text(original, encoding="utf-8")
    added = NEW_PROTOCOL_METHOD.split("    # ... existing code ...\n\n", 1)[1].split("\n    # ... rest", 1)[0]
    end_of_class = '        The base name of this object without any parent references.\n        """\n'
    assert original.count(end_of_class) == 1
    start = original.index("@runtime_checkable\nclass Traversable(Protocol):")
    region = original[start : original.index(end_of_class) + len(end_of_class)]
    fake_backend.enqueue(Reply(text=region + "\n" + added))  # the merge a good model writes
    result = apply(project, "abc_resources.py", "-", "--write", stdin=NEW_PROTOCOL_METHOD)
    assert result.returncode == 0, result.stderr
    written = (project["dir"] / "abc_resources.py").read_text(encoding="utf-8")
    assert written == original.replace(end_of_class, end_of_class + "\n" + added)
    ast.parse(written)
    assert len(fake_backend.requests) == 1  # no repair was asked: nothing was read as a copied marker
    assert fake_backend.requests[0]["prediction"]["content"] == region


def test_a_snippet_naming_more_definitions_than_one_apply_takes_is_refused_at_once(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Issue 36 item 3: 600 methods named, 500 the most one apply takes: refused (exit 2, as a snippet over
    its size is) before any is looked for in the file, where every one was placed first (minutes)."""
    methods = 600
    big = "class Big:\n" + "".join(f"    def m{i}(self, x):\n        return x + {i}\n\n" for i in range(methods))
    (project["dir"] / "big.py").write_text(big, encoding="utf-8")
    snippet = "class Big:\n    # ... existing code ...\n\n"
    snippet += "".join(f"    def m{i}(self, x):\n        return x - {i}\n\n" for i in range(methods))
    started = time.monotonic()
    result = apply(project, "big.py", "-", "--json", stdin=snippet)
    assert result.returncode == 2, result.stderr
    assert time.monotonic() - started < 15
    out = json.loads(result.stdout)
    assert out["outcome"] == "usage" and "names 600 definitions, more than one apply takes (500)" in out["reason"]
    assert "nothing was sent" in out["reason"] and fake_backend.requests == []
    assert (project["dir"] / "big.py").read_text(encoding="utf-8") == big


COMPLETE_SET_SEQ2 = "class SequenceMatcher:\n" + inspect.getsource(difflib.SequenceMatcher.set_seq2).replace(
    "        self.b = b\n", "        self.b = list(b)\n"
)


def test_a_complete_snippet_is_spliced_as_written_with_no_request(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Issue 36 item 7: no lazy marker, its method whole: the merged code already. Written with no request,
    checked, and the line, the JSON and the history say it was spliced (0 tokens), no model's speed."""
    original = DIFFLIB.read_text(encoding="utf-8")
    result = apply(project, "difflib.py", "-", "--write", "--json", stdin=COMPLETE_SET_SEQ2)
    assert result.returncode == 0, result.stderr
    assert (project["dir"] / "difflib.py").read_text(encoding="utf-8") == original.replace(
        "        self.b = b\n", "        self.b = list(b)\n"
    )
    assert fake_backend.requests == []
    assert "splicing into method `SequenceMatcher.set_seq2` (lines " in result.stderr
    assert "no model is asked" in result.stderr and "spliced as written, no model asked (0 tokens)" in result.stderr
    out = json.loads(result.stdout)
    assert out["outcome"] == "applied" and out["merged_by"] == "splice"
    stats = out["stats"]
    assert stats["merged_by"] == "splice" and stats["completion_tokens"] == 0 and stats["tokens_per_s"] is None
    assert stats["backend"] == "" and stats["prediction"] is False and stats["checked"] == "python"
    (record,) = History().read()  # no backend, no speed: in no backend's medians
    assert record.merged_by == "splice" and record.backend == "" and record.tokens_per_s is None
    assert summarize_history([record]) == []


def test_two_complete_methods_are_one_splice_and_the_summary_says_no_model_was_asked(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    seq1 = inspect.getsource(difflib.SequenceMatcher.set_seq1).replace("self.a = a\n", "self.a = list(a)\n")
    result = apply(project, "difflib.py", "-", "--json", stdin=COMPLETE_SET_SEQ2 + "\n" + seq1)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [t["definition"] for t in out["targets"]] == ["SequenceMatcher.set_seq1", "SequenceMatcher.set_seq2"]
    assert "self.a = list(a)" in out["new_text"] and "self.b = list(b)" in out["new_text"]
    assert out["merged_by"] == "splice" and out["stats"]["merged_by"] == "splice"
    assert out["stats"]["batch"]["totals"]["spliced"] == 2 and fake_backend.requests == []
    assert "2 definitions: 2 edit · spliced as written, no model asked (0 tokens) · " in result.stderr


def test_merge_with_model_asks_the_model_even_for_a_complete_snippet(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    result = apply(project, "difflib.py", "-", "--merge-with-model", "--json", stdin=COMPLETE_SET_SEQ2)
    assert result.returncode == 0, result.stderr
    (request,) = fake_backend.requests
    assert request["prediction"]["content"] == method_text(DIFFLIB.read_text("utf-8"), difflib.SequenceMatcher.set_seq2)
    out = json.loads(result.stdout)
    assert out["merged_by"] == "model" and "self.b = list(b)" in out["new_text"]
    assert "merging into method `SequenceMatcher.set_seq2`" in result.stderr


def test_a_spliced_snippet_your_checker_refuses_is_merged_by_the_model_and_says_why(
    project: dict[str, Any], fake_backend: FakeBackend
) -> None:
    """Still checked before the edit: your own checker refuses the snippet as written, so the model merges it
    (here as a good model would, without the line it objects to), and the notes say why."""
    checker = 'import sys; sys.exit("line 1: FORBIDDEN is not allowed" if "FORBIDDEN" in sys.stdin.read() else 0)'
    project["config"].write_text(
        project["config"].read_text(encoding="utf-8")
        + f'\n[refactor.checkers]\npython = [{json.dumps(sys.executable)}, "-c", {json.dumps(checker)}]\n',
        encoding="utf-8",
    )
    snippet = COMPLETE_SET_SEQ2.replace("        self.b = list(b)\n", "        self.b = list(b)  # FORBIDDEN\n")
    original = DIFFLIB.read_text(encoding="utf-8")
    merged = method_text(original, difflib.SequenceMatcher.set_seq2).replace("self.b = b\n", "self.b = list(b)\n")
    fake_backend.enqueue(Reply(text=merged))
    result = apply(project, "difflib.py", "-", "--json", stdin=snippet)
    assert result.returncode == 0, result.stderr
    assert len(fake_backend.requests) == 1
    out = json.loads(result.stdout)
    assert out["merged_by"] == "model" and "FORBIDDEN" not in out["new_text"] and "self.b = list(b)" in out["new_text"]
    assert (
        "so the model merged it" in out["stats"]["notes"][0] and "FORBIDDEN is not allowed" in out["stats"]["notes"][0]
    )
