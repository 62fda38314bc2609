"""The check before an edit on code no one here wrote, for benchmarks/hygiene.py.

For each region: a correct rewrite (a name in it renamed, consistently) must pass the check, as must
the region as is; and each slip a model makes (lsp_server/testing/slips.py) gives a broken answer.
Which slipped answers are really broken is a parser's word, not the check's: Python's own `ast`
on the whole document, and for JavaScript Node's own (`vm.compileFunction` for CommonJS, a
`vm.SourceTextModule` for ES modules). A slip that leaves valid code (an indentation Python still
accepts, an `else if` written twice) is no broken answer; the check refusing it is a false alarm.
"""

from __future__ import annotations

import ast
import collections
import io
import json
import keyword
import random
import re
import subprocess
import tokenize

from lsp_server.check.syntax import syntax_check
from lsp_server.testing.slips import SLIPS

# Issue 31: broken answers caught at least this often (Python; the brace languages).
CAUGHT_TARGET = {"python": 0.98}
BRACES_CAUGHT_TARGET = 0.90

NODE_ORACLE = r"""
const vm = require("vm");
const readline = require("readline");
const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  const { source, module } = JSON.parse(line);
  let error = null;
  try {
    if (module) new vm.SourceTextModule(source);
    else vm.compileFunction(source, ["exports", "require", "module", "__filename", "__dirname"]);
  } catch (e) {
    error = String(e && e.message);
  }
  process.stdout.write(JSON.stringify({ error }) + "\n");
});
"""


class NodeOracle:
    """One Node process that says whether a JavaScript source parses, as Node would load it."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            ["node", "--experimental-vm-modules", "--no-warnings", "-e", NODE_ORACLE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def error(self, source: str, module: bool) -> str | None:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps({"source": source, "module": module}) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())["error"]

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        self.process.wait(10)


class Oracle:
    """Whether a document parses, by the language's own parser; None when there is none here."""

    def __init__(self, language: str) -> None:
        self.language = language
        self.node = NodeOracle() if language == "javascript" else None
        self.module: bool = False

    def prepare(self, text: str) -> bool:
        """Read the document as it is: False when it does not parse (then it is left out)."""
        if self.node is not None:
            self.module = self.node.error(text, False) is not None
            return self.node.error(text, self.module) is None
        return self.parses(text)

    def parses(self, text: str) -> bool:
        if self.node is not None:
            return self.node.error(text, self.module) is None
        try:
            ast.parse(text)
        except (SyntaxError, ValueError):
            return False
        return True

    def close(self) -> None:
        if self.node is not None:
            self.node.close()


_JS_NAME = re.compile(r"(?<![\w$.])[A-Za-z_$][\w$]*")
_JS_RESERVED = frozenset(
    [
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "finally",
        "for",
        "function",
        "if",
        "import",
        "in",
        "instanceof",
        "new",
        "return",
        "super",
        "switch",
        "this",
        "throw",
        "try",
        "typeof",
        "var",
        "void",
        "while",
        "with",
        "yield",
        "let",
        "static",
        "enum",
        "await",
        "implements",
        "package",
        "protected",
        "interface",
        "private",
        "public",
        "null",
        "true",
        "false",
        "undefined",
        "async",
        "of",
        "get",
        "set",
        "arguments",
        "eval",
    ]
)


# Other languages' keywords, never taken for the name to rename (a rename that breaks code is no
# correct answer anyway: the parser says so, and it is not counted).
_OTHER_KEYWORDS = frozenset(
    [
        "func",
        "go",
        "chan",
        "defer",
        "select",
        "range",
        "map",
        "struct",
        "type",
        "package",
        "interface",
        "fallthrough",
        "goto",
        "nil",
        "var",
        "const",
        "def",
        "end",
        "elsif",
        "unless",
        "until",
        "begin",
        "rescue",
        "ensure",
        "module",
        "then",
        "self",
        "nil",
        "and",
        "or",
        "not",
        "puts",
        "require",
        "local",
        "function",
        "elseif",
        "repeat",
        "nil",
        "pairs",
        "ipairs",
        "public",
        "private",
        "protected",
        "static",
        "final",
        "abstract",
        "void",
        "int",
        "long",
        "boolean",
        "char",
        "byte",
        "short",
        "double",
        "float",
        "throws",
        "native",
        "synchronized",
        "transient",
        "volatile",
        "assert",
        "String",
        "Object",
    ]
)


def renamed(region: str, language: str) -> str | None:
    """The region with its most used local-looking name renamed everywhere it is code: a correct edit."""
    if language == "python":
        try:
            names = [
                t.string
                for t in tokenize.generate_tokens(io.StringIO(region).readline)
                if t.type == tokenize.NAME and not keyword.iskeyword(t.string) and not keyword.issoftkeyword(t.string)
            ]
        except (tokenize.TokenError, IndentationError, SyntaxError):
            return None
        if not names:
            return None
        name = collections.Counter(names).most_common(1)[0][0]
        return re.sub(rf"(?<![\w.]){re.escape(name)}\b", f"{name}_x", region) if name != "self" else None
    from lsp_server.regions.table import LANGUAGE_OF_ID

    mask = LANGUAGE_OF_ID[language].lexer.mask
    pieces, position = [], 0
    for m in mask.finditer(region):
        pieces.append((region[position : m.start()], True))
        pieces.append((m.group(), False))
        position = m.end()
    pieces.append((region[position:], True))
    reserved = _JS_RESERVED | _OTHER_KEYWORDS
    names = [n for code, is_code in pieces if is_code for n in _JS_NAME.findall(code) if n not in reserved]
    if not names:
        return None
    name = collections.Counter(names).most_common(1)[0][0]
    pattern = re.compile(rf"(?<![\w$.]){re.escape(name)}(?![\w$])")
    return "".join(pattern.sub(f"{name}_x", code) if is_code else code for code, is_code in pieces)


