#!/usr/bin/env python3
"""Scope on code no one here wrote: does the cursor choose exactly its definition? (issue 13)

    python benchmarks/scope.py [--language python,js,go] [--limit N] [--seed N] [--show-misses N]
                               [--json FILE] [--self-check]

For definitions of real code (the stdlib and site-packages for Python, editors/vscode/node_modules
for JavaScript and TypeScript, the Go standard library), the cursor is put on four lines of each
definition: the first body line, a line in the middle of the body, the signature, a decorator. There
`lsp_server.regions.choose_region(text, offset, offset, "auto", language)` must choose the truth span:
the innermost definition holding that line, from its leading block (decorators and the comment
block directly above) to its last line. The truth comes from each language's own parser: Python's
`ast`, the TypeScript compiler (`scope_truth/ts_truth.js`) and `go/ast` (`scope_truth/go_truth.go`);
benchmarks/README.md ("Scope") gives the exact rules. Python is also measured "unparseable": the
same file with an unfinished `broken = call(` line after the target definition.

Prints, per language and cursor position: cases, exact %, regions too large (and by how much), too
small, other misses, whole-file choices, and the time per choice; then the targets with PASS/FAIL
(also the time to choose in a 20,000-line file). Exits 1 when a target is missed, 2 when a truth
tool is missing. Every call gets a fresh copy of the text, as after a keystroke, so a cache keyed
on the text object saves nothing: the times are those of the first request on a new version.
`--self-check` feeds the truth back as the chooser: the instrument must then report 100 %.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lsp_server.languages.identify import language_of  # noqa: E402
from lsp_server.regions import Region, ScopeCache, choose_region  # noqa: E402

TRUTH_DIR = Path(__file__).resolve().parent / "scope_truth"
NODE_MODULES = ROOT / "editors" / "vscode" / "node_modules"
JS_SUFFIXES = (".js", ".mjs", ".cjs", ".jsx")
TS_SUFFIXES = (".ts", ".tsx")
MINIFIED_AVERAGE = 200  # characters per line on average, or
MINIFIED_LONGEST = 2_000  # characters in one line: a bundle or a minified file, not code someone edits
POSITIONS = ("body start", "body middle", "signature", "decorator")
GROUPS = ("python", "python unparseable", "js", "ts", "go")
DEFAULT_LIMIT = 3_000
DEFAULT_SEED = 13
BIG_LINES = 20_000
BIG_POSITIONS = 9
BIG_REPEAT = 5
BROKEN_LINE = "broken = call("

EXACT_TARGETS = {"python": 0.99, "python unparseable": 0.95, "js": 0.95, "ts": 0.95, "go": 0.90}
BIG_TARGET_MS = 20.0

# Lines end at \r\n, \r and \n only: as LSP, Python's tokenizer and our own line arithmetic count
# them (str.splitlines would also break at \f and \x1c, which Python source can hold).
_BREAK = re.compile(r"\r\n|\r|\n")

Chooser = Callable[["Source", str, int], Region]


# -- lines -------------------------------------------------------------------------------------------


def line_starts(text: str) -> list[int]:
    """Where each line starts; after a final line break one more (empty) line starts at the end."""
    return [0, *(m.end() for m in _BREAK.finditer(text))]


def line_texts(text: str, starts: list[int]) -> list[str]:
    """Each line's text without its terminator."""
    ends = [*starts[1:], len(text)]
    return [text[a:b].rstrip("\r\n") for a, b in zip(starts, ends, strict=True)]


def line_text(text: str, starts: list[int], line: int) -> str:
    """Line `line` without its terminator."""
    end = starts[line + 1] if line + 1 < len(starts) else len(text)
    return text[starts[line] : end].rstrip("\r\n")


def line_of(starts: list[int], offset: int) -> int:
    return bisect.bisect_right(starts, offset) - 1


def cursor_offset(text: str, starts: list[int], line: int) -> int:
    """The first non-blank character of the line (its end when it is blank)."""
    content = line_text(text, starts, line)
    return starts[line] + len(content) - len(content.lstrip())


def span_offsets(text: str, starts: list[int], first: int, last: int) -> tuple[int, int]:
    return starts[first], starts[last + 1] if last + 1 < len(starts) else len(text)


