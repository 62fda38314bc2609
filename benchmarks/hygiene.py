"""Output hygiene on code no one here wrote: every function and class of the stdlib and site-packages.

With `--ext js` (or go, ts, ...) and folders of such files (node_modules, Go's standard library), the
regions are the ones the server's scope picks at three cursors per file (seeded), so other languages
are measured the same way.

Ground truth by construction, for each definition (the region) of each file:
- a correct answer (the region itself, or the region wrapped in a fence, a `<think>` block or the
  markers) must come back exactly as the region: never refused, never edited;
- an answer that carries on past the region (the region plus the rest of the file, or the text
  before it plus the region) must be refused.

And the check before an edit (`hygiene_verify`), on a sample of the regions of each file that its own
parser reads (Python's `ast`; Node for JavaScript): correct answers (the region, a name renamed in it)
must pass it; answers broken by the slips models make must be caught.

Prints the counts and the rates; exits 1 if a correct answer was refused or edited, or if fewer broken
answers were caught than issue 31 asks (98 % in Python, 90 % in the brace languages).
Usage: python benchmarks/hygiene.py [--limit FILES] [--ext EXT] [--verify-per-file N] [PATH ...]
"""

from __future__ import annotations

import argparse
import ast
import bisect
import collections
import random
import shutil
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hygiene_verify import VerifyCounts

from lsp_server.formats.hygiene import UnusableOutput, clean_output
from lsp_server.formats.prompt import REGION_END, REGION_START
from lsp_server.languages.identify import language_of
from lsp_server.regions import choose_region
from lsp_server.text import LineIndex

CURSORS_PER_FILE = 3  # --ext other than py: regions the scope picks around this many cursors a file
MAX_SCOPED_CHARS = 200_000  # --ext other than py: larger files (minified bundles) are left out
MAX_VERIFIED_CHARS = 200_000  # the check's sample: each broken answer is parsed with its whole file


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


def scoped_regions(text: str, path: Path, rng: random.Random) -> Iterator[tuple[int, int]]:
    """(start, end) of the definitions the server's scope picks at a few random cursors (not the whole file)."""
    if len(text) > MAX_SCOPED_CHARS:
        return
    offsets = LineIndex(text).offsets
    seen = set()
    for _ in range(CURSORS_PER_FILE):
        cursor = offsets[rng.randrange(len(offsets) - 1)] if len(offsets) > 1 else 0
        region = choose_region(text, cursor, cursor, "auto", language_of(str(path)))
        if region.kind != "file" and region.end > region.start and (region.start, region.end) not in seen:
            seen.add((region.start, region.end))
            yield region.start, region.end


def correct_answers(region: str) -> dict[str, str]:
    # A region at the end of a file without a final newline: a model still puts the closing fence or
    # marker on a line of its own (and the region's missing newline is kept, as it was).
    body = region if region.endswith("\n") else region + "\n"
    return {
        "as is": region,
        "fenced": f"```python\n{body}```\n",
        "introduced and fenced": f"Here is the updated code:\n\n```python\n{body}```",
        "after <think>": f"<think>\nNothing to change.\n</think>\n\n{region}",
        "between markers": f"{REGION_START}\n{body}{REGION_END}\n",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="folders of .py files (default: the stdlib and site-packages)")
    parser.add_argument("--limit", type=int, default=0, help="read at most this many files")
    parser.add_argument("--ext", default="py", help="the files' extension (default py: every definition, by ast)")
    parser.add_argument(
        "--verify-per-file",
        type=int,
        default=4,
        help="regions of each file that the check before an edit is measured on (default 4; 0: none)",
    )
    args = parser.parse_args()
    roots = [Path(p) for p in args.paths] or [
        Path(sysconfig.get_paths()["stdlib"]),
        Path(sysconfig.get_paths()["purelib"]),
    ]
    ext = args.ext.lstrip(".")
    files = sorted(f for root in roots for f in root.rglob(f"*.{ext}"))
    rng = random.Random(7)
    if args.limit:
        files = files[: args.limit] if ext == "py" else rng.sample(files, min(args.limit, len(files)))
    counts: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    language = language_of(f"x.{ext}")
    # The check's truth is the language's own parser: Python's `ast`, Node for JavaScript (none here: left out).
    oracle = language == "python" or (language == "javascript" and shutil.which("node") is not None)
    verify = VerifyCounts(language) if args.verify_per_file and oracle else None
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        counts["files"] += 1
        regions = list(definitions(text) if ext == "py" else scoped_regions(text, path, rng))
        if verify is not None and len(text) <= MAX_VERIFIED_CHARS and regions and verify.document(text):
            line = LineIndex(text).offsets
            for start, end in rng.sample(regions, min(args.verify_per_file, len(regions))):
                if text[start:end].strip():
                    verify.region(f"{path}:{bisect.bisect_right(line, start)}", text, start, end)
        for start, end in regions:
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
    if verify is not None:
        lines, verified = verify.report()
        verify.close()
        print("\n".join(lines))
        for line in verify.examples[:20]:
            print("  " + line)
        bad += not verified
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
