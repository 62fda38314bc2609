"""The languages the block scan reads, one record each with all of its rules: which languageIds it
serves, how its strings and comments are lexed, where a scan may start or resynchronise, how a
block's header is classified, and which lines above a definition belong to it."""

from __future__ import annotations

import re

from ..languages.c_like import c_like_classifier, go_classify, rust_classify
from ..languages.headers import CLASS_LIKE, KEYWORDS_NOT_NAMES
from ..languages.js import js_body, js_classify
from ..languages.lexers import (
    BLOCK_COMMENT,
    DQ,
    DQ_MULTI,
    JS_REGEX,
    JS_TEMPLATE,
    JS_TEXT_QUOTE,
    LINE_COMMENT,
    RUST_CHAR,
    SQ,
    SQ_MULTI,
    TRIPLE,
    TRIPLE_SQ,
    Lexer,
    brace_lexer,
)
from .end_blocks import (
    LUA_LITERALS,
    LUA_TOKEN,
    RUBY_LITERALS,
    RUBY_TOKEN,
    lua_events,
    lua_header,
    ruby_endless,
    ruby_events,
    ruby_header,
)
from .js_arrows import js_arrow
from .rules import Language

# Where a scan may start: a line (from its first non-blank character) that may begin a definition
# (labels too: a JS object's `name: function () {`).
_BRACE_START = re.compile(r"(?:[\w$@~\[]|#\[|[-+]\s*\()")
_NOTHING = re.compile(r"(?!)")
_ANNOTATION = re.compile(r"@\w")

# Lines at column 0 where a scan resynchronises when its stack says it is still nested (they must
# start definitions), and lines there that surely start a top-level declaration, where they differ.
_JS_RESYNC = (
    r"(?:export|function|class|interface|enum|namespace|declare|async\s+function|abstract\s+class"
    r"|(?:const|let|var)\s+[\w$]+\s*=\s*(?:async\s*)?(?:function\b|\([^)\n]*\)\s*=>|[\w$]+\s*=>))\b"
)
_JS_DECLARATION = (
    r"(?:export|import|function|class|interface|enum|namespace|declare|const|let|var|type|async\s+function"
    r"|abstract\s+class|module\.exports|exports\.)\b"
)
_GO_RESYNC = r"(?:func|type|var|const|import)\b"
_RUST_RESYNC = r"(?:pub|fn|impl|trait|struct|enum|mod|unsafe|async|const|static|use|extern|macro_rules!|#\[)"
_C_RESYNC = r"(?:static|extern|inline|void|int|unsigned|char|bool|struct|class|namespace|template|typedef|enum|union)\b"
_JAVA_RESYNC = r"(?:public|private|protected|class|interface|enum|record|abstract|final|fun|object|data|sealed)\b"
_CSHARP_RESYNC = r"(?:public|private|protected|internal|namespace|class|struct|interface|enum|record|sealed)\b"
_SWIFT_RESYNC = r"(?:public|private|internal|open|func|class|struct|enum|protocol|extension|final)\b"
_PHP_RESYNC = r"(?:function|class|interface|trait|abstract|final|namespace)\b"