# -- truth -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Definition:
    """One definition of the truth set, in 0-based lines (inclusive)."""

    kind: str
    first: int  # the leading block: comments directly above, decorators
    header: int  # the `def`/`class`/`function`/`func` line, or the name's: the "signature" position
    last: int
    body: int  # the first body line, or -1 (one-line definitions, expression bodies)
    decorator: int  # the first decorator's line, or -1

    def positions(self) -> Iterator[tuple[str, int]]:
        """The cursor lines of this definition that exist, by position name."""
        if self.body >= 0:
            yield "body start", self.body
            middle = (self.body + self.last) // 2
            if self.body < middle < self.last:
                yield "body middle", middle
        yield "signature", self.header
        if 0 <= self.decorator != self.header:
            yield "decorator", self.decorator


@dataclass
class Source:
    """A file of the corpus and its truth."""

    path: Path
    group: str  # "python" | "js" | "ts" | "go"
    language: str  # what the editor would send: file_language.language_of(path)
    text: str
    starts: list[int]
    defs: list[Definition]
    _innermost: list[int] | None = field(default=None, repr=False)

    def truth(self, line: int) -> tuple[int, int] | None:
        """The span of the innermost definition holding `line`, or None."""
        if self._innermost is None:
            # The smaller span wins, so painting the largest first leaves each line to its innermost.
            owner = [-1] * len(self.starts)
            for i in sorted(range(len(self.defs)), key=lambda i: self.defs[i].first - self.defs[i].last):
                d = self.defs[i]
                owner[d.first : d.last + 1] = [i] * (d.last - d.first + 1)
            self._innermost = owner
        i = self._innermost[line]
        return None if i < 0 else (self.defs[i].first, self.defs[i].last)


def read_source(path: Path) -> str | None:
    try:
        with path.open(encoding="utf-8", newline="") as f:  # newline="": keep \r\n as the editor sees it
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def python_definitions(text: str, lines: list[str]) -> list[Definition] | None:
    """Every FunctionDef, AsyncFunctionDef and ClassDef (nested ones too); None when the file does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # old escapes in old code: SyntaxWarning, not our business
            tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    defs = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) or node.end_lineno is None:
            continue
        header = node.lineno - 1
        decorator = node.decorator_list[0].lineno - 1 if node.decorator_list else -1
        first = decorator if decorator >= 0 else header
        while first > 0 and lines[first - 1].strip().startswith("#"):
            first -= 1
        body = node.body[0].lineno - 1
        if body == header:  # `def f(): return 1`: no body line of its own
            body = -1
        defs.append(Definition(type(node).__name__, first, header, node.end_lineno - 1, body, decorator))
    return defs


def python_files() -> tuple[list[Path], dict[str, int]]:
    """The stdlib without its tests (nor the base interpreter's site-packages), then the venv's site-packages."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    skipped = {"stdlib tests": 0}
    files = []
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).parts
        if parts[0] in ("site-packages", "dist-packages"):
            continue
        if any(p in ("test", "tests", "idle_test") for p in parts[:-1]):  # lib2to3's test data among them
            skipped["stdlib tests"] += 1
            continue
        files.append(path)
    if purelib != stdlib and not purelib.is_relative_to(stdlib):
        files.extend(sorted(purelib.rglob("*.py")))
    return files, skipped


def load_python(counts: dict[str, int]) -> list[Source]:
    files, skipped = python_files()
    counts.update({"files": len(files) + skipped["stdlib tests"], "skipped: stdlib tests": skipped["stdlib tests"]})
    counts.update({"skipped: not UTF-8": 0, "skipped: does not parse": 0})
    sources = []
    for path in files:
        text = read_source(path)
        if text is None:
            counts["skipped: not UTF-8"] += 1
            continue
        starts = line_starts(text)
        defs = python_definitions(text, line_texts(text, starts))
        if defs is None:
            counts["skipped: does not parse"] += 1
            continue
        sources.append(Source(path, "python", language_of(str(path)), text, starts, defs))
    return sources


def minified(text: str) -> bool:
    lines = _BREAK.split(text)
    return len(text) / len(lines) > MINIFIED_AVERAGE or max(map(len, lines)) > MINIFIED_LONGEST


