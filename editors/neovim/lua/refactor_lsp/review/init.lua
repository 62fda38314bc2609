--- A review in the buffer (:RefactorReview, a bang on the other commands): the server's answer split
--- into its changes (`review: "changes"`, docs/protocol.md), each shown where it goes before anything
--- is applied (draw.lua), with keys, buffer-local while the review is open, to move, keep, drop, keep
--- all, apply and cancel. Applying sends `refactorLsp.applyChanges {uri, review, keep}`: the server
--- checks what is kept as a whole answer and applies it as ONE edit (one undo), or refuses it; `q`
--- sends `refactorLsp.cancel`. Either way the review is over, here and on the server.
---
--- Every outcome is the server's one message (a refusal names the change that is missing, a stale
--- document says so); this module says only what the server cannot: its keys.
---
--- changes.lua  the offered changes placed on the buffer (the text the request went out with, the
---              lines mapped onto the buffer of now)
--- draw.lua     headers, removed and added lines, highlight groups

local R = {}

local api = vim.api
local changes = require('refactor_lsp.review.changes')
local draw = require('refactor_lsp.review.draw')
local status = require('refactor_lsp.status')

local APPLY_CHANGES = 'refactorLsp.applyChanges'
local CANCEL = 'refactorLsp.cancel'

-- Anchors (one extmark a change, moving with your typing) and what is drawn from them, apart, so a
-- redraw clears only the drawing.
local anchors = api.nvim_create_namespace('refactor_lsp_review')
local drawn = api.nvim_create_namespace('refactor_lsp_review_drawn')
local group = api.nvim_create_augroup('refactor_lsp_review', { clear = true })

---@class refactor_lsp.ReviewKeys
---@field next? string|false      the next change (wraps around)
---@field prev? string|false      the previous change
---@field keep? string|false      keep the change at the cursor, then go to the next undecided one
---@field drop? string|false      drop it, then go to the next undecided one
---@field keep_all? string|false  keep every change
---@field apply? string|false     apply what is kept (a change left undecided is dropped)
---@field cancel? string|false    end the review, nothing applied
---@field help? string|false      list these keys

---@type refactor_lsp.ReviewKeys
R.default_keys = {
  next = ']c',
  prev = '[c',
  keep = 'gy',
  drop = 'gn',
  keep_all = 'gY',
  apply = 'ga',
  cancel = 'q',
  help = 'g?',
}

-- In the order the hint, `g?` and :checkhealth list them.
local KEY_ORDER = { 'next', 'prev', 'keep', 'drop', 'keep_all', 'apply', 'cancel', 'help' }
local KEY_WORDS = {
  next = 'next change',
  prev = 'previous change',
  keep = 'keep',
  drop = 'drop',
  keep_all = 'keep all',
  apply = 'apply what is kept',
  cancel = 'cancel',
  help = 'these keys',
}

---@type refactor_lsp.ReviewKeys
R.keys = vim.deepcopy(R.default_keys)

---@class refactor_lsp.Review
---@field bufnr integer
---@field client_id integer
---@field uri string
---@field id string
---@field changes refactor_lsp.ReviewChange[]
---@field definitions integer   how many definitions the changes belong to
---@field saved table[]         buffer-local mappings of yours that the review's keys hide for a while
---@field mapped string[]

---@type table<integer, refactor_lsp.Review>
local open = {}

R.snapshot = changes.snapshot

