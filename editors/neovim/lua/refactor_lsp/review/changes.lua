--- A review's changes placed on the buffer: the server's offsets count code points in the document
--- as it was when the request went out, so the text of then (`snapshot`) gives each change's new lines,
--- and its lines are mapped onto the buffer of now when you typed while the model ran. Each change gets
--- an anchor (an extmark over the lines it replaces) that moves with your typing from then on.

local C = {}

local api = vim.api

---@class refactor_lsp.Snapshot
---@field lines string[]
---@field newline string   the line ending Neovim sends the server (fileformat)
---@field eol boolean      the text ends with one
---@field tick integer
---@field uri string

--- The buffer's text as Neovim sends it to the server (vim.lsp's full-text sync), taken when a review
--- is asked for.
---@return refactor_lsp.Snapshot
function C.snapshot(bufnr)
  local newline = ({ dos = '\r\n', mac = '\r' })[vim.bo[bufnr].fileformat] or '\n'
  return {
    lines = api.nvim_buf_get_lines(bufnr, 0, -1, false),
    newline = newline,
    eol = vim.bo[bufnr].eol,
    tick = api.nvim_buf_get_changedtick(bufnr),
    uri = vim.uri_from_bufnr(bufnr),
  }
end

--- The code-point offset where each line starts (the server's offsets are Python string indices).
local function line_starts(snap)
  local starts, at, step = {}, 0, vim.str_utfindex(snap.newline, 'utf-32')
  for i, line in ipairs(snap.lines) do
    starts[i] = at
    at = at + vim.str_utfindex(line, 'utf-32') + step
  end
  starts[#snap.lines + 1] = at
  return starts
end

--- The lines a change replaces (1-based: the server's `lines`, widened to the last line its edits
--- reach) and its new lines: those lines with its edits applied.
local function new_lines(snap, starts, change)
  local first, last = change.lines[1], change.lines[2]
  local edits = change.edits
  local reach = edits[#edits]['end']
  while last < #snap.lines and starts[last + 1] < reach do
    last = last + 1
  end
  local block = table.concat(snap.lines, snap.newline, first, last)
  if last < #snap.lines or snap.eol then
    block = block .. snap.newline
  end
  local base, text = starts[first], block
  for i = #edits, 1, -1 do -- back to front: the byte offsets before an edit stay valid
    local edit = edits[i]
    local s = vim.str_byteindex(block, 'utf-32', edit.start - base, false)
    local e = vim.str_byteindex(block, 'utf-32', edit['end'] - base, false)
    text = text:sub(1, s) .. edit.text .. text:sub(e + 1)
  end
  local lines = vim.split(text, snap.newline, { plain = true })
  if lines[#lines] == '' then
    lines[#lines] = nil
  end
  return first, last, lines
end

--- Maps 1-based lines of the snapshot onto the buffer of now (the same unless you typed meanwhile):
--- `(first, last) -> first, last, touched`.
local function line_map(snap, bufnr)
  if api.nvim_buf_get_changedtick(bufnr) == snap.tick then
    return function(first, last)
      return first, last, false
    end
  end
  local now = api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local hunks = vim.diff(table.concat(snap.lines, '\n') .. '\n', table.concat(now, '\n') .. '\n', {
    result_type = 'indices',
  }) --[[@as integer[][] ]]
  return function(first, last)
    local shift, touched = 0, false
    for _, hunk in ipairs(hunks) do
      local a, count_a, _, count_b = unpack(hunk)
      -- `a` is the first line replaced, or for an insertion (count_a 0) the line it goes after.
      local after = count_a == 0 and a or a + count_a - 1
      if after < first then
        shift = shift + count_b - count_a
      elseif count_a == 0 and a < last or count_a > 0 and a <= last then
        touched = true
      end
    end
    local rows = #now
    return math.min(math.max(first + shift, 1), rows), math.min(math.max(last + shift, 1), rows), touched
  end
end

---@class refactor_lsp.ReviewChange
---@field id integer
---@field label string
---@field definition string
---@field needs integer[]
---@field new string[]          its new lines (the lines it replaces are in the buffer)
---@field mark integer          the anchor: the replaced lines, as they move
---@field decision 'keep'|'drop'|nil
---@field edited boolean        you typed in its lines while the model ran

--- The offered changes (the reply's `review.changes`) on the buffer, each with its anchor in `namespace`.
---@param offered table[]
---@return refactor_lsp.ReviewChange[]
function C.place(bufnr, snap, offered, namespace)
  local starts, map = line_starts(snap), line_map(snap, bufnr)
  local placed = {}
  for _, change in ipairs(offered) do
    local first, last, lines = new_lines(snap, starts, change)
    local row, end_row, touched = map(first, last)
    local end_line = api.nvim_buf_get_lines(bufnr, end_row - 1, end_row, false)[1] or ''
    local mark = api.nvim_buf_set_extmark(bufnr, namespace, row - 1, 0, { end_row = end_row - 1, end_col = #end_line })
    placed[#placed + 1] = {
      id = change.id,
      label = change.label,
      definition = change.definition,
      needs = change.needs or {},
      new = lines,
      mark = mark,
      edited = touched,
    }
  end
  return placed
end

--- The rows (0-based) a change's anchor spans now.
---@param change refactor_lsp.ReviewChange
---@return integer, integer
function C.rows(bufnr, namespace, change)
  local at = api.nvim_buf_get_extmark_by_id(bufnr, namespace, change.mark, { details = true })
  local row = at[1] or 0
  local end_row = at[3] and at[3].end_row or row
  return row, math.max(end_row, row)
end

return C