_C_SKIPS = [
    r'(?<=R)"(?P<delim>[^(\s"]{0,16})\([\s\S]*?\)(?P=delim)"',  # C++ raw strings
    DQ,
    SQ,
    LINE_COMMENT,
    BLOCK_COMMENT,
    r"(?<![^\n])[ \t]*#(?:[^\n\\]++|\\[\s\S])*+",  # preprocessor lines, continuations included
]
_C_CLASSIFY = c_like_classifier(
    r"class|struct|union|enum(?:\s+(?:class|struct))?|namespace",
    r"[^;{}=()]*",
    r"typedef|export|template\s*<\s*>|inline",
    extra=r"|(?P<objc>[-+]\s*\(\s*\)\s*(?P<objc_n>\w+)[^;{}]*+)",  # Objective-C: `- (int)count {`
)
_JAVA_MODIFIERS = (
    r"public|private|protected|internal|static|final|abstract|sealed|non-sealed|open|override|data|inner|enum"
    r"|annotation|companion|case|implicit|lazy|strictfp|value|inline|expect|actual|fun|base|interface|mixin"
)
_CSHARP_PROPERTY = (
    r"|(?P<prop>(?:\[\s*\]\s*)*(?:(?:public|private|protected|internal|static|virtual|override|abstract"
    r"|sealed|new|readonly|required|extern)\s+)*(?!(?:" + KEYWORDS_NOT_NAMES + r"|get|set|init|add|remove)\b)"
    r"[\w$.]+(?:\s*<\s*>)?(?:\s*\[\s*\])*\??\s+(?P<prop_n>[\w$]+)\s*)"
)
_SWIFT_PROPERTY = (
    r"|(?P<prop>(?:@\w+\s*)*(?:(?:public|private|fileprivate|internal|open|static|class|override|lazy)\s+)*"
    r"(?:var|let)\s+(?P<prop_n>\w+)\s*:[^;{}=\n]*)"
)