--- The review keys that are mapped, in order: `{lhs, words}`.
---@return {lhs: string, words: string}[]
function R.key_list()
  local list = {}
  for _, name in ipairs(KEY_ORDER) do
    local lhs = R.keys[name]
    if lhs then
      list[#list + 1] = { lhs = lhs, words = KEY_WORDS[name] }
    end
  end
  return list
end

-- The words of the hint above the first change, short enough for a window's width (`g?` has the long ones).
local HINT_WORDS = { keep = 'keep', drop = 'drop', keep_all = 'keep all', apply = 'apply', cancel = 'cancel', help = 'keys' }

--- `]c [c move · gy keep · gn drop · gY keep all · ga apply · q cancel · g? keys`
local function hint()
  local keys, parts = R.keys, {}
  local moves = vim.tbl_filter(function(lhs)
    return lhs
  end, { keys.next, keys.prev })
  if #moves > 0 then
    parts[1] = table.concat(moves, ' ') .. ' move'
  end
  for _, name in ipairs(KEY_ORDER) do
    if HINT_WORDS[name] and keys[name] then
      parts[#parts + 1] = keys[name] .. ' ' .. HINT_WORDS[name]
    end
  end
  return table.concat(parts, ' · ')
end

local function redraw(review)
  draw.draw(review, anchors, drawn, hint())
end

-- Moving and deciding ------------------------------------------------------------------------------

local function jump(review, change)
  local row = changes.rows(review.bufnr, anchors, change)
  local win = api.nvim_get_current_win()
  if api.nvim_win_get_buf(win) ~= review.bufnr then
    win = vim.fn.win_findbuf(review.bufnr)[1]
    if not win then
      return
    end
  end
  api.nvim_win_set_cursor(win, { row + 1, 0 })
  api.nvim_win_call(win, function()
    if vim.fn.line('w0') == row + 1 then -- the change's first line at the top: its header above it, in view
      vim.fn.winrestview({ topline = row + 1, topfill = change == review.changes[1] and 2 or 1 })
    end
  end)
end

--- The change at the cursor: the one whose lines hold it, else the first below it, else the last;
--- and whether the cursor is inside it.
local function current(review)
  if #review.changes == 0 then
    return nil
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  for index, change in ipairs(review.changes) do
    local first, last = changes.rows(review.bufnr, anchors, change)
    if row <= last then
      return index, change, row >= first
    end
  end
  return #review.changes, review.changes[#review.changes], false
end

--- The next change that starts below the cursor (`step` 1), or the previous one that starts above it
--- (-1), wrapping around, as gitsigns moves between hunks.
local function move(review, step)
  local count = #review.changes
  if count == 0 then
    return
  end
  local row = api.nvim_win_get_cursor(0)[1] - 1
  local first, last = step > 0 and 1 or count, step > 0 and count or 1
  for index = first, last, step do
    local start = changes.rows(review.bufnr, anchors, review.changes[index])
    if step > 0 and start > row or step < 0 and start < row then
      return jump(review, review.changes[index])
    end
  end
  jump(review, review.changes[first])
end

--- Decide the change at the cursor, then go on to the next one still undecided (as `git add -p` goes).
local function decide(review, decision)
  local index, change = current(review)
  if not index then
    return
  end
  change.decision = decision
  redraw(review)
  for step = 1, #review.changes - 1 do
    local next_change = review.changes[(index + step - 1) % #review.changes + 1]
    if next_change.decision == nil then
      return jump(review, next_change)
    end
  end
end

local function keep_all(review)
  for _, change in ipairs(review.changes) do
    change.decision = 'keep'
  end
  redraw(review)
end

-- Ending -------------------------------------------------------------------------------------------

--- End the review in the buffer: the drawing, the keys (yours back) and the autocommands go. With
--- `outcome`, the statusline's last outcome when a review was open (a cancel has no reply of its own
--- to say it: the request's reply was the offer).
---@param bufnr integer
---@param outcome? string
function R.close(bufnr, outcome)
  local review = open[bufnr]
  if not review then
    return
  end
  open[bufnr] = nil
  if outcome then
    status.record({ status = outcome })
  end
  if api.nvim_buf_is_valid(bufnr) then
    api.nvim_buf_clear_namespace(bufnr, drawn, 0, -1)
    api.nvim_buf_clear_namespace(bufnr, anchors, 0, -1)
    for _, lhs in ipairs(review.mapped) do
      pcall(vim.keymap.del, 'n', lhs, { buffer = bufnr })
    end
    api.nvim_buf_call(bufnr, function()
      for _, saved in ipairs(review.saved) do
        vim.fn.mapset('n', false, saved)
      end
    end)
  end
  api.nvim_clear_autocmds({ group = group, buffer = bufnr })
end

local function send(review, command, arguments, on_reply)
  local client = vim.lsp.get_client_by_id(review.client_id)
  if not client then
    return vim.notify('refactor-lsp: the server stopped; the review is over, nothing was applied', vim.log.levels.WARN)
  end
  client:request('workspace/executeCommand', { command = command, arguments = arguments }, on_reply, review.bufnr)
end

local function apply(review, on_reply)
  local keep = {}
  for _, change in ipairs(review.changes) do
    if change.decision == 'keep' then
      keep[#keep + 1] = change.id
    end
  end
  R.close(review.bufnr) -- whatever the server answers, the review is over there too
  -- An empty `keep` (every change dropped) goes as `[]`: vim.json encodes an empty table as a list.
  send(review, APPLY_CHANGES, { { uri = review.uri, review = review.id, keep = keep } }, on_reply)
end

local function cancel(review)
  R.close(review.bufnr, 'cancelled')
  send(review, CANCEL, { { uri = review.uri } }, function() end) -- the server says "cancelled" itself
end

local function help()
  local lines = { 'refactor-lsp review keys:' }
  for _, key in ipairs(R.key_list()) do
    lines[#lines + 1] = ('  %-6s %s'):format(key.lhs, key.words)
  end
  vim.notify(table.concat(lines, '\n'), vim.log.levels.INFO)
end

-- Opening ------------------------------------------------------------------------------------------

local function map_keys(review, on_reply)
  local actions = {
    next = function()
      move(review, 1)
    end,
    prev = function()
      move(review, -1)
    end,
    keep = function()
      decide(review, 'keep')
    end,
    drop = function()
      decide(review, 'drop')
    end,
    keep_all = function()
      keep_all(review)
    end,
    apply = function()
      apply(review, on_reply)
    end,
    cancel = function()
      cancel(review)
    end,
    help = help,
  }
  for _, name in ipairs(KEY_ORDER) do
    local lhs = R.keys[name]
    if lhs then
      local mine = api.nvim_buf_call(review.bufnr, function()
        return vim.fn.maparg(lhs, 'n', false, true)
      end)
      if mine.buffer == 1 then
        review.saved[#review.saved + 1] = mine
      end
      vim.keymap.set('n', lhs, actions[name], {
        buffer = review.bufnr,
        nowait = true,
        desc = 'refactor-lsp review: ' .. KEY_WORDS[name],
      })
      review.mapped[#review.mapped + 1] = lhs
    end
  end
end

local function end_with_buffer_and_server(review)
  local bufnr = review.bufnr
  api.nvim_create_autocmd({ 'BufUnload', 'BufWipeout' }, {
    group = group,
    buffer = bufnr,
    desc = 'refactor-lsp: the review ends with its buffer (the server drops it on didClose)',
    callback = function()
      R.close(bufnr, 'cancelled')
    end,
  })
  api.nvim_create_autocmd('LspDetach', {
    group = group,
    buffer = bufnr,
    desc = 'refactor-lsp: the review ends with its server',
    callback = function(ev)
      if ev.data.client_id == review.client_id then
        R.close(bufnr, 'cancelled')
      end
    end,
  })
end

--- Show the changes the server offered (`reply.review` of a request made with `review: "changes"`).
---@param bufnr integer
---@param client vim.lsp.Client
---@param offer {id: string, changes: table[]}
---@param snap refactor_lsp.Snapshot the buffer when the request went out (R.snapshot)
---@param on_reply fun(err, result, ctx) the handler of the applyChanges reply
function R.open(bufnr, client, offer, snap, on_reply)
  if not api.nvim_buf_is_valid(bufnr) then
    -- The buffer went while the model ran: the server would hold the document for nothing.
    return client:request('workspace/executeCommand', { command = CANCEL, arguments = { { uri = snap.uri } } })
  end
  R.close(bufnr)
  draw.define_highlights()
  local placed = changes.place(bufnr, snap, offer.changes, anchors)
  local definitions = {}
  for _, change in ipairs(placed) do
    definitions[change.definition] = true
  end
  ---@type refactor_lsp.Review
  local review = {
    bufnr = bufnr,
    client_id = client.id,
    uri = snap.uri,
    id = offer.id,
    changes = placed,
    definitions = vim.tbl_count(definitions),
    saved = {},
    mapped = {},
  }
  open[bufnr] = review
  redraw(review)
  map_keys(review, on_reply)
  end_with_buffer_and_server(review)
  if #placed > 0 then
    jump(review, placed[1])
  end
end

--- The review open on `bufnr`, as data: `{id, changes = {{id, label, decision?, needs}}}`, or nil.
---@param bufnr? integer
function R.get(bufnr)
  local review = open[bufnr or api.nvim_get_current_buf()]
  if not review then
    return nil
  end
  local list = {}
  for _, change in ipairs(review.changes) do
    list[#list + 1] = { id = change.id, label = change.label, decision = change.decision, needs = change.needs }
  end
  return { id = review.id, changes = list }
end

return R
