"""Types are checked (mypy in CI, settings in pyproject.toml); what the checker is told to ignore
says why, on its line, so that an ignore is a decision someone can review rather than a silenced error."""

from __future__ import annotations

import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "lsp_server"
# `# type: ignore[code]  # why`: a code, and a comment after it.
REASONED = re.compile(r"#\s*type:\s*ignore\[[a-z0-9_,\- ]+\]\s*#\s*\S")


def test_every_type_ignore_names_its_code_and_says_why() -> None:
    bare = [
        f"{path.relative_to(PACKAGE.parent)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if re.search(r"#\s*type:\s*ignore", line) and not REASONED.search(line)
    ]
    assert bare == [], "a `# type: ignore` without its code and a reason after it:\n" + "\n".join(bare)
