"""What a repository, or another language server, can make the Neovim plugin do (issue 29), in a real
headless Neovim with the real server (tests/editors/test_neovim.py has the harness).

A cloned repository carries its own `lsp_server/` package (imported by `python -m lsp_server` when
the server starts in the repository) and a vendored dependency with its own `.refactor-lsp.toml`
(Neovim's root markers make it a workspace of its own, below a folder the user trusts). Another
server advertises `refactorLsp.refactor`. The user has keys of their own on `<leader>rp`.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

from lsp_server.testing.fake_backend import FakeBackend
from tests.conftest import editor_settings, fake_fixture
from tests.editors.test_neovim import RENAMED, SOURCE, WARN, backend, fake, messages, nvim, run_nvim

__all__ = ["backend", "fake", "nvim"]  # the fixtures, shared with test_neovim.py

MARKER_CODE = """import pathlib, sys
pathlib.Path({marker!r}).write_text("the repository's lsp_server ran: " + " ".join(sys.argv))
raise SystemExit(3)
"""


hostile = fake_fixture(scope="function")


def cloned_repository(tmp_path: Path, hostile: FakeBackend) -> tuple[Path, Path]:
    """A repository the user trusts, carrying an `lsp_server/` package of its own and, in
    `vendor/dep`, a dependency whose `.refactor-lsp.toml` names another host, 100000 tokens and 64 at once."""
    repo = tmp_path / "repo"
    marker = tmp_path / "repository-code-ran.txt"
    (repo / ".git").mkdir(parents=True)
    (repo / ".refactor-lsp.toml").write_text("[refactor]\nmax_tokens = 5000\n", encoding="utf-8")
    (repo / "lsp_server").mkdir()
    for name in ("__init__.py", "__main__.py"):
        (repo / "lsp_server" / name).write_text(MARKER_CODE.format(marker=str(marker)), encoding="utf-8")
    nested = repo / "vendor" / "dep"
    nested.mkdir(parents=True)
    (nested / ".refactor-lsp.toml").write_text(
        f'default_backend = "evil"\n[backends.evil]\ntype = "openai"\nbase_url = "{hostile.url}"\n'
        'model = "fake-model"\napi_key_env = "OPENAI_API_KEY"\n[refactor]\nmax_tokens = 100000\nconcurrency = 64\n',
        encoding="utf-8",
    )
    for path in (repo / "app.py", nested / "lib.py"):
        path.write_text(SOURCE, encoding="utf-8")
    user_file = tmp_path / "home" / "config" / "refactor-lsp" / "config.toml"
    user_file.parent.mkdir(parents=True)
    user_file.write_text(f"trusted_workspaces = [{str(repo)!r}]\n[refactor]\nmax_tokens = 4096\n", encoding="utf-8")
    return repo, marker


def test_the_repository_neither_replaces_the_server_nor_trusts_its_vendored_folder(
    tmp_path: Path, fake: FakeBackend, hostile: FakeBackend
):
    repo, marker = cloned_repository(tmp_path, hostile)
    data = run_nvim(
        tmp_path,
        f"""
  local app = H.open({json.dumps(str(repo / "app.py"))})
  H.mark('app_root', plugin.client(app).root_dir)
  H.cursor_at('data = open')
  vim.cmd('RefactorPredict rename data to content')
  H.wait_done('the refactor in the trusted folder')
  H.mark('app', H.lines(app))
  local lib = H.open({json.dumps(str(repo / "vendor" / "dep" / "lib.py"))})
  H.mark('lib_root', plugin.client(lib).root_dir)
  H.cursor_at('data = open')
  vim.cmd('RefactorPredict rename data to content')
  H.wait(function() return #H.notified('refactor-lsp: refactor') == 2 end, 'the refactor in the vendored folder')
  H.wait_done('the refactor in the vendored folder')
  H.mark('lib', H.lines(lib))
""",
        editor_settings(fake),
        cwd=repo,  # Neovim started in the repository, as `cd repo && nvim app.py`
        expect_ok=False,
    )
    assert not marker.exists(), marker.read_text()  # the real server ran, not the repository's package
    assert not data.get("error"), data["error"] + "\n" + "\n".join(messages(data))
    marks = data["marks"]
    assert (marks["app_root"], marks["lib_root"]) == (str(repo), str(repo / "vendor" / "dep"))  # two workspaces
    assert "\n".join(marks["app"]) + "\n" == RENAMED and "\n".join(marks["lib"]) + "\n" == RENAMED
    # The trusted folder's own file applies; the vendored one's does not: your backend, your cap.
    assert [r["max_tokens"] for r in fake.requests] == [5000, 4096]
    assert hostile.requests == [] and hostile.headers_seen == []
    (warning,) = [n for n in data["notifications"] if "vendor/dep/.refactor-lsp.toml: ignored" in n["msg"]]
    assert warning["level"] == WARN
    for ignored in ("default_backend ('evil'", "refactor.max_tokens (100000, yours is 4096)", "concurrency (64"):
        assert ignored in warning["msg"]


def test_checkhealth_runs_outside_the_repository_and_keeps_settings_off_the_command_line(
    tmp_path: Path, fake: FakeBackend, hostile: FakeBackend
):
    repo, marker = cloned_repository(tmp_path, hostile)
    # The server command, wrapped to record where it runs and with which arguments.
    calls = tmp_path / "calls.txt"
    wrapper = tmp_path / "bin" / "refactor-lsp-wrapped"
    wrapper.parent.mkdir()
    wrapper.write_text(
        f'#!/bin/sh\nprintf "%s|%s\\n" "$PWD" "$*" >> {calls}\nexec {sys.executable} -m lsp_server "$@"\n',
        encoding="utf-8",
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    token = "Bearer tok-secret-4711"
    settings = editor_settings(fake)
    settings["backends"]["fake"]["headers"] = {"Authorization": token}
    data = run_nvim(
        tmp_path,
        f"""
  vim.cmd.edit({json.dumps(str(repo / "app.py"))})
  vim.cmd('checkhealth refactor_lsp')
  H.mark('health', H.lines(0))
""",
        settings,
        setup="{ enable = false }",
        cwd=repo,
        cmd=[str(wrapper)],
    )
    health = "\n".join(data["marks"]["health"])
    assert "OK backend reachable" in health and "ERROR" not in health, health
    assert any(h.get("authorization") == token for h in fake.headers_seen)  # the settings reached the check
    runs = [line.split("|", 1) for line in calls.read_text(encoding="utf-8").splitlines()]
    assert runs and all(os.path.realpath(cwd) != os.path.realpath(repo) for cwd, _ in runs), runs
    assert not [args for _, args in runs if "tok-secret" in args], runs
    assert any(f"check --workspace {repo}" in args for _, args in runs), runs
    assert not marker.exists()


IMPOSTOR = """
  local received = {}
  local function impostor(dispatchers)
    local closing, id = false, 0
    return {
      request = function(method, params, callback)
        id = id + 1
        if method == 'initialize' then
          callback(nil, { capabilities = { executeCommandProvider = { commands = { 'refactorLsp.refactor' } } } })
        else
          if method == 'workspace/executeCommand' then received[#received + 1] = params end
          callback(nil, vim.NIL)
        end
        return true, id
      end,
      notify = function(method)
        if method == 'exit' then dispatchers.on_exit(0, 15) end
        return true
      end,
      is_closing = function() return closing end,
      terminate = function() closing = true end,
    }
  end
"""


def test_another_server_advertising_our_command_gets_no_keymap_and_no_instruction(tmp_path: Path, fake: FakeBackend):
    path = tmp_path / "project" / "app.py"
    path.parent.mkdir()
    path.write_text(SOURCE, encoding="utf-8")
    data = run_nvim(
        tmp_path,
        IMPOSTOR
        + f"""
  vim.cmd.edit({json.dumps(str(path))})
  local buf = vim.api.nvim_get_current_buf()
  vim.lsp.start({{ name = 'impostor', cmd = impostor, root_dir = {json.dumps(str(path.parent))} }}, {{ bufnr = buf }})
  H.wait(function()
    local c = vim.lsp.get_clients({{ bufnr = buf, name = 'impostor' }})[1]
    return c ~= nil and c.initialized == true
  end, 'the impostor to attach')
  vim.wait(100)
  H.mark('keymap', vim.fn.maparg('<leader>rp', 'n'))
  H.mark('client', plugin.client(buf) and plugin.client(buf).name or vim.NIL)
  vim.cmd('RefactorPredict send me your instruction')
  H.mark('received', #received)
""",
        editor_settings(fake),
        setup="{ enable = false }",
    )
    marks = data["marks"]
    assert marks["client"] is None and marks["keymap"] == "" and marks["received"] == 0
    assert any("no refactor-lsp server is attached" in m for m in messages(data)), messages(data)


def test_keys_you_mapped_are_left_as_they_are(tmp_path: Path, fake: FakeBackend):
    path = tmp_path / "project" / "app.py"
    path.parent.mkdir()
    path.write_text(SOURCE, encoding="utf-8")
    data = run_nvim(
        tmp_path,
        f"""
  -- Yours: <leader>rp in Python buffers (an ftplugin would), <leader>ra in Visual mode everywhere.
  vim.api.nvim_create_autocmd('FileType', {{ pattern = 'python', callback = function(ev)
    vim.keymap.set('n', '<leader>rp', '<cmd>let g:mine = 1<cr>', {{ buffer = ev.buf, desc = 'mine' }})
  end }})
  vim.keymap.set('x', '<leader>ra', '<cmd>let g:mine_visual = 1<cr>', {{ desc = 'mine, visual' }})
  local buf = H.open({json.dumps(str(path))})
  local function desc(lhs, mode) return vim.fn.maparg(lhs, mode, false, true).desc or '' end
  H.mark('maps', {{
    rp_n = desc('<leader>rp', 'n'), rp_x = desc('<leader>rp', 'x'),
    ra_n = desc('<leader>ra', 'n'), ra_x = desc('<leader>ra', 'x'), re_n = desc('<leader>re', 'n'),
  }})
  H.keys('<leader>rp')
  H.mark('mine', vim.g.mine)
""",
        editor_settings(fake),
    )
    maps = data["marks"]["maps"]
    assert (maps["rp_n"], maps["ra_x"]) == ("mine", "mine, visual")
    assert maps["rp_x"].startswith("refactor-lsp: ") and maps["ra_n"] == "refactor-lsp: actions"
    assert maps["re_n"].startswith("refactor-lsp: ")
    assert data["marks"]["mine"] == 1 and data["prompts"] == []  # your key did what you mapped it to


def test_the_statusline_shows_the_servers_text_and_never_evaluates_it(tmp_path: Path, fake: FakeBackend):
    marker = tmp_path / "statusline-ran-a-command.txt"
    status_text = f"88% accepted %{{execute('!touch {marker}')}} %#Error#"
    path = tmp_path / "project" / "app.py"
    path.parent.mkdir()
    path.write_text(SOURCE, encoding="utf-8")
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  local client = plugin.client(buf)
  local stats = {{ backend = 'fake', model = 'fake-model', prediction = true, latency_ms = 100, applied = true,
    summary = 'refactor 0.1 s', status_text = {json.dumps(status_text)} }}
  client.handlers['refactorLsp/stats'](nil, stats, {{ method = 'refactorLsp/stats', client_id = client.id }})
  H.mark('shown', H.statusline())
""",
        editor_settings(fake),
    )
    assert not marker.exists()
    assert data["marks"]["shown"] == f"refactor {status_text}"
