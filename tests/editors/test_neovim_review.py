"""`:RefactorReview` (editors/neovim/lua/refactor_lsp/review.lua) in a real headless Neovim, against the
real server over stdio and the loopback fake backend: each change of an answer shown in the buffer
before anything is applied, kept or dropped with the review's keys, what is kept applied by the server
as one edit (one `u`), a kept subset that breaks the code refused, `q` cancelling, and a second
request while a review is open told it is busy. The set-up is tests/editors/test_neovim.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from tests.conftest import editor_settings
from tests.editors.real_editors import RENAMED, SOURCE
from tests.editors.test_neovim import ERROR, INFO, WARN, backend, fake, messages, nvim, run_nvim, write_source

__all__ = ["backend", "fake", "nvim"]  # the fixtures, shared with test_neovim.py

HARDEN = """import os


def load(path):
    data = open(path).read()

    size = len(data)

    return data.split()


print(load(__file__))
"""
REGION = HARDEN[HARDEN.index("def load") : HARDEN.index("\n\n\nprint")] + "\n"
# Three changes, a blank line between each; the third uses the name the first brings (`json`).
ANSWER = """def load(path):
    import json
    data = open(path, encoding="utf-8").read()

    size = len(data) + 1

    return json.loads(data)
"""
LABELS = [
    'line 5: add `import json`, `data = open(path).read()` → `data = open(path, encoding="utf-8").rea…`',
    "line 7: `size = len(data)` → `size = len(data) + 1`",
    "line 9: add `return json.loads(data)`, remove `return data.split()`",
]
KEPT_1_3 = HARDEN.replace(
    "    data = open(path).read()\n", '    import json\n    data = open(path, encoding="utf-8").read()\n'
).replace("return data.split()", "return json.loads(data)")
HINT = "refactor-lsp review: ]c [c move · gy keep · gn drop · gY keep all · ga apply · q cancel · g? keys"

# Two changes of which the first alone leaves a bracket open (tests/lsp/test_review.py's).
BUILD = "def build(items):\n    data = None\n\n    size = 1\n    return data, size\n"
BUILD_ANSWER = "def build(items):\n    data = dict(\n\n    size=1)\n    return data, size\n"

OPENED = "H.wait(function() return review.get(buf) ~= nil end, 'the review to open')"
COUNT_EDITS = """
  local edits, apply_edit = 0, vim.lsp.handlers['workspace/applyEdit']
  vim.lsp.handlers['workspace/applyEdit'] = function(...)
    edits = edits + 1
    return apply_edit(...)
  end
  local review = require('refactor_lsp.review')"""


def text(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"


def shown(data: dict[str, Any], mark: str) -> list[str]:
    return [v["text"] for v in data["marks"][mark]]


def test_review_keeps_two_of_three_and_drops_one_and_one_undo_reverts(tmp_path: Path, fake: FakeBackend) -> None:
    fake.enqueue(Reply(text=ANSWER))
    path = write_source(tmp_path, HARDEN)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  {COUNT_EDITS}
  vim.keymap.set('n', 'q', '<Nop>', {{ buffer = buf, desc = 'mine' }})  -- hidden during the review, then back
  H.cursor_at('data = open')
  vim.cmd('RefactorReview harden it')
  {OPENED}
  H.mark('shown', H.virtual_lines(buf))
  H.mark('removed', H.highlighted_rows(buf, 'RefactorLspReviewRemoved'))
  H.mark('lines_in_review', H.lines(buf))
  H.mark('statusline_in_review', H.statusline())
  H.mark('cursor_at_open', vim.api.nvim_win_get_cursor(0)[1])
  H.keys('gy')  -- keep change 1; on to change 2
  H.mark('cursor_after_keep', vim.api.nvim_win_get_cursor(0)[1])
  H.keys('gn')  -- drop change 2; on to change 3
  H.keys('[c')
  H.mark('cursor_back', vim.api.nvim_win_get_cursor(0)[1])
  H.keys(']c')
  H.mark('cursor_on', vim.api.nvim_win_get_cursor(0)[1])
  H.keys(']c')
  H.mark('cursor_wrapped', vim.api.nvim_win_get_cursor(0)[1])
  H.keys('G[c')
  H.mark('cursor_from_below', vim.api.nvim_win_get_cursor(0)[1])
  H.keys('gy')  -- keep change 3
  H.keys('gg]c')
  H.keys('gn')  -- drop change 1, which change 3 needs: change 3 says so
  H.mark('needs_dropped', H.virtual_lines(buf))
  H.keys('gy')  -- and keep it again
  H.mark('decided', H.virtual_lines(buf))
  H.mark('removed_decided', H.highlighted_rows(buf, 'RefactorLspReviewRemoved'))
  H.keys('ga')
  H.wait(function() return plugin.status().last.status == 'applied' end, 'the kept changes applied')
  H.mark('lines', H.lines(buf))
  H.mark('edits', edits)
  H.mark('after', H.virtual_lines(buf))
  H.mark('gy_after', vim.fn.maparg('gy', 'n'))
  H.mark('q_after', vim.fn.maparg('q', 'n', false, true).desc)
  H.keys('u')
  H.mark('undone', H.lines(buf))
  H.mark('modified', vim.bo[buf].modified)
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    # Nothing applied while reviewing: each change shown where it goes, its label and what it needs above it.
    assert text(marks["lines_in_review"]) == HARDEN
    assert shown(data, "shown") == [
        HINT,
        f"change 1 of 3 · to decide · {LABELS[0]}",
        "    import json",
        '    data = open(path, encoding="utf-8").read()',
        f"change 2 of 3 · to decide · {LABELS[1]}",
        "    size = len(data) + 1",
        f"change 3 of 3 · to decide · needs change 1 · {LABELS[2]}",
        "    return json.loads(data)",
    ]
    assert [v["row"] for v in marks["shown"]] == [4, 4, 4, 4, 6, 6, 8, 8]  # above and below each changed line
    assert marks["removed"] == [4, 6, 8]  # the lines each change replaces
    assert marks["statusline_in_review"] == "refactor in review"
    # The cursor goes from change to change: the first at open, the next undecided after a key, ]c and [c.
    assert (marks["cursor_at_open"], marks["cursor_after_keep"]) == (5, 7)
    assert (marks["cursor_back"], marks["cursor_on"]) == (7, 9)
    assert (marks["cursor_wrapped"], marks["cursor_from_below"]) == (5, 9)  # ]c wraps; [c from below: the last
    assert f"change 3 of 3 · kept · needs change 1 (dropped) · {LABELS[2]}" in shown(data, "needs_dropped")
    assert [t for t in shown(data, "decided") if t.startswith("change")] == [
        f"change 1 of 3 · kept · {LABELS[0]}",
        f"change 2 of 3 · dropped · {LABELS[1]}",
        f"change 3 of 3 · kept · needs change 1 · {LABELS[2]}",
    ]
    assert marks["removed_decided"] == [4, 8]  # a dropped change's line stays as it is
    # Two kept, one dropped: one edit from the server, so one `u` takes it all back.
    assert text(marks["lines"]) == KEPT_1_3
    assert marks["edits"] == 1
    assert text(marks["undone"]) == HARDEN and marks["modified"] is False
    (summary,) = [n for n in data["notifications"] if "kept 2 of 3 changes" in n["msg"]]
    assert summary["msg"].startswith("refactor-lsp: refactor ") and summary["level"] == INFO
    # The review is over: nothing drawn, its keys gone and the user's own mapping back.
    assert marks["after"] == [] and marks["gy_after"] == "" and marks["q_after"] == "mine"
    (request,) = fake.requests
    assert request["prediction"]["content"] == REGION


def test_a_kept_subset_that_breaks_the_code_is_refused_and_the_buffer_stays(tmp_path: Path, fake: FakeBackend) -> None:
    fake.enqueue(Reply(text=BUILD_ANSWER))
    path = write_source(tmp_path, BUILD)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  {COUNT_EDITS}
  H.cursor_at('data = None')
  vim.cmd('RefactorReview make data a dict')
  {OPENED}
  H.keys('gy')  -- keep change 1
  H.keys('gn')  -- drop change 2, which closes the bracket change 1 opens
  H.keys('ga')
  H.wait(function() return plugin.status().last.status == 'error' end, 'the refusal')
  H.mark('lines', H.lines(buf))
  H.mark('edits', edits)
  H.mark('after', H.virtual_lines(buf))
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    assert text(marks["lines"]) == BUILD and marks["edits"] == 0
    (refused,) = [n for n in data["notifications"] if "leaves an error" in n["msg"]]
    assert refused["level"] == ERROR
    assert refused["msg"].startswith("refactor-lsp: keeping change 1 without change 2 leaves an error: '(' was never")
    assert "nothing was applied" in refused["msg"]
    assert marks["after"] == [] and marks["statusline_after"] == "refactor failed"


def test_a_second_request_while_reviewing_is_busy_and_q_cancels_and_frees_the_file(
    tmp_path: Path, fake: FakeBackend
) -> None:
    answer = SOURCE[SOURCE.index("def load") : SOURCE.index("\n\n\ndef parse")] + "\n"
    fake.enqueue(Reply(text=answer.replace("data", "content")))
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  {COUNT_EDITS}
  H.cursor_at('data = open')
  vim.cmd('RefactorReview rename data to content')
  {OPENED}
  vim.cmd('RefactorPredict rename data to content')
  H.wait(function() return #H.notified('a review is open on this file') == 1 end, 'the busy answer')
  H.mark('still_open', review.get(buf) ~= nil)
  H.mark('shown_while_busy', #H.virtual_lines(buf))
  H.keys('q')
  H.wait(function() return #H.notified('cancelled') == 1 end, 'the cancel')
  H.mark('lines_after_cancel', H.lines(buf))
  H.mark('after_cancel', H.virtual_lines(buf))
  H.mark('edits_after_cancel', edits)
  H.mark('statusline_after_cancel', H.statusline())
  vim.cmd('RefactorPredict rename data to content')
  H.wait(function() return plugin.status().last.status == 'applied' end, 'a refactor after the cancel')
  H.mark('lines', H.lines(buf))
  -- :RefactorCancel ends a review too, here and on the server.
  H.cursor_at('def parse')
  vim.cmd('RefactorPredict! rename text to words')
  {OPENED}
  vim.cmd('RefactorCancel')
  H.wait(function() return #H.notified('cancelled') == 2 end, 'the second cancel')
  H.mark('after_command_cancel', H.virtual_lines(buf))
  H.mark('gy_after_command_cancel', vim.fn.maparg('gy', 'n'))
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    (busy,) = [n for n in data["notifications"] if "a review is open on this file" in n["msg"]]
    assert busy["level"] == WARN
    assert marks["still_open"] is True and marks["shown_while_busy"] > 0  # the busy answer leaves the review be
    assert "refactor-lsp: the refactor was cancelled; nothing was applied" in messages(data)
    assert text(marks["lines_after_cancel"]) == SOURCE and marks["edits_after_cancel"] == 0
    assert marks["after_cancel"] == [] and marks["statusline_after_cancel"] == "refactor cancelled"
    assert text(marks["lines"]) == RENAMED  # the document is free again: the next refactor applies
    assert len(fake.requests) == 3  # the busy one never reached the model
    assert marks["after_command_cancel"] == [] and marks["gy_after_command_cancel"] == ""


def test_typing_while_the_model_runs_moves_the_changes_and_typing_in_one_makes_it_stale(
    tmp_path: Path, fake: FakeBackend
) -> None:
    fake.enqueue(Reply(text=ANSWER, stall_after_chars=5, stall_s=1.0), Reply(text=ANSWER))
    path = write_source(tmp_path, HARDEN)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  {COUNT_EDITS}
  H.cursor_at('data = open')
  vim.cmd('RefactorReview harden it')
  H.wait(function() return plugin.status().running end, 'the refactor to start')
  vim.api.nvim_buf_set_lines(buf, 1, 1, false, {{ 'import sys' }})  -- above the function, while it runs
  {OPENED}
  H.mark('removed', H.highlighted_rows(buf, 'RefactorLspReviewRemoved'))
  H.keys('gY')
  H.keys('ga')
  H.wait(function() return plugin.status().last.status == 'applied' end, 'the changes applied over the typing')
  H.mark('applied', H.lines(buf))
  H.keys('u')
  H.cursor_at('data = open')
  H.input_answer = 'harden it'
  H.keys('<leader>rr')  -- the keymap: the prompt, then the review
  {OPENED}
  vim.api.nvim_buf_set_lines(buf, 7, 8, false, {{ '    size = 2' }})  -- inside change 2, while reviewing
  H.keys('gY')
  H.keys('ga')
  H.wait(function() return plugin.status().last.status == 'stale' end, 'the stale answer')
  H.mark('stale', H.lines(buf))
  H.mark('edits', edits)
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    typed = HARDEN.replace("import os\n", "import os\nimport sys\n")
    assert marks["removed"] == [5, 7, 9]  # each change one line lower, as the text it replaces
    assert text(marks["applied"]) == KEPT_1_3.replace("import os\n", "import os\nimport sys\n").replace(
        "len(data)", "len(data) + 1"
    )
    assert text(marks["stale"]) == typed.replace("size = len(data)", "size = 2")  # nothing of the review applied
    (stale,) = [n for n in data["notifications"] if "nothing was applied" in n["msg"]]
    assert stale["level"] == WARN, stale
    assert marks["edits"] == 1
    assert data["prompts"] == ["Refactor (instruction): "]


F_AND_G = "def f(value):\n    total = value\n    return total\n\n\ndef g(value):\n    total = value\n    return total\n"


def test_each_definition_reviewed_with_a_bang_names_the_definitions(tmp_path: Path, fake: FakeBackend) -> None:
    path = write_source(tmp_path, F_AND_G)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  {COUNT_EDITS}
  vim.cmd('RefactorEach! rename total to result')
  {OPENED}
  H.mark('headers', H.virtual_lines(buf))
  H.keys('gg]c')  -- change 1 (f)
  H.keys('gn')
  H.keys('gy')  -- change 2 (g)
  H.keys('ga')
  H.wait(function() return plugin.status().last.status == 'partial' end, 'the batch, partly kept')
  H.mark('lines', H.lines(buf))
""",
        editor_settings(fake),
    )
    headers = [t for t in shown(data, "headers") if t.startswith("change")]
    expected = [
        "change 1 of 2 · to decide · lines 2-3: `total` → `result` · function `f` (lines 1-3)",
        "change 2 of 2 · to decide · lines 7-8: `total` → `result` · function `g` (lines 6-8)",
    ]
    assert [h[: len(e)] for h, e in zip(headers, expected, strict=True)] == expected, headers
    g_renamed = F_AND_G[: F_AND_G.index("def g")] + F_AND_G[F_AND_G.index("def g") :].replace("total", "result")
    assert text(data["marks"]["lines"]) == g_renamed


