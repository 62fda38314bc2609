"""refactor-lsp: a language server that rewrites code with predicted outputs, and measures the gain."""

# The one place the version is written (pyproject.toml reads it from here, [tool.hatch.version]).
# Not read from the package metadata: importing importlib.metadata costs the server's start-up ~15 ms.
__version__ = "0.1.0"
