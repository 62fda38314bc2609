"""A `/** ... */` doc comment separated from its definition by blank lines is still its doc.

The TypeScript compiler attaches it (`getJSDocCommentsAndTags` answers the last JSDoc before the
node, blank lines or not), and commander.js writes every method that way; an "add docs" refactor
must see the doc it is to update. The sources below are shaped after commander.js
(`lib/command.js`), a Java class with Javadoc, a PHP class with docblocks and a Rust item.
"""

from __future__ import annotations

import pytest

from lsp_server.regions import choose_region
from lsp_server.regions.code import find_code_definition
from lsp_server.regions.definition import Definition


def line(src: str, needle: str) -> int:
    """The 0-based line holding `needle`, which must be on exactly one line."""
    hits = [i for i, text in enumerate(src.split("\n")) if needle in text]
    assert len(hits) == 1, f"{needle!r} is on lines {hits}"
    return hits[0]


def span_at(src: str, needle: str, family: str) -> tuple[int, int] | None:
    found: Definition | None = find_code_definition(src, line(src, needle), family)
    return None if found is None else (found.first_line, found.last_line)


COMMANDER = """const EventEmitter = require('node:events').EventEmitter;

class Command extends EventEmitter {
  /**
   * Initialize a new `Command`.
   *
   * @param {string} [name]
   */

  constructor(name) {
    super();
    this.commands = [];
    this._name = name || '';
  }

  /**
   * Copy settings that are useful to have in common across root command and subcommands.
   *
   * @param {Command} sourceCommand
   * @return {Command} `this` command for chaining
   */
  copyInheritedSettings(sourceCommand) {
    this._outputConfiguration = sourceCommand._outputConfiguration;
    return this;
  }

  /**
   * Define a command.
   *
   * @param {string} nameAndArgs - command name and arguments
   * @return {Command} returns new command for action handler
   */

  command(nameAndArgs, actionOptsOrExecDesc, execOpts) {
    let desc = actionOptsOrExecDesc;
    const [, name, args] = nameAndArgs.match(/([^ ]+) *(.*)/);
    return desc ? this : name + args;
  }
}
"""


@pytest.mark.parametrize(
    "cursor",
    ["this.commands = [];", "constructor(name) {", "* Initialize a new `Command`.", "@param {string} [name]"],
)
def test_a_jsdoc_above_a_blank_line_belongs_to_the_method_below(cursor: str) -> None:
    assert span_at(COMMANDER, cursor, "js") == (line(COMMANDER, "* Initialize") - 1, line(COMMANDER, "this._name") + 1)


def test_the_blank_line_between_the_doc_and_its_method_is_in_the_method() -> None:
    blank = line(COMMANDER, "constructor(name) {") - 1
    found = find_code_definition(COMMANDER, blank, "js")
    assert found is not None and found.name == "Command.constructor"
    assert found.first_line == line(COMMANDER, "* Initialize") - 1


def test_the_region_rewritten_starts_at_the_doc_comment() -> None:
    cursor = COMMANDER.index("let desc")
    region = choose_region(COMMANDER, cursor, cursor, "auto", "javascript")
    rewritten = COMMANDER[region.start : region.end]
    assert rewritten.startswith("  /**\n   * Define a command.") and rewritten.endswith(
        "return desc ? this : name + args;\n  }\n"
    )


def test_a_doc_directly_above_is_unchanged() -> None:
    assert span_at(COMMANDER, "return this;", "js") == (
        line(COMMANDER, "* Copy settings") - 1,
        line(COMMANDER, "return this;") + 1,
    )


def test_only_the_nearest_doc_comment_and_not_across_code() -> None:
    src = (
        "/** The default port. */\nconst PORT = 80;\n\n"
        "/**\n * Start the server.\n */\n\n/** @deprecated use start() */\nfunction listen() {\n  return PORT;\n}\n\n"
        "function stop() {\n  return 0;\n}\n"
    )
    assert span_at(src, "return PORT", "js") == (line(src, "@deprecated"), line(src, "return PORT") + 1)
    assert span_at(src, "return 0", "js") == (line(src, "function stop"), line(src, "return 0") + 1)


@pytest.mark.parametrize(
    "header",
    [
        "/**\n * @license MIT\n */",
        "/**\n * Copyright (c) 2024 Example\n */",
        "/*\n * Plain.\n */",
        "/**\n * @typedef {Object} Options\n */",
    ],
)
def test_a_file_comment_a_typedef_or_a_plain_block_comment_is_not_the_definitions_doc(header: str) -> None:
    src = f"{header}\n\nfunction main() {{\n  return 1;\n}}\n"
    assert span_at(src, "return 1", "js") == (line(src, "function main"), line(src, "return 1") + 1)


JAVA = """package org.example;

public class Greeter {
    /**
     * Says hello.
     *
     * @param name who to greet
     */

    @Override
    public String greet(String name) {
        return "Hello, " + name;
    }
}
"""

PHP = """<?php

class Greeter
{
    /**
     * Says hello.
     */

    public function greet(string $name): string
    {
        return "Hello, " . $name;
    }
}
"""

RUST = """/** Says hello. */

pub fn greet(name: &str) -> String {
    format!("Hello, {name}")
}
"""


@pytest.mark.parametrize(
    ("src", "family", "body"), [(JAVA, "java", "return"), (PHP, "php", "return"), (RUST, "rust", "format!")]
)
def test_other_languages_that_attach_a_doc_across_blank_lines(src: str, family: str, body: str) -> None:
    assert span_at(src, body, family) == (line(src, "/**"), line(src, body) + 1)


def test_go_keeps_its_rule_a_doc_comment_is_directly_above() -> None:
    src = 'package main\n\n/* Greet says hello. */\n\nfunc Greet() string {\n\treturn "hello"\n}\n'
    assert span_at(src, "return", "go") == (line(src, "func Greet"), line(src, "return") + 1)


@pytest.mark.parametrize("blank", ["", "\n"], ids=["directly above", "across a blank line"])
def test_a_glob_quoted_inside_a_doc_comment_opens_nothing(blank: str) -> None:
    # micromatch and picomatch document their functions with globs such as 'test/*.js'.
    source = (
        "const micromatch = {};\n\n"
        "/**\n"
        " * Returns an array of matches captured by `pattern` in `string`.\n"
        " *\n"
        " * ```js\n"
        " * console.log(mm.capture('test/*.js', 'test/foo.js'));\n"
        " * ```\n"
        " */\n"
        f"{blank}"
        "micromatch.capture = (glob, input, options) => {\n"
        "  return null;\n"
        "};\n"
    )
    cursor = source.index("return null")
    region = choose_region(source, cursor, cursor, "auto", "javascript")
    assert source[region.start : region.end].startswith("/**\n * Returns an array")
