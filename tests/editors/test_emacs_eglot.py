"""Emacs + eglot (editors/README.md) in a real `emacs --batch`, against the real server over stdio
and the loopback fake backend over HTTP.

The user's flow for editors without an input box: write a `refactor-lsp: <instruction>` comment in
the function, run `M-x eglot-code-actions` there, pick `Refactor with prediction: <instruction>`.
tests/editors/emacs/eglot_code_action.el does exactly that after loading the setup the README gives
(editors/emacs/refactor-lsp.el), and writes what the user sees (the menu, the buffer, the
echo-area messages) to a JSON file.

Eglot does not resolve code actions, so the server puts the command (with `wait: false`) on the
action; the setup applies refactor-lsp's edits without eglot's question, and only refactor-lsp's.

Eglot marks `eglot-workspace-configuration` safe, so any repository's .dir-locals.el sets it without
asking: the last tests open such a project pointing the user's backend (and another key) at a second
host, which must see no connection at all unless the user's config file trusts the folder. Needs `emacs` with
eglot (built in since Emacs 29; Debian 12: `apt-get install emacs-nox elpa-eglot`); skipped without,
and failed without when CI=true (tests/editors/real_editors.py).
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import closed_port_url, editor_settings, toml_text
from tests.editors.real_editors import (
    COMMENTED,
    PICK,
    RENAMED,
    SERVER_COMMAND,
    cursor_at,
    drive,
    editor_home,
    editor_missing,
)

ROOT = Path(__file__).resolve().parents[2]
SNIPPET = ROOT / "editors" / "emacs" / "refactor-lsp.el"  # the setup editors/README.md gives
SCRIPT = ROOT / "tests" / "editors" / "emacs" / "eglot_code_action.el"
WAIT_S = 15  # inside Emacs, for each step
RUN_TIMEOUT_S = 45

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
        editor_missing("no emacs: `apt-get install emacs-nox elpa-eglot` (Debian 12) runs these tests")
    probe = subprocess.run(
        [EMACS, "--batch", "-Q", "--eval", PROBE],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    if probe.returncode != 0:
        editor_missing(f"{EMACS} has no eglot: `apt-get install elpa-eglot` (Emacs 28) or use Emacs 29+")
    return EMACS


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
    user_config: Mapping[str, Any] | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Open app.py of `tmp_path/project` in Emacs, run eglot's code actions at `cursor`, pick PICK.

    `user_config`: the user's own config file (~/.config/refactor-lsp/config.toml), as data.
    """
    project = tmp_path / "project"
    project.mkdir()
    path = project / "app.py"
    path.write_text(COMMENTED, encoding="utf-8")
    if dir_locals is not None:
        (project / ".dir-locals.el").write_text(
            f"((nil . ((eglot-workspace-configuration . {elisp(dir_locals)}))))\n", encoding="utf-8"
        )
    if user_config is not None:
        user_file = editor_home(tmp_path) / "config" / "refactor-lsp" / "config.toml"
        user_file.parent.mkdir()
        user_file.write_text(toml_text(user_config), encoding="utf-8")
    line, col = cursor_at(COMMENTED, cursor)
    spec = {
        "snippet": str(SNIPPET),
        "file": str(path),
        "line": line,
        "col": col,
        "command": SERVER_COMMAND,
        "settings": settings,
        "pick": PICK,
        "timeout_s": WAIT_S,
        "wait_for_message": "refactor-lsp: refactor",
        "show_stats": show_stats,
    }
    argv = [emacs, "--batch", "-Q", "-l", str(SCRIPT)]
    data = drive(argv, tmp_path, spec, cwd=project, timeout_s=RUN_TIMEOUT_S, env_prefixes=("EMACS",), env=extra_env)
    assert not data["error"], data["error"] + "\n" + "\n".join(data["messages"]) + "\n" + data["events"][-6000:]
    return data


def assert_refactored(data: dict[str, Any], fake: FakeBackend) -> None:
    # The menu offers the comment's instruction first, then the presets; the user picked it.
    assert data["menu"][0] == PICK
    assert all(title.startswith("Refactor with prediction: ") for title in data["menu"])
    assert data["picked"] == PICK
    # The buffer: renamed in the whole function, the instruction comment gone, not saved behind the user's back.
    # Applied without eglot's "Server wants to edit ... Proceed?" (batch Emacs cannot answer it), while
    # every other server keeps the question: the setup turns it off for refactor-lsp alone.
    assert data["text"] == RENAMED
    assert data["confirm"] == "confirm", data["confirm"]
    assert data["modified"] is True
    # One speed summary in the echo area, no error.
    summaries = [m for m in data["messages"] if SUMMARY.match(m)]
    assert len(summaries) == 1, data["messages"]
    assert not [m for m in data["messages"] if "(type=1)" in m], data["messages"]
    # The settings reached the server: one request, to our fake, with the function as the prediction.
    assert len(fake.requests) == 1
    assert fake.requests[0]["prediction"]["content"].startswith("def load(path):\n")


def test_instruction_comment_with_workspace_configuration(emacs: str, tmp_path: Path, fake_backend: FakeBackend):
    """`eglot-workspace-configuration` in the project's .dir-locals.el picks among the user's backends.

    The backends come from the user's config file (a repository may not add or redirect them); the
    project's .dir-locals.el chooses `fake` over the user's default. Point on the comment.
    """
    user = {
        "default_backend": "elsewhere",
        "backends": {
            "elsewhere": {"type": "openai", "base_url": closed_port_url(), "model": "fake-model"},
            "fake": {"type": "openai", "base_url": fake_backend.url, "model": "fake-model"},
        },
    }
    data = run_emacs(
        emacs,
        tmp_path,
        cursor="refactor-lsp: rename",
        user_config=user,
        dir_locals={"refactorLsp": {"defaultBackend": "fake"}},
    )
    assert_refactored(data, fake_backend)
    assert not [m for m in data["messages"] if "ignored" in m], data["messages"]


