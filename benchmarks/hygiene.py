"""Output hygiene on code no one here wrote: every function and class of the stdlib and site-packages.

Ground truth by construction, for each definition (the region) of each file:
- a correct answer (the region itself, or the region wrapped in a fence, a `<think>` block or the
  markers) must come back exactly as the region: never refused, never edited;
- an answer that carries on past the region (the region plus the rest of the file, or the text
  before it plus the region) must be refused.

Prints the counts and the rates; exits 1 if a correct answer was refused or edited.
Usage: python benchmarks/hygiene.py [--limit FILES] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import collections
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lsp_server.hygiene import UnusableOutput, clean_output
from lsp_server.prompt import REGION_END, REGION_START


def definitions(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) offsets of every function and class, decorators included, whole lines."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    offsets = [0]
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and node.end_lineno:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            yield offsets[first], offsets[node.end_lineno]


def correct_answers(region: str) -> dict[str, str]:
    return {
        "as is": region,
        "fenced": f"```python\n{region}```\n",
        "introduced and fenced": f"Here is the updated code:\n\n```python\n{region}```",
        "after <think>": f"<think>\nNothing to change.\n</think>\n\n{region}",
        "between markers": f"{REGION_START}\n{region}{REGION_END}\n",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="folders of .py files (default: the stdlib and site-packages)")
    parser.add_argument("--limit", type=int, default=0, help="read at most this many files")
    args = parser.parse_args()
    roots = [Path(p) for p in args.paths] or [
        Path(sysconfig.get_paths()["stdlib"]),
        Path(sysconfig.get_paths()["purelib"]),
    ]
    files = sorted(f for root in roots for f in root.rglob("*.py"))
    if args.limit:
        files = files[: args.limit]
    counts: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        counts["files"] += 1
        for start, end in definitions(text):
            region, before, after = text[start:end], text[:start], text[end:]
            if not region.strip():
                continue
            counts["regions"] += 1
            for kind, answer in correct_answers(region).items():
                try:
                    out = clean_output(answer, region, "stop", before=before, after=after)
                except UnusableOutput as exc:
                    counts[f"correct {kind}: refused"] += 1
                    examples.append(f"{path}:{text.count(chr(10), 0, start) + 1} {kind}: refused ({exc})")
                    continue
                counts[f"correct {kind}"] += 1
                if out != region:
                    counts[f"correct {kind}: edited"] += 1
                    examples.append(f"{path}:{text.count(chr(10), 0, start) + 1} {kind}: edited")
            for kind, answer, outside in (
                ("region + rest of file", region + after, after),
                ("file before + region", before + region, before),
            ):
                if not outside.strip():
                    continue
                counts[f"echo {kind}"] += 1
                try:
                    clean_output(answer, region, "stop", before=before, after=after)
                except UnusableOutput:
                    counts[f"echo {kind}: refused"] += 1
    print(f"{counts['files']} files, {counts['regions']} definitions")
    bad = 0
    for kind in correct_answers(""):
        total = counts[f"correct {kind}"] + counts[f"correct {kind}: refused"]
        wrong = counts[f"correct {kind}: refused"] + counts[f"correct {kind}: edited"]
        bad += wrong
        kept = (total - wrong) / max(total, 1)
        print(f"correct answer, {kind:<22} {total:>8}  kept exactly: {total - wrong:>8}  ({kept:.4%})")
    for kind in ("region + rest of file", "file before + region"):
        total, refused = counts[f"echo {kind}"], counts[f"echo {kind}: refused"]
        print(f"echo, {kind:<39} {total:>8}  refused: {refused:>8}  ({refused / max(total, 1):.2%})")
    for line in examples[:20]:
        print("  " + line)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
