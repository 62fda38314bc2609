"""Where hunks overtakes region + prediction, in the loopback fake's passes: for `refactor.hunks_min_lines`.

    python benchmarks/formats_crossover.py [--draft-len 8]

Real code of growing size: the first top-level class or function without decorators, in the sorted
files of this Python's standard library, within 12 % of each size. Each gets the same small edit,
`  # checked` appended to 1 line, 3 lines, or 2 % of the lines (at least one), spread evenly over
its code lines. For each, the passes the fake (`lsp_server.testing.speculation.simulate`) takes to
write the answer in each format, with the prompts the server sends, as a perfect model would answer:
- OpenAI-like: region + prediction drafts from the `prediction` field (the region); hunks has none;
- vLLM-like: both draft from the prompt and the answer so far (n-gram lookup).
Prints hunks ÷ region + prediction in passes (under 1: hunks is faster). The time to first token is
the same for both formats and is left out: with it, both ratios move toward 1.
"""

from __future__ import annotations

import argparse
import ast
import sysconfig
from pathlib import Path

from lsp_server.hunks_write import hunks_for
from lsp_server.prompt import build_prompt
from lsp_server.testing.speculation import simulate

SIZES = (25, 50, 75, 100, 125, 150, 175, 200, 250, 300, 400, 600)
EDITS = ("1 line", "3 lines", "2 % of lines")


def definitions() -> list[str]:
    """Top-level undecorated classes and functions of the stdlib, sorted by file."""
    found = []
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            tree = ast.parse(text)
        except (SyntaxError, UnicodeDecodeError, ValueError):
            continue
        lines = text.splitlines(keepends=True)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and not node.decorator_list and node.end_lineno:
                found.append("".join(lines[node.lineno - 1 : node.end_lineno]))
    return found


def edited(region: str, edit: str) -> str:
    lines = region.splitlines(keepends=True)
    code = [i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")]
    count = {"1 line": 1, "3 lines": 3}.get(edit) or max(1, round(len(lines) * 0.02))
    for k in range(count):
        i = code[(k * 2 + 1) * len(code) // (count * 2)]
        lines[i] = lines[i].rstrip("\n") + "  # checked\n"
    return "".join(lines)


def passes(region: str, new: str, kind: str, edit_format: str, draft_len: int) -> int:
    answer = new if edit_format == "region" else hunks_for(region, new, context=0)
    if kind == "openai":
        source = region if edit_format == "region" else None
        return len(simulate(answer, source, draft_len).steps)
    prompt = build_prompt(
        text=region, start=0, end=len(region), instruction="Mark the lines.", path="m.py", edit_format=edit_format
    )
    context = "\n".join(m["content"] for m in prompt.messages)
    return len(simulate(answer, context, draft_len, aligned=False, from_output=True).steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draft-len", type=int, default=8)
    args = parser.parse_args()
    pool = definitions()
    print(f"hunks ÷ region + prediction, in passes (drafts of {args.draft_len}; under 1: hunks is faster)")
    print("| region lines | " + " | ".join(f"{e}, {k}" for k in ("OpenAI-like", "vLLM-like") for e in EDITS) + " |")
    print("|---:|" + "---:|" * (2 * len(EDITS)))
    used: set[str] = set()
    for size in SIZES:
        region = next((d for d in pool if abs(d.count("\n") - size) <= size * 0.12 and d not in used), None)
        if region is None:
            continue
        used.add(region)
        cells = []
        for kind in ("openai", "vllm"):
            for edit in EDITS:
                new = edited(region, edit)
                hunks = passes(region, new, kind, "hunks", args.draft_len)
                cells.append(f"{hunks / passes(region, new, kind, 'region', args.draft_len):.2f}")
        print(f"| {region.count(chr(10))} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
