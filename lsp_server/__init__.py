"""refactor-lsp: a language server that rewrites code with predicted outputs, and measures the gain."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("refactor-lsp")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0"
