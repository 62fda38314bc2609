"""Files: reading and writing the user's files and our state folder, safely (the lowest layer).

- `safe_read`: a file someone else named (the command line, a repository's config), read only when it is
  a regular file and under a size, never blocking;
- `safe_write`: rewriting a file on disk (`refactor --write`) so that nothing is lost, whatever fails;
- `state`: the state folder (`$XDG_STATE_HOME/refactor-lsp`), the one place that opens files there.
"""
