-- refactor-lsp as a Neovim 0.11+ LSP config: `vim.lsp.enable('refactor_lsp')` starts it for every
-- file buffer (no `filetypes` restriction: the server rewrites any language).
--
-- The handlers load `require('refactor_lsp')` only when the server sends something, so this file
-- works on its own; `require('refactor_lsp').setup()` adds keymaps and passes your settings.

-- The server starts in this plugin's own folder, never in the repository you opened: a program or a
-- Python package the repository carries (`.venv/bin/refactor-lsp`, `lsp_server/` for a `python -m
-- lsp_server` command, `refactor-lsp.exe`, which Windows looks for in the current folder first)
-- would otherwise run in its place, with your API keys in its environment. PYTHONSAFEPATH (Python
-- 3.11+, as the server needs) keeps the current folder off `sys.path` wherever it is started.
local plugin_dir = vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h')

---@type vim.lsp.Config
return {
  cmd = { 'refactor-lsp' },
  cmd_cwd = plugin_dir,
  cmd_env = { PYTHONSAFEPATH = '1' },
  root_markers = { '.refactor-lsp.toml', '.git' },
  -- The `refactorLsp` section, answered to `workspace/configuration` (scoped per document).
  -- An empty Lua table would be sent as a JSON list, so the empty default is an explicit dict.
  settings = { refactorLsp = vim.empty_dict() },
  -- The statusline reads `refactorLsp/progress`, which the server sends only to a client that asks.
  init_options = { progressFields = true },
  handlers = {
    -- Outcomes arrive as `window/showMessage` ("refactor-lsp: ..."): shown once via vim.notify.
    ['window/showMessage'] = function(...)
      return require('refactor_lsp')._on_show_message(...)
    end,
    -- The result of `refactorLsp.refactor` and `refactorLsp.refactorEach` (from the prompt, a command
    -- or the code-action menu).
    ['workspace/executeCommand'] = function(...)
      return require('refactor_lsp')._on_command_result(...)
    end,
    -- A running refactor's live figures (percentage, tokens/s), for the statusline.
    ['refactorLsp/progress'] = function(...)
      return require('refactor_lsp')._on_progress(...)
    end,
    -- Speed figures after every refactor, with the server's `status_text`, for the statusline.
    ['refactorLsp/stats'] = function(...)
      return require('refactor_lsp')._on_stats(...)
    end,
  },
}
