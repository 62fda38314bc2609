--- refactor-lsp for Neovim 0.11+: setup, a prompt for free-form instructions, the code-action menu
--- filtered to our kind, commands and a statusline component.
---
--- Which channel says what (so nothing is shown twice):
---   * every outcome of a refactor (the speed summary, "the buffer changed ... nothing was applied",
---     backend errors, "cancelled") comes from the server as ONE `window/showMessage`; this plugin
---     passes it to `vim.notify` as it is ("refactor-lsp: ..."), at the server's level;
---   * the plugin's own `vim.notify` calls are only for what the server cannot say: no server
---     attached to the buffer, or a request that failed at the protocol level;
---   * progress and the last speed figures go to `statusline()` only (never notified).
---
--- What crosses the wire is typed in lsp_server/server/wire.py: this plugin reads fields (the live figures of
--- `refactorLsp/progress`, the `status_text` of `refactorLsp/stats`), never the human text.

local M = {}

local api = vim.api
local ranges = require('refactor_lsp.ranges')

M.name = 'refactor_lsp'
M.kind = 'refactor.rewrite.prediction'

local REFACTOR = 'refactorLsp.refactor'
local REFACTOR_EACH = 'refactorLsp.refactorEach' -- one instruction for each definition, at once, as one edit
local APPLY = 'refactorLsp.applySnippet' -- code from a chat or an agent merged into the definitions it names
local CANCEL = 'refactorLsp.cancel'
local SHOW_STATS = 'refactorLsp.showStats'
local TOKEN_PREFIX = 'refactor-lsp/'

---@class refactor_lsp.Keymaps
---@field prompt? string|false  free-form instruction prompt (normal and visual mode)
---@field actions? string|false code-action menu filtered to refactor.rewrite.prediction
---@field each? string|false    one instruction for each definition: of the file (normal), of the selection (visual)
---@field apply? string|false   apply the `+` register's code (:RefactorApply): at the cursor (normal), the selection (visual)

---@class refactor_lsp.Options
---@field cmd? string[]                  the server command (default: { 'refactor-lsp' })
---@field settings? table                the `refactorLsp` settings section
---@field keymaps? refactor_lsp.Keymaps|false
---@field enable? boolean                call vim.lsp.enable (default: true)
---@field lsp? vim.lsp.Config            more fields for vim.lsp.config (filetypes, cmd_env, ...)
---@field prompt? string                 the vim.ui.input prompt

---@type refactor_lsp.Options
local defaults = {
  cmd = nil,
  settings = nil,
  keymaps = { prompt = '<leader>rp', actions = '<leader>ra', each = '<leader>re', apply = '<leader>rv' },
  enable = true,
  lsp = {},
  prompt = 'Refactor (instruction): ',
}

M.options = vim.deepcopy(defaults)

-- Progress of running refactors (by progress token) and the last outcome, for the statusline.
local state = {
  running = {}, ---@type table<string, {percentage?: integer, rate?: number, done?: integer, total?: integer, seq: integer, client_id?: integer}>
  seq = 0,
  last = nil, ---@type {stats?: table, status?: string, message?: string}?
}

local group = api.nvim_create_augroup('refactor_lsp', { clear = true })

-- Helpers ------------------------------------------------------------------------------------

--- Settings go out as JSON: an empty Lua table would become a list, so empty maps become dicts.
local LIST_KEYS = { actions = true, fallback = true, trustedWorkspaces = true, trusted_workspaces = true }

local function normalize(value, key)
  if type(value) ~= 'table' or getmetatable(value) ~= nil then
    return value
  end
  if next(value) == nil then
    return (key and LIST_KEYS[key]) and {} or vim.empty_dict()
  end
  local out = {}
  for k, v in pairs(value) do
    out[k] = normalize(v, type(k) == 'string' and k or nil)
  end
  return out
end

local function redraw()
  vim.schedule(function()
    pcall(vim.cmd.redrawstatus)
    api.nvim_exec_autocmds('User', { pattern = 'RefactorLspStatus', modeline = false })
  end)
end

--- Ours by the name it was configured under: any server can advertise `refactorLsp.refactor`, and
--- would then get the keymaps and every instruction you type.
---@param client vim.lsp.Client
local function is_ours(client)
  return client.name == M.name
end

