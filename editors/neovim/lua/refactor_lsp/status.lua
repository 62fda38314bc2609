--- What the statusline shows: the running refactors' progress (from `$/progress` and the fields of
--- `refactorLsp/progress`) and the last refactor's outcome (its reply's status and the server's
--- `status_text` of `refactorLsp/stats`). Never notified: progress and speed go here only.

local S = {}

local api = vim.api

local TOKEN_PREFIX = 'refactor-lsp/'

-- Progress of running refactors (by progress token) and the last outcome.
local state = {
  running = {}, ---@type table<string, {percentage?: integer, rate?: number, done?: integer, total?: integer, seq: integer, client_id?: integer}>
  seq = 0,
  last = nil, ---@type {stats?: table, status?: string, message?: string}?
}

local group = api.nvim_create_augroup('refactor_lsp', { clear = true })

local function redraw()
  vim.schedule(function()
    pcall(vim.cmd.redrawstatus)
    api.nvim_exec_autocmds('User', { pattern = 'RefactorLspStatus', modeline = false })
  end)
end

--- A request's reply: its status, message and stats are the last outcome.
---@param result {status?: string, message?: string, stats?: table}
function S.record(result)
  state.last = {
    status = result.status,
    message = result.message,
    stats = type(result.stats) == 'table' and result.stats or nil,
  }
  redraw()
end

function S.on_stats(_, params, _)
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
function S.on_progress(_, params, ctx)
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

-- The texts ------------------------------------------------------------------------------------

local OUTCOMES = {
  review = 'in review',
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
function S.status()
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
function S.statusline()
  return (S.status_text():gsub('%%', '%%%%'))
end

--- What `statusline()` shows, as plain text (for a component that does not evaluate `%` items).
---@return string
function S.status_text()
  local s = S.status()
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

return S
