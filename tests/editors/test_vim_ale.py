"""Vim + ALE (editors/README.md) in a real headless Vim (`vim -es`), against the real server over
stdio and the loopback fake backend over HTTP.

The user's flow for editors without an input box: write a `refactor-lsp: <instruction>` comment in
the function, run `:ALECodeAction` there, type the number of `Refactor with prediction:
<instruction>`. tests/editors/vim/ale_code_action.vim does exactly that after sourcing the setup the README
gives (editors/vim/refactor-lsp.vim), and writes what the user sees (the numbered menu, the buffer,
the messages) to a JSON file.

ALE neither resolves code actions nor answers `workspace/configuration`, and it applies a server's
`workspace/applyEdit` without replying: settings go in `initialization_options`, and the server
reports the edit as sent but unconfirmed. ALE sends the word under the cursor as the range, which
the server widens to the enclosing block for the instruction comment. Needs `vim` (+job +channel
+timers) and ALE (Debian: `apt-get install vim-ale`; elsewhere set ALE_DIR); skipped without, and
failed without when CI=true (tests/editors/real_editors.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import editor_settings
from tests.editors.real_editors import COMMENTED, PICK, RENAMED, SERVER_COMMAND, cursor_at, drive, editor_missing

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "editors" / "vim" / "refactor-lsp.vim"  # the setup editors/README.md gives
SCRIPT = ROOT / "tests" / "editors" / "vim" / "ale_code_action.vim"
WAIT_MS = 15_000  # inside Vim, for each step
RUN_TIMEOUT_S = 45

# ALE's g:ale_lsp_show_message_format is '%severity%:%linter%: %s'.
SUMMARY = re.compile(
    r"^Info:refactor-lsp: refactor-lsp: refactor \d+\.\d s · \d+ tok · \d+ tok/s · prediction \d+% accepted"
)

VIM = shutil.which("vim")


def find_ale() -> Path | None:
    for candidate in (
        os.environ.get("ALE_DIR"),
        "/usr/share/vim-ale",
        "/usr/share/vim/vimfiles/pack/dist-bundle/opt/ale",
    ):
        if candidate and (Path(candidate) / "plugin" / "ale.vim").is_file():
            return Path(candidate)
    return None


@pytest.fixture(scope="module")
def vim() -> str:
    if VIM is None:
        editor_missing("no vim: `apt-get install vim-ale` (Debian) brings Vim and ALE")
    version = subprocess.run([VIM, "--version"], capture_output=True, text=True, timeout=20).stdout
    missing = [f for f in ("+job", "+channel", "+timers", "+lambda") if f not in version.split()]
    if missing:
        editor_missing(f"{VIM} lacks {' '.join(missing)}, which ALE needs: `apt-get install vim` (Debian's has them)")
    if find_ale() is None:
        editor_missing("no ALE: `apt-get install vim-ale` (Debian), or set ALE_DIR to an ALE checkout")
    return VIM


def run_vim(vim: str, tmp_path: Path, *, cursor: str, settings: dict[str, Any]) -> dict[str, Any]:
    project = tmp_path / "project"
    project.mkdir()
    path = project / "app.py"
    path.write_text(COMMENTED, encoding="utf-8")
    line, col = cursor_at(COMMENTED, cursor)
    spec = {
        "ale_dir": str(find_ale()),
        "snippet": str(SNIPPET),
        "file": str(path),
        "line": line,
        "col": col,
        "command": SERVER_COMMAND,
        "settings": settings,
        "pick": PICK,
        "timeout_ms": WAIT_MS,
        "wait_for_message": "refactor-lsp: refactor",
    }
    argv = [vim, "-N", "-u", "NONE", "-i", "NONE", "-n", "-es", "-S", str(SCRIPT)]
    data = drive(argv, tmp_path, spec, cwd=project, timeout_s=RUN_TIMEOUT_S, env_prefixes=("VIM", "MYVIMRC"))
    assert not data["error"], data["error"] + "\n" + "\n".join(data["messages"])
    return data


@pytest.mark.parametrize(
    "cursor",
    ["refactor-lsp: rename", "parse(data)"],
    ids=["on-the-comment", "on-a-word-elsewhere-in-the-function"],
)
def test_instruction_comment_from_the_code_action_menu(
    vim: str, tmp_path: Path, fake_backend: FakeBackend, cursor: str
):
    data = run_vim(vim, tmp_path, cursor=cursor, settings=editor_settings(fake_backend))
    # ALE's numbered menu: the comment's instruction first, then the presets; the user typed its number.
    assert data["menu"][0] == "Code Fixes:"
    assert data["menu"][1] == f"1) {PICK}"
    assert data["menu"][-1] == "Type number and <Enter> (empty cancels): "
    assert data["picked"] == PICK
    # The buffer: renamed in the whole function, the instruction comment gone, not written to disk.
    assert "\n".join(data["lines"]) + "\n" == RENAMED
    assert data["modified"] is True
    assert (tmp_path / "project" / "app.py").read_text(encoding="utf-8") == COMMENTED
    # One speed summary, saying ALE never confirmed the edit (it does not reply to workspace/applyEdit).
    summaries = [m for m in data["messages"] if SUMMARY.match(m)]
    assert len(summaries) == 1, data["messages"]
    assert summaries[0].endswith("— the edit was sent; the editor did not confirm it"), summaries[0]
    assert not [m for m in data["messages"] if m.startswith("Error:")], data["messages"]
    # The settings reached the server: one request, to our fake, with the function as the prediction.
    assert len(fake_backend.requests) == 1
    assert fake_backend.requests[0]["prediction"]["content"].startswith("def load(path):\n")


def _offered(start_marker: str, end_marker: str | None = None) -> list[Any]:
    from lsp_server.config.schema import Config
    from lsp_server.server.actions import list_actions

    start = COMMENTED.index(start_marker)
    end = COMMENTED.index(end_marker) + len(end_marker) if end_marker else start + len(start_marker)
    rng = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 1}}  # passed through as is
    return list_actions(
        Config(), uri="file:///app.py", text=COMMENTED, start=start, end=end, lsp_range=rng, diagnostics=[]
    )


def test_a_range_within_one_line_offers_the_comment_of_the_enclosing_block():
    """ALE sends the word at the cursor (vim-lsp the line, Helix one character) even with nothing selected."""
    for word in ("data = open", "rename data", "parse(data)"):
        comment = [a for a in _offered(word) if a.data["actionId"] == "instruction-comment"]
        assert [a.title for a in comment] == [PICK], word
        # An empty range: the refactor rewrites the enclosing block, not the one line.
        assert comment[0].data["range"]["start"] == comment[0].data["range"]["end"]


def test_a_selection_of_several_lines_is_kept():
    """A real selection that leaves the comment out does not offer it; one that holds it keeps its range."""
    assert not [a for a in _offered("data = open", "parse(data)") if a.data["actionId"] == "instruction-comment"]
    held = [a for a in _offered("def load", "parse(data)") if a.data["actionId"] == "instruction-comment"]
    assert held and held[0].data["range"]["end"] == {"line": 0, "character": 1}