def js_candidates(counts: dict[str, int]) -> tuple[list[Path], dict[Path, str]]:
    """The JS/TS files of node_modules worth measuring, and their texts (bundles and .d.ts left out, and counted)."""
    counts.update({"files": 0, "skipped: .d.ts": 0, "skipped: minified or bundled": 0, "skipped: not UTF-8": 0})
    files, texts = [], {}
    for path in sorted(NODE_MODULES.rglob("*")):
        if not path.name.endswith(JS_SUFFIXES + TS_SUFFIXES) or not path.is_file():
            continue
        counts["files"] += 1
        if path.name.endswith((".d.ts", ".d.mts", ".d.cts")):
            counts["skipped: .d.ts"] += 1
            continue
        text = read_source(path)
        if text is None:
            counts["skipped: not UTF-8"] += 1
        elif minified(text):
            counts["skipped: minified or bundled"] += 1
        else:
            files.append(path)
            texts[path] = text
    return files, texts


def go_root() -> Path | None:
    go = shutil.which("go")
    if go is None:
        return None
    out = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True, check=True).stdout.strip()
    return Path(out) / "src"


def go_candidates(root: Path, counts: dict[str, int]) -> tuple[list[Path], dict[Path, str]]:
    """The Go standard library without tests, testdata and vendored code."""
    counts.update({"files": 0, "skipped: _test.go": 0, "skipped: testdata or vendor": 0, "skipped: not UTF-8": 0})
    files, texts = [], {}
    for path in sorted(root.rglob("*.go")):
        counts["files"] += 1
        if any(p in ("testdata", "vendor") for p in path.relative_to(root).parts[:-1]):
            counts["skipped: testdata or vendor"] += 1
        elif path.name.endswith("_test.go"):
            counts["skipped: _test.go"] += 1
        elif (text := read_source(path)) is None:
            counts["skipped: not UTF-8"] += 1
        else:
            files.append(path)
            texts[path] = text
    return files, texts


class TruthTool:
    """One node or Go process over many files: a JSON list of paths in, one JSON object per file out.

    Started at once, with files for its input and output (no pipe to keep draining), so that it
    parses while this process reads its own corpus; `results()` waits for it.
    """

    def __init__(self, command: list[str], files: list[Path], workdir: Path, name: str) -> None:
        source, self._output = workdir / f"{name}.in.json", workdir / f"{name}.out.jsonl"
        source.write_text(json.dumps([str(f) for f in files]), encoding="utf-8")
        with source.open("rb") as stdin, self._output.open("wb") as stdout:
            self.proc = subprocess.Popen(command, stdin=stdin, stdout=stdout)

    def results(self) -> list[dict[str, Any]]:
        if self.proc.wait():
            raise RuntimeError(f"truth tool {self.proc.args} failed with exit code {self.proc.returncode}")
        with self._output.open(encoding="utf-8") as f:
            return [json.loads(line) for line in f]


def start_ts_truth(files: list[Path], workdir: Path) -> TruthTool:
    node = shutil.which("node")
    if node is None:
        raise ToolMissing("node is not on PATH (it runs the TypeScript compiler for the JS/TS truth)")
    if not (NODE_MODULES / "typescript").is_dir():
        raise ToolMissing(f"no TypeScript compiler in {NODE_MODULES}: run `npm ci` in editors/vscode")
    return TruthTool([node, str(TRUTH_DIR / "ts_truth.js"), str(NODE_MODULES / "typescript")], files, workdir, "ts")


def build_go_truth(workdir: Path) -> Path:
    go = shutil.which("go")
    if go is None:
        raise ToolMissing("go is not on PATH (Debian: apt-get install golang-go)")
    binary = workdir / "go_truth"
    env = dict(os.environ)
    if not any(env.get(k) for k in ("GOCACHE", "XDG_CACHE_HOME", "HOME")):  # go refuses to build without a cache
        env["GOCACHE"] = str(workdir / "go-cache")
    command = [go, "build", "-o", str(binary), str(TRUTH_DIR / "go_truth.go")]
    subprocess.run(command, check=True, cwd=TRUTH_DIR, env=env)
    return binary


class ToolMissing(Exception):
    pass


