-- refactor-lsp as a Neovim 0.11+ LSP config: `vim.lsp.enable('refactor_lsp')` starts it for every
-- file buffer (no `filetypes` restriction: the server rewrites any language).
--
-- The handlers load `require('refactor_lsp')` only when the server sends something, so this file
-- works on its own; `require('refactor_lsp').setup()` adds keymaps and passes your settings.

---@type vim.lsp.Config
return {
  cmd = { 'refactor-lsp' },
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