def test_checkhealth_says_review_is_available_and_its_keys(tmp_path: Path, fake: FakeBackend) -> None:
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  H.open({json.dumps(str(path))})
  vim.cmd('checkhealth refactor_lsp')
  H.mark('health', H.lines(0))
""",
        editor_settings(fake),
        setup="{ review_keys = { keep = 'gk' } }",
    )
    health = "\n".join(data["marks"]["health"])
    assert "OK review is available: the server offers refactorLsp.applyChanges" in health, health
    assert re.search(r"OK keys while reviewing: \]c next change, \[c previous change, gk keep, gn drop", health), health
    assert re.search(r"OK keymaps in this buffer: <leader>rp .*<leader>rr ", health), health


ASTRAL = """import os


def load(path):
    data = open(path).read()  # 😀 data
    note = "𝒳 data 😀"; print(data)

    return parse(data)
"""


def test_changes_after_astral_characters_in_a_crlf_file_show_and_apply_exactly(
    tmp_path: Path, fake: FakeBackend
) -> None:
    """The changes' offsets count code points of the text the server has (CRLF line ends, astral characters
    that are 4 bytes in the buffer, 2 units in UTF-16): the new lines shown must be the answer's own."""
    path = write_source(tmp_path, "")
    path.write_bytes(ASTRAL.replace("\n", "\r\n").encode("utf-8"))
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  {COUNT_EDITS}
  H.mark('fileformat', vim.bo[buf].fileformat)
  H.cursor_at('data = open')
  vim.cmd('RefactorReview rename data to content')
  {OPENED}
  H.mark('shown', H.virtual_lines(buf))
  H.keys('gn')  -- drop change 1
  H.keys('gy')  -- keep change 2
  H.keys('ga')
  H.wait(function() return plugin.status().last.status == 'applied' end, 'the kept change applied')
  H.mark('lines', H.lines(buf))
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    assert marks["fileformat"] == "dos"
    assert [t for t in shown(data, "shown") if not t.startswith(("refactor-lsp review", "change "))] == [
        "    content = open(path).read()  # 😀 content",
        '    note = "𝒳 content 😀"; print(content)',
        "    return parse(content)",
    ]
    assert text(marks["lines"]) == ASTRAL.replace("return parse(data)", "return parse(content)")
    assert path.read_bytes() == ASTRAL.replace("\n", "\r\n").encode("utf-8")  # the buffer's, not written
