--- A review drawn in its buffer: above each change a header (`change 2 of 3 · kept · <label> · needs
--- change 1`), the lines it replaces coloured as removed, its new lines below them as virtual lines
--- coloured as added (as mini.diff's overlay and gitsigns' inline preview show a hunk); the keys above
--- the first change. A dropped change keeps its lines as they are and its new lines dimmed.

local D = {}

local api = vim.api
local changes = require('refactor_lsp.review.changes')

-- Highlight groups, each a default link you can override.
local HIGHLIGHTS = {
  RefactorLspReviewRemoved = 'DiffDelete', -- the lines a change replaces
  RefactorLspReviewAdded = 'DiffAdd', -- its new lines (virtual)
  RefactorLspReviewDropped = 'Comment', -- the new lines of a dropped change
  RefactorLspReviewHeader = 'Title', -- `change 2 of 3`
  RefactorLspReviewLabel = 'Normal', -- the server's label of the change
  RefactorLspReviewKept = 'DiagnosticOk',
  RefactorLspReviewUndecided = 'DiagnosticInfo',
  RefactorLspReviewNeeds = 'DiagnosticWarn', -- `needs change 1`
  RefactorLspReviewHint = 'Comment', -- the keys, above the first change
}

function D.define_highlights()
  for name, link in pairs(HIGHLIGHTS) do
    api.nvim_set_hl(0, name, { link = link, default = true })
  end
end

--- Tabs as the spaces they take on screen: virtual text does not expand them.
local function expand_tabs(line, tabstop)
  if not line:find('\t', 1, true) then
    return line
  end
  local out, width = {}, 0
  for char in line:gmatch('[%z\1-\127\194-\244][\128-\191]*') do
    if char == '\t' then
      local pad = tabstop - width % tabstop
      out[#out + 1] = string.rep(' ', pad)
      width = width + pad
    else
      out[#out + 1] = char
      width = width + vim.fn.strdisplaywidth(char)
    end
  end
  return table.concat(out)
end

local function by_id(review, id)
  for _, change in ipairs(review.changes) do
    if change.id == id then
      return change
    end
  end
end

local SEPARATOR = { ' · ', 'RefactorLspReviewHint' }

--- The header above a change: `change 3 of 3 · kept · needs change 1 (dropped) · line 9: ...`; what it
--- needs before its label, which may run past the window's edge.
local function header(review, index, change)
  local decision = change.decision == 'keep' and { 'kept', 'RefactorLspReviewKept' }
    or change.decision == 'drop' and { 'dropped', 'RefactorLspReviewDropped' }
    or { 'to decide', 'RefactorLspReviewUndecided' }
  local chunks = {
    { ('change %d of %d'):format(index, #review.changes), 'RefactorLspReviewHeader' },
    SEPARATOR,
    decision,
  }
  for _, id in ipairs(change.needs) do
    local needed = by_id(review, id)
    local dropped = needed and needed.decision == 'drop' and change.decision ~= 'drop'
    chunks[#chunks + 1] = { (' · needs change %d%s'):format(id, dropped and ' (dropped)' or ''), 'RefactorLspReviewNeeds' }
  end
  if change.edited then
    chunks[#chunks + 1] = { ' · you edited these lines meanwhile', 'RefactorLspReviewNeeds' }
  end
  chunks[#chunks + 1] = SEPARATOR
  chunks[#chunks + 1] = { change.label, 'RefactorLspReviewLabel' }
  if review.definitions > 1 then
    chunks[#chunks + 1] = { ' · ' .. change.definition, 'RefactorLspReviewHint' }
  end
  return chunks
end

--- Draw `review` in `namespace` (cleared first), its changes where their anchors (`anchors`) are now.
---@param review refactor_lsp.Review
---@param hint string  the keys, shown above the first change
function D.draw(review, anchors, namespace, hint)
  local bufnr = review.bufnr
  api.nvim_buf_clear_namespace(bufnr, namespace, 0, -1)
  local tabstop = vim.bo[bufnr].tabstop
  local pad = string.rep(' ', vim.o.columns) -- the added lines' colour to the window's edge, as mini.diff does
  for index, change in ipairs(review.changes) do
    local row, end_row = changes.rows(bufnr, anchors, change)
    local above = { header(review, index, change) }
    if index == 1 then
      table.insert(above, 1, { { 'refactor-lsp review: ' .. hint, 'RefactorLspReviewHint' } })
    end
    api.nvim_buf_set_extmark(bufnr, namespace, row, 0, { virt_lines = above, virt_lines_above = true })
    if change.decision ~= 'drop' then
      for r = row, end_row do
        api.nvim_buf_set_extmark(bufnr, namespace, r, 0, { line_hl_group = 'RefactorLspReviewRemoved' })
      end
    end
    local hl = change.decision == 'drop' and 'RefactorLspReviewDropped' or 'RefactorLspReviewAdded'
    local below = {}
    for _, line in ipairs(change.new) do
      below[#below + 1] = { { expand_tabs(line, tabstop) .. pad, hl } }
    end
    if #below == 0 then
      below[1] = { { '(the lines above are removed)', hl } }
    end
    api.nvim_buf_set_extmark(bufnr, namespace, end_row, 0, { virt_lines = below })
  end
end

return D
