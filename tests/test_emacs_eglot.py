"""Emacs + eglot (editors/README.md) in a real `emacs --batch`, against the real server over stdio
and the loopback fake backend over HTTP.

The user's flow for editors without an input box: write a `refactor-lsp: <instruction>` comment in
the function, run `M-x eglot-code-actions` there, pick `Refactor with prediction: <instruction>`.
tests/emacs/eglot_code_action.el does exactly that after loading the setup the README gives
(editors/emacs/refactor-lsp.el), and writes what the user sees (the menu, the buffer, the
echo-area messages) to a JSON file.

Eglot does not resolve code actions, so the server puts the command (with `wait: false`) on the
action; the setup sets `eglot-confirm-server-initiated-edits` to nil. Needs `emacs` with
eglot (built in since Emacs 29; Debian 12: `apt-get install emacs-nox elpa-eglot`); skipped without.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fake_backend import FakeBackend

ROOT = Path(__file__).resolve().parent.parent
SNIPPET = ROOT / "editors" / "emacs" / "refactor-lsp.el"  # the setup editors/README.md gives
SCRIPT = ROOT / "tests" / "emacs" / "eglot_code_action.el"
WAIT_S = 15  # inside Emacs, for each step
RUN_TIMEOUT_S = 45

SOURCE = """import os


def load(path):
    # refactor-lsp: rename data to content
    data = open(path).read()
    return parse(data)


def parse(text):
    return text.split()
"""
RENAMED = """import os


def load(path):
    content = open(path).read()
    return parse(content)


def parse(text):
    return text.split()
"""
PICK = "Refactor with prediction: rename data to content"
SUMMARY = re.compile(
    r"^\[eglot\] Server reports \(type=3\): refactor-lsp: refactor \d+\.\d s · \d+ tok · \d+ tok/s · "
    r"prediction \d+% accepted"
)

EMACS = shutil.which("emacs")

# The same lookup as the script: built in, else Debian's elpa-eglot.
PROBE = """(unless (require 'eglot nil t)
  (require 'package)
  (add-to-list 'package-directory-list "/usr/share/emacs/site-lisp/elpa")
  (package-initialize)
  (require 'eglot))"""


@pytest.fixture(scope="module")
def emacs() -> str:
    if EMACS is None:
        pytest.skip("no emacs: `apt-get install emacs-nox elpa-eglot` (Debian 12) runs these tests")
    probe = subprocess.run(
        [EMACS, "--batch", "-Q", "--eval", PROBE],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    if probe.returncode != 0:
        pytest.skip(f"{EMACS} has no eglot: `apt-get install elpa-eglot` (Emacs 28) or use Emacs 29+")
    return EMACS


def settings_for(fake: FakeBackend) -> dict[str, Any]:
    return {
        "defaultBackend": "fake",
        "backends": {"fake": {"type": "openai", "baseUrl": fake.url, "model": "fake-model"}},
    }


def cursor_at(text: str, marker: str) -> tuple[int, int]:
    """1-based line and column of the first character of `marker`."""
    offset = text.index(marker)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def elisp(value: Any) -> str:
    """A JSON-like value as the plist eglot expects (for .dir-locals.el)."""
    if isinstance(value, dict):
        return "(" + " ".join(f":{k} {elisp(v)}" for k, v in value.items()) + ")"
    if isinstance(value, list):
        return "[" + " ".join(elisp(v) for v in value) + "]"
    if isinstance(value, bool):
        return "t" if value else ":json-false"
    if value is None:
        return "nil"
    return json.dumps(value)


def run_emacs(
    emacs: str,
    tmp_path: Path,
    *,
    cursor: str,
    settings: dict[str, Any] | None = None,
    dir_locals: dict[str, Any] | None = None,
    show_stats: bool = False,
) -> dict[str, Any]:
    project = tmp_path / "project"
    project.mkdir()
    path = project / "app.py"
    path.write_text(SOURCE, encoding="utf-8")
    if dir_locals is not None:
        (project / ".dir-locals.el").write_text(
            f"((nil . ((eglot-workspace-configuration . {elisp(dir_locals)}))))\n", encoding="utf-8"
        )
    home = tmp_path / "home"
    for sub in ("config", "state", "data", "cache"):
        (home / sub).mkdir(parents=True)
    line, col = cursor_at(SOURCE, cursor)
    results = tmp_path / "results.json"
    spec = {
        "snippet": str(SNIPPET),
        "file": str(path),
        "line": line,
        "col": col,
        "command": [sys.executable, "-m", "lsp_server"],
        "settings": settings,
        "pick": PICK,
        "results": str(results),
        "timeout_s": WAIT_S,
        "wait_for_message": "refactor-lsp: refactor",
        "show_stats": show_stats,
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "EMACS", "REFACTOR_LSP"))},
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_STATE_HOME": str(home / "state"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "RLSP_SPEC": str(tmp_path / "spec.json"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("OPENAI_API_KEY", None)
    proc = subprocess.run(
        [emacs, "--batch", "-Q", "-l", str(SCRIPT)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert results.exists(), f"no results (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    data = json.loads(results.read_text(encoding="utf-8"))
    assert not data["error"], data["error"] + "\n" + "\n".join(data["messages"]) + "\n" + data["events"][-6000:]
    return data


def assert_refactored(data: dict[str, Any], fake: FakeBackend) -> None:
    # The menu offers the comment's instruction first, then the presets; the user picked it.
    assert data["menu"][0] == PICK
    assert all(title.startswith("Refactor with prediction: ") for title in data["menu"])
    assert data["picked"] == PICK
    # The buffer: renamed in the whole function, the instruction comment gone, not saved behind the user's back.
    assert data["text"] == RENAMED
    assert data["modified"] is True
    # One speed summary in the echo area, no error.
    summaries = [m for m in data["messages"] if SUMMARY.match(m)]
    assert len(summaries) == 1, data["messages"]
    assert not [m for m in data["messages"] if "(type=1)" in m], data["messages"]
    # The settings reached the server: one request, to our fake, with the function as the prediction.
    assert len(fake.requests) == 1
    assert fake.requests[0]["prediction"]["content"].startswith("def load(path):\n")


def test_instruction_comment_with_workspace_configuration(emacs: str, tmp_path: Path, fake_backend: FakeBackend):
    """Settings from `eglot-workspace-configuration` in the project's .dir-locals.el; point on the comment."""
    data = run_emacs(
        emacs,
        tmp_path,
        cursor="refactor-lsp: rename",
        dir_locals={"refactorLsp": settings_for(fake_backend)},
    )
    assert_refactored(data, fake_backend)


def test_instruction_comment_with_initialization_options(emacs: str, tmp_path: Path, fake_backend: FakeBackend):
    """Settings from `refactor-lsp-settings` (initializationOptions); point on a word elsewhere in the function."""
    data = run_emacs(emacs, tmp_path, cursor="parse(data)", settings=settings_for(fake_backend), show_stats=True)
    assert_refactored(data, fake_backend)
    # M-x refactor-lsp-show-stats (from the setup file): the medians of the history, one line.
    stats = [m for m in data["messages"] if "refactor-lsp: fake: with prediction: 1 refactors" in m]
    assert len(stats) == 1, data["messages"]