_LANGUAGES = [
    Language(
        "js",
        ("javascript", "javascriptreact", "typescript", "typescriptreact", "js", "jsx", "ts", "tsx"),
        brace_lexer(
            "\"'`/",
            [JS_TEXT_QUOTE, DQ, SQ, JS_TEMPLATE, LINE_COMMENT, BLOCK_COMMENT, JS_REGEX],
            _JS_RESYNC,
            template=True,
        ),
        re.compile(_JS_DECLARATION),
        start=_BRACE_START,
        decoration=re.compile(r"@[\w$]"),
        classify=js_classify,
        value_body=js_body,
        backtick_strings=True,
        methods_by_syntax=True,
        docs_across_blank_lines=True,
        after_blocks=js_arrow,
    ),
    Language(
        "go",
        ("go",),
        brace_lexer("\"'`/", [DQ, SQ, r"`[^`]*+`?", LINE_COMMENT, BLOCK_COMMENT], _GO_RESYNC),
        re.compile(_GO_RESYNC),
        start=_BRACE_START,
        classify=go_classify,
        backtick_strings=True,
        methods_by_syntax=True,
    ),
    Language(
        "rust",
        ("rust",),
        brace_lexer(
            "\"'/#",
            [r'(?<=r)(?P<hashes>#++)"[\s\S]*?"(?P=hashes)', DQ_MULTI, RUST_CHAR, LINE_COMMENT, BLOCK_COMMENT],
            _RUST_RESYNC,
        ),
        re.compile(_RUST_RESYNC),
        start=_BRACE_START,
        decoration=re.compile(r"#\["),
        classify=rust_classify,
        value_before="<:|&=([?",
        docs_across_blank_lines=True,  # an outer doc comment is an attribute of the next item
    ),
    Language(
        "c",
        ("c", "cpp", "c++", "objective-c", "objective-cpp", "cuda-cpp"),
        brace_lexer("\"'/#", _C_SKIPS, _C_RESYNC),
        re.compile(_C_RESYNC),
        decoration=re.compile(r"\[\["),
        classify=_C_CLASSIFY,
        semicolons=True,
        docs_across_blank_lines=True,  # Doxygen's
    ),
    Language(
        "java",
        ("java", "kotlin", "scala", "groovy", "dart"),
        brace_lexer("\"'/", [TRIPLE, TRIPLE_SQ, DQ, SQ, LINE_COMMENT, BLOCK_COMMENT], _JAVA_RESYNC),
        re.compile(_JAVA_RESYNC),
        decoration=_ANNOTATION,
        classify=c_like_classifier(
            r"class|interface|enum|record|@interface|object|trait|mixin|extension",
            r"[^;{}=]*",
            _JAVA_MODIFIERS,
            local_functions=True,
        ),
        value_before="<:|&,([",
        semicolons=True,
        docs_across_blank_lines=True,  # javac's, KDoc's, Scaladoc's, dartdoc's
    ),
    Language(
        "csharp",
        ("csharp", "c#"),
        brace_lexer(
            "\"'/#",
            [
                TRIPLE,
                r'(?<=@)"(?:[^"]++|"")*+"?',
                r'(?<=@\$)"(?:[^"]++|"")*+"?',
                DQ,
                SQ,
                LINE_COMMENT,
                BLOCK_COMMENT,
                r"(?<![^\n])[ \t]*#[^\n]*+",  # #region, #if...
            ],
            _CSHARP_RESYNC,
        ),
        re.compile(_CSHARP_RESYNC),
        decoration=re.compile(r"\["),
        classify=c_like_classifier(
            r"class|struct|interface|enum|record(?:\s+(?:struct|class))?|namespace",
            r"[^;{}=]*",
            r"public|private|protected|internal|static|sealed|abstract|partial|readonly|unsafe|new|file|ref",
            extra=_CSHARP_PROPERTY,
            local_functions=True,
        ),
        value_before="<:|&,=([",
        semicolons=True,
        docs_across_blank_lines=True,
    ),
    Language(
        "swift",
        ("swift",),
        brace_lexer("\"'/", [TRIPLE, DQ, LINE_COMMENT, BLOCK_COMMENT], _SWIFT_RESYNC),
        re.compile(_SWIFT_RESYNC),
        decoration=_ANNOTATION,
        classify=c_like_classifier(
            r"class|struct|enum|protocol|extension|actor",
            r"[^;{}=]*",
            r"public|private|fileprivate|internal|open|final|indirect|static",
            extra=_SWIFT_PROPERTY,
            local_functions=True,
        ),
        value_before="<:|&,=([",
    ),
    Language(
        "php",
        ("php",),
        brace_lexer(
            "\"'/#<",
            [
                r"<<<[ \t]*(?P<hq>['\"]?)(?P<hid>\w+)(?P=hq)[^\n]*\n[\s\S]*?\n[ \t]*(?P=hid)\b",
                DQ_MULTI,
                SQ_MULTI,
                LINE_COMMENT,
                BLOCK_COMMENT,
                r"#(?!\[)[^\n]*+",
            ],
            _PHP_RESYNC,
        ),
        re.compile(_PHP_RESYNC),
        comment=re.compile(r"//|#(?!\[)"),
        decoration=re.compile(r"#\["),
        classify=c_like_classifier(
            r"class|interface|trait|enum|namespace", r"[^;{}=]*", r"abstract|final|readonly", local_functions=True
        ),
        semicolons=True,
        docs_across_blank_lines=True,
    ),
    # C-like code of no known language: read as C, with no resynchronisation.
    Language(
        "braces",
        (),
        brace_lexer("\"'/", [DQ, SQ, LINE_COMMENT, BLOCK_COMMENT], _NOTHING.pattern),
        _NOTHING,
        classify=_C_CLASSIFY,
        semicolons=True,
        docs_across_blank_lines=True,
    ),
    Language(
        "ruby",
        ("ruby",),
        Lexer(RUBY_TOKEN, _NOTHING),
        re.compile(r"(?:def|class|module)\b"),
        ruby_events,
        start=re.compile(r"(?:(?:private|protected|public|module_function)\s+)?(?:def|class|module)\b|[\w@:]"),
        comment=re.compile(r"#"),
        decoration=None,
        block_comments="=begin",
        word_header=ruby_header,
        method_holders=CLASS_LIKE | {"module"},
        after_blocks=ruby_endless,
        literal_pattern=RUBY_LITERALS,
    ),
    Language(
        "lua",
        ("lua",),
        Lexer(LUA_TOKEN, _NOTHING),
        re.compile(r"(?:local\s+)?function\b"),
        lua_events,
        start=re.compile(r"(?:local\s+)?function\b|[\w.\[\]]+\s*=\s*function\b|\w"),
        comment=re.compile(r"--"),
        decoration=None,
        block_comments="--[",
        word_header=lua_header,
        methods_by_syntax=True,
        literal_pattern=LUA_LITERALS,
    ),
]
LANGUAGES = {language.family: language for language in _LANGUAGES}
LANGUAGE_OF_ID = {language_id: language for language in _LANGUAGES for language_id in language.ids}
