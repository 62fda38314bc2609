"""What the real-editor tests share: one drive set-up, the file they edit, and what they do when their
editor is missing.

`drive` runs an editor once, as a user of ours would start it: a fresh home (config, state, data,
cache) under the test's folder, none of the user's own settings or keys in its environment, the
scenario's spec in a JSON file (`RLSP_SPEC`), and what the user saw read back from the JSON file the
scenario writes (its `results`). Each editor's script (tests/editors/emacs, vim, nvim) reads the spec.

A skipped editor test passes silently, so a CI machine that lost Emacs, Vim, ALE or Neovim would
stop testing the editor setups without anyone noticing. With the environment variable `CI` set to
`true` (GitHub Actions, GitLab CI and .ci/run set it) a missing editor fails the run instead, and
says what to install.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

import pytest

SERVER_COMMAND = [sys.executable, "-m", "lsp_server"]

# The file the editors edit, as it is and renamed; with an instruction comment for the editors without
# an input box (Emacs, Vim): the comment names the refactor, the code-action menu offers it (PICK), and
# the function comes back renamed without the comment.
SOURCE = """import os


def load(path):
    data = open(path).read()
    return parse(data)


def parse(text):
    return text.split()
"""
RENAMED = SOURCE.replace("data", "content")
COMMENTED = SOURCE.replace("def load(path):\n", "def load(path):\n    # refactor-lsp: rename data to content\n")
PICK = "Refactor with prediction: rename data to content"


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def editor_missing(reason: str) -> NoReturn:
    """Skip the test (locally) or fail it (in CI) because an editor it drives is not installed.

    `reason` names what is missing and how to install it, e.g. "no vim: `apt-get install vim-ale`".
    """
    if in_ci():
        pytest.fail(f"{reason}\n(CI=true: real-editor tests must run in CI, so a missing editor fails)", pytrace=False)
    pytest.skip(reason)


def cursor_at(text: str, marker: str) -> tuple[int, int]:
    """1-based line and column of the first character of `marker`."""
    offset = text.index(marker)
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def editor_home(tmp_path: Path) -> Path:
    """The editor's home under the test's folder, with its config, state, data and cache folders."""
    home = tmp_path / "home"
    for sub in ("config", "state", "data", "cache"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    return home


def drive(
    argv: Sequence[str],
    tmp_path: Path,
    spec: Mapping[str, Any],
    *,
    cwd: Path,
    timeout_s: float,
    env_prefixes: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run the editor (`argv`) in `cwd` with `spec` for its script, and return what the script wrote.

    Its environment: this one's, less the variables that start with `env_prefixes` (the editor's own),
    XDG_*, REFACTOR_LSP* and OPENAI_API_KEY; its home and XDG folders under `tmp_path`; then `env`."""
    home = editor_home(tmp_path)
    results = tmp_path / "results.json"
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps({**spec, "results": str(results)}), encoding="utf-8")
    dropped = ("XDG_", "REFACTOR_LSP", *env_prefixes)
    environment = {k: v for k, v in os.environ.items() if not k.startswith(dropped) and k != "OPENAI_API_KEY"}
    environment |= {"HOME": str(home), "RLSP_SPEC": str(spec_file), "PYTHONUNBUFFERED": "1"}
    environment |= {f"XDG_{sub.upper()}_HOME": str(home / sub) for sub in ("config", "state", "data", "cache")}
    environment |= dict(env or {})
    proc = subprocess.run(
        list(argv),
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        stdin=subprocess.DEVNULL,
    )
    assert results.exists(), f"no results (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(results.read_text(encoding="utf-8"))