--- The refactor-lsp client attached to a buffer, if any.
---@param bufnr? integer
---@return vim.lsp.Client?
function M.client(bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  for _, client in ipairs(vim.lsp.get_clients({ bufnr = bufnr })) do
    if is_ours(client) then
      return client
    end
  end
end

local function no_client()
  vim.notify(
    'refactor-lsp: no refactor-lsp server is attached to this buffer (see :checkhealth refactor_lsp)',
    vim.log.levels.WARN
  )
end

-- Running a refactor -------------------------------------------------------------------------

local function execute(command, arguments, bufnr)
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  client:request('workspace/executeCommand', { command = command, arguments = arguments }, M._on_command_result, bufnr)
end

--- Run `refactorLsp.refactor` with a free-form instruction.
---@param instruction string
---@param range? lsp.Range  default: the cursor (the enclosing block)
---@param bufnr? integer
function M.refactor(instruction, range, bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  range = range or ranges.cursor(bufnr, client.offset_encoding)
  execute(REFACTOR, { { uri = vim.uri_from_bufnr(bufnr), range = range, instruction = instruction } }, bufnr)
end

--- Run `refactorLsp.refactorEach`: `instruction` for each definition `range` touches, or without a
--- range each definition of the file, each its own refactor, all at once; the server applies them as
--- ONE edit (one undo) and reports them in one message.
---@param instruction string
---@param range? lsp.Range
---@param bufnr? integer
function M.refactor_each(instruction, range, bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local batch = { uri = vim.uri_from_bufnr(bufnr), range = range, instruction = instruction }
  batch.targets = range and 'selection' or 'file'
  execute(REFACTOR_EACH, { batch }, bufnr)
end

--- Run `refactorLsp.applySnippet`: the code in `register` (default `+`, the clipboard) merged into the
--- definitions it names, each with its current text as the prediction, as ONE edit; `range` (default:
--- the cursor) says where it goes when it names none.
---@param register? string
---@param range? lsp.Range
---@param bufnr? integer
function M.apply(register, range, bufnr)
  bufnr = bufnr or api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  register = (register and register ~= '') and register or '+'
  local ok, snippet = pcall(vim.fn.getreg, register)
  if not ok or type(snippet) ~= 'string' or not snippet:match('%S') then
    return vim.notify(
      ('refactor-lsp: register %s holds no code: copy the snippet first (or name a register: :RefactorApply a)'):format(
        register
      ),
      vim.log.levels.WARN
    )
  end
  range = range or ranges.visual(bufnr, client.offset_encoding) or ranges.cursor(bufnr, client.offset_encoding)
  execute(APPLY, { { uri = vim.uri_from_bufnr(bufnr), snippet = snippet, range = range } }, bufnr)
end

--- `:[range]RefactorApply [register]`.
---@param cmd vim.api.keyset.create_user_command.command_args
function M.apply_command(cmd)
  local bufnr = api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  M.apply(vim.trim(cmd.args), ranges.command(bufnr, cmd, client.offset_encoding), bufnr)
end

--- Ask for an instruction (vim.ui.input), then refactor the selection or the block at the cursor;
--- with `each`, each definition of the selection, or of the file when nothing is selected.
---@param opts? {instruction?: string, range?: lsp.Range, each?: boolean}
function M.prompt(opts)
  opts = opts or {}
  local bufnr = api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  local range = opts.range or ranges.visual(bufnr, client.offset_encoding)
  if not range and not opts.each then
    range = ranges.cursor(bufnr, client.offset_encoding)
  end
  local refactor = opts.each and M.refactor_each or M.refactor
  local function run(instruction)
    if instruction and instruction:match('%S') then
      refactor(vim.trim(instruction), range, bufnr)
    end
  end
  if opts.instruction and opts.instruction:match('%S') then
    return run(opts.instruction)
  end
  local prompt = M.options.prompt or defaults.prompt
  if opts.each then
    prompt = ('Refactor each definition of the %s (instruction): '):format(range and 'selection' or 'file')
  end
  vim.ui.input({ prompt = prompt }, run)
end

--- The code-action menu, showing only refactor-lsp's actions (uses the selection in visual mode).
function M.code_actions()
  vim.lsp.buf.code_action({ context = { only = { M.kind } } })
end

--- `:[range]RefactorPredict [instruction]`; with `each`, `:[range]RefactorEach [instruction]`: each
--- definition of the range's lines, or of the file without a range.
---@param cmd vim.api.keyset.create_user_command.command_args
---@param each? boolean
function M.command(cmd, each)
  local bufnr = api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  M.prompt({ instruction = cmd.args, range = ranges.command(bufnr, cmd, client.offset_encoding), each = each })
end

--- Cancel the refactor running on the current buffer (`all`: on every buffer).
---@param all? boolean
function M.cancel(all)
  local bufnr = api.nvim_get_current_buf()
  execute(CANCEL, all and {} or { { uri = vim.uri_from_bufnr(bufnr) } }, bufnr)
end

--- Show the median speed per backend from the refactor history (the server shows the message).
function M.show_stats()
  execute(SHOW_STATS, {}, api.nvim_get_current_buf())
end

-- Handlers (referenced from lsp/refactor_lsp.lua) --------------------------------------------

local LEVELS = { vim.log.levels.ERROR, vim.log.levels.WARN, vim.log.levels.INFO, vim.log.levels.DEBUG }

---@param params lsp.ShowMessageParams
function M._on_show_message(_, params, _)
  vim.notify(params.message, LEVELS[params.type] or vim.log.levels.INFO, { title = 'refactor-lsp' })
  return params
end

function M._on_command_result(err, result, ctx)
  local command = ctx and ctx.params and ctx.params.command
  if err then
    -- A protocol-level failure: the server sent no message of its own for it.
    vim.notify(('refactor-lsp: %s failed: %s'):format(command or 'command', err.message), vim.log.levels.ERROR)
    return
  end
  if (command ~= REFACTOR and command ~= REFACTOR_EACH and command ~= APPLY) or type(result) ~= 'table' then
    return
  end
  local status = result.status
  if status == 'busy' or status == 'started' then
    return -- busy: the server said so, and the running refactor keeps the statusline
  end
  state.last = {
    status = status,
    message = result.message,
    stats = type(result.stats) == 'table' and result.stats or nil,
  }
  redraw()
end

function M._on_stats(_, params, _)
  if type(params) ~= 'table' then
    return
  end
  -- The command's reply (with its status) normally follows; until then, judge by `applied`.
  state.last = { stats = params, status = params.applied == false and 'not applied' or nil }
  redraw()
end

local function number(v)
  return type(v) == 'number' and v or nil
end

--- The running refactor of `token`, created if new, made the most recent.
local function running(token, client_id)
  state.seq = state.seq + 1
  local entry = state.running[token] or { percentage = 0 }
  entry.seq = state.seq
  entry.client_id = client_id or entry.client_id
  state.running[token] = entry
  return entry
end

--- `refactorLsp/progress`: the live figures as fields (`percentage`, `tokens_per_s`, ...); the
--- `message` is for display elsewhere and never read here.
function M._on_progress(_, params, ctx)
  if type(params) ~= 'table' or type(params.token) ~= 'string' or not state.running[params.token] then
    return -- unknown token: not begun, or already ended
  end
  local entry = running(params.token, ctx and ctx.client_id)
  entry.percentage = number(params.percentage) or entry.percentage
  entry.rate = number(params.tokens_per_s) or entry.rate
  entry.done = number(params.done) or entry.done -- a batch's: definitions finished, of `total`
  entry.total = number(params.total) or entry.total
  redraw()
end

-- `$/progress` says when a refactor begins and ends (its figures come from `refactorLsp/progress`).
api.nvim_create_autocmd('LspProgress', {
  group = group,
  desc = 'refactor-lsp: track running refactors for the statusline',
  callback = function(ev)
    local params = ev.data and ev.data.params
    local token = params and params.token
    if type(token) ~= 'string' or token:sub(1, #TOKEN_PREFIX) ~= TOKEN_PREFIX then
      return
    end
    local kind = (params.value or {}).kind
    if kind == 'end' then
      state.running[token] = nil
    elseif kind == 'begin' then
      running(token, ev.data.client_id)
    else
      return
    end
    redraw()
  end,
})

api.nvim_create_autocmd('LspDetach', {
  group = group,
  desc = 'refactor-lsp: forget the progress of a server that stopped',
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if client and not client:is_stopped() and next(client.attached_buffers) ~= nil then
      return -- still serving other buffers
    end
    for token, entry in pairs(state.running) do
      if entry.client_id == ev.data.client_id then
        state.running[token] = nil
      end
    end
    redraw()
  end,
})

-- Statusline ---------------------------------------------------------------------------------

local OUTCOMES = {
  unchanged = 'no changes',
  partial = 'partly applied',
  stale = 'stale, not applied',
  rejected = 'not applied',
  ['not applied'] = 'not applied',
  unconfirmed = 'unconfirmed',
  cancelled = 'cancelled',
  error = 'failed',
}

--- The running refactor's progress and the last refactor's outcome, for statusline components.
---@alias refactor_lsp.Last {status?: string, message?: string, stats?: table}
---@return {running: boolean, percentage?: integer, rate?: number, done?: integer, total?: integer, last?: refactor_lsp.Last}
function M.status()
  local current
  for _, entry in pairs(state.running) do
    if not current or entry.seq > current.seq then
      current = entry
    end
  end
  local last = state.last and { status = state.last.status, message = state.last.message, stats = state.last.stats }
  if current then
    local s = { running = true, percentage = current.percentage, rate = current.rate, last = last }
    s.done, s.total = current.done, current.total
    return s
  end
  return { running = false, last = last }
end

--- `⟳ refactor 42% 180 tok/s` while running (the progress fields; a batch's with the definitions done,
--- `⟳ refactor 3/12 42% 310 tok/s`); `refactor 196 tok/s · 88% accepted` after (the server's
--- `status_text`), with the outcome when nothing was applied. In statusline syntax: each `%` is
--- `%%`, so a statusline that evaluates it (lualine, `%{%...%}`) shows the text as it is and never
--- runs a `%{expr}` that a server sent.
---@return string
function M.statusline()
  return (M.status_text():gsub('%%', '%%%%'))
end

--- What `statusline()` shows, as plain text (for a component that does not evaluate `%` items).
---@return string
function M.status_text()
  local s = M.status()
  if s.running then
    local parts = { '⟳ refactor' }
    if s.total and s.done then
      parts[#parts + 1] = ('%d/%d'):format(s.done, s.total)
    end
    if s.percentage then
      parts[#parts + 1] = ('%d%%'):format(s.percentage)
    end
    if s.rate then
      parts[#parts + 1] = ('%d tok/s'):format(math.floor(s.rate + 0.5))
    end
    return table.concat(parts, ' ')
  end
  local last = s.last
  if not last then
    return ''
  end
  local text = last.stats and last.stats.status_text -- the server's short text, e.g. `196 tok/s · 88% accepted`
  local outcome = last.status and OUTCOMES[last.status]
  if type(text) ~= 'string' or text == '' then
    return outcome and 'refactor ' .. outcome or 'refactor'
  end
  return 'refactor ' .. text .. (outcome and ' · ' .. outcome or '')
end

-- Setup --------------------------------------------------------------------------------------

--- A buffer-local map of `lhs` in each mode, unless one of yours (global or in that buffer) is there.
local function map_unless_taken(bufnr, lhs, rhs, desc)
  for _, mode in ipairs({ 'n', 'x' }) do
    local existing = api.nvim_buf_call(bufnr, function()
      return vim.fn.maparg(lhs, mode, false, true)
    end)
    local taken = next(existing) ~= nil and not vim.startswith(existing.desc or '', 'refactor-lsp: ')
    if not taken then
      vim.keymap.set(mode, lhs, rhs, { buffer = bufnr, desc = desc })
    end
  end
end

local function set_keymaps(bufnr)
  local keys = M.options.keymaps
  if not keys then
    return
  end
  if keys.prompt then
    map_unless_taken(bufnr, keys.prompt, function()
      M.prompt()
    end, 'refactor-lsp: refactor with an instruction')
  end
  if keys.actions then
    map_unless_taken(bufnr, keys.actions, M.code_actions, 'refactor-lsp: actions')
  end
  if keys.each then
    map_unless_taken(bufnr, keys.each, function()
      M.prompt({ each = true })
    end, 'refactor-lsp: one instruction for each definition (file, or selection)')
  end
  if keys.apply then
    map_unless_taken(bufnr, keys.apply, function()
      M.apply()
    end, 'refactor-lsp: apply the clipboard\'s code (the + register)')
  end
end

--- Configure and enable the server, and add keymaps to the buffers it attaches to.
---@param opts? refactor_lsp.Options
function M.setup(opts)
  opts = opts or {}
  local options = vim.tbl_extend('force', vim.deepcopy(defaults), opts)
  if type(opts.keymaps) == 'table' then
    options.keymaps = vim.tbl_extend('force', defaults.keymaps, opts.keymaps)
  end
  M.options = options

  local config = vim.deepcopy(options.lsp or {})
  if options.cmd then
    config.cmd = options.cmd
  end
  if options.settings ~= nil then
    local settings = normalize(options.settings)
    config.settings = { refactorLsp = settings } -- answers workspace/configuration
    config.init_options = { refactorLsp = settings, progressFields = true } -- and sent with initialize
  end
  vim.lsp.config(M.name, config)

  api.nvim_create_autocmd('LspAttach', {
    group = api.nvim_create_augroup('refactor_lsp_keymaps', { clear = true }),
    desc = 'refactor-lsp: keymaps',
    callback = function(ev)
      local client = vim.lsp.get_client_by_id(ev.data.client_id)
      if client and is_ours(client) then
        set_keymaps(ev.buf)
      end
    end,
  })
  for _, client in ipairs(vim.lsp.get_clients()) do
    if is_ours(client) then
      for bufnr in pairs(client.attached_buffers) do
        set_keymaps(bufnr)
      end
    end
  end
  if options.enable ~= false then
    vim.lsp.enable(M.name)
  end
end

return M