def caught_target(language: str) -> float | None:
    """Issue 31's share of broken answers to catch: Python's, the brace languages'; None for the others."""
    if language in CAUGHT_TARGET:
        return CAUGHT_TARGET[language]
    from lsp_server.regions.table import LANGUAGE_OF_ID

    found = LANGUAGE_OF_ID.get(language)
    return BRACES_CAUGHT_TARGET if found is not None and found.word_header is None else None


CORRECT_KINDS = ("as is", "renamed", "re-indented", "added")


def correct_answers(text: str, start: int, end: int, language: str) -> dict[str, tuple[str, int, int, str | None]]:
    """Correct answers for the region text[start:end], each as (the document the check reads, the span
    the answer replaces in it, the answer; None: none of this kind); the parser reads the document the
    answer leaves. The region as
    is; a name renamed in it; its lines indented one step more (not Python, where that is a slip); the
    region added as new code where there was none (the document without it, the region written into
    it: every trouble the check misreads in valid code counts then, nothing cancels it)."""
    region = text[start:end]
    answers: dict[str, tuple[str, int, int, str | None]] = {"as is": (text, start, end, region)}
    name = renamed(region, language)
    answers["renamed"] = (text, start, end, name)
    if language != "python":
        indented = re.sub(r"(?m)^(?=[ \t]*\S)", "    ", region)
        answers["re-indented"] = (text, start, end, indented)
    answers["added"] = (text[:start] + text[end:], start, start, region)
    return answers


class VerifyCounts:
    """What the check made of one corpus's regions."""

    def __init__(self, language: str, seed: int = 31, oracle: Oracle | None = None) -> None:
        self.language = language
        self.oracle = oracle or Oracle(language)
        self.rng = random.Random(seed)
        self.counts: collections.Counter[str] = collections.Counter()
        self.examples: list[str] = []

    def document(self, text: str) -> bool:
        """A new document: False when its own parser refuses it as it is (its regions are left out)."""
        ok = self.oracle.prepare(text)
        self.counts["documents" if ok else "documents that do not parse, left out"] += 1
        return ok

    def region(self, where: str, text: str, start: int, end: int) -> None:
        region = text[start:end]
        language = self.language
        for kind, (document, at, to, answer) in correct_answers(text, start, end, language).items():
            # As is and added leave the document as it was, which its parser reads.
            if answer is None or not (
                kind in ("as is", "added") or self.oracle.parses(document[:at] + answer + document[to:])
            ):
                continue
            self.counts[f"correct {kind}"] += 1
            found = syntax_check(document, at, to, answer, language).problem
            if found is not None:
                self.counts[f"correct {kind}: refused"] += 1
                self.examples.append(f"{where} correct {kind}: refused ({found.message} at line {found.line})")
        for name, slip in SLIPS.items():
            broken = slip(region, language, self.rng)
            if broken is None or broken == region:
                continue
            really = not self.oracle.parses(text[:start] + broken + text[end:])
            found = syntax_check(text, start, end, broken, language).problem
            kind = "broken" if really else "still valid"
            self.counts[f"{name}: {kind}"] += 1
            if found is not None:
                self.counts[f"{name}: {kind}: caught"] += 1
            elif really and len(self.examples) < 200:
                self.examples.append(f"{where} {name}: missed")

    def report(self) -> tuple[list[str], bool]:
        """The lines to print, and whether every correct answer passed and the broken ones were caught
        as often as issue 31 asks."""
        c = self.counts
        lines = [f"check before an edit ({self.language}): {c['documents']} documents parsed by their own parser"]
        good = True
        for kind in CORRECT_KINDS:
            if not c[f"correct {kind}"]:
                continue
            total, refused = c[f"correct {kind}"], c[f"correct {kind}: refused"]
            good = good and refused == 0
            kept = (total - refused) / max(total, 1)
            lines.append(f"correct answer, {kind:<9} {total:>8}  passed the check: {total - refused:>8}  ({kept:.4%})")
        broken = caught = 0
        for name in SLIPS:
            made, hit = c[f"{name}: broken"], c[f"{name}: broken: caught"]
            valid, alarms = c[f"{name}: still valid"], c[f"{name}: still valid: caught"]
            broken, caught = broken + made, caught + hit
            lines.append(
                f"broken by {name:<28} {made:>7}  caught: {hit:>7} ({hit / max(made, 1):.2%});"
                f"  slips still valid: {valid}, refused: {alarms}"
            )
        rate, target = caught / max(broken, 1), caught_target(self.language)
        if target is None:  # Ruby and Lua: their block reader sees no brackets; issue 31 set no target
            lines.append(f"broken answers, all slips {broken:>18}  caught: {caught:>7} ({rate:.2%}; no target)")
            return lines, good
        verdict = "PASS" if rate >= target else "FAIL"
        lines.append(
            f"broken answers, all slips {broken:>18}  caught: {caught:>7} ({rate:.2%}; target ≥ {target:.0%}: "
            f"{verdict})"
        )
        return lines, good and rate >= target

    def close(self) -> None:
        self.oracle.close()
