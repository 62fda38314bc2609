"""The record that says how the scan reads one family of languages. The records themselves, one per
family with all of its rules, are the table in `table`."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..languages.headers import CLASS_LIKE, Classifier, Header
from ..languages.lexers import EventReader, Lexer, brace_events
from .definition import Definition

if TYPE_CHECKING:
    from .cache import Snapshot

# Ruby and Lua: the header of the block a keyword opened at an offset, given the name of the class
# or module around it (None when there is none).
WordHeader = Callable[[str, int, str, "str | None"], Header]
# What a block that is no definition, opened as a value (`= {`, `({`), holds: "class" or "code".
ValueBody = Callable[[str, int, str], str]
# A definition without a block (a JS arrow with an expression body, Ruby's endless `def`) around the
# cursor line, inside the definition the block scan found (and with that scan, a `scan.Scan` or None:
# typed where the rule is written, as `Any` here so that this record does not depend on the scan
# that reads it), or None.
AfterBlocks = Callable[["Snapshot", int, "Language", "Definition | None", Any], "Definition | None"]


def code_body(flat: str, statement: int, context: str) -> str:
    """Most languages: a value's braces hold code as far as definitions go."""
    return "code"


# Where a scan may start in a C-like language: a line (from its first non-blank character) that may
# begin a definition, and not a label or access specifier (`public:`, `default:`): they head no block.
C_START = re.compile(r"(?!\w+\s*:(?!:))(?:[\w$@~\[]|#\[|[-+]\s*\()")
SLASH_COMMENT = re.compile(r"//")


@dataclass(frozen=True, slots=True)
class Language:
    """How one family of languages is read: its lexer, where a scan may start, how a block's header
    says what the block is, and which lines above a definition belong to it."""

    family: str
    ids: tuple[str, ...]  # the languageIds (and `file_language.language_of` names) read this way
    lexer: Lexer
    declaration: re.Pattern[str]  # a line at column 0 that surely starts a top-level declaration
    events: EventReader = brace_events
    start: re.Pattern[str] = C_START  # a line, from its first non-blank character, where a scan may start
    comment: re.Pattern[str] = SLASH_COMMENT  # a line (stripped) that is a line comment
    decoration: re.Pattern[str] | None = None  # a line (stripped) that opens a decorator, annotation or attribute
    block_comments: str | None = "/*"  # how a block comment opens: "/*", Ruby's "=begin", Lua's "--["
    # What a block is: from its header (brace languages) or from the keyword that opened it (`end` ones).
    classify: Classifier | None = None
    word_header: WordHeader | None = None
    value_body: ValueBody = code_body
    # The last character of a header before a `{` that opens a value (an object, a type, an
    # initializer), never a body: Scala's `def f() = {`, Rust's `where T: X,`, Kotlin's `): T? {`.
    value_before: str = "<:|&,=([?"
    semicolons: bool = False  # statements end with `;`: a line above that ends none goes on below
    backtick_strings: bool = False  # multi-line strings are the backtick's (Go, JS)
    methods_by_syntax: bool = False  # a method is told from a function by its own syntax (JS, Go, Lua)
    method_holders: frozenset[str] = CLASS_LIKE  # kinds of blocks whose functions are methods
    # A `/** ... */` comment separated from the definition below it by blank lines only is its doc
    # (the TypeScript compiler, javac, rustc, PHP and Doxygen attach it so).
    docs_across_blank_lines: bool = False
    after_blocks: AfterBlocks | None = None
    # Its strings and comments, one a match, where `lexer.mask` matches none (Ruby, Lua): where a lazy
    # marker cannot be (placement/literals.py).
    literal_pattern: re.Pattern[str] | None = None

    @property
    def literals(self) -> re.Pattern[str]:
        """Its strings and comments, each matched whole."""
        return self.literal_pattern or self.lexer.mask
