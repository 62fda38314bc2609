-- Test harness for the Neovim plugin, run inside `nvim --headless -u NONE -i NONE -n -l script.lua`.
--
-- The spec (JSON, path in $RLSP_SPEC) gives the plugin folder, the server command, the settings,
-- the results path and a time limit. Scenarios record what a user would see (buffer lines,
-- notifications, statusline texts, prompts, menu items) into `H.results`, which is written as JSON
-- when the scenario ends, fails, or runs out of time; Neovim then quits (`qa!`).

local H = {}

local function read(path)
  local f = assert(io.open(path, 'r'))
  local text = f:read('*a')
  f:close()
  return text
end

H.spec = vim.json.decode(read(assert(os.getenv('RLSP_SPEC'), 'RLSP_SPEC is not set')))
H.results = { notifications = {}, statusline_seen = {}, prompts = {}, menu = {}, marks = vim.empty_dict() }

local finished = false

function H.finish()
  if finished then
    return
  end
  finished = true
  local f = assert(io.open(H.spec.results, 'w'))
  f:write(vim.json.encode(H.results))
  f:close()
  vim.cmd('qa!')
end

--- Record a named snapshot of what the user sees.
function H.mark(name, value)
  H.results.marks[name] = value
end

--- Wait for `cond` (never a fixed sleep); fail the scenario with `what` when it does not come.
function H.wait(cond, what, ms)
  if not vim.wait(ms or 15000, cond, 10) then
    error('timed out waiting for ' .. what, 2)
  end
end

function H.lines(bufnr)
  return vim.api.nvim_buf_get_lines(bufnr or 0, 0, -1, false)
end

function H.text(bufnr)
  return table.concat(H.lines(bufnr), '\n') .. '\n'
end

--- What the statusline shows: the plugin's component evaluated as Neovim evaluates a statusline
--- (`%%` is one `%`, and a `%{expr}` would run), as lualine and `%{%...%}` do.
function H.statusline()
  return vim.api.nvim_eval_statusline(require('refactor_lsp').statusline(), { maxwidth = 1000 }).str
end

--- The virtual lines drawn in a buffer (a review's hint, headers and new lines), top to bottom as the
--- screen shows them: `{row, above, text}` (row 0-based; the text as shown, its padding on the right
--- dropped).
function H.virtual_lines(bufnr)
  local out = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr or 0, -1, 0, -1, { details = true })) do
    local details = mark[4]
    for _, line in ipairs(details.virt_lines or {}) do
      local text = ''
      for _, chunk in ipairs(line) do
        text = text .. chunk[1]
      end
      local above = details.virt_lines_above or false
      out[#out + 1] = { row = mark[2], above = above, text = (text:gsub('%s+$', '')), order = #out }
    end
  end
  table.sort(out, function(a, b)
    if a.row ~= b.row then
      return a.row < b.row
    elseif a.above ~= b.above then
      return a.above -- above its line, then below it
    end
    return a.order < b.order
  end)
  for _, line in ipairs(out) do
    line.order = nil
  end
  return out
end

--- The rows (0-based) a highlight group colours whole (`line_hl_group`), in order.
function H.highlighted_rows(bufnr, group)
  local rows = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(bufnr or 0, -1, 0, -1, { details = true })) do
    if mark[4].line_hl_group == group then
      rows[#rows + 1] = mark[2]
    end
  end
  return rows
end

--- Notifications whose text contains `needle` (plain).
function H.notified(needle)
  local found = {}
  for _, n in ipairs(H.results.notifications) do
    if n.msg:find(needle, 1, true) then
      found[#found + 1] = n
    end
  end
  return found
end

--- Load the plugin as a user would, with `setup()` options on top of the spec's cmd and settings
--- (`false`: no setup(), only vim.lsp.config/vim.lsp.enable).
function H.start(opts)
  local guard = assert(vim.uv.new_timer())
  guard:start(H.spec.timeout_ms, 0, function()
    vim.schedule(function()
      H.results.error = 'scenario timed out after ' .. H.spec.timeout_ms .. ' ms'
      H.finish()
    end)
  end)
  vim.opt.runtimepath:prepend(H.spec.plugin_dir)
  vim.cmd('filetype on')
  vim.cmd.runtime('plugin/refactor_lsp.lua')
  vim.notify = function(msg, level)
    table.insert(H.results.notifications, { msg = msg, level = level or vim.log.levels.INFO })
  end
  -- What answers the prompt and the menu: recorded, then answered as the scenario says.
  vim.ui.input = function(o, on_confirm)
    table.insert(H.results.prompts, o.prompt or '')
    on_confirm(H.input_answer)
  end
  vim.ui.select = function(items, o, on_choice)
    local titles = {}
    for _, item in ipairs(items) do
      titles[#titles + 1] = o.format_item and o.format_item(item) or tostring(item)
    end
    table.insert(H.results.menu, titles)
    for i, title in ipairs(titles) do
      if title == H.select_answer then
        return on_choice(items[i], i)
      end
    end
    on_choice(nil, nil)
  end
  local plugin = require('refactor_lsp')
  -- Every statusline text the plugin announces (it fires `User RefactorLspStatus` after each change:
  -- a refactor begun or ended, its live figures, its outcome), as a statusline plugin would redraw.
  vim.api.nvim_create_autocmd('User', {
    pattern = 'RefactorLspStatus',
    callback = function()
      local seen = H.results.statusline_seen
      local text = H.statusline()
      if seen[#seen] ~= text then
        seen[#seen + 1] = text
      end
    end,
  })
  if opts == false then
    -- No setup(): only the shipped LSP config (lsp/refactor_lsp.lua), as `vim.lsp.enable` users have it,
    -- with the settings as the README says: backends in init_options (only `settings` can be filled
    -- from a repository, by neoconf or exrc, so the server takes no routing keys from there).
    vim.lsp.config('refactor_lsp', { cmd = H.spec.cmd, init_options = { refactorLsp = H.spec.settings } })
    vim.lsp.enable('refactor_lsp')
  else
    plugin.setup(vim.tbl_extend('force', { cmd = H.spec.cmd, settings = H.spec.settings }, opts or {}))
  end
  return plugin
end

--- Edit a file and wait until the server is attached and initialized.
function H.open(path)
  vim.cmd.edit(vim.fn.fnameescape(path))
  local bufnr = vim.api.nvim_get_current_buf()
  H.wait(function()
    local client = require('refactor_lsp').client(bufnr)
    return client ~= nil and client.initialized == true
  end, 'the refactor_lsp client to attach')
  return bufnr
end

--- Put the cursor on the first line containing `needle` (at its first character).
function H.cursor_at(needle)
  for i, line in ipairs(H.lines()) do
    local col = line:find(needle, 1, true)
    if col then
      vim.api.nvim_win_set_cursor(0, { i, col - 1 })
      return i
    end
  end
  error('no line contains ' .. needle)
end

--- Type keys as the user would (mappings apply).
function H.keys(keys)
  vim.api.nvim_feedkeys(vim.keycode(keys), 'mtx', false)
end

--- Wait until a refactor has finished: nothing running and an outcome recorded.
function H.wait_done(what)
  H.wait(function()
    local s = require('refactor_lsp').status()
    return not s.running and s.last ~= nil and s.last.status ~= nil and s.last.status ~= 'not applied'
  end, what or 'the refactor to finish')
end

--- Run the scenario; whatever happens, write the results and quit.
function H.run(fn)
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    H.results.error = tostring(err)
  end
  H.finish()
end

return H
