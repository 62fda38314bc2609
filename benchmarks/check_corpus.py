"""The check before an edit on valid code from real projects, in each language it claims, with the
language's own parser or compiler as the truth (issue 36): no valid code may be refused, and the
broken answers it catches are counted as `bench-hygiene` counts them.

For each file its parser reads as it is, the regions are its top-level definitions and the ones the
server's scope picks at a few seeded cursors. Each region gives correct answers (`hygiene_verify`:
as is, a name renamed, re-indented, added as new code where there was none), kept when the parser
reads the document they leave, each of which the check must pass; and the slips models make
(`lsp_server/testing/slips.py`), which it should catch where the parser refuses them.

The parsers (`benchmarks/check_truth/`), each a long-lived process but rustfmt: the TypeScript
compiler's for JS/TS/JSX/TSX (syntax diagnostics only), Ruby's (`RubyVM::InstructionSequence.compile`,
what `ruby -c` runs), Lua 5.4's `load` (what `luac -p` runs), go/parser (what `gofmt -e` runs),
javac's (`JavacTask.parse`), rustfmt (rustc's parser, once per source), and a newer Python's `ast`
for the code that targets it (the check runs on the Python running this). A language whose parser
or corpus is not on the machine is skipped, and said.

Usage: python benchmarks/check_corpus.py [--language NAME ...] [--files N] [--typescript DIR] [CORPUS=DIR ...]
Exits 1 when a correct answer was refused, or fewer broken answers were caught than issue 31 asks.
"""

from __future__ import annotations

import argparse
import ast
import random
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hygiene_verify import VerifyCounts

from lsp_server.regions import choose_region
from lsp_server.regions.targets import top_level_definitions
from lsp_server.text import LineIndex

TRUTH = Path(__file__).resolve().parent / "check_truth"
MAX_CHARS = 200_000  # larger files (minified bundles, generated tables) are left out
CURSORS_PER_FILE = 4
REGIONS_PER_FILE = 8


class ProcessOracle:
    """A parser in a process of its own: a header line (the source's length in bytes, and `extra`),
    the source, and one line back, "ok" or "error LINE MESSAGE"."""

    def __init__(self, argv: list[str], extra: str = "") -> None:
        self.argv, self.extra = argv, extra
        self.process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def error(self, source: str) -> str | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        data = source.encode("utf-8", "surrogatepass")
        self.process.stdin.write(f"{len(data)}{' ' + self.extra if self.extra else ''}\n".encode() + data)
        self.process.stdin.flush()
        answer = self.process.stdout.readline().decode("utf-8", "replace").strip()
        if not answer:
            raise RuntimeError(f"{self.argv[0]} stopped answering")
        return None if answer == "ok" else answer.removeprefix("error ")

    def prepare(self, text: str) -> bool:
        return self.parses(text)

    def parses(self, text: str) -> bool:
        return self.error(text) is None

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(30)


class CommandOracle(ProcessOracle):
    """A parser run once per source on its standard input, whose exit status says (rustfmt)."""

    def __init__(self, argv: list[str], extra: str = "") -> None:
        self.argv, self.extra = argv, extra

    def error(self, source: str) -> str | None:
        done = subprocess.run(self.argv, input=source.encode("utf-8", "surrogatepass"), capture_output=True)
        return None if done.returncode == 0 else done.stderr.decode("utf-8", "replace").strip()[:200] or "error"

    def close(self) -> None:
        pass


@dataclass(frozen=True)
class Corpus:
    """One language's corpus: its files, the languageId the check reads them as, how its parser runs."""

    name: str
    language: str  # a languageId
    patterns: tuple[str, ...]
    roots: tuple[str, ...]  # where the machine keeps such code, by default
    parser: tuple[str, ...]  # the parser's command; {truth}: benchmarks/check_truth, {typescript}: its folder
    extra: str = ""  # the parser's header word (the TypeScript parser's script kind)
    needs: str = ""  # the program that must be on the PATH
    newer_only: bool = False  # only the files the Python running this cannot parse: the newer grammar's
    per_source: bool = False  # the parser runs once per source (CommandOracle), not as a long-lived process


