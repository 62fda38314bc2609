"""A merged answer (formats/merged.py) and the apply's prompt (formats/prompt.py): a copied lazy marker is
refused, a marker the region had is kept, the deletion guard holds the merge to what the snippet shows."""

from __future__ import annotations

import pytest

from lsp_server.formats.hygiene import UnusableOutput
from lsp_server.formats.merged import LazyMarkerLeft, check_merged, copied_markers
from lsp_server.formats.prompt import APPLY_INSTRUCTION, SNIPPET_END, SNIPPET_START, build_prompt

REGION = '''    def load(self, path):
        """Read the file at `path`."""
        with open(path, encoding="utf-8") as handle:
            data = handle.read()
        self.items = parse(data)
        self.loaded = True
        self.path = path
        log.debug("loaded %s", path)
        return self.items
'''
LAZY = """def load(self, path):
    # ... existing code ...
    self.items = parse(data, strict=True)
    # ... rest of the method ...
"""


def test_an_answer_that_copied_the_snippets_marker_is_refused_with_its_line() -> None:
    answer = REGION.replace("        self.loaded = True\n", "        # ... rest of the method ...\n")
    with pytest.raises(LazyMarkerLeft) as refused:
        check_merged(answer, REGION, LAZY, "python")
    assert refused.value.line == 6 and refused.value.marker == "# ... rest of the method ..."
    assert "copied the marker instead of the code" in str(refused.value) and "nothing was applied" in str(refused.value)
    assert "nothing was applied" not in refused.value.problem  # the problem alone, for a repair's prompt


def test_a_marker_in_another_comment_syntax_left_in_python_is_refused() -> None:
    answer = REGION.replace("        self.loaded = True\n", "        // ... existing code ...\n")
    assert copied_markers(answer, REGION, LAZY.replace("#", "//"), "python") == [(6, "// ... existing code ...")]


def test_a_marker_comment_the_region_already_had_is_code_to_keep() -> None:
    region = REGION.replace("        self.path = path\n", "        # ... more to come ...\n")
    answer = region.replace("parse(data)", "parse(data, strict=True)")
    assert copied_markers(answer, region, LAZY, "python") == []
    check_merged(answer, region, LAZY, "python")


def test_a_python_stub_the_snippet_adds_is_code() -> None:
    snippet = "class Reader(Protocol):\n    def read(self) -> bytes:\n        ...\n"
    check_merged(snippet, "class Reader(Protocol):\n    pass\n", snippet, "python")


def test_a_lazy_snippet_keeps_the_region_so_a_merge_that_drops_it_is_refused() -> None:
    dropped = "    def load(self, path):\n        self.items = parse(data, strict=True)\n"
    with pytest.raises(UnusableOutput, match=r"leaves out most of the region.*lazy markers stand for that code"):
        check_merged(dropped, REGION, LAZY, "python")


def test_a_whole_snippet_may_remove_what_it_leaves_out_but_not_itself() -> None:
    whole = 'def load(self, path):\n    """Read it."""\n    self.items = load_all(path)\n    return self.items\n'
    merged = "    " + whole.replace("\n    ", "\n        ")
    check_merged(merged, REGION, whole, "python")  # 4 lines of 9: the snippet removed them
    with pytest.raises(UnusableOutput, match="leaves out most of the snippet"):
        check_merged("", REGION, whole, "python")


def test_the_apply_prompt_carries_the_snippet_and_predicts_the_region_only() -> None:
    text = "import os\n\n\nclass Store:\n" + REGION + "\n    def save(self):\n        pass\n"
    start = text.index("    def load")
    end = start + len(REGION)
    prompt = build_prompt(text=text, start=start, end=end, instruction=APPLY_INSTRUCTION, path="store.py", snippet=LAZY)
    user = prompt.messages[1]["content"]
    assert prompt.prediction == REGION
    assert f"{SNIPPET_START}\n{LAZY}{SNIPPET_END}" in user
    assert user.index("Instruction: Merge the snippet") < user.index(SNIPPET_START)
    assert user.rstrip().endswith(
        "every lazy comment replaced by the original lines it stands for. No explanations, no markdown."
    )
    hunks = build_prompt(
        text=text,
        start=start,
        end=end,
        instruction=APPLY_INSTRUCTION,
        path="store.py",
        snippet=LAZY,
        edit_format="hunks",
    )
    assert SNIPPET_START in hunks.messages[1]["content"] and "SEARCH" in hunks.messages[0]["content"]
