"""The command line (`refactor-lsp`): the language server (default), `refactor`, `apply`, `check` and `bench`.

- `main`: the entry point (`main`), each subcommand run through the same pipeline as the server;
- `args`: the subcommands, their options and help;
- `io`: what the subcommands share (exit codes, error lines, the config near a file, the diffs printed);
- `refactor`: `refactor`, `refactor --each definition` and `apply`, one command for every kind of request;
- `write`: the files a run writes (each held against other writers first) or whose diff it prints;
- `ask`: `--review`, each change asked about on a terminal;
- `bench`: `bench`, the task corpus measured with and without prediction.

The server itself is imported only when it is started, and after its imports are made fast (`main`).
"""