def newer_python() -> str:
    """The newest Python here that is newer than the one running this: on the PATH, or pyenv's."""
    running = sys.version_info[:2]
    found: list[tuple[tuple[int, int], str]] = []
    for minor in range(running[1] + 1, 20):
        on_path = shutil.which(f"python3.{minor}")
        candidates = [on_path] if on_path else []
        candidates += [str(p) for p in Path.home().glob(f".pyenv/versions/3.{minor}.*/bin/python3.{minor}")]
        for candidate in candidates:
            if subprocess.run([candidate, "-c", "pass"], capture_output=True).returncode == 0:
                found.append(((3, minor), candidate))
                break
    return max(found)[1] if found else ""


def _python_stdlib(python: str) -> str:
    if not python:
        return ""
    out = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"], capture_output=True
    )
    return out.stdout.decode().strip()


def _go_root() -> str:
    if shutil.which("go") is None:
        return ""
    return subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True).stdout.strip() + "/src"


NODE = ("node", "{truth}/parse_ts.js", "{typescript}")
CORPORA = [
    Corpus("tsx", "typescriptreact", ("*.tsx",), (), NODE, "tsx", "node"),
    Corpus("jsx", "javascriptreact", ("*.jsx", "*.js"), (), NODE, "jsx", "node"),
    Corpus("ts", "typescript", ("*.ts",), (), NODE, "ts", "node"),
    Corpus("js", "javascript", ("*.js", "*.mjs", "*.cjs"), (), NODE, "js", "node"),
    Corpus("ruby", "ruby", ("*.rb",), ("/usr/lib/ruby",), ("ruby", "{truth}/parse_ruby.rb"), needs="ruby"),
    Corpus("lua", "lua", ("*.lua",), ("/usr/share/lua",), ("lua5.4", "{truth}/parse_lua.lua"), needs="lua5.4"),
    Corpus("go", "go", ("*.go",), ("{goroot}",), ("{truth}/parse_go",), needs="go"),
    Corpus(
        "rust",
        "rust",
        ("*.rs",),
        ("/usr/share/cargo/registry",),
        ("rustfmt", "--edition", "2021", "--emit", "stdout"),
        needs="rustfmt",
        per_source=True,
    ),
    Corpus("java", "java", ("*.java",), (), ("java", "-cp", "{truth}", "ParseJava"), needs="javac"),
    Corpus(
        "python-newer",
        "python",
        ("*.py",),
        ("{newer python}",),
        ("{python}", "{truth}/parse_python.py"),
        newer_only=True,
    ),
]


def build_parsers(names: set[str]) -> None:
    """The parsers that need building: go/parser's program and javac's class, once."""
    if "go" in names and shutil.which("go") and not (TRUTH / "parse_go").exists():
        subprocess.run(["go", "build", "-o", str(TRUTH / "parse_go"), str(TRUTH / "parse_go.go")], check=True)
    if "java" in names and shutil.which("javac") and not (TRUTH / "ParseJava.class").exists():
        subprocess.run(["javac", "-d", str(TRUTH), str(TRUTH / "ParseJava.java")], check=True)


def files_of(corpus: Corpus, roots: list[Path], limit: int, rng: random.Random) -> list[Path]:
    found = sorted(
        {f for root in roots for pattern in corpus.patterns for f in root.rglob(pattern) if f.is_file()}
        - {f for root in roots for f in root.rglob("*.d.ts")}
    )
    return rng.sample(found, min(limit, len(found))) if limit else found