def sources_from_tool(
    results: list[dict[str, Any]], texts: dict[Path, str], group_of: Callable[[Path], str], counts: dict[str, int]
) -> list[Source]:
    counts.update({"skipped: parse errors": 0, "skipped: line count disagrees": 0})
    sources = []
    for result in results:
        path = Path(result["path"])
        if "error" in result or result["parse_errors"]:
            counts["skipped: parse errors"] += 1
            continue
        text = texts[path]
        starts = line_starts(text)
        if result["lines"] != len(starts):  # both sides must count the same lines, or the truth is shifted
            counts["skipped: line count disagrees"] += 1
            continue
        defs = []
        for kind, first, header, last, open_line, extra in result["defs"]:
            body = open_line + 1 if open_line >= 0 and open_line + 1 <= last else -1
            if kind in ("func", "struct", "interface"):  # Go: `extra` is the doc comment's first line
                counts["doc comment disagrees"] = counts.get("doc comment disagrees", 0) + (extra != first)
                defs.append(Definition(kind, first, header, last, body, -1))
            else:  # JS/TS: `extra` is the first decorator's line
                defs.append(Definition(kind, first, header, last, body, extra))
        sources.append(Source(path, group_of(path), language_of(str(path)), text, starts, defs))
    return sources


def js_group(path: Path) -> str:
    return "ts" if path.name.endswith(TS_SUFFIXES) else "js"


# -- measuring ---------------------------------------------------------------------------------------


