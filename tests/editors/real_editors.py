"""What the real-editor tests do when their editor is missing: skip locally, fail in CI.

A skipped editor test passes silently, so a CI machine that lost Emacs, Vim, ALE or Neovim would
stop testing the editor setups without anyone noticing. With the environment variable `CI` set to
`true` (GitHub Actions, GitLab CI and .ci/run set it) a missing editor fails the run instead, and
says what to install.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def editor_missing(reason: str) -> NoReturn:
    """Skip the test (locally) or fail it (in CI) because an editor it drives is not installed.

    `reason` names what is missing and how to install it, e.g. "no vim: `apt-get install vim-ale`".
    """
    if in_ci():
        pytest.fail(f"{reason}\n(CI=true: real-editor tests must run in CI, so a missing editor fails)", pytrace=False)
    pytest.skip(reason)
