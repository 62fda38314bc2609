--- LSP ranges from what the user points at in a buffer: the visual selection, the cursor, a user
--- command's range, counted in the client's position encoding (utf-8, utf-16 or utf-32).

local R = {}

local api = vim.api

--- An LSP position for a byte column of a buffer line.
local function position(bufnr, row, col, encoding)
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  col = math.max(0, math.min(col, #line))
  return { line = row, character = vim.str_utfindex(line, encoding, col, false) }
end

local function line_end(bufnr, row, encoding)
  local line = api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  return position(bufnr, row, #line, encoding)
end

--- An LSP range from 1-based rows and 1-based byte columns; `linewise` takes whole lines.
function R.region(bufnr, srow, scol, erow, ecol, linewise, encoding)
  if erow < srow or (erow == srow and ecol < scol) then
    srow, scol, erow, ecol = erow, ecol, srow, scol
  end
  if linewise then
    return { start = { line = srow - 1, character = 0 }, ['end'] = line_end(bufnr, erow - 1, encoding) }
  end
  local last = api.nvim_buf_get_lines(bufnr, erow - 1, erow, false)[1] or ''
  local stop = #last
  if ecol <= #last then
    stop = ecol + vim.str_utf_end(last, ecol) -- end is exclusive: after the last selected character
  end
  return { start = position(bufnr, srow - 1, scol - 1, encoding), ['end'] = position(bufnr, erow - 1, stop, encoding) }
end

--- The range of the visual selection while still in visual mode (which it leaves), else nil.
function R.visual(bufnr, encoding)
  local mode = api.nvim_get_mode().mode
  if not (mode == 'v' or mode == 'V' or mode == '\22') then
    return nil
  end
  local a, b = vim.fn.getpos('v'), vim.fn.getpos('.')
  api.nvim_feedkeys(vim.keycode('<Esc>'), 'nx', false)
  return R.region(bufnr, a[2], a[3], b[2], b[3], mode ~= 'v', encoding)
end

--- The cursor as an empty range: the server rewrites the enclosing block.
function R.cursor(bufnr, encoding)
  local row, col = unpack(api.nvim_win_get_cursor(0))
  local pos = position(bufnr, row - 1, col, encoding)
  return { start = pos, ['end'] = vim.deepcopy(pos) }
end

--- The range of a user command (`:'<,'>Cmd`, `:3,9Cmd`), or nil without one.
---@param cmd vim.api.keyset.create_user_command.command_args
function R.command(bufnr, cmd, encoding)
  if cmd.range == 0 then
    return nil
  end
  local s, e = api.nvim_buf_get_mark(bufnr, '<'), api.nvim_buf_get_mark(bufnr, '>')
  if vim.fn.visualmode() == 'v' and s[1] == cmd.line1 and e[1] == cmd.line2 then
    -- `:'<,'>` after a characterwise selection: exactly the selected characters.
    return R.region(bufnr, s[1], s[2] + 1, e[1], e[2] + 1, false, encoding)
  end
  return R.region(bufnr, cmd.line1, 1, cmd.line2, 1, true, encoding)
end

return R
