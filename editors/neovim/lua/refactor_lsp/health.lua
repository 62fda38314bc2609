--- :checkhealth refactor_lsp — the server executable, its version, and `refactor-lsp check`
--- (config valid, backend reachable, prediction accepted) run with the settings Neovim sends; whether
--- the running server offers a review (:RefactorReview), and the keys mapped.
local M = {}

local health = vim.health
local CHECK_TIMEOUT_MS = 30000

local function run(cmd, opts)
  local ok, proc = pcall(vim.system, cmd, vim.tbl_extend('force', { text = true }, opts or {}))
  if not ok then
    return { code = -1, stdout = '', stderr = tostring(proc) }
  end
  return proc:wait(opts and opts.timeout or CHECK_TIMEOUT_MS)
end

local function lines(text)
  return vim.split(vim.trim(text or ''), '\n', { trimempty = true })
end

--- The root folder the server would get for the current buffer (where `.refactor-lsp.toml` is read):
--- named to `check --workspace`, never the folder the check runs in (see lsp/refactor_lsp.lua).
local function root_dir(config)
  local client = require('refactor_lsp').client(0)
  if client and client.root_dir then
    return client.root_dir
  end
  local name = vim.api.nvim_buf_get_name(0)
  if name ~= '' and config.root_markers then
    local found = vim.fs.root(0, config.root_markers)
    if found then
      return found
    end
  end
  return vim.fn.getcwd()
end