@dataclass
class Figures:
    """The results of one language and cursor position."""

    cases: int = 0
    exact: int = 0
    too_large: list[float] = field(default_factory=list)  # region lines ÷ truth lines
    too_small: int = 0
    other: int = 0
    whole_file: int = 0  # the whole file chosen while the truth is a definition
    not_whole_lines: int = 0  # a region that starts or ends inside a line (must not happen)
    errors: int = 0  # the chooser raised
    times_ms: list[float] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    def add(self, other: Figures) -> None:
        self.cases += other.cases
        self.exact += other.exact
        self.too_large += other.too_large
        self.too_small += other.too_small
        self.other += other.other
        self.whole_file += other.whole_file
        self.not_whole_lines += other.not_whole_lines
        self.errors += other.errors
        self.times_ms += other.times_ms

    def summary(self) -> dict[str, Any]:
        times = sorted(self.times_ms)
        ratios = sorted(self.too_large)
        return {
            "cases": self.cases,
            "exact": self.exact,
            "exact_rate": self.exact / self.cases if self.cases else None,
            "too_large": len(ratios),
            "too_large_ratio_p50": percentile(ratios, 50),
            "too_large_ratio_p95": percentile(ratios, 95),
            "too_small": self.too_small,
            "other": self.other,
            "whole_file": self.whole_file,
            "not_whole_lines": self.not_whole_lines,
            "errors": self.errors,
            "time_ms_median": percentile(times, 50),
            "time_ms_p95": percentile(times, 95),
            "time_ms_max": times[-1] if times else None,
        }


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile of sorted values."""
    if not values:
        return None
    return values[max(0, min(len(values) - 1, round(q / 100 * len(values) + 0.5) - 1))]


def fresh(text: str) -> str:
    """An equal string that is a new object (for any text of two characters or more): a new document version."""
    return text[:1] + text[1:]


def real_chooser(source: Source, text: str, offset: int) -> Region:
    return choose_region(text, offset, offset, "auto", source.language)


def perfect_chooser(source: Source, text: str, offset: int) -> Region:
    """The truth itself, found from the offset alone: proves the instrument measures 100 % for a right answer."""
    starts = line_starts(text)
    truth = source.truth(line_of(starts, offset))
    if truth is None:
        return Region(0, len(text), "file")
    return Region(*span_offsets(text, starts, *truth), "block")


def judge(
    figures: Figures, chooser: Chooser, source: Source, text: str, starts: list[int], line: int, show: int
) -> None:
    truth = source.truth(line)
    assert truth is not None, f"{source.path}:{line + 1}: a cursor position outside every definition"
    offset = cursor_offset(text, starts, line)
    copy = fresh(text)
    figures.cases += 1
    t0 = time.perf_counter_ns()
    try:
        region = chooser(source, copy, offset)
    except Exception as exc:  # code under rework may fail on some file: count it, measure the rest
        figures.errors += 1
        if len(figures.misses) < show:
            figures.misses.append(f"{source.path}:{line + 1}: raised {type(exc).__name__}: {exc}")
        return
    figures.times_ms.append((time.perf_counter_ns() - t0) / 1e6)
    first = line_of(starts, region.start)
    last = line_of(starts, region.end - 1) if region.end > region.start else first
    if starts[first] != region.start or (region.end != len(text) and starts[line_of(starts, region.end)] != region.end):
        figures.not_whole_lines += 1
    if (first, last) == truth:
        figures.exact += 1
        return
    whole = region.start == 0 and region.end == len(text)
    figures.whole_file += whole
    if first <= truth[0] and last >= truth[1]:
        figures.too_large.append((last - first + 1) / (truth[1] - truth[0] + 1))
        verdict = "too large"
    elif first >= truth[0] and last <= truth[1]:
        figures.too_small += 1
        verdict = "too small"
    else:
        figures.other += 1
        verdict = "other"
    if len(figures.misses) < show:
        figures.misses.append(
            f"{source.path}:{line + 1}: truth {truth[0] + 1}-{truth[1] + 1}, chose {first + 1}-{last + 1} "
            f"({region.kind}{', whole file' if whole else ''}): {verdict}"
        )


def broken_variant(source: Source, target: Definition) -> str:
    """The file with an unfinished `broken = call(` line after the target, at its indentation.

    The lines up to the target's last one keep their numbers and offsets, so do the cursors and the truth.
    """
    text, starts = source.text, source.starts
    header = line_text(text, starts, target.header)
    indent = header[: len(header) - len(header.lstrip(" \t"))]
    if target.last + 1 == len(starts):  # the target ends the file, without a line break
        return f"{text}\n{indent}{BROKEN_LINE}\n"
    end = starts[target.last + 1]
    terminator = "\r\n" if text.endswith("\r\n", 0, end) else text[end - 1]  # the target line's own
    return f"{text[:end]}{indent}{BROKEN_LINE}{terminator}{text[end:]}"


def still_parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def sample(sources: list[Source], limit: int, rng: random.Random) -> dict[int, list[Definition]]:
    """`limit` definitions drawn uniformly from all of them (all when limit is 0), by source index."""
    every = [(i, d) for i, s in enumerate(sources) for d in s.defs]
    if limit and len(every) > limit:
        every = rng.sample(every, limit)
    chosen: dict[int, list[Definition]] = {}
    for i, d in every:
        chosen.setdefault(i, []).append(d)
    return chosen


def measure(
    sources: list[Source],
    chosen: dict[int, list[Definition]],
    chooser: Chooser,
    show: int,
    unparseable: bool = False,
    verify: bool = False,
) -> tuple[dict[str, Figures], int]:
    """Figures by position; with `unparseable` and `verify`, also how many broken variants still parse (must be 0).

    The check costs a parse per definition (20 s for the default sample), so only --self-check makes it.
    """
    figures = {p: Figures() for p in POSITIONS}
    parsed = 0
    for i in sorted(chosen):
        source = sources[i]
        for target in chosen[i]:
            text, starts = source.text, source.starts
            if unparseable:
                text = broken_variant(source, target)
                starts = line_starts(text)
                parsed += verify and still_parses(text)
            for position, line in target.positions():
                judge(figures[position], chooser, source, text, starts, line, show)
    return figures, parsed


# -- the 20,000-line files ---------------------------------------------------------------------------


@dataclass
class BigFile:
    name: str
    language: str
    text: str
    note: str
    target: bool = True  # False: reported for information


def big_python(sources: list[Source]) -> BigFile:
    """Whole stdlib modules in path order, until 20,000 lines (not those with `from __future__`: it must come first)."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    parts, lines, names = [], 0, []
    for s in sources:
        if not s.path.is_relative_to(stdlib) or "from __future__" in s.text:
            continue
        text = s.text if s.text.endswith("\n") else s.text + "\n"
        parts.append(text)
        names.append(s.path.name)
        lines += len(line_starts(text)) - 1
        if lines >= BIG_LINES:
            break
    text = "".join(parts)
    assert still_parses(text), "the concatenated stdlib modules must parse"
    return BigFile("python", "python", text, f"{len(names)} stdlib modules concatenated ({names[0]} … {names[-1]})")


