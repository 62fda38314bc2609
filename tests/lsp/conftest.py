"""The LSP tests' per-test fixture: each module's session (`client = lsp_harness.session(...)`) with a
clean slate for every test."""

from __future__ import annotations

import pytest
from pytest_lsp import LanguageClient

from tests.lsp_harness import Editor, fresh


@pytest.fixture
def editor(client: LanguageClient) -> Editor:
    """The module's editor: no messages, stats or edits from the test before; its fakes reset."""
    return fresh(client)
