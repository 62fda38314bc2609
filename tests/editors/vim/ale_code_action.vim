" Drive Vim + ALE as a user would: open a file, put the cursor somewhere, run :ALECodeAction, pick an
" action from ALE's numbered menu, and wait for the server's edit and message.
"
" Run by tests/editors/test_vim_ale.py as `vim -N -u NONE -i NONE -n -es -S this.vim` with $RLSP_SPEC naming a
" JSON file: {ale_dir, snippet, file, line, col, command, settings, pick, results, timeout_ms,
" wait_for_message}. Writes {menu, picked, lines, modified, messages, error} as JSON to spec.results.
" ALE's menu is `input()`; the one seam replaced is ale#util#Input (as ALE's own tests do): it records
" the menu and answers the number of the line whose title is spec.pick, as the user would type it.

set nocompatible
set nomore
let s:spec = json_decode(join(readfile($RLSP_SPEC), "\n"))
let s:result = {'menu': [], 'picked': '', 'lines': [], 'modified': v:false, 'messages': [], 'error': ''}

function! s:Finish() abort
  redir END
  let l:buf = bufnr(s:spec.file)
  let s:result.lines = getbufline(l:buf, 1, '$')
  let s:result.modified = getbufvar(l:buf, '&modified') ? v:true : v:false
  " Long messages go to ALE's preview window; short ones are echoed (captured by :redir).
  for l:b in range(1, bufnr('$'))
    if bufexists(l:b) && getbufvar(l:b, '&filetype') is# 'ale-preview.message'
      let s:result.messages += getbufline(l:b, 1, '$')
    endif
  endfor
  let s:result.messages += filter(split(s:echoed, "\n"), 'v:val !~# "^\\s*$"')
  call writefile([json_encode(s:result)], s:spec.results)
endfunction

function! s:Menu(message, value, ...) abort
  let s:result.menu = split(a:message, "\n")
  for l:line in s:result.menu
    let l:m = matchlist(l:line, '^\(\d\+\)) \(.*\)$')
    if !empty(l:m) && l:m[2] is# s:spec.pick
      let s:result.picked = l:m[2]
      return l:m[1]
    endif
  endfor
  return ''
endfunction

function! s:Wait(Done, what) abort
  let l:waited = 0
  while !a:Done()
    if l:waited >= s:spec.timeout_ms
      throw 'timed out waiting for ' . a:what
    endif
    sleep 20m
    let l:waited += 20
    " A :redir variable is filled only when the redirection ends: end it and append anew.
    redir END
    redir =>> s:echoed
  endwhile
endfunction

function! s:MessageSeen() abort
  for l:b in range(1, bufnr('$'))
    if bufexists(l:b) && getbufvar(l:b, '&filetype') is# 'ale-preview.message'
    \ && stridx(join(getbufline(l:b, 1, '$')), s:spec.wait_for_message) >= 0
      return 1
    endif
  endfor
  return stridx(s:echoed, s:spec.wait_for_message) >= 0
endfunction

let s:echoed = ''
try
  redir => s:echoed
  filetype on
  execute 'set runtimepath^=' . fnameescape(s:spec.ale_dir)
  execute 'source ' . fnameescape(s:spec.ale_dir . '/plugin/ale.vim')
  runtime autoload/ale/util.vim
  function! ale#util#Input(message, value, ...) abort
    return call('s:Menu', [a:message, a:value] + a:000)
  endfunction

  " The configuration a user writes: editors/vim/refactor-lsp.vim with its options.
  let g:refactor_lsp_command = s:spec.command
  let g:refactor_lsp_settings = s:spec.settings
  let g:refactor_lsp_filetypes = ['python']
  execute 'source ' . fnameescape(s:spec.snippet)
  let g:ale_linters = {'python': ['refactor-lsp']}

  execute 'edit ' . fnameescape(s:spec.file)
  let s:before = getline(1, '$')
  call cursor(s:spec.line, s:spec.col)
  ALECodeAction
  call s:Wait({-> !empty(s:result.menu)}, 'the code-action menu')
  if s:result.picked is# ''
    throw 'the menu has no ' . s:spec.pick
  endif
  call s:Wait({-> getline(1, '$') != s:before}, 'the edit')
  if !empty(s:spec.wait_for_message)
    call s:Wait({-> s:MessageSeen()}, 'the message')
  endif
catch
  let s:result.error = v:exception . ' (' . v:throwpoint . ')'
endtry

call s:Finish()
qall!