def _parses_here(text: str) -> bool:
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def regions_of(text: str, language: str, rng: random.Random) -> list[tuple[int, int]]:
    """The top-level definitions and the regions the scope picks at a few cursors, at most REGIONS_PER_FILE."""
    spans = {(t.start, t.end) for t in top_level_definitions(text, language)}
    offsets = LineIndex(text).offsets
    for _ in range(CURSORS_PER_FILE):
        cursor = offsets[rng.randrange(len(offsets) - 1)] if len(offsets) > 1 else 0
        region = choose_region(text, cursor, cursor, "auto", language)
        if region.kind != "file" and region.end > region.start:
            spans.add((region.start, region.end))
    chosen = sorted(s for s in spans if text[s[0] : s[1]].strip())
    return rng.sample(chosen, min(REGIONS_PER_FILE, len(chosen)))


def run(corpus: Corpus, roots: list[Path], args: argparse.Namespace) -> tuple[list[str], bool] | str:
    """The corpus measured: its report's lines and whether it passed, or why it was skipped."""
    if corpus.needs and shutil.which(corpus.needs) is None:
        return f"{corpus.name}: skipped ({corpus.needs} is not installed)"
    roots = [r for r in roots if r.is_dir()]
    if not roots:
        return f"{corpus.name}: skipped (no corpus folder; give {corpus.name}=DIR)"
    argv = [part.format(truth=TRUTH, typescript=args.typescript, python=args.python) for part in corpus.parser]
    rng = random.Random(36)
    files = files_of(corpus, roots, 0 if corpus.newer_only else args.files, rng)
    oracle = (CommandOracle if corpus.per_source else ProcessOracle)(argv, corpus.extra)
    counts = VerifyCounts(corpus.language, oracle=oracle)  # type: ignore[arg-type]
    started = time.monotonic()
    try:
        for path in files:
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if len(text) > MAX_CHARS or (corpus.newer_only and _parses_here(text)):
                continue
            if not counts.document(text):
                continue
            line = LineIndex(text).offsets
            for start, end in regions_of(text, corpus.language, rng):
                counts.region(f"{path}:{sum(1 for o in line if o <= start)}", text, start, end)
    finally:
        counts.close()
    lines, good = counts.report()
    where = ", ".join(str(r) for r in roots)
    lines.insert(
        0, f"{corpus.name} ({corpus.language}): {len(files)} files of {where}, {time.monotonic() - started:.0f} s"
    )
    refused = [e for e in counts.examples if ": refused (" in e]
    lines += [f"  refused: {e}" for e in refused[:20]]
    return lines, good


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpora", nargs="*", help="NAME=DIR: the files of a corpus (tsx, jsx, ts, js: no default)")
    parser.add_argument("--language", action="append", help="measure only these corpora (repeatable)")
    parser.add_argument("--files", type=int, default=300, help="a seeded sample of this many files a corpus (0: all)")
    parser.add_argument("--typescript", default="", help="the typescript package's folder (for JS/TS/JSX/TSX)")
    args = parser.parse_args()
    given: dict[str, list[Path]] = {}
    for item in args.corpora:
        name, _, folder = item.partition("=")
        given.setdefault(name, []).append(Path(folder))
    names = set(args.language or [c.name for c in CORPORA])
    build_parsers(names)
    python = newer_python() if "python-newer" in names else ""
    defaults = {"{goroot}": _go_root(), "{newer python}": _python_stdlib(python)}
    good = True
    for corpus in CORPORA:
        if corpus.name not in names:
            continue
        roots = given.get(corpus.name) or [Path(defaults.get(r, r)) for r in corpus.roots if defaults.get(r, r)]
        if corpus.parser[0] == "node" and not args.typescript:
            print(f"{corpus.name}: skipped (no --typescript)")
            continue
        if corpus.name == "python-newer" and not python:
            print(f"{corpus.name}: skipped (no Python newer than {sys.version_info[0]}.{sys.version_info[1]} here)")
            continue
        args.python = python
        result = run(corpus, roots, args)
        if isinstance(result, str):
            print(result)
            continue
        print("\n".join(result[0]), flush=True)
        good = good and result[1]
    return 0 if good else 1


if __name__ == "__main__":
    raise SystemExit(main())
