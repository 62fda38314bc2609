#!/usr/bin/env bash
# The corpus of benchmarks/check_corpus.py, fetched by name and version from the registries' own clients
# into CORPUS (default ~/.cache/refactor-lsp/check-corpus), and the parsers that judge it. Prints the
# bench's arguments for the JS/TS/JSX/TSX corpora on its last line. Debian's packages need root (apt-get).
# Usage: bash benchmarks/check_corpus_fetch.sh [CORPUS]
set -euo pipefail
corpus="${1:-${HOME}/.cache/refactor-lsp/check-corpus}"
mkdir -p "$corpus/packs" "$corpus/typescript" "$corpus/jdk"

# Ruby's and Lua's own libraries, Go's standard library, the JDK's sources, Rust crates' sources, and
# the parsers: ruby, lua5.4, go, javac, rustfmt (rustfmt comes with a Rust toolchain, not from here).
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q ruby lua5.4 lua-penlight golang-go openjdk-17-jdk-headless \
        openjdk-17-source librust-regex-syntax-dev librust-syn-dev librust-serde-dev >/dev/null
fi
src_zip="$(ls /usr/lib/jvm/*/lib/src.zip 2>/dev/null | head -1 || true)"
if [ -n "$src_zip" ] && [ ! -d "$corpus/jdk/java.base" ]; then
    (cd "$corpus/jdk" && unzip -q -o "$src_zip" 'java.base/java/util/*' 'java.base/java/lang/*' \
        'java.base/java/io/*' 'java.base/java/time/*' 'java.net.http/*' 'jdk.compiler/com/sun/tools/javac/parser/*')
fi

# TypeScript's own parser (5.x: 7.x is a native binary without the JS API), and npm packages that ship
# their .tsx sources, or JSX kept in their .js (docusaurus's theme), pinned.
[ -d "$corpus/typescript/node_modules/typescript" ] || (cd "$corpus/typescript" && npm init -y >/dev/null &&
    npm install --no-audit --no-fund --ignore-scripts typescript@5.9.3 >/dev/null)
packs=(@docusaurus/theme-classic@3.10.2 @docusaurus/theme-common@3.10.2 @blueprintjs/core@6.20.0
    @tanstack/react-router@1.170.46 @tiptap/react@3.35.0 @tanstack/react-query@5.108.4
    @tanstack/query-core@5.108.4 rxjs@7.8.2 react-day-picker@10.0.2 @floating-ui/dom@1.8.0 date-fns@4.4.0
    react-dom@19.3.1)
cd "$corpus/packs"
for pack in "${packs[@]}"; do
    name="$(echo "${pack%@*}" | tr -d @ | tr / -)"
    [ -d "$name" ] || { mkdir -p "$name" && npm pack --silent "$pack" | xargs -I{} tar xzf {} -C "$name"; }
done
p="$corpus/packs"
echo "--typescript $corpus/typescript/node_modules/typescript" \
    "tsx=$p/blueprintjs-core tsx=$p/docusaurus-theme-classic tsx=$p/tanstack-react-router tsx=$p/tiptap-react" \
    "tsx=$p/docusaurus-theme-common jsx=$p/docusaurus-theme-classic/package/lib ts=$p/tanstack-react-query" \
    "ts=$p/tanstack-query-core ts=$p/rxjs ts=$p/react-day-picker ts=$p/floating-ui-dom js=$p/react-dom js=$p/date-fns" \
    "java=$corpus/jdk"
