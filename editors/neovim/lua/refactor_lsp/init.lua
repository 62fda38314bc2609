--- refactor-lsp for Neovim 0.11+: setup, a prompt for free-form instructions, the code-action menu
--- filtered to our kind, commands, a review of each change before it is applied (review.lua) and a
--- statusline component (status.lua).
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
local review = require('refactor_lsp.review')

M.name = 'refactor_lsp'
M.kind = 'refactor.rewrite.prediction'

local REFACTOR = 'refactorLsp.refactor'
local REFACTOR_EACH = 'refactorLsp.refactorEach' -- one instruction for each definition, at once, as one edit
local APPLY = 'refactorLsp.applySnippet' -- code from a chat or an agent merged into the definitions it names
local APPLY_CHANGES = 'refactorLsp.applyChanges' -- what a review kept (review.lua)
local CANCEL = 'refactorLsp.cancel'
local SHOW_STATS = 'refactorLsp.showStats'

---@class refactor_lsp.Keymaps
---@field prompt? string|false  free-form instruction prompt (normal and visual mode)
---@field actions? string|false code-action menu filtered to refactor.rewrite.prediction
---@field each? string|false    one instruction for each definition: of the file (normal), of the selection (visual)
---@field apply? string|false   apply the `+` register's code (:RefactorApply): at the cursor (normal), the selection (visual)
---@field review? string|false  free-form instruction, each change reviewed before it is applied (:RefactorReview)

---@class refactor_lsp.Options
---@field cmd? string[]                  the server command (default: { 'refactor-lsp' })
---@field settings? table                the `refactorLsp` settings section
---@field keymaps? refactor_lsp.Keymaps|false
---@field enable? boolean                call vim.lsp.enable (default: true)
---@field lsp? vim.lsp.Config            more fields for vim.lsp.config (filetypes, cmd_env, ...)
---@field prompt? string                 the vim.ui.input prompt
---@field review_keys? refactor_lsp.ReviewKeys  the keys while a review is open (review.lua's defaults)

---@type refactor_lsp.Options
local defaults = {
  cmd = nil,
  settings = nil,
  keymaps = {
    prompt = '<leader>rp',
    actions = '<leader>ra',
    each = '<leader>re',
    apply = '<leader>rv',
    review = '<leader>rr',
  },
  enable = true,
  lsp = {},
  prompt = 'Refactor (instruction): ',
  review_keys = review.default_keys,
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

--- Send `command`; with `reviewed`, as a review (`review: "changes"`): the changes the server offers
--- are shown in the buffer (review.lua) against the text the request went out with.
local function execute(command, arguments, bufnr, reviewed)
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  local handler = M._on_command_result
  if reviewed then
    arguments[1].review = 'changes'
    local snapshot = review.snapshot(bufnr)
    handler = function(err, result, ctx)
      M._on_command_result(err, result, ctx)
      if not err and type(result) == 'table' and result.status == 'review' and type(result.review) == 'table' then
        review.open(bufnr, client, result.review, snapshot, M._on_command_result)
      end
    end
  end
  client:request('workspace/executeCommand', { command = command, arguments = arguments }, handler, bufnr)
end

---@class refactor_lsp.RunOptions
---@field review? boolean  show each change in the buffer to keep or drop before anything is applied

--- Run `refactorLsp.refactor` with a free-form instruction.
---@param instruction string
---@param range? lsp.Range  default: the cursor (the enclosing block)
---@param bufnr? integer
---@param opts? refactor_lsp.RunOptions
function M.refactor(instruction, range, bufnr, opts)
  bufnr = bufnr or api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  range = range or ranges.cursor(bufnr, client.offset_encoding)
  local arguments = { { uri = vim.uri_from_bufnr(bufnr), range = range, instruction = instruction } }
  execute(REFACTOR, arguments, bufnr, opts and opts.review)
end

--- Run `refactorLsp.refactorEach`: `instruction` for each definition `range` touches, or without a
--- range each definition of the file, each its own refactor, all at once; the server applies them as
--- ONE edit (one undo) and reports them in one message.
---@param instruction string
---@param range? lsp.Range
---@param bufnr? integer
---@param opts? refactor_lsp.RunOptions
function M.refactor_each(instruction, range, bufnr, opts)
  bufnr = bufnr or api.nvim_get_current_buf()
  local batch = { uri = vim.uri_from_bufnr(bufnr), range = range, instruction = instruction }
  batch.targets = range and 'selection' or 'file'
  execute(REFACTOR_EACH, { batch }, bufnr, opts and opts.review)
end

--- Run `refactorLsp.applySnippet`: the code in `register` (default `+`, the clipboard) merged into the
--- definitions it names, each with its current text as the prediction, as ONE edit; `range` (default:
--- the cursor) says where it goes when it names none.
---@param register? string
---@param range? lsp.Range
---@param bufnr? integer
---@param opts? refactor_lsp.RunOptions
function M.apply(register, range, bufnr, opts)
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
  local arguments = { { uri = vim.uri_from_bufnr(bufnr), snippet = snippet, range = range } }
  execute(APPLY, arguments, bufnr, opts and opts.review)
end

--- `:[range]RefactorApply[!] [register]` (`!`: review each change first).
---@param cmd vim.api.keyset.create_user_command.command_args
function M.apply_command(cmd)
  local bufnr = api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  M.apply(vim.trim(cmd.args), ranges.command(bufnr, cmd, client.offset_encoding), bufnr, { review = cmd.bang })
end

--- Ask for an instruction (vim.ui.input), then refactor the selection or the block at the cursor;
--- with `each`, each definition of the selection, or of the file when nothing is selected; with
--- `review`, each change shown to keep or drop before anything is applied.
---@param opts? {instruction?: string, range?: lsp.Range, each?: boolean, review?: boolean}
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
      refactor(vim.trim(instruction), range, bufnr, { review = opts.review })
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

--- `:[range]RefactorPredict[!] [instruction]`; with `each`, `:[range]RefactorEach[!] [instruction]`:
--- each definition of the range's lines, or of the file without a range. `!` (or `reviewed`, for
--- `:RefactorReview`): each change reviewed in the buffer before anything is applied.
---@param cmd vim.api.keyset.create_user_command.command_args
---@param each? boolean
---@param reviewed? boolean
function M.command(cmd, each, reviewed)
  local bufnr = api.nvim_get_current_buf()
  local client = M.client(bufnr)
  if not client then
    return no_client()
  end
  local range = ranges.command(bufnr, cmd, client.offset_encoding)
  M.prompt({ instruction = cmd.args, range = range, each = each, review = reviewed or cmd.bang })
end

--- Cancel the refactor running on the current buffer (`all`: on every buffer).
---@param all? boolean
function M.cancel(all)
  local bufnr = api.nvim_get_current_buf()
  -- A review open here ends with it (the server drops it on the same cancel).
  for _, buf in ipairs(all and api.nvim_list_bufs() or { bufnr }) do
    review.close(buf, 'cancelled')
  end
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
  local requests = { [REFACTOR] = true, [REFACTOR_EACH] = true, [APPLY] = true, [APPLY_CHANGES] = true }
  if not requests[command] or type(result) ~= 'table' then
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
  if keys.review then
    map_unless_taken(bufnr, keys.review, function()
      M.prompt({ review = true })
    end, 'refactor-lsp: refactor with an instruction, each change reviewed before it is applied')
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
  options.review_keys = vim.tbl_extend('force', review.default_keys, opts.review_keys or {})
  M.options = options
  review.keys = options.review_keys

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