def big_js(sources: list[Source]) -> list[BigFile]:
    """The smallest real file of at least 20,000 lines, and typescript.js whole for information."""
    big = sorted((len(s.starts), str(s.path), s) for s in sources if len(s.starts) - 1 >= BIG_LINES)
    files = []
    if big:
        s = big[0][2]
        files.append(BigFile("js", s.language, s.text, f"{s.path.relative_to(NODE_MODULES)}, as is"))
    typescript = NODE_MODULES / "typescript" / "lib" / "typescript.js"
    if typescript.is_file() and (text := read_source(typescript)):
        files.append(BigFile("js (typescript.js)", "javascript", text, "typescript.js whole", target=False))
    return files


def big_go(sources: list[Source], binary: Path, workdir: Path) -> BigFile:
    """Function declarations (with their doc comments) from real files, in path order, after one package clause."""
    parts, lines = ["package scope\n"], 1
    for s in sources:
        for d in s.defs:
            if d.kind != "func":
                continue
            a, b = span_offsets(s.text, s.starts, d.first, d.last)
            parts.append("\n" + s.text[a:b].rstrip("\r\n") + "\n")
            lines += d.last - d.first + 2
        if lines >= BIG_LINES:
            break
    text = "".join(parts)
    path = workdir / "big.go"
    path.write_text(text, encoding="utf-8")
    result = subprocess.run([str(binary)], input=json.dumps([str(path)]), capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["parse_errors"] == 0, "the concatenated functions must parse"
    return BigFile("go", "go", text, f"{len(parts) - 1} function declarations from the stdlib after `package scope`")


def time_big(big: BigFile) -> dict[str, Any]:
    """Median time to choose at several cursor lines spread over the file: a fresh text each call, and the same text."""
    starts = line_starts(big.text)
    lines = []
    for k in range(1, BIG_POSITIONS + 1):
        line = k * (len(starts) - 1) // (BIG_POSITIONS + 1)
        while line + 1 < len(starts) and not big.text[starts[line] : starts[line + 1]].strip():
            line += 1
        lines.append(line)
    cold, warm = [], []
    cache = ScopeCache()  # the document's, as the server keeps it: a new version misses, the same one hits
    for line in lines:
        offset = cursor_offset(big.text, starts, line)
        for _ in range(BIG_REPEAT):
            text = fresh(big.text)
            t0 = time.perf_counter_ns()
            choose_region(text, offset, offset, "auto", big.language, cache)
            cold.append((time.perf_counter_ns() - t0) / 1e6)
            t0 = time.perf_counter_ns()
            choose_region(text, offset, offset, "auto", big.language, cache)
            warm.append((time.perf_counter_ns() - t0) / 1e6)
    cold.sort()
    warm.sort()
    return {
        "name": big.name,
        "lines": len(starts) - 1 if big.text.endswith(("\n", "\r")) else len(starts),
        "note": big.note,
        "cursor_lines": [line + 1 for line in lines],
        "cold_ms_median": percentile(cold, 50),
        "cold_ms_max": cold[-1],
        "warm_ms_median": percentile(warm, 50),
        "target": big.target,
    }


# -- report ------------------------------------------------------------------------------------------


def fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def print_table(group: str, figures: dict[str, Figures]) -> dict[str, Any]:
    total = Figures()
    for f in figures.values():
        total.add(f)
    rows = {**{p: figures[p].summary() for p in POSITIONS}, "all": total.summary()}
    print(f"\n{group}")
    print(
        f"  {'position':<12} {'cases':>7} {'exact':>8}  {'too large':>9} {'×p50':>5} {'×p95':>5}  {'too small':>9}"
        f"  {'other':>6}  {'whole file':>10}  {'ms median':>9} {'p95':>7} {'max':>8}"
    )
    for name, r in rows.items():
        print(
            f"  {name:<12} {r['cases']:>7} {fmt(r['exact_rate'], '.2%'):>8}  {r['too_large']:>9}"
            f" {fmt(r['too_large_ratio_p50'], '.1f'):>5} {fmt(r['too_large_ratio_p95'], '.1f'):>5}  {r['too_small']:>9}"
            f"  {r['other']:>6}  {r['whole_file']:>10}  {fmt(r['time_ms_median'], '.3f'):>9}"
            f" {fmt(r['time_ms_p95'], '.2f'):>7} {fmt(r['time_ms_max'], '.1f'):>8}"
        )
    if total.not_whole_lines:
        print(f"  regions that start or end inside a line: {total.not_whole_lines}")
    if total.errors:
        print(f"  choose_region raised (counted as cases, not in any column): {total.errors}")
    return rows


def print_misses(group: str, figures: dict[str, Figures]) -> None:
    for position in POSITIONS:
        if figures[position].misses:
            print(f"  misses, {group}, {position}:")
            for miss in figures[position].misses:
                print(f"    {miss}")


def target_row(figure: str, measured: str, target: str, ok: bool) -> dict[str, Any]:
    print(f"  {figure:<68} {measured:>12}  {target:<10} {'PASS' if ok else 'FAIL'}")
    return {"figure": figure, "measured": measured, "target": target, "ok": ok}


def counts_line(name: str, counts: dict[str, int]) -> str:
    return f"{name}: " + ", ".join(f"{k} {v:,}" for k, v in counts.items())


def tool_version(command: list[str]) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip().splitlines()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "not found"


def parse_languages(value: str) -> list[str]:
    wanted = {"ts": "js", "javascript": "js", "typescript": "js", "golang": "go"}
    languages = []
    for name in value.split(","):
        name = wanted.get(name.strip(), name.strip())
        if name not in ("python", "js", "go"):
            raise argparse.ArgumentTypeError(f"unknown language {name!r}: python, js (JS and TS), go")
        if name not in languages:
            languages.append(name)
    return languages


def extract_truth(
    languages: list[str], workdir: Path, counts: dict[str, dict[str, int]]
) -> tuple[dict[str, list[Source]], Path | None]:
    """The corpora with their truth, by group, and the Go truth tool when Go is measured."""
    # node and Go parse while Python parses its own corpus; the timed part comes after all three.
    ts_tool = go_tool = None
    go_binary: Path | None = None
    js_texts: dict[Path, str] = {}
    go_texts: dict[Path, str] = {}
    try:
        if "js" in languages:
            counts["js/ts"] = {}
            js_files, js_texts = js_candidates(counts["js/ts"])
            ts_tool = start_ts_truth(js_files, workdir)
        if "go" in languages:
            root = go_root()
            if root is None:
                raise ToolMissing("go is not on PATH (Debian: apt-get install golang-go)")
            counts["go"] = {}
            go_files, go_texts = go_candidates(root, counts["go"])
            go_binary = build_go_truth(workdir)
            go_tool = TruthTool([str(go_binary)], go_files, workdir, "go")
    except ToolMissing:
        if ts_tool is not None:
            ts_tool.proc.kill()
            ts_tool.proc.wait()
        raise
    corpora: dict[str, list[Source]] = {}
    if "python" in languages:
        counts["python"] = {}
        corpora["python"] = load_python(counts["python"])
    if ts_tool is not None:
        js_sources = sources_from_tool(ts_tool.results(), js_texts, js_group, counts["js/ts"])
        corpora["js"] = [s for s in js_sources if s.group == "js"]
        corpora["ts"] = [s for s in js_sources if s.group == "ts"]
    if go_tool is not None:
        corpora["go"] = sources_from_tool(go_tool.results(), go_texts, lambda _: "go", counts["go"])
    return corpora, go_binary


def print_targets(figures: dict[str, Any], bigs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    print("\ntargets")
    rows: list[dict[str, Any]] = []
    for group, share in EXACT_TARGETS.items():
        if group in figures:
            rate = figures[group]["all"]["exact_rate"] or 0.0
            label = f"{group}{' (parseable)' if group == 'python' else ''}: exact region, all positions"
            rows.append(target_row(label, f"{rate:.2%}", f"≥ {share:.0%}", rate >= share))
    for group in ("python", "js", "ts", "go"):
        if group in figures:
            n = figures[group]["all"]["whole_file"]
            rows.append(target_row(f"{group}: whole file chosen, cursor in a definition", f"{n}", "= 0", n == 0))
    for b in bigs:
        if b["target"]:
            ms = b["cold_ms_median"]
            rows.append(
                target_row(
                    f"{b['name']}: time to choose, {b['lines']:,}-line file (fresh text)",
                    f"{ms:.2f} ms",
                    f"≤ {BIG_TARGET_MS:.0f} ms",
                    ms <= BIG_TARGET_MS,
                )
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", type=parse_languages, default=["python", "js", "go"], help="python,js,go")
    parser.add_argument(
        "--limit", type=int, default=DEFAULT_LIMIT, help=f"definitions per language, 0: all (default {DEFAULT_LIMIT})"
    )
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"sampling seed (default {DEFAULT_SEED})")
    parser.add_argument("--show-misses", type=int, default=0, metavar="N", help="print N misses per language/position")
    parser.add_argument("--json", type=Path, help="save the figures to this file")
    parser.add_argument("--self-check", action="store_true", help="feed the truth back: must report 100 %%")
    args = parser.parse_args()
    chooser: Chooser = perfect_chooser if args.self_check else real_chooser
    began = time.perf_counter()
    print(
        f"scope benchmark: {time.strftime('%Y-%m-%d %H:%M')}, seed {args.seed}, limit {args.limit or 'all'} definitions"
        f" per language, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python"
        f" {platform.python_version()}{', SELF-CHECK (perfect chooser)' if args.self_check else ''}"
    )
    report: dict[str, Any] = {"seed": args.seed, "limit": args.limit, "self_check": args.self_check, "corpora": {}}
    tables: dict[str, dict[str, Figures]] = {}
    bigs: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="scope-bench-") as tmp:
        workdir = Path(tmp)
        try:
            corpora, go_binary = extract_truth(args.language, workdir, counts)
        except ToolMissing as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print(f"truth extracted in {time.perf_counter() - began:.1f} s")
        if "go" in counts:
            report["go_doc_comment_disagreements"] = counts["go"].pop("doc comment disagrees", 0)
        for name, c in counts.items():
            print("  " + counts_line(name, c))
        if "go" in counts:
            disagree = report["go_doc_comment_disagreements"]
            print(f"  go: the comment-block rule and go/ast's Doc comments disagree on {disagree} definitions")

        for group in ("python", "js", "ts", "go"):
            if group not in corpora:
                continue
            sources = corpora[group]
            rng = random.Random(f"{args.seed}:{group}")
            chosen = sample(sources, args.limit, rng)
            total = sum(len(s.defs) for s in sources)
            taken = sum(map(len, chosen.values()))
            report["corpora"][group] = {"files": len(sources), "definitions": total, "sampled": taken}
            files = f"{len(sources):,} files, {total:,} definitions"
            print(f"  {group}: {files}, {taken:,} sampled from {len(chosen):,} files")
            tables[group], _ = measure(sources, chosen, chooser, args.show_misses)
            if group == "python":
                tables["python unparseable"], parsed = measure(
                    sources, chosen, chooser, args.show_misses, unparseable=True, verify=args.self_check
                )
                if args.self_check:
                    report["corpora"]["python unparseable"] = {"variants_that_still_parse": parsed}
                    print(f"  python unparseable: {parsed} of the variants still parse (must be 0)")

        if not args.self_check:
            if "python" in corpora:
                bigs.append(time_big(big_python(corpora["python"])))
            if "js" in corpora:
                bigs.extend(time_big(b) for b in big_js(corpora["js"]))
            if "go" in corpora and go_binary is not None:
                bigs.append(time_big(big_go(corpora["go"], go_binary, workdir)))

    report["counts"] = counts
    report["figures"] = {}
    for group in GROUPS:
        if group in tables:
            report["figures"][group] = print_table(group, tables[group])
    if args.show_misses:
        print()
        for group in GROUPS:
            if group in tables:
                print_misses(group, tables[group])
    if bigs:
        print("\ntime to choose in a file of 20,000 lines or more (cursor on 9 lines spread over it, 5 calls each)")
        for b in bigs:
            print(
                f"  {b['name']:<20} {b['lines']:>7,} lines  fresh text: median {b['cold_ms_median']:.2f} ms,"
                f" max {b['cold_ms_max']:.1f} ms;  same text again: median {b['warm_ms_median']:.2f} ms  ({b['note']})"
            )
    report["big_files"] = bigs

    rows = print_targets(report["figures"], bigs)
    report["targets"] = rows
    elapsed = time.perf_counter() - began
    report["elapsed_s"] = elapsed
    print(f"\n{sum(r['ok'] for r in rows)}/{len(rows)} targets met, {elapsed:.0f} s")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, default=str) + "\n", encoding="utf-8")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
