--- refactor-lsp for Neovim 0.11+: setup, a prompt for free-form instructions, the code-action menu
--- filtered to our kind, commands and a statusline component (status.lua).
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
local status = require('refactor_lsp.status')

M.name = 'refactor_lsp'
M.kind = 'refactor.rewrite.prediction'

local REFACTOR = 'refactorLsp.refactor'
local REFACTOR_EACH = 'refactorLsp.refactorEach' -- one instruction for each definition, at once, as one edit
local APPLY = 'refactorLsp.applySnippet' -- code from a chat or an agent merged into the definitions it names
local CANCEL = 'refactorLsp.cancel'
local SHOW_STATS = 'refactorLsp.showStats'

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
  if result.status == 'busy' or result.status == 'started' then
    return -- busy: the server said so, and the running refactor keeps the statusline
  end
  status.record(result)
end

--- `refactorLsp/stats` and `refactorLsp/progress`: for the statusline (status.lua).
M._on_stats = status.on_stats
M._on_progress = status.on_progress

-- Statusline: status.lua owns it; these are the plugin's names for it.
M.status = status.status
M.statusline = status.statusline
M.status_text = status.status_text

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