--- The settings the check runs with: `init_options` (setup()'s settings, or yours in vim.lsp.config),
--- the channel only you control. `settings` (answered to workspace/configuration) can be filled from
--- a repository (neoconf's .neoconf.json, exrc), so its backends are not probed here, as the server
--- takes no routing keys from it either unless the folder is trusted. They go on stdin: `headers`
--- may hold a token, and a command line is visible to every user of the machine.
local function settings_json(config)
  local settings = vim.tbl_get(config, 'init_options', 'refactorLsp')
  if type(settings) ~= 'table' or next(settings) == nil then
    return nil
  end
  local ok, json = pcall(vim.json.encode, settings)
  return ok and json or nil
end

--- Report one line of `refactor-lsp check` output.
local function report(line, advice, failed)
  if line:match('^FAIL') then
    health.error(line:gsub('^FAIL:%s*', ''), advice)
  elseif line:match('NOT accepted') or line:match('with the problems') then
    health.warn(line, advice)
  elseif line:match('^refactor%-lsp:') then
    -- the CLI's own complaints (stderr): config problems are warnings unless the check failed
    if failed then
      health.error(line, advice)
    else
      health.warn(line, advice)
    end
  else
    health.ok(line)
  end
end

--- The buffer you ran :checkhealth from (it opens its own buffer, in a tab of its own unless there
--- was nothing to replace), else one the server is attached to.
---@return integer?
local function your_buffer()
  local tab = vim.fn.tabpagenr('#')
  local candidates = {}
  if tab > 0 then
    candidates[1] = vim.fn.winbufnr(vim.fn.win_getid(vim.fn.tabpagewinnr(tab), tab))
  end
  candidates[#candidates + 1] = vim.fn.bufnr('#')
  for _, client in ipairs(vim.lsp.get_clients({ name = 'refactor_lsp' })) do
    vim.list_extend(candidates, vim.tbl_keys(client.attached_buffers))
  end
  for _, bufnr in ipairs(candidates) do
    if bufnr > 0 and require('refactor_lsp').client(bufnr) then
      return bufnr
    end
  end
end

--- Whether review is there (the server lists `refactorLsp.applyChanges` among its commands), its keys,
--- and the plugin's keymaps in your buffer.
local function review_and_keys()
  health.start('refactor-lsp: review (:RefactorReview) and keys')
  local plugin, review = require('refactor_lsp'), require('refactor_lsp.review')
  local bufnr = your_buffer()
  local client = bufnr and plugin.client(bufnr) or vim.lsp.get_clients({ name = 'refactor_lsp' })[1]
  if not client then
    health.info('no refactor-lsp server is running: open a file, then :checkhealth refactor_lsp says whether it offers review')
  else
    local commands = vim.tbl_get(client.server_capabilities or {}, 'executeCommandProvider', 'commands') or {}
    if vim.tbl_contains(commands, 'refactorLsp.applyChanges') then
      health.ok('review is available: the server offers refactorLsp.applyChanges')
    else
      health.warn('review is not available: this server does not offer refactorLsp.applyChanges', {
        'update refactor-lsp (pip install -e . in its checkout), then restart it (:lsp restart or reopen Neovim)',
      })
    end
  end
  local keys = {}
  for _, entry in ipairs(review.key_list()) do
    keys[#keys + 1] = ('%s %s'):format(entry.lhs, entry.words)
  end
  health.ok('keys while reviewing: ' .. (#keys > 0 and table.concat(keys, ', ') or 'none (review_keys all false)'))
  local keymaps = plugin.options.keymaps
  if not keymaps then
    health.info('no keymaps: setup({ keymaps = false })')
    return
  end
  if not bufnr then
    return health.info('keymaps are set in the buffers the server attaches to; none is open')
  end
  local ours, taken = {}, {}
  for _, name in ipairs({ 'prompt', 'actions', 'each', 'apply', 'review' }) do
    local lhs = keymaps[name]
    if lhs then
      local map = vim.api.nvim_buf_call(bufnr, function()
        return vim.fn.maparg(lhs, 'n', false, true)
      end)
      if vim.startswith(map.desc or '', 'refactor-lsp: ') then
        ours[#ours + 1] = ('%s %s'):format(lhs, name)
      elseif next(map) ~= nil then
        taken[#taken + 1] = lhs
      end
    end
  end
  if #ours > 0 then
    health.ok('keymaps in this buffer: ' .. table.concat(ours, ', '))
  else
    health.info('no keymaps of the plugin in this buffer (without setup(), only the commands)')
  end
  if #taken > 0 then
    health.info('left to your own mappings: ' .. table.concat(taken, ', '))
  end
end

--- The server: found, its version, running. Returns the command of its other subcommands and how to
--- run them, or nil when it cannot run.
local function server(config)
  health.start('refactor-lsp: server')
  local cmd = config.cmd
  if type(cmd) ~= 'table' or not cmd[1] then
    health.warn('the server command is not a list of words; cannot check it from here')
    return
  end
  if vim.fn.executable(cmd[1]) ~= 1 then
    health.error(('server not found: `%s` is not executable'):format(cmd[1]), {
      'install it from a checkout of refactor-lsp (not on PyPI): pip install -e /path/to/refactor-lsp, in a virtual environment',
      "or point setup() at it: require('refactor_lsp').setup({ cmd = { '/path/to/refactor-lsp' } })",
    })
    return
  end
  -- `serve` / `--stdio` start the server; the checks below run other subcommands of the same program.
  cmd = vim.tbl_filter(function(word)
    return word ~= 'serve' and word ~= '--stdio'
  end, cmd)
  -- Where the server itself starts (lsp/refactor_lsp.lua): never the repository's folder, whose own
  -- program or `lsp_server/` package would run instead.
  local here = config.cmd_cwd or vim.fn.fnamemodify(debug.getinfo(1, 'S').source:sub(2), ':p:h:h:h')
  local opts = { env = config.cmd_env, cwd = here }
  local shown = table.concat(cmd, ' ')
  local version_cmd = vim.list_extend(vim.deepcopy(cmd), { '--version' })
  local version = run(version_cmd, vim.tbl_extend('force', opts, { timeout = 15000 }))
  if version.code == 0 then
    local path = vim.fn.exepath(cmd[1])
    local where = (path ~= '' and path ~= cmd[1]) and (' at ' .. path) or ''
    health.ok(('server found: %s%s (%s)'):format(shown, where, vim.trim(version.stdout or '')))
  else
    local problem = ('server found but `%s --version` failed (exit %s)'):format(shown, tostring(version.code))
    health.error(problem, lines(version.stderr))
    return
  end
  local clients = vim.lsp.get_clients({ name = 'refactor_lsp' })
  if #clients > 0 then
    health.ok(('%d client(s) running'):format(#clients))
  elseif vim.lsp.is_enabled and vim.lsp.is_enabled('refactor_lsp') then
    health.info('enabled; it starts with the next file buffer you open')
  else
    health.info("not enabled: call require('refactor_lsp').setup() or vim.lsp.enable('refactor_lsp')")
  end
  return cmd, opts
end

--- `refactor-lsp check` with your settings for the buffer's project: config, backend, prediction.
local function backend(config, cmd, opts)
  health.start('refactor-lsp: config and backend (`refactor-lsp check`)')
  local args = vim.list_extend(vim.deepcopy(cmd), { 'check', '--workspace', root_dir(config) })
  local json = settings_json(config)
  local check_opts = opts
  if json then
    vim.list_extend(args, { '--settings', '-' })
    check_opts = vim.tbl_extend('force', opts, { stdin = json })
    health.info('with the settings given to setup() (init_options.refactorLsp) over the config files')
  else
    health.info('no settings given to setup(): the config files only')
    local answered = vim.tbl_get(config, 'settings', 'refactorLsp')
    if type(answered) == 'table' and answered.backends ~= nil then
      health.warn(
        'backends set only in `settings` (workspace/configuration) are ignored unless the folder is trusted: '
          .. 'a repository can fill that channel',
        { "put them in setup({ settings = ... }) or in vim.lsp.config's init_options.refactorLsp" }
      )
    end
  end
  local result = run(args, check_opts)
  if (result.stderr or ''):match('unrecognized arguments: ') then
    health.warn('this refactor-lsp is older than the plugin (no `check --workspace`): checking your config file only')
    result = run(vim.list_extend(vim.deepcopy(cmd), { 'check' }), opts)
  end
  local out, err = lines(result.stdout), lines(result.stderr)
  for i, line in ipairs(out) do
    if not line:match('^%s+fix:') then
      local advice = {}
      for j = i + 1, #out do
        local fix = out[j]:match('^%s+fix:%s*(.*)')
        if not fix then
          break
        end
        advice[#advice + 1] = fix
      end
      report(line, #advice > 0 and advice or nil)
    end
  end
  for _, line in ipairs(err) do
    report(line:match('^refactor%-lsp:') and line or ('refactor-lsp: ' .. line), nil, result.code ~= 0)
  end
  if result.code == 0 then
    health.ok('backend reachable')
  elseif result.code == 124 then
    health.error(('`refactor-lsp check` gave no answer within %d s'):format(CHECK_TIMEOUT_MS / 1000))
  else
    health.error(('backend not usable: `refactor-lsp check` exited %s'):format(tostring(result.code)), {
      'fix the problem above, then run :checkhealth refactor_lsp again',
    })
  end
end

function M.check()
  health.start('refactor-lsp: Neovim')
  if vim.fn.has('nvim-0.11') == 1 then
    health.ok(('Neovim %s'):format(tostring(vim.version())))
  else
    health.error('Neovim 0.11 or newer is needed (vim.lsp.config / vim.lsp.enable)')
    return
  end
  local config = vim.lsp.config.refactor_lsp
  if not config then
    health.start('refactor-lsp: server')
    health.error('no `refactor_lsp` LSP config', { 'put editors/neovim on the runtimepath (see :h refactor_lsp)' })
    return
  end
  local cmd, opts = server(config)
  if cmd then
    backend(config, cmd, opts)
  end
  review_and_keys()
end

return M