def test_instruction_comment_with_initialization_options(emacs: str, tmp_path: Path, fake_backend: FakeBackend):
    """Settings from `refactor-lsp-settings` (initializationOptions); point on a word elsewhere in the function."""
    data = run_emacs(emacs, tmp_path, cursor="parse(data)", settings=editor_settings(fake_backend), show_stats=True)
    assert_refactored(data, fake_backend)
    # M-x refactor-lsp-show-stats (from the setup file): the medians of the history, one line.
    stats = [m for m in data["messages"] if "refactor-lsp: fake: with prediction: 1 refactors" in m]
    assert len(stats) == 1, data["messages"]


# -- a hostile repository: .dir-locals.el redirecting code and key ---------------------------------

KEY_ENV, KEY = "RLSP_TEST_KEY", "dummy-key-for-the-good-backend"
OTHER_ENV, OTHER_KEY = "OTHER", "other-secret-the-repository-wants"
IGNORED = "refactor-lsp: editor settings: ignored backends.fake.base_url"


class Tap:
    """A loopback listener in front of a backend: counts every connection and keeps every byte sent.

    It forwards to `target`, so a refactor routed here still works; `connections == 0` proves
    nothing at all (no request, no probe, no key) reached this host.
    """

    def __init__(self, target: FakeBackend) -> None:
        self.target = ("127.0.0.1", target.port)
        self.connections = 0
        self.received = bytearray()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self._accept, name="tap", daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                client, _ = self._listener.accept()
                with self._lock:
                    self.connections += 1
                upstream = socket.create_connection(self.target)
                threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
                threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, record: bool) -> None:
        with contextlib.suppress(OSError):
            while chunk := src.recv(65536):
                if record:
                    with self._lock:
                        self.received += chunk
                dst.sendall(chunk)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def hostile(make_fake: Any) -> Iterator[tuple[FakeBackend, Tap]]:
    """The repository's host: a working backend behind a tap that sees every connection."""
    fake = make_fake()
    tap = Tap(fake)
    yield fake, tap
    tap.close()


def hostile_dir_locals(tap: Tap) -> dict[str, Any]:
    """What a repository's .dir-locals.el sets: the user's backend `fake` sent to its own host, with
    another environment variable's value as the key, and a claim that the folder is trusted."""
    return {
        "refactorLsp": {
            "backends": {"fake": {"baseUrl": tap.url, "apiKeyEnv": OTHER_ENV}},
            "workspaceTrusted": True,
        }
    }


def user_config_for(good: FakeBackend, **extra: Any) -> dict[str, Any]:
    table = {"type": "openai", "base_url": good.url, "model": "fake-model", "api_key_env": KEY_ENV}
    return {"default_backend": "fake", **extra, "backends": {"fake": table}}


def test_dir_locals_cannot_redirect_code_or_key(
    emacs: str, tmp_path: Path, make_fake: Any, hostile: tuple[FakeBackend, Tap]
):
    """A repository's .dir-locals.el (eglot marks `eglot-workspace-configuration` safe) points the
    user's backend at another host: the server ignores it, says so once, and refactors as the user set."""
    good = make_fake()
    other, tap = hostile
    data = run_emacs(
        emacs,
        tmp_path,
        cursor="refactor-lsp: rename",
        user_config=user_config_for(good),
        dir_locals=hostile_dir_locals(tap),
        extra_env={KEY_ENV: KEY, OTHER_ENV: OTHER_KEY},
    )
    # Nothing reached the repository's host: no request, no probe, so neither key either.
    assert tap.connections == 0, bytes(tap.received[:2000])
    assert other.requests == []
    # The user's backend did the refactor, with the user's key, and the edit landed.
    assert_refactored(data, good)
    assert good.headers_seen[0]["authorization"] == f"Bearer {KEY}"
    # One warning, in the echo area (*Messages*), naming what was ignored and how to trust the folder.
    warnings = [m for m in data["messages"] if IGNORED in m]
    assert len(warnings) == 1, data["messages"]
    assert warnings[0].startswith("[eglot] Server reports (type=2): refactor-lsp: editor settings:"), warnings[0]
    for named in ("backends.fake.api_key_env", "workspace_trusted", "trusted_workspaces", str(tmp_path / "project")):
        assert named in warnings[0], warnings[0]


def test_dir_locals_of_a_trusted_folder_may_choose_the_backend(
    emacs: str, tmp_path: Path, make_fake: Any, hostile: tuple[FakeBackend, Tap]
):
    """The control: the same .dir-locals.el, in a folder the user's config file trusts, is obeyed
    (so the test above would catch a server that let it through)."""
    good = make_fake()
    other, tap = hostile
    project = tmp_path / "project"
    data = run_emacs(
        emacs,
        tmp_path,
        cursor="refactor-lsp: rename",
        user_config=user_config_for(good, trusted_workspaces=[str(project)]),
        dir_locals=hostile_dir_locals(tap),
        extra_env={KEY_ENV: KEY, OTHER_ENV: OTHER_KEY},
    )
    assert good.requests == []
    assert tap.connections >= 1
    assert f"Bearer {OTHER_KEY}".encode() in tap.received
    assert_refactored(data, other)
    assert not [m for m in data["messages"] if "ignored" in m], data["messages"]
