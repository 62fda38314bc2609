-- refactor-lsp: user commands only; the module loads on first use.
if vim.g.loaded_refactor_lsp then
  return
end
vim.g.loaded_refactor_lsp = 1

vim.api.nvim_create_user_command('RefactorPredict', function(cmd)
  require('refactor_lsp').command(cmd)
end, {
  nargs = '*',
  range = true,
  bang = true,
  desc = 'refactor-lsp: rewrite the range (or the block at the cursor) following an instruction (!: review each change)',
})

vim.api.nvim_create_user_command('RefactorReview', function(cmd)
  require('refactor_lsp').command(cmd, false, true)
end, {
  nargs = '*',
  range = true,
  desc = 'refactor-lsp: as :RefactorPredict, each change shown in the buffer to keep or drop before it is applied',
})

vim.api.nvim_create_user_command('RefactorEach', function(cmd)
  require('refactor_lsp').command(cmd, true)
end, {
  nargs = '*',
  range = true,
  bang = true,
  desc = 'refactor-lsp: one instruction for each definition of the file (of the range, with one), at once, as one edit (!: review each change)',
})

vim.api.nvim_create_user_command('RefactorApply', function(cmd)
  require('refactor_lsp').apply_command(cmd)
end, {
  nargs = '?',
  range = true,
  bang = true,
  desc = 'refactor-lsp: merge the code in a register (default +, the clipboard) into the definitions it names (!: review each change)',
})

vim.api.nvim_create_user_command('RefactorCancel', function(cmd)
  require('refactor_lsp').cancel(cmd.bang)
end, { bang = true, desc = 'refactor-lsp: cancel the refactor running on this buffer (!: on all)' })

vim.api.nvim_create_user_command('RefactorStats', function()
  require('refactor_lsp').show_stats()
end, { desc = 'refactor-lsp: median speed per backend, with and without prediction' })
