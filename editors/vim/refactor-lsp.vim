" refactor-lsp for Vim + ALE (https://github.com/dense-analysis/ale).
"
" Source this file from your vimrc after ALE is loaded (or copy it there), optionally after
" setting:
"   let g:refactor_lsp_command = ['refactor-lsp']         " the server command, a list
"   let g:refactor_lsp_settings = {'defaultBackend': 'openai'}  " sent as initializationOptions
"   let g:refactor_lsp_filetypes = ['python', 'go']       " where to attach
" If you list linters in g:ale_linters, add 'refactor-lsp' for those filetypes.
"
" Use: write `# refactor-lsp: <instruction>` inside a function, put the cursor there, run
" :ALECodeAction and type the number of `Refactor with prediction: <instruction>`.
" Tested with Vim 9.0 + ALE 3.3 (tests/editors/test_vim_ale.py).

let s:command = get(g:, 'refactor_lsp_command', ['refactor-lsp'])

function! s:RefactorLspRoot(buffer) abort
  let l:file = ale#path#FindNearestFile(a:buffer, '.refactor-lsp.toml')
  if !empty(l:file)
    return fnamemodify(l:file, ':h')
  endif
  let l:git = ale#path#FindNearestDirectory(a:buffer, '.git')
  if !empty(l:git)
    return fnamemodify(substitute(l:git, '[/\\]$', '', ''), ':h')
  endif
  return fnamemodify(bufname(a:buffer), ':p:h')
endfunction

for s:filetype in get(g:, 'refactor_lsp_filetypes',
\   ['python', 'javascript', 'typescript', 'go', 'rust', 'c', 'cpp', 'java', 'lua', 'ruby', 'sh'])
  call ale#linter#Define(s:filetype, {
  \   'name': 'refactor-lsp',
  \   'lsp': 'stdio',
  \   'executable': s:command[0],
  \   'command': join(['%e'] + map(s:command[1:], 'ale#Escape(v:val)')),
  \   'project_root': function('s:RefactorLspRoot'),
  \   'initialization_options': {buffer -> {'refactorLsp': get(g:, 'refactor_lsp_settings', {})}},
  \})
endfor

" ALE shows a server's messages only from this severity up; its default, 'error', would hide the
" speed summary after each refactor (ALE defines the variable, so set it after loading ALE).
let g:ale_lsp_show_message_severity = 'information'
